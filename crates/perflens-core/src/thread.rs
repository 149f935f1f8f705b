//! Which block belongs to the current thread, the registry of all blocks,
//! and the session generation that says whether recording is on.
//!
//! The hot thread-local ([`Hot`]) is `const`-initialised and has no
//! destructor, so it needs no lazy-init check: its address is one
//! `fs:`-relative computation. It caches, in one cache line, everything a
//! measured call needs: the shadow-stack depth, the session epoch, the
//! mode, and direct pointers into the thread's block (the block itself
//! only holds offsets; the pointers live here, outside it). A second thread-local with a destructor (the exit
//! hook) is touched only once per thread, when its block is created, to
//! learn when the thread exits; its block is then kept (and reported)
//! until the next session starts, when it is recycled for a new thread.
//!
//! Generations: recording is on while the global generation is even. Each
//! block remembers the generation its contents belong to; a thread that
//! finds its block from an older generation resets it itself (single
//! writer), so starting a session never touches another thread's memory.

use crate::block::{Block, BlockWrite, Header, Layout, Node};
use crate::hot::{
    EPOCH, FAST_COUNT, FAST_NONE, FAST_SAMPLED, FAST_TIMED, FAST_TRACE, HOT, Hot, arm_alloc, hot,
    no_memory_tag,
};
use crate::snapshot::Mode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

static MODE: AtomicU32 = AtomicU32::new(crate::block::MODE_TIMED);
static SAMPLE_EVERY: AtomicU32 = AtomicU32::new(1);
static SAMPLE_WARMUP: AtomicU32 = AtomicU32::new(0);
static NODE_CAP: AtomicU32 = AtomicU32::new(perflens_format::vocab::DEFAULT_NODES);
static STACK_CAP: AtomicU32 = AtomicU32::new(perflens_format::vocab::DEFAULT_STACK_DEPTH);

impl Hot {
    fn attach(&mut self, block: Block) {
        let h = block.header();
        self.depth = 1;
        self.epoch = h.epoch.load(Ordering::Relaxed);
        self.sample_every = h.sample_every.load(Ordering::Relaxed);
        self.stack_cap = h.stack_cap;
        let tsc = crate::clock::uses_tsc();
        self.fast = match h.mode.load(Ordering::Relaxed) {
            crate::block::MODE_COUNT => FAST_COUNT,
            _ if !tsc => FAST_NONE,
            crate::block::MODE_SAMPLED => FAST_SAMPLED,
            _ if crate::trace::traced(self.epoch) => FAST_TRACE,
            _ => FAST_TIMED,
        };
        self.table_mask = h.table_mask;
        self.frames = block.at(h.off_frames);
        self.table = block.at(h.off_table);
        self.nodes = block.at(h.off_nodes);
        self.hist = block.at(h.off_hist);
        debug_assert_eq!(self.block(), block);
        crate::heap::thread_attached();
        arm_alloc(self);
    }
}

thread_local! {
    static EXIT_HOOK: ExitHook = const { ExitHook };
}

/// Gates the allocation counters of every registered block, after the
/// session generation changed: each thread's next allocation or free
/// then takes the slow path, which sees the new generation (the gate is
/// a release store after the generation's) and stops counting, or
/// attaches to the new session. The only write to another thread's
/// block. The hook never writes the thresholds, and the owner's slow
/// path swaps them and puts back a gate it finds (see
/// `alloc::set_thresholds`), so a gate is never lost.
fn gate_all() {
    if !crate::barrier::owner_swaps() {
        crate::barrier::process_barrier();
    }
    for e in &registry().live {
        e.block.header().alloc.gate();
    }
}

struct ExitHook;

