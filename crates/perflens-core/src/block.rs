//! The writer's side of a per-thread block: mapping one, resetting it for
//! a session, appending nodes and caching table keys, and the probe that
//! the inlined fast path uses to find a child's node. The layout itself
//! (the header, frames, slots, nodes and histograms, and the view that
//! reaches them) is `perflens_format::block`, re-exported here, so that a
//! reader in another process reads the same bytes with the same code
//! without compiling this runtime.
//!
//! Only the owning thread writes a block (see the format module's
//! concurrency note); every operation here is the owner's, or runs
//! before the block is shared.

pub use perflens_format::block::*;
use std::sync::atomic::Ordering;

/// The writer's operations on a [`Block`]: the owning thread's (or the
/// session's, before the block is shared).
pub trait BlockWrite: Sized {
    /// Maps a new zeroed block and writes its header. `None` if the
    /// system refuses the memory.
    fn create(layout: Layout, thread_index: u32, tid: u64) -> Option<Block>;

    /// Writes the header of a block at `base` (`live`: see
    /// [`Header::live`]).
    ///
    /// # Safety
    /// `base` is a page-aligned, zeroed, writable region of
    /// `layout.size` bytes that lives for the rest of the process (or
    /// until [`BlockWrite::unmap`]) and that no other thread knows yet.
    unsafe fn init(base: *mut u8, layout: Layout, thread_index: u32, tid: u64, live: u32) -> Block;

    /// Returns the block's memory to the system.
    ///
    /// # Safety
    /// Nothing uses the block any more: its thread has exited or moved
    /// to another block, and it is in no registry list.
    unsafe fn unmap(self);

    /// Inserts `key -> (node, context)`; owner thread only. Returns false
    /// (and inserts nothing) when the table is half full: probes stay
    /// short, a miss always ends at an empty slot, and a key that was not
    /// cached is only slower to find (the slow path works it out again).
    fn insert(&self, key: u64, np: NodePath) -> bool;

    /// Appends a node for `path`; owner thread only. `None` when full.
    fn push_node(&self, path: u32) -> Option<u32>;

    /// Points the pending histogram entries at the sink; owner thread
    /// only (or before the block is shared).
    fn clear_pending(&self);

    /// Clears all contents for a new session `epoch`; owner thread only.
    fn reset(&self, epoch: u32, mode: u32, sample_every: u32, sample_warmup: u32);
}

impl BlockWrite for Block {
    fn create(layout: Layout, thread_index: u32, tid: u64) -> Option<Block> {
        let base = crate::memory::map_zeroed(layout.size)?;
        // SAFETY: a fresh private mapping of `layout.size` zeroed bytes.
        Some(unsafe { Block::init(base, layout, thread_index, tid, 0) })
    }

    unsafe fn init(base: *mut u8, layout: Layout, thread_index: u32, tid: u64, live: u32) -> Block {
        let h = base as *mut Header;
        // SAFETY: the region is fresh, zeroed, at least `size_of::<Header>()`
        // bytes and page-aligned; no other thread knows it yet.
        unsafe {
            (*h).magic = MAGIC;
            (*h).layout_version = LAYOUT_VERSION;
            (*h).header_size = size_of::<Header>() as u32;
            (*h).size = layout.size as u64;
            (*h).node_cap = layout.node_cap;
            (*h).table_mask = layout.table_cap - 1;
            (*h).stack_cap = layout.stack_cap;
            (*h).thread_index = thread_index;
            (*h).off_frames = layout.off_frames as u64;
            (*h).off_table = layout.off_table as u64;
            (*h).off_nodes = layout.off_nodes as u64;
            (*h).off_hist = layout.off_hist as u64;
            (*h).tid = tid;
            (*h).live = live;
        }
        // SAFETY: the header just written starts the region.
        let block = unsafe { Block::from_header(h) };
        block.clear_pending();
        block
    }

    unsafe fn unmap(self) {
        let size = self.header().size as usize;
        // SAFETY: the caller guarantees nobody uses the region.
        unsafe { crate::memory::unmap(self.base(), size) };
    }

