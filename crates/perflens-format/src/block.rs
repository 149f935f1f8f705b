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
//! +--------------------+ 0
//! | Header             |  magic, layout version, capacities, offsets,
//! |                    |  session generation, counters, allocation totals
//! +--------------------+ off_frames
//! | Frame[stack_cap]   |  shadow stack (64 B each); frame 0 is the root sentinel
//! +--------------------+ off_table
//! | Slot[table_cap]    |  open addressing: (parent context, callsite) -> node
//! |                    |  and context; (path, nested) -> node
//! +--------------------+ off_nodes
//! | Node[node_cap]     |  128-byte counters; node 0 collects overflow,
//! |                    |  node 1 is the root (allocations outside frames)
//! +--------------------+ off_hist
//! | u64[node_cap][3][BUCKETS]  inclusive time, exclusive time and
//! |                    |  bytes-per-call histograms
//! +--------------------+ size
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

use crate::flow::{Counter, Peak};
use crate::histogram::BUCKETS;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

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

/// Per-thread allocation state, updated by the owner on every allocation
/// and free while the counting allocator is installed: running totals
/// since the session started (the thread's exact figures at any time)
/// and the peak bookkeeping. One cache line, the only one the hook
/// touches.
///
/// Writers: the owner, and a session starting or ending, which gates the
/// thresholds of every block (see [`ThreadAlloc::gate`]). The hook only
/// reads the thresholds; the owner's slow path swaps them, so that it
/// sees (and puts back) a gate that landed just before.
#[repr(C, align(64))]
pub struct ThreadAlloc {
    /// Bytes allocated by this thread so far this session (kept with the
    /// `alloc` feature). A frame saves it on entry, so a call's inclusive
    /// allocation is the difference.
    pub allocated: AtomicU64,
    /// Allocations made by this thread so far this session (kept with
    /// the `alloc` feature, which attributes at frame boundaries).
    pub allocs: AtomicU64,
    /// Bytes allocated minus bytes freed by this thread (negative when it
    /// freed memory other threads allocated). Bytes freed are
    /// `allocated - live`.
    pub live: AtomicI64,
    /// Frees made by this thread so far this session (kept with the
    /// `alloc` feature).
    pub frees: AtomicU64,
    /// When an allocation would take `live` above this (a new peak, or far
    /// enough above `published`)...
    pub above: AtomicI64,
    /// ...or a free below this (far enough below `published`), the hook
    /// takes its slow path instead, which records and publishes.
    pub below: AtomicI64,
    /// Peak live bytes: the most `live` rose above its lowest point so
    /// far (`AllocMark::min_live`). A thread that frees memory allocated
    /// elsewhere (another thread's, or from before the session) has
    /// negative net live bytes; counting from their lowest point keeps
    /// its own allocations' peak. Exact for a thread that frees only what
    /// it allocated (its lowest point is 0); otherwise a lower bound of
    /// what it held at once.
    pub peak: AtomicU64,
    /// `live` as last added to the process-wide counter.
    pub published: AtomicI64,
}

/// [`ThreadAlloc::above`] of gated counters: every allocation goes to the
/// hook's slow path.
pub const GATE_ABOVE: i64 = i64::MIN;
/// [`ThreadAlloc::below`] of gated counters: every free goes to the
/// hook's slow path.
pub const GATE_BELOW: i64 = i64::MAX;

/// [`ThreadAlloc`]'s four running totals as they were at this thread's
/// last frame boundary (with the `alloc` feature): everything up to
/// there has been charged to nodes; what the totals moved since belongs
/// to the frame now on top of the stack (see `frame::boundary`). Same
/// order as the totals and as `Node`'s allocation counters.
#[repr(C, align(64))]
pub struct AllocMark {
    pub allocated: AtomicU64,
    pub allocs: AtomicU64,
    pub freed: AtomicU64,
    pub frees: AtomicU64,
    /// `allocs + frees` of these marks: both only grow (mod 2^64), so a
    /// boundary sees whether anything moved with one comparison.
    pub ops: AtomicU64,
    /// The lowest `ThreadAlloc::live` so far (0 at most): see
    /// `ThreadAlloc::peak`. Written by the hook's slow path, which every
    /// new low reaches (`ThreadAlloc::below`).
    pub min_live: AtomicI64,
    /// The node of the frame on top of the thread's stack, for snapshots
    /// taken by other threads: what the totals moved past the marks
    /// belongs to it. Every change of the top frame (a push, a pop, frames
    /// discarded, a reset) stores it, after charging what was pending and
    /// before anything moves the totals again (see `frame::note_top`).
    pub top: AtomicU32,
}

