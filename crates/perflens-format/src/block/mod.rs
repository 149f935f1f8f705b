//! The layout of a per-thread block (the shadow stack and the
//! calling-context tree) and the view through which both its writer and
//! its readers reach it. This module owns the bytes: every type here is
//! `repr(C)` and a block file of a live session holds exactly these. The
//! writer's operations on a block (mapping it, resetting it for a
//! session, adding nodes and table keys) are perflens-core's `block.rs`;
//! the one reader of its counters is [`crate::read`].
//!
//! Each thread that runs a measured function owns one block: a single
//! contiguous, zero-initialised memory region laid out as
//!
//! ```text
//! +------------------------+ 0
//! | Header                 |  magic, layout version, capacities, offsets,
//! |                        |  session generation, counters, allocation totals
//! +------------------------+ off_frames
//! | ShadowFrame[stack_cap] |  shadow stack (64 B each); frame 0 is the root sentinel
//! +------------------------+ off_table
//! | Slot[table_cap]        |  open addressing: (parent context, callsite) -> node
//! |                        |  and context; (path, nested) -> node
//! +------------------------+ off_nodes
//! | Node[node_cap]         |  128-byte counters; node 0 collects overflow,
//! |                        |  node 1 is the root (allocations outside frames)
//! +------------------------+ off_hist
//! | u64[node_cap][3][BUCKETS]  inclusive time, exclusive time and
//! |                        |  bytes-per-call histograms
//! +------------------------+ size
//! ```
//!
//! Everything inside refers to everything else by index or byte offset,
//! never by pointer, so the same bytes can later live in a shared-memory
//! file that another process maps (the live view). The region comes from
//! an anonymous `mmap` with `MAP_NORESERVE`: untouched pages cost no
//! memory, so a node whose latencies span a couple of octaves costs about
//! two pages of histogram, not 30 KiB. The same goes for the shadow
//! stack: it is sized from the thread's own stack (see
//! perflens-core's `thread::auto_stack_cap`), so that the native stack overflows before
//! the shadow stack can, and only the frames a thread actually reached
//! ever cost memory.
//!
//! Concurrency: only the owning thread writes. Counters another thread
//! reads (nodes, histograms, `node_count`) are atomics updated with a
//! relaxed load and a relaxed store, which compile to plain `mov`s: there
//! is no read-modify-write and no shared cache line on the hot path. A
//! node is fully initialised before `node_count` is bumped with release
//! ordering, and readers load `node_count` with acquire ordering.

use crate::histogram::BUCKETS;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

mod alloc;
mod node;

pub use alloc::*;
pub use node::*;

/// "PERFLENS" in ASCII, little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PERFLENS");
/// Bumped whenever the layout below changes.
pub const LAYOUT_VERSION: u32 = 7;
/// Byte offset of frame 0 from the start of a block: the header, rounded
/// up to a cache line. Fixed, so the hot state derives the block from its
/// frame pointer.
pub const FRAMES_OFFSET: usize = size_of::<Header>().next_multiple_of(64);
/// Node index of the overflow node.
pub const OVERFLOW_NODE: u32 = 0;
/// Node index of the root: the root sentinel frame's node, which collects
/// allocations made outside any measured function.
pub const ROOT_NODE: u32 = 1;
/// Nodes every tree has besides those of measured functions: the
/// overflow node and the root node.
pub const INTERNAL_NODES: u32 = 2;
/// Histograms per node: inclusive time, exclusive time, bytes allocated
/// per call (inclusive).
pub const HISTS: usize = 3;
/// Histogram index of per-call allocated bytes.
pub const HIST_ALLOC: usize = 2;