impl Drop for ExitHook {
    fn drop(&mut self) {
        let _ = HOT.try_with(|h| {
            // SAFETY: owner thread, no other reference alive.
            let hot = unsafe { &mut *h.get() };
            // Its trace chunk may be taken back once it is the oldest.
            crate::trace::seal_current_thread();
            // No flow site records into the block after this.
            crate::flow::forget_last();
            if hot.has_block() {
                // What the thread allocated since its last frame boundary
                // (outside measured functions, or in frames it leaves
                // open) is charged before the thread is marked exited.
                if hot.depth >= 1 {
                    // SAFETY: 1 <= depth <= stack_cap; no other frame
                    // reference is alive.
                    let node = unsafe { crate::frame::top(hot) }.np.node;
                    crate::frame::boundary(hot, node);
                }
                let block = hot.block();
                let live = block.header().live;
                let ended_live = live != 0 && live != crate::published::tag();
                if !ended_live {
                    block.header().exited.store(1, Ordering::Release);
                }
                // Nothing of this thread points into the block from here
                // on (the allocator hook and a sampling signal's handler
                // read the hot state)...
                *hot = Hot::EMPTY;
                hot.exited = 1;
                if ended_live {
                    // ...so a block of an ended live session, whose file
                    // holds that session's final state (kept for readers,
                    // who must see the threads as the final report did)
                    // and which is never reused, is unmapped now.
                    let mut reg = registry();
                    if let Some(i) = reg.live.iter().position(|e| e.block == block) {
                        reg.live.swap_remove(i);
                        // SAFETY: this thread owned it and is exiting, its
                        // hot state no longer points into it, and it is in
                        // no list any more (lock held: no snapshot reads it).
                        unsafe { block.unmap() };
                    }
                }
                return;
            }
            *hot = Hot::EMPTY;
            // Allocations made by later thread-local destructors are not
            // counted, and must not try to set up a new block.
            hot.exited = 1;
        });
    }
}

pub(crate) struct Entry {
    pub block: Block,
    pub name: Option<String>,
}

pub(crate) struct Registry {
    live: Vec<Entry>,
    free: Vec<Block>,
    next_index: u32,
}

impl Registry {
    /// Every block: the threads' and the free ones.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = Block> + '_ {
        self.live
            .iter()
            .map(|e| e.block)
            .chain(self.free.iter().copied())
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    free: Vec::new(),
    next_index: 0,
});