impl ThreadAlloc {
    /// Counters whose every update takes the hook's slow path.
    pub const fn gated() -> ThreadAlloc {
        ThreadAlloc {
            allocated: AtomicU64::new(0),
            allocs: AtomicU64::new(0),
            live: AtomicI64::new(0),
            frees: AtomicU64::new(0),
            above: AtomicI64::new(GATE_ABOVE),
            below: AtomicI64::new(GATE_BELOW),
            peak: AtomicU64::new(0),
            published: AtomicI64::new(0),
        }
    }

    /// Sends the next allocation and free counted here to the hook's slow
    /// path (release: whoever sees the gate sees what preceded it).
    #[inline]
    pub fn gate(&self) {
        self.above.store(GATE_ABOVE, Ordering::Release);
        self.below.store(GATE_BELOW, Ordering::Release);
    }

    /// The four running totals, in [`AllocMark`]'s order (bytes freed
    /// derived from the live bytes).
    #[inline(always)]
    pub fn totals(&self) -> [u64; 4] {
        let allocated = self.allocated.load(Ordering::Relaxed);
        let freed = allocated.wrapping_sub(self.live.load(Ordering::Relaxed) as u64);
        [
            allocated,
            self.allocs.load(Ordering::Relaxed),
            freed,
            self.frees.load(Ordering::Relaxed),
        ]
    }

    /// Bytes allocated minus bytes freed by this thread.
    #[inline(always)]
    pub fn live(&self) -> i64 {
        self.live.load(Ordering::Relaxed)
    }
}

impl AllocMark {
    /// The four marks.
    #[inline(always)]
    pub fn counters(&self) -> [&AtomicU64; 4] {
        [&self.allocated, &self.allocs, &self.freed, &self.frees]
    }
}

pub const MODE_TIMED: u32 = 0;
pub const MODE_COUNT: u32 = 1;
pub const MODE_SAMPLED: u32 = 2;

/// A node index and the path it stands for, copied as one 8-byte word
/// from a table slot into a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct NodePath {
    pub node: u32,
    pub path: u32,
}

/// `Frame::timed`: this call is not timed.
pub const UNTIMED: u32 = 0;
/// `Frame::timed`: timed, `start` is a TSC reading.
pub const TIMED_TSC: u32 = 1;
/// `Frame::timed`: timed, `start` is an `Instant` reading (slow path).
pub const TIMED_INSTANT: u32 = 2;
/// `Frame::timed` flag, or-ed to one of the values above: the frame is a
/// nested call of a recursion (see `paths.rs`). Its node counts the
/// open nested frames, so such frames always leave through the slow
/// path: neither inlined exit test (`UNTIMED`, `TIMED_TSC`) matches.
pub const NESTED_FRAME: u32 = 4;
/// `Frame::timed` flag, or-ed to the clock part of the frame below: the
/// frame of an await site (see `awaits.rs`), pushed while an awaited
/// future is polled. It names the site's context (children land under
/// the site) and its parent's node (allocations and CPU samples stay the
/// parent's). It is never a guard's frame, so neither inlined exit test
/// sees it; it never has [`NESTED_FRAME`].
pub const AWAIT_FRAME: u32 = 8;
/// `Frame::timed` flag, or-ed to [`TIMED_TSC`]: a guard's frame in trace
/// mode, whose exit writes an event. Neither inlined exit test matches:
/// it leaves through the slow path.
pub const TRACE_FRAME: u32 = 16;
/// The clock part of `Frame::timed`.
pub const TIMED_MASK: u32 = 3;