/// Fixed part at the start of a block.
#[repr(C, align(64))]
pub struct Header {
    pub magic: u64,
    pub layout_version: u32,
    pub header_size: u32,
    pub size: u64,
    pub node_cap: u32,
    pub table_mask: u32,
    pub stack_cap: u32,
    /// Registration order of the owning thread.
    pub thread_index: u32,
    pub off_frames: u64,
    pub off_table: u64,
    pub off_nodes: u64,
    pub off_hist: u64,
    pub tid: u64,
    /// The live session whose shared-memory file holds this block (its
    /// epoch), or 0 for private memory. Set at creation.
    pub live: u32,
    pub _reserved: u32,
    // -- second cache line: written by the owner on every call.
    /// Session generation the contents belong to.
    pub epoch: AtomicU32,
    /// Published nodes.
    pub node_count: AtomicU32,
    /// Timing mode copied from the session at reset (see `Mode` codes).
    pub mode: AtomicU32,
    pub sample_every: AtomicU32,
    /// Sampled mode: calls of each node timed before sampling starts
    /// (new nodes' countdowns start there, see `Node::countdown`).
    pub sample_warmup: AtomicU32,
    /// 1 once the owning thread has exited.
    pub exited: AtomicU32,
    /// 1 when the owning thread works for the profiler (see
    /// `exclude_current_thread`): reports leave the block out.
    pub excluded: AtomicU32,
    /// Calls deeper than the shadow stack (not recorded).
    pub dropped_frames: AtomicU64,
    /// Keys in the table (owner-written; at most half the slots).
    pub table_keys: AtomicU32,
    /// The histogram entries of this thread's last timed call, not added
    /// yet: element indices into the histogram area (inclusive, then
    /// exclusive time), or both `Layout::sink` when there is none. The
    /// guard adds them at the next timed exit (see `frame::hist_defer`);
    /// a snapshot adds them to what it reads.
    pub pending: [AtomicU64; 2],
    /// Allocation counters of this thread (own cache line).
    pub alloc: ThreadAlloc,
    /// Where the last frame boundary left them (own cache line).
    pub mark: AllocMark,
}

/// Sizes of a block, from its capacities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub node_cap: u32,
    pub stack_cap: u32,
    pub table_cap: u32,
    pub off_frames: usize,
    pub off_table: usize,
    pub off_nodes: usize,
    pub off_hist: usize,
    pub size: usize,
}

const fn align_up(v: usize, a: usize) -> usize {
    (v + a - 1) & !(a - 1)
}

impl Layout {
    /// Element index, in the histogram area, of the counter that pending
    /// entries point to when there is no pending call: one past the last
    /// histogram. Adding to it changes no histogram.
    pub const fn sink(node_cap: u32) -> u64 {
        node_cap as u64 * (HISTS * BUCKETS) as u64
    }

    /// Room for `contexts` calling contexts of measured functions (at
    /// least 1) plus the overflow and root nodes, and `stack_cap` frames.
    pub fn new(contexts: u32, stack_cap: u32) -> Layout {
        let node_cap = contexts.clamp(1, u32::MAX / 4) + INTERNAL_NODES;
        let stack_cap = stack_cap.max(2);
        // Each node has a node key and usually one context key; more
        // when recursion reaches it from several contexts. Four slots per
        // node keep the table at most half full in the common case;
        // beyond half full, new keys are not cached (see `insert`).
        let table_cap = (node_cap as usize * 4).next_power_of_two() as u32;
        let off_frames = FRAMES_OFFSET;
        let off_table = align_up(
            off_frames + stack_cap as usize * size_of::<ShadowFrame>(),
            64,
        );
        let off_nodes = align_up(off_table + table_cap as usize * size_of::<Slot>(), 64);
        let off_hist = align_up(off_nodes + node_cap as usize * size_of::<Node>(), 4096);
        // The histograms, then the sink counter.
        let size = align_up(off_hist + (Layout::sink(node_cap) as usize + 1) * 8, 4096);
        Layout {
            node_cap,
            stack_cap,
            table_cap,
            off_frames,
            off_table,
            off_nodes,
            off_hist,
            size,
        }
    }
}

/// Where a block's nodes and histograms are, read once: a reader indexes
/// with these, not with the header's fields, which a hostile writer of
/// a live block may change after [`Block::validate`] checked them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub node_cap: u32,
    pub off_nodes: usize,
    pub off_hist: usize,
}