    fn insert(&self, key: u64, np: NodePath) -> bool {
        let h = self.header();
        let mask = h.table_mask;
        let mut i = hash(key) & mask;
        loop {
            // SAFETY: `i <= mask`; owner thread.
            let slot = unsafe { self.slot(i) };
            if slot.key == key {
                slot.np = np;
                return true;
            }
            if slot.key == 0 {
                if !self.table_room(1) {
                    return false;
                }
                slot.np = np;
                slot.key = key;
                bump32(&h.table_keys, 1);
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    fn push_node(&self, path: u32) -> Option<u32> {
        let h = self.header();
        let n = h.node_count.load(Ordering::Relaxed);
        if n >= h.node_cap {
            return None;
        }
        // SAFETY: n < node_cap.
        let node = unsafe { self.node(n) };
        node.path.store(path, Ordering::Relaxed);
        node.countdown.store(
            warmup_countdown(h.sample_warmup.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        h.node_count.store(n + 1, Ordering::Release);
        Some(n)
    }

    fn clear_pending(&self) {
        let h = self.header();
        for p in &h.pending {
            p.store(Layout::sink(h.node_cap), Ordering::Relaxed);
        }
    }

    fn reset(&self, epoch: u32, mode: u32, sample_every: u32, sample_warmup: u32) {
        let h = self.header();
        let start = h.off_frames as usize;
        let len = h.size as usize - start;
        // SAFETY: the range is inside this block's mapping; only the owner
        // thread touches frames/table, and readers ignore the block until
        // `epoch` is published below.
        unsafe { crate::memory::zero(self.base().add(start), len, h.live != 0) };
        h.node_count.store(0, Ordering::Relaxed);
        h.dropped_frames.store(0, Ordering::Relaxed);
        h.table_keys.store(0, Ordering::Relaxed);
        self.clear_pending();
        h.mode.store(mode, Ordering::Relaxed);
        h.sample_every.store(sample_every.max(1), Ordering::Relaxed);
        h.sample_warmup.store(sample_warmup, Ordering::Relaxed);
        let a = &h.alloc;
        for c in [&a.allocated, &a.allocs, &a.frees, &a.peak] {
            c.store(0, Ordering::Relaxed);
        }
        a.live.store(0, Ordering::Relaxed);
        for c in h.mark.counters() {
            c.store(0, Ordering::Relaxed);
        }
        h.mark.ops.store(0, Ordering::Relaxed);
        h.mark.min_live.store(0, Ordering::Relaxed);
        h.mark.top.store(ROOT_NODE, Ordering::Relaxed);
        a.published.store(0, Ordering::Relaxed);
        // Gated (a gate left from an earlier session, or from the start
        // of this one, is dropped at the first allocation or free, whose
        // slow path sets the thresholds).
        a.gate();
        // Node 0 collects overflow, node 1 the root.
        let overflow = self.push_node(perflens_format::vocab::OVERFLOW_PATH);
        debug_assert_eq!(overflow, Some(OVERFLOW_NODE));
        let root_node = self.push_node(perflens_format::vocab::ROOT_PATH);
        debug_assert_eq!(root_node, Some(ROOT_NODE));
        // SAFETY: frame 0 exists (stack_cap >= 2); owner thread.
        let root = unsafe { self.frame(0) };
        root.np = NodePath {
            node: ROOT_NODE,
            path: perflens_format::vocab::ROOT_PATH,
        };
        root.timed = UNTIMED;
        root.cache_cs = 0;
        h.epoch.store(epoch, Ordering::Release);
    }
}

/// Multiplicative hash. The multiplier fits a sign-extended 32-bit
/// immediate, so this is a single `imul`; the high half mixes the parent
/// path (high word of the key) with the callsite (low word).
#[inline(always)]
fn hash(key: u64) -> u32 {
    (key.wrapping_mul(0xffff_ffff_9e37_79b1) >> 32) as u32
}

/// Probes the table at `table` for `key`.
///
/// # Safety
/// `table` points to `mask + 1` slots owned by the current thread.
#[inline(always)]
pub unsafe fn lookup(table: *const Slot, mask: u32, key: u64) -> Option<NodePath> {
    let mut i = hash(key) & mask;
    loop {
        // SAFETY: `i <= mask`.
        let slot = unsafe { &*table.add(i as usize) };
        if slot.key == key {
            return Some(slot.np);
        }
        if slot.key == 0 {
            return None;
        }
        i = (i + 1) & mask;
    }
}