/// Set in `Node::path` for the node of a path's nested calls.
pub const NESTED_NODE: u32 = 1 << 31;

/// One shadow-stack entry: one cache line, so a push and the pop that
/// follows touch a single line.
#[repr(C, align(64))]
pub struct Frame {
    /// This call's node and path.
    pub np: NodePath,
    /// [`UNTIMED`], [`TIMED_TSC`] or [`TIMED_INSTANT`].
    pub timed: u32,
    /// Tagged callsite id (see [`tag`]) of the last child looked up under
    /// this frame, 0 if none since the push. A loop calling one measured
    /// function finds its node here without probing the table.
    pub cache_cs: u32,
    /// Node and path of that child.
    pub cache_np: NodePath,
    /// Clock at entry (meaningless when this call is not timed).
    pub start: u64,
    /// Measured time of children run inside this frame.
    pub child: u64,
    /// The thread's `ThreadAlloc::allocated` at entry (with the `alloc`
    /// feature): the call's inclusive allocation is the difference at
    /// exit.
    pub alloc_start: u64,
}

impl Frame {
    /// Path of this frame's node.
    #[inline(always)]
    pub fn path(&self) -> u32 {
        self.np.path
    }
}

/// One table slot. Key 0 is empty: real keys always have [`TAG`] set.
#[repr(C)]
pub struct Slot {
    pub key: u64,
    pub np: NodePath,
}

/// Counters of one calling context on this thread. Times are ticks.
#[repr(C, align(64))]
pub struct Node {
    pub path: AtomicU32,
    /// Owner-only countdown for sampled timing: calls left until the
    /// next timed one, or, at [`WARMUP`] and above, in the warm-up, where
    /// every call is timed (`WARMUP + k`: k more warm-up calls after the
    /// next one). See [`warmup_countdown`] and `frame::decide_timed`.
    pub countdown: AtomicU32,
    /// Untimed calls (count-only, or not chosen by sampled timing). Each
    /// timed call is an entry of the inclusive histogram instead, which
    /// saves the timed path a counter.
    pub calls: AtomicU64,
    pub total: AtomicU64,
    pub self_: AtomicU64,
    pub busy: AtomicU64,
    pub polls: AtomicU64,
    pub cancelled: AtomicU64,
    /// Timed futures among `cancelled`.
    pub cancelled_timed: AtomicU64,
    // -- second cache line: allocation counters (exclusive), in
    // `AllocMark`'s order.
    pub alloc_bytes: AtomicU64,
    pub alloc_count: AtomicU64,
    pub free_bytes: AtomicU64,
    pub free_count: AtomicU64,
    /// Wall time (creation to drop) of the timed futures dropped before
    /// completion; not in `total`.
    pub cancelled_wall: AtomicU64,
    /// Nested nodes only: frames of this node now on the stack. (A flow
    /// site's node gives this and the others other meanings: see
    /// [`Node::counter`].)
    pub rec_open: AtomicU32,
    /// Nested nodes only: the deepest recursion seen, counting the
    /// outermost frame (so at least 2 once a nested call ran).
    pub rec_max: AtomicU32,
    /// CPU samples taken while this node's frame was on top of the
    /// thread's stack. Written only by the CPU sampler's signal handler
    /// on the owning thread (see `thread::charge_sample`), never by the
    /// code it interrupts, so a plain load and store cannot lose one.
    pub cpu_samples: AtomicU64,
    /// CPU time those samples stand for, in ns.
    pub cpu_ns: AtomicU64,
}

const _: () = assert!(size_of::<Node>() == 128);
const _: () = assert!(size_of::<ThreadAlloc>() == 64);