impl Geometry {
    /// The geometry in `block`'s header: for this process's own blocks,
    /// whose headers never change after creation.
    pub fn of(block: Block) -> Geometry {
        let h = block.header();
        Geometry {
            node_cap: h.node_cap,
            off_nodes: h.off_nodes as usize,
            off_hist: h.off_hist as usize,
        }
    }
}

/// A block: a pointer to the start of its region. Only the owning thread
/// mutates through it; readers use the atomic counters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Block(*mut Header);

// SAFETY: a `Block` is an address of a region that lives for the rest of
// the process (blocks are never unmapped) and whose shared fields are
// atomics; the single-writer rule is kept by the callers.
unsafe impl Send for Block {}
// SAFETY: as above.
unsafe impl Sync for Block {}

impl Block {
    /// Checks that the `len` bytes at `base` hold a block this code can
    /// read: magic, layout version, and capacities and offsets that are
    /// exactly what [`Layout::new`] gives for them, all inside `len`.
    /// Nothing past the header is read.
    ///
    /// # Safety
    /// `base..base+len` is readable memory, 64-byte aligned.
    pub unsafe fn validate(base: *const u8, len: usize) -> Result<(Block, Geometry), String> {
        if len < FRAMES_OFFSET {
            return Err(format!("{len} bytes: too short for a block header"));
        }
        // SAFETY: at least a header's bytes, aligned, per the caller; the
        // plain fields are read by value (a torn value fails the checks).
        let h = unsafe { &*(base as *const Header) };
        // SAFETY: as above; volatile so that a hostile writer cannot make
        // a checked field differ from the one used.
        let rd32 = |p: *const u32| unsafe { std::ptr::read_volatile(p) };
        // SAFETY: as above.
        let rd64 = |p: *const u64| unsafe { std::ptr::read_volatile(p) };
        if rd64(&h.magic) != MAGIC {
            return Err("not a perflens block (wrong magic)".into());
        }
        let version = rd32(&h.layout_version);
        if version != LAYOUT_VERSION {
            return Err(format!(
                "written by layout v{version}; this reader reads v{LAYOUT_VERSION}"
            ));
        }
        let node_cap = rd32(&h.node_cap);
        // At most 2^29 nodes: above, the hash table's capacity
        // (`(node_cap * 4).next_power_of_two()`) no longer fits a u32
        // and `Layout::new` would compute a table of 0 slots.
        if !(INTERNAL_NODES + 1..=1 << 29).contains(&node_cap) {
            return Err(format!("node capacity {node_cap} out of range"));
        }
        let expect = Layout::new(node_cap - INTERNAL_NODES, rd32(&h.stack_cap));
        let found = (
            rd32(&h.header_size) as usize,
            rd64(&h.size),
            rd32(&h.table_mask),
            [&h.off_frames, &h.off_table, &h.off_nodes, &h.off_hist].map(|o| rd64(o) as usize),
        );
        let wanted = (
            size_of::<Header>(),
            expect.size as u64,
            expect.table_cap - 1,
            [
                expect.off_frames,
                expect.off_table,
                expect.off_nodes,
                expect.off_hist,
            ],
        );
        if found != wanted || expect.stack_cap != rd32(&h.stack_cap) {
            return Err("block header is inconsistent (sizes or offsets)".into());
        }
        if expect.size > len {
            return Err(format!(
                "block of {} bytes in a file of {len}: truncated",
                expect.size
            ));
        }
        // What was checked, for the reader to use: the header's fields
        // may change after this (a hostile writer), these do not.
        let geometry = Geometry {
            node_cap,
            off_nodes: expect.off_nodes,
            off_hist: expect.off_hist,
        };
        Ok((Block(base as *mut Header), geometry))
    }

    /// Node `i`, at the offset of `g` (see [`Geometry`]).
    ///
    /// # Safety
    /// `g` is this block's ([`Geometry::of`], or from
    /// [`Block::validate`]), `i < g.node_cap`.
    #[inline(always)]
    pub unsafe fn node_in(&self, g: &Geometry, i: u32) -> &Node {
        let off = g.off_nodes + i as usize * size_of::<Node>();
        // SAFETY: in bounds per the caller's contract; all fields atomic.
        unsafe { &*(self.base().add(off) as *const Node) }
    }

