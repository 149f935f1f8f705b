//! What a block's shadow stack, node table and nodes hold: a frame per
//! measured call in progress ([`ShadowFrame`]), the table's slots and their
//! keys, and a node's counters ([`Node`]); with the single-writer
//! counter updates ([`bump`]) the owner uses on them.

use super::{FRAMES_OFFSET, Header};
use crate::flow::{Counter, Peak};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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

/// `ShadowFrame::timed`: this call is not timed.
pub const UNTIMED: u32 = 0;
/// `ShadowFrame::timed`: timed, `start` is a TSC reading.
pub const TIMED_TSC: u32 = 1;
/// `ShadowFrame::timed`: timed, `start` is an `Instant` reading (slow path).
pub const TIMED_INSTANT: u32 = 2;
/// `ShadowFrame::timed` flag, or-ed to one of the values above: the frame is a
/// nested call of a recursion (see `paths.rs`). Its node counts the
/// open nested frames, so such frames always leave through the slow
/// path: neither inlined exit test (`UNTIMED`, `TIMED_TSC`) matches.
pub const NESTED_FRAME: u32 = 4;
/// `ShadowFrame::timed` flag, or-ed to the clock part of the frame below: the
/// frame of an await site (see `awaits.rs`), pushed while an awaited
/// future is polled. It names the site's context (children land under
/// the site) and its parent's node (allocations and CPU samples stay the
/// parent's). It is never a guard's frame, so neither inlined exit test
/// sees it; it never has [`NESTED_FRAME`].
pub const AWAIT_FRAME: u32 = 8;
/// `ShadowFrame::timed` flag, or-ed to [`TIMED_TSC`]: a guard's frame in trace
/// mode, whose exit writes an event. Neither inlined exit test matches:
/// it leaves through the slow path.
pub const TRACE_FRAME: u32 = 16;
/// The clock part of `ShadowFrame::timed`.
pub const TIMED_MASK: u32 = 3;

/// Set in `Node::path` for the node of a path's nested calls.
pub const NESTED_NODE: u32 = 1 << 31;

/// One shadow-stack entry: one cache line, so a push and the pop that
/// follows touch a single line.
#[repr(C, align(64))]
pub struct ShadowFrame {
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

impl ShadowFrame {
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
pub fn header_of(frames: *mut ShadowFrame) -> *const Header {
    frames.wrapping_byte_sub(FRAMES_OFFSET) as *const Header
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