pub(crate) fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` over every registered block.
pub(crate) fn for_each_block(mut f: impl FnMut(&Entry)) {
    for e in &registry().live {
        f(e);
    }
}

/// Makes the current thread's block ready for session `epoch` (running,
/// and not the thread's yet), creating or resetting it: the lifecycle's
/// half of `hot::prepare`, which reaches it through `hooks::attach`.
/// `None` when the thread is exiting or memory could not be had.
fn attach_current_thread(epoch: u32) -> Option<&'static mut Hot> {
    // SAFETY: owner thread; see `active`.
    let hot = unsafe { &mut *hot() };
    if hot.exited != 0 || hot.no_memory == no_memory_tag(epoch) {
        return None;
    }
    // Registering and resetting allocate: not counted.
    let _internal = crate::hot::Internal::enter();
    let layout = Layout::new(
        NODE_CAP.load(Ordering::Relaxed),
        stack_cap_for_current_thread(),
    );
    let block = if !hot.has_block() {
        // Learn about thread exit; fails once the thread is being torn
        // down, in which case nothing is recorded for it from now on.
        if EXIT_HOOK.try_with(|_| ()).is_err() {
            hot.exited = 1;
            return None;
        }
        create_for_current_thread(layout)
    } else if !fits(hot.block(), layout) {
        // An earlier session's block with other capacities: this
        // session's settings apply to every thread. Without memory for
        // a new one, the old one still serves.
        replace_for_current_thread(hot.block(), layout).or(Some(hot.block().header_ptr()))
    } else {
        Some(hot.block().header_ptr())
    };
    // SAFETY: a block of this thread's, created or kept above.
    let Some(block) = block.map(|h| unsafe { Block::from_header(h) }) else {
        hot.no_memory = no_memory_tag(epoch);
        return None;
    };
    if block.header().epoch.load(Ordering::Relaxed) != epoch {
        block.reset(
            epoch,
            MODE.load(Ordering::Relaxed),
            SAMPLE_EVERY.load(Ordering::Relaxed),
            SAMPLE_WARMUP.load(Ordering::Relaxed),
        );
    }
    hot.attach(block);
    Some(hot)
}

/// Whether `block` has the capacities of `layout`.
/// A block of the running live session's files (or a private one when
/// no live session runs) fits; no other does.
fn fits(block: Block, layout: Layout) -> bool {
    let h = block.header();
    h.node_cap == layout.node_cap
        && h.stack_cap == layout.stack_cap
        && h.live == crate::published::tag()
}

/// Takes a block nobody uses any more: a private one is kept for reuse,
/// a live one (whose file belongs to an ended live session) unmapped.
fn retire(reg: &mut Registry, block: Block) {
    if block.header().live == 0 {
        reg.free.push(block);
    } else {
        // SAFETY: its thread exited or moved to another block, and it is
        // in no list (registry lock held): nothing reads or writes it.
        unsafe { block.unmap() };
    }
}

/// The shadow-stack capacity for the current thread: the session's
/// `stack_depth`, or with 0 (the default) one that the thread's own
/// stack cannot outgrow.
fn stack_cap_for_current_thread() -> u32 {
    match STACK_CAP.load(Ordering::Relaxed) {
        0 => auto_stack_cap(perflens_sys::thread::stack_size()),
        n => n,
    }
}

/// Frames for a thread whose stack is `stack_bytes` long (`None` if
/// unknown). A measured call takes at least 16 bytes of native stack
/// (the return address, and the guard's frame index kept across the
/// call, with the stack 16-byte aligned at every call), so
/// `stack_bytes / 16` frames cannot run out before the native stack
/// does. Rounded up to a power of two so that threads with equal stacks
/// can reuse each other's blocks; at least [`MIN_AUTO_FRAMES`] and at
/// most [`MAX_AUTO_FRAMES`].
///
/// Cost: frames are 64 bytes of address space reserved with
/// `MAP_NORESERVE`, so a 2 MiB thread stack reserves 8 MiB, and only the
/// pages of frames the thread reaches are ever backed by memory.
pub(crate) fn auto_stack_cap(stack_bytes: Option<usize>) -> u32 {
    let frames = stack_bytes.map_or(DEFAULT_AUTO_FRAMES, |b| b / 16);
    (frames.clamp(MIN_AUTO_FRAMES, MAX_AUTO_FRAMES) as u32).next_power_of_two()
}

/// At least this many frames (64 KiB of address space).
const MIN_AUTO_FRAMES: usize = 1 << 10;
/// When the thread's stack size is unknown: an 8 MiB stack's worth.
const DEFAULT_AUTO_FRAMES: usize = 1 << 19;
/// At most this many frames (1 GiB of address space, for a 256 MiB
/// stack or larger; deeper calls are counted as dropped).
const MAX_AUTO_FRAMES: usize = 1 << 24;

/// Smallest layout tried when a thread's block cannot be mapped: 64
/// contexts and 1,024 frames, about 2 MiB.
fn fallback(layout: Layout) -> Layout {
    Layout::new(
        (layout.node_cap - crate::block::INTERNAL_NODES).min(64),
        layout.stack_cap.min(1024),
    )
}

/// Maps a block with `layout`, or failing that (address space exhausted)
/// a small one.
/// While a live session runs, the block is a file of that session (see
/// `publish.rs`), unless that fails.
fn create_block(layout: Layout, index: u32, tid: u64, name: Option<&str>) -> Option<Block> {
    crate::hooks::live_block(layout, index, tid, name)
        .or_else(|| Block::create(layout, index, tid))
        .or_else(|| Block::create(fallback(layout), index, tid))
}

/// Gives the current thread a new block with `layout` in place of `old`,
/// which becomes free for reuse (no reader looks at it: it holds an
/// earlier session's data, and that session's final snapshot is taken
/// before a new session can start).
fn replace_for_current_thread(old: Block, layout: Layout) -> Option<*mut Header> {
    let mut reg = registry();
    let (index, tid) = (old.header().thread_index, old.header().tid);
    let name = reg
        .live
        .iter()
        .find(|e| e.block == old)
        .and_then(|e| e.name.clone());
    let new = take_free(&mut reg, layout, index, tid)
        .or_else(|| create_block(layout, index, tid, name.as_deref()))?;
    if let Some(e) = reg.live.iter_mut().find(|e| e.block == old) {
        e.block = new;
    }
    retire(&mut reg, old);
    Some(new.header_ptr())
}

/// A free block with `layout`'s capacities, made ready for thread `tid`.
fn take_free(reg: &mut Registry, layout: Layout, index: u32, tid: u64) -> Option<Block> {
    let i = reg.free.iter().position(|&b| fits(b, layout))?;
    let b = reg.free.swap_remove(i);
    // SAFETY: a free block's thread has exited (or moved to another
    // block) and no longer writes it; nobody else does.
    unsafe {
        let h = b.header_ptr();
        (*h).thread_index = index;
        (*h).tid = tid;
    }
    b.header().exited.store(0, Ordering::Relaxed);
    b.header().excluded.store(0, Ordering::Relaxed);
    b.header().epoch.store(0, Ordering::Relaxed);
    Some(b)
}

fn create_for_current_thread(layout: Layout) -> Option<*mut Header> {
    let name = perflens_sys::thread::name();
    let tid = perflens_sys::thread::tid();
    let block = {
        let mut reg = registry();
        let index = reg.next_index;
        reg.next_index += 1;
        let recycled = take_free(&mut reg, layout, index, tid);
        let block = match recycled {
            Some(b) => b,
            None => create_block(layout, index, tid, name.as_deref())?,
        };
        reg.live.push(Entry { block, name });
        block
    };
    Some(block.header_ptr())
}

/// Starts generation `epoch` with the given settings.
pub(crate) fn activate(epoch: u32, mode: Mode, warmup: u32, node_cap: u32, stack_cap: u32) {
    let (m, every) = mode_code(mode);
    MODE.store(m, Ordering::Relaxed);
    SAMPLE_EVERY.store(every, Ordering::Relaxed);
    SAMPLE_WARMUP.store(warmup, Ordering::Relaxed);
    NODE_CAP.store(node_cap, Ordering::Relaxed);
    STACK_CAP.store(stack_cap, Ordering::Relaxed);
    {
        // Blocks of threads that exited during an earlier session can be
        // handed to new threads now.
        let mut reg = registry();
        let mut i = 0;
        while i < reg.live.len() {
            if reg.live[i].block.header().exited.load(Ordering::Acquire) == 1 {
                let e = reg.live.swap_remove(i);
                retire(&mut reg, e.block);
            } else {
                i += 1;
            }
        }
        reg.live.sort_by_key(|e| e.block.header().thread_index);
    }
    crate::alloc::reset();
    crate::hot::UNRECORDED.store(0, Ordering::Relaxed);
    crate::barrier::init();
    crate::hot::set_attach(attach_current_thread);
    EPOCH.store(epoch, Ordering::Release);
    gate_all();
}

/// Stops recording.
pub(crate) fn deactivate(epoch: u32) {
    if EPOCH
        .compare_exchange(epoch, epoch | 1, Ordering::AcqRel, Ordering::Relaxed)
        .is_ok()
    {
        gate_all();
    }
}

/// The current session generation (odd if none).
pub(crate) fn generation() -> u32 {
    EPOCH.load(Ordering::Acquire)
}

/// The calling context a CPU sample taken now on this thread belongs to:
/// `path index + 1` of the innermost measured frame, or 0 outside any
/// measured function or when no session records.
///
/// Async-signal-safe: meant to be called from a sampling signal handler
/// that interrupted this very thread. It reads the thread's hot state and
/// top frame with plain loads and allocates nothing. Stores on the hot
/// path write a frame before publishing the new depth (with a compiler
/// fence), so the handler never sees a depth whose frame is not written.
pub fn sample_context() -> u64 {
    match top_node() {
        Some((nodes, node)) => {
            // SAFETY: `top_node` validated the pointer and index.
            let path = unsafe { &*nodes.add(node as usize) }
                .path
                .load(Ordering::Relaxed)
                & !crate::block::NESTED_NODE;
            if path == perflens_format::vocab::ROOT_PATH {
                0
            } else {
                u64::from(path) + 1
            }
        }
        None => 0,
    }
}

/// Charges a CPU sample of `weight_ns` taken now on this thread to the
/// node of its top frame (`Node::cpu_samples`, `Node::cpu_ns`), which a
/// live reader shows; on a thread without a block of the running
/// session, to the live session's count of samples outside measured
/// code.
///
/// Async-signal-safe like [`sample_context`], and for the same reasons:
/// meant to be called from the sampling signal handler that interrupted
/// this very thread, once the sample is stored. The two counters are
/// written by this handler only (the interrupted code never writes
/// them), so a plain load and store loses nothing.
pub fn charge_sample(weight_ns: u64) {
    match top_node() {
        Some((nodes, node)) => {
            // SAFETY: `top_node` validated the pointer and index.
            let n = unsafe { &*nodes.add(node as usize) };
            crate::block::bump(&n.cpu_samples, 1);
            crate::block::bump(&n.cpu_ns, weight_ns);
        }
        None => crate::published::outside_sample(weight_ns),
    }
}

/// The node array of this thread's block and the index of the node of
/// its top frame, when it has a block of the running session.
/// Async-signal-safe: see [`sample_context`].
fn top_node() -> Option<(*const Node, u32)> {
    let hot = hot();
    // SAFETY: `hot` is this thread's TLS slot (a const-initialised
    // thread-local without destructor: no lazy initialisation, no
    // allocation). The interrupted code may hold a `&mut Hot`; we only
    // read through raw pointers with volatile loads, which the
    // interrupted code cannot observe, and validate everything before
    // following a pointer.
    unsafe {
        let epoch = std::ptr::read_volatile(&raw const (*hot).epoch);
        if epoch == 0 || epoch != EPOCH.load(Ordering::Relaxed) {
            return None;
        }
        let depth = std::ptr::read_volatile(&raw const (*hot).depth);
        let cap = std::ptr::read_volatile(&raw const (*hot).stack_cap);
        let frames = std::ptr::read_volatile(&raw const (*hot).frames);
        let nodes = std::ptr::read_volatile(&raw const (*hot).nodes);
        if depth == 0 || depth > cap || frames.is_null() || nodes.is_null() {
            return None;
        }
        // The frame names a context; its node names the path the call is
        // charged to (a nested call of a recursion is charged to the path
        // where the function is outermost).
        let node = std::ptr::read_volatile(&raw const (*frames.add(depth as usize - 1)).np.node);
        if node >= (*crate::block::header_of(frames)).node_cap {
            return None;
        }
        Some((nodes as *const Node, node))
    }
}

/// A mode's `block::MODE_*` code and sampling period.
pub(crate) fn mode_code(mode: Mode) -> (u32, u32) {
    match mode {
        Mode::Timed => (crate::block::MODE_TIMED, 1),
        Mode::Count => (crate::block::MODE_COUNT, 1),
        Mode::Sampled { every } => (crate::block::MODE_SAMPLED, every.max(1)),
    }
}
