//! A block's allocation counters: the thread's running totals, which the
//! counting allocator's hook moves on every allocation and free
//! ([`ThreadAlloc`], one cache line), and where the last frame boundary
//! left them ([`AllocMark`]).

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

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

    /// Counters whose every update stays on the hook's fast path (no
    /// threshold is ever crossed): a thread's count of its own
    /// allocations over a scope, where no peak or publishing is kept.
    pub const fn open() -> ThreadAlloc {
        ThreadAlloc {
            allocated: AtomicU64::new(0),
            allocs: AtomicU64::new(0),
            live: AtomicI64::new(0),
            frees: AtomicU64::new(0),
            above: AtomicI64::new(i64::MAX),
            below: AtomicI64::new(i64::MIN),
            peak: AtomicU64::new(0),
            published: AtomicI64::new(0),
        }
    }

    /// Adds what `other` counted to these totals (the owner thread only).
    pub fn add(&self, other: &ThreadAlloc) {
        for (a, b) in [
            (&self.allocated, &other.allocated),
            (&self.allocs, &other.allocs),
            (&self.frees, &other.frees),
        ] {
            a.store(
                a.load(Ordering::Relaxed)
                    .wrapping_add(b.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
        }
        self.live
            .store(self.live().wrapping_add(other.live()), Ordering::Relaxed);
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

const _: () = assert!(size_of::<ThreadAlloc>() == 64);