    /// Bucket counter `bucket` of node `i`'s histogram `which` (0 =
    /// inclusive time, 1 = exclusive time, 2 = bytes allocated per call),
    /// at the offset of `g`.
    ///
    /// # Safety
    /// As [`Block::node_in`], and `which < HISTS`, `bucket < BUCKETS`.
    #[inline(always)]
    pub unsafe fn bucket_in(
        &self,
        g: &Geometry,
        i: u32,
        which: usize,
        bucket: usize,
    ) -> &AtomicU64 {
        let idx = (i as usize * HISTS + which) * BUCKETS + bucket;
        let off = g.off_hist + idx * 8;
        // SAFETY: in bounds per the caller's contract; 8-byte aligned.
        unsafe { &*(self.base().add(off) as *const AtomicU64) }
    }

    /// The pending histogram entries (see [`Header::pending`]) of a block
    /// of `node_cap` nodes, as element indices, the sink filtered out.
    pub fn pending_in(&self, node_cap: u32) -> [Option<u64>; 2] {
        let sink = Layout::sink(node_cap);
        self.header().pending.each_ref().map(|p| {
            let i = p.load(Ordering::Relaxed);
            (i < sink).then_some(i)
        })
    }

    #[inline(always)]
    pub fn header(&self) -> &'static Header {
        // SAFETY: blocks are never unmapped; the header is initialised in
        // `create` before the block is shared.
        unsafe { &*self.0 }
    }

    /// The block whose header is at `header`.
    ///
    /// # Safety
    /// `header` is the start of a block (a [`Header`] followed by the
    /// regions it describes) that lives for the rest of the process, or
    /// until its owner unmaps it after every user is gone.
    #[inline(always)]
    pub const unsafe fn from_header(header: *mut Header) -> Block {
        Block(header)
    }

    /// The block's header, as a raw pointer (to identify the block, or
    /// for its owner to write the header's plain fields).
    #[inline(always)]
    pub fn header_ptr(&self) -> *mut Header {
        self.0
    }

    /// The first byte of the block.
    #[inline(always)]
    pub fn base(&self) -> *mut u8 {
        self.0 as *mut u8
    }

    /// Frame `i`. Owner thread only.
    ///
    /// # Safety
    /// `i < stack_cap`, and the caller is the owning thread (frames are
    /// not atomics).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn frame(&self, i: u32) -> &mut ShadowFrame {
        let off = self.header().off_frames as usize + i as usize * size_of::<ShadowFrame>();
        // SAFETY: in bounds per the caller's contract; frames are only
        // touched by the owner, one reference at a time.
        unsafe { &mut *(self.base().add(off) as *mut ShadowFrame) }
    }

    /// Table slot `i`. Owner thread only.
    ///
    /// # Safety
    /// `i <= table_mask`, owner thread.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slot(&self, i: u32) -> &mut Slot {
        let off = self.header().off_table as usize + i as usize * size_of::<Slot>();
        // SAFETY: in bounds per the caller's contract; owner-only.
        unsafe { &mut *(self.base().add(off) as *mut Slot) }
    }

    /// Node `i`.
    ///
    /// # Safety
    /// `i < node_cap`.
    #[inline(always)]
    pub unsafe fn node(&self, i: u32) -> &Node {
        let off = self.header().off_nodes as usize + i as usize * size_of::<Node>();
        // SAFETY: in bounds per the caller's contract; all fields atomic.
        unsafe { &*(self.base().add(off) as *const Node) }
    }

    /// Whether the table has room for `n` more keys.
    pub fn table_room(&self, n: u32) -> bool {
        let h = self.header();
        // Half the slots: `table_mask + 1` is a power of two.
        h.table_keys.load(Ordering::Relaxed) + n <= h.table_mask / 2 + 1
    }

    /// Raw pointer to byte offset `off` of the block.
    #[inline(always)]
    pub fn at<T>(&self, off: u64) -> *mut T {
        // SAFETY: offsets come from this block's own header.
        unsafe { self.base().add(off as usize) as *mut T }
    }
}