impl Node {
    /// The counter a flow site's figure lives in ([`crate::flow`]
    /// names them: `node.counter(channel::SENT)`). The counter is a constant
    /// at every call, so this is the field itself once inlined.
    #[inline(always)]
    pub fn counter(&self, counter: Counter) -> &AtomicU64 {
        match counter {
            Counter::Calls => &self.calls,
            Counter::Total => &self.total,
            Counter::Self_ => &self.self_,
            Counter::Busy => &self.busy,
            Counter::Polls => &self.polls,
            Counter::Cancelled => &self.cancelled,
            Counter::CancelledTimed => &self.cancelled_timed,
            Counter::CancelledWall => &self.cancelled_wall,
            Counter::AllocBytes => &self.alloc_bytes,
            Counter::AllocCount => &self.alloc_count,
            Counter::FreeBytes => &self.free_bytes,
            Counter::FreeCount => &self.free_count,
        }
    }

    /// [`Node::counter`] for the 32-bit records.
    #[inline(always)]
    pub fn peak(&self, peak: Peak) -> &AtomicU32 {
        match peak {
            Peak::Max => &self.rec_max,
            Peak::Open => &self.rec_open,
        }
    }
}

/// `Node::countdown` at and above this: the node is in its warm-up.
pub const WARMUP: u32 = 1 << 31;

/// A new node's countdown: in the warm-up for its first `warmup` calls,
/// or ready to time its first call and then one in N when there is none.
pub fn warmup_countdown(warmup: u32) -> u32 {
    match warmup {
        0 => 0,
        w => WARMUP + (w - 1).min(WARMUP - 1),
    }
}

/// Adds to a single-writer counter without a locked instruction.
#[inline(always)]
pub fn bump(c: &AtomicU64, v: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

/// [`bump`] for a 32-bit counter.
#[inline(always)]
pub fn bump32(c: &AtomicU32, v: u32) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

/// The header of the block whose frame 0 is at `frames`.
#[inline(always)]
pub fn header_of(frames: *mut Frame) -> *const Header {
    frames.wrapping_byte_sub(FRAMES_OFFSET) as *const Header
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
        let off_table = align_up(off_frames + stack_cap as usize * size_of::<Frame>(), 64);
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
    pub unsafe fn frame(&self, i: u32) -> &mut Frame {
        let off = self.header().off_frames as usize + i as usize * size_of::<Frame>();
        // SAFETY: in bounds per the caller's contract; frames are only
        // touched by the owner, one reference at a time.
        unsafe { &mut *(self.base().add(off) as *mut Frame) }
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

/// Set in every tagged callsite id and so in every real key: no key is 0
/// (the empty slot), and no tagged id is 0 (the empty frame cache).
/// Callsite ids stay below `2^31 - 1`; `u32::MAX` is the tagged value of
/// a callsite not registered yet, which matches no key.
pub const TAG: u32 = 1 << 31;

/// The tagged form of callsite id `id`.
#[inline(always)]
pub const fn tag(id: u32) -> u32 {
    id | TAG
}

/// Table key of `(parent context, tagged callsite id)`: a call that is
/// not a nested call of a recursion, found by the inlined fast path.
#[inline(always)]
pub fn key(parent: u32, tagged: u32) -> u64 {
    ((parent as u64) << 32) | tagged as u64
}

/// Set in the low word of the key of a nested call: [`TAG`] is clear, so
/// the fast path never finds it and such calls take the slow path.
/// Callsite ids stay below this.
pub const NESTED_KEY: u32 = 1 << 30;

/// Table key of `(parent context, callsite id)` for a call that is nested
/// in a frame of the same function (see `paths.rs`).
#[inline(always)]
pub fn nested_key(parent: u32, id: u32) -> u64 {
    ((parent as u64) << 32) | (id | NESTED_KEY) as u64
}

/// Table key of the node of `path` (its nested calls' node if `nested`).
/// The low word is 1 or 2: neither [`TAG`] nor [`NESTED_KEY`] is set,
/// and the key is never 0.
#[inline(always)]
pub fn node_key(path: u32, nested: bool) -> u64 {
    ((path as u64) << 32) | (1 + nested as u64)
}
