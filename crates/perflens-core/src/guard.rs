//! The guard `#[measure]` puts at the top of a sync function.

use crate::block::{ShadowFrame, TIMED_TSC, TRACE_FRAME, UNTIMED, bump};
use crate::callsite::Callsite;
use crate::frame;
use crate::hot::{self, FAST_COUNT, FAST_SAMPLED, FAST_TIMED, FAST_TRACE};
use crate::snapshot::CallsiteKind;
use crate::trace::{self, SPAN_BEGIN, SPAN_END, TraceEvent};
use perflens_sys::arch;
use std::sync::atomic::{Ordering, compiler_fence};

/// Measures the enclosing scope: pushes a frame on creation, records the
/// call when dropped (also when unwinding from a panic).
///
/// Cost, measured by `perflens-bench` (see docs/overhead.md): a timed call adds
/// about two clock reads; a count-only call a few nanoseconds.
#[must_use = "the guard measures until it is dropped"]
pub struct Guard {
    /// Index of our frame, or [`INERT`] when this call is not recorded.
    /// Holding the index (not a pointer or an epoch) keeps the guard in
    /// one register; see `Drop` for why it is enough.
    depth: u32,
}

/// `INERT + 1` is `u32::MAX`, a depth no stack reaches.
const INERT: u32 = u32::MAX - 1;
/// A call counted by an `alloc::count` scope (no session recording the
/// thread): depth `SCOPED_BASE - i` for the scope's call `i`, below
/// [`INERT`] and far above any stack.
#[cfg(feature = "alloc")]
const SCOPED_BASE: u32 = INERT - 1;
#[cfg(feature = "alloc")]
const SCOPED_LOW: u32 = SCOPED_BASE - crate::scope::SCOPE_CALL_DEPTH;

impl Guard {
    /// Enters `callsite` on the current thread.
    ///
    /// The common case is inlined into the measured function and calls
    /// nothing: recording is on, the stack has room, the child's node is
    /// known, and the clock (if any) is the TSC. Everything else goes to
    /// one out-of-line call.
    #[inline(always)]
    pub fn enter(callsite: &'static Callsite) -> Guard {
        // SAFETY: owner thread; the reference is not held across a call
        // that could take another one.
        let hot = unsafe { &mut *hot::hot() };
        if hot::is_current(hot) {
            let d = hot.depth;
            if d < hot.stack_cap {
                // One load of the frame area for the whole path: the
                // stores below could alias the hot state for all the
                // compiler knows, and would reload it each time.
                let frames = hot.frames;
                // What was allocated since the last boundary is the
                // parent's (frame d - 1, on top).
                frame::boundary_top_at(frames);
                // SAFETY: 1 <= d (attached) and d < stack_cap; frames d-1
                // and d are distinct and no other reference to them is
                // alive.
                let (parent, f) = unsafe {
                    (
                        &mut *frames.add(d as usize - 1),
                        &mut *frames.add(d as usize),
                    )
                };
                if let Some(np) = frame::find_child(hot, parent, callsite.tagged()) {
                    let timed = match hot.fast {
                        FAST_COUNT => UNTIMED,
                        FAST_TIMED => TIMED_TSC,
                        FAST_SAMPLED => {
                            if frame::decide_timed(hot, np.node, parent) {
                                TIMED_TSC
                            } else {
                                UNTIMED
                            }
                        }
                        // Only trace mode and the `Instant` clock come here.
                        FAST_TRACE => return Guard::enter_traced(hot, np),
                        _ => return Guard::enter_slow(callsite),
                    };
                    f.np = np;
                    f.timed = timed;
                    f.cache_cs = 0;
                    frame::note_top_at(frames, np.node);
                    #[cfg(feature = "alloc")]
                    {
                        f.alloc_start = frame::alloc_mark_at(frames);
                    }
                    if timed != UNTIMED {
                        f.child = 0;
                        f.start = arch::read_tsc();
                    }
                    // A sampling signal handler reads the frame at
                    // depth - 1: write the frame before the depth.
                    compiler_fence(Ordering::Release);
                    hot.depth = d + 1;
                    return Guard { depth: d };
                }
            }
        }
        Guard::enter_slow(callsite)
    }

    /// [`Guard::enter`]'s inlined path in trace mode (its node known, the
    /// stack with room), out of line: the frame is timed with the TSC
    /// and marked [`TRACE_FRAME`], and its begin is written to the trace.
    #[inline(never)]
    fn enter_traced(hot: &mut hot::Hot, np: crate::block::NodePath) -> Guard {
        let d = hot.depth;
        let frames = hot.frames;
        // SAFETY: the caller checked 1 <= d < stack_cap (attached); frame
        // d is above the top, no reference to it is alive.
        let f = unsafe { &mut *frames.add(d as usize) };
        f.np = np;
        f.timed = TIMED_TSC | TRACE_FRAME;
        f.cache_cs = 0;
        frame::note_top_at(frames, np.node);
        #[cfg(feature = "alloc")]
        {
            f.alloc_start = frame::alloc_mark_at(frames);
        }
        f.child = 0;
        f.start = arch::read_tsc();
        let start = f.start;
        // The frame before the depth, as in `enter`.
        compiler_fence(Ordering::Release);
        hot.depth = d + 1;
        trace::emit(
            hot.epoch,
            trace::owner(hot),
            TraceEvent::new(SPAN_BEGIN, np.node, start, [0, 0]),
        );
        Guard { depth: d }
    }

    #[cold]
    #[inline(never)]
    fn enter_slow(callsite: &'static Callsite) -> Guard {
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            hot::count_unrecorded();
            // No session records this thread: an `alloc::count` scope may
            // want the call's allocations.
            #[cfg(feature = "alloc")]
            if let Some(i) = crate::scope::scope_call_enter(callsite) {
                return Guard {
                    depth: SCOPED_BASE - i,
                };
            }
            return Guard::INERT;
        };
        let id = callsite.id(CallsiteKind::Sync);
        // SAFETY: owner thread; the only frame reference alive here.
        let parent = unsafe { frame::top(hot) };
        let to = frame::find_nested(hot, parent.path(), id)
            .unwrap_or_else(|| frame::resolve(hot, parent.path(), id));
        let timed = frame::decide_timed(hot, to.np.node, parent);
        match frame::push(hot, to, timed) {
            Some((f, depth)) => {
                if hot.fast == FAST_TRACE {
                    // SAFETY: the frame just pushed, below hot.depth;
                    // owner thread, no other reference to it alive.
                    let f = unsafe { &mut *f };
                    f.timed |= TRACE_FRAME;
                    trace::emit(
                        hot.epoch,
                        trace::owner(hot),
                        TraceEvent::new(SPAN_BEGIN, f.np.node, f.start, [0, 0]),
                    );
                }
                Guard { depth }
            }
            None => Guard::INERT,
        }
    }

    const INERT: Guard = Guard { depth: INERT };
}

/// Drop of a guard that the inlined path does not handle: its frame is
/// not on top (guards inside it were leaked, or a new session started),
/// it was timed with the `Instant` clock, or it is a nested call of a
/// recursion.
#[cold]
#[inline(never)]
fn drop_slow(depth: u32) {
    // SAFETY: owner thread; no other reference to the hot state is alive.
    let hot = unsafe { &mut *hot::hot() };
    #[cfg(feature = "alloc")]
    if (SCOPED_LOW..=SCOPED_BASE).contains(&depth) {
        crate::scope::scope_call_exit(SCOPED_BASE - depth);
        return;
    }
    // Inner guards were leaked (`mem::forget`): discard their frames and
    // record ours. A stale or inert guard (depth >= hot.depth) records
    // nothing.
    if depth == INERT || depth == 0 || depth >= hot.depth {
        return;
    }
    // SAFETY: 1 <= depth < hot.depth <= stack_cap; owner thread.
    let f = unsafe { frame::frame(hot, depth) };
    #[cfg(feature = "alloc")]
    frame::record_alloc(hot, f);
    let timing = frame::pop(hot, f, depth);
    if f.timed & TRACE_FRAME != 0 {
        if let Some((incl, _)) = timing {
            let end = f.start.wrapping_add(incl);
            trace::emit(
                hot.epoch,
                trace::owner(hot),
                TraceEvent::new(SPAN_END, f.np.node, end, [0, 0]),
            );
        }
    }
    frame::record(hot, f.np.node, timing);
}

/// [`Guard`]'s drop of a traced frame on top (trace mode): the timed
/// path, and its end written to the trace with the same clock reading.
#[inline(never)]
fn drop_traced(d: u32) {
    // SAFETY: owner thread; no other reference to the hot state is alive.
    let hot = unsafe { &mut *hot::hot() };
    let frames = hot.frames;
    // SAFETY: the caller saw frame d on top: 1 <= d < hot.depth <=
    // stack_cap, inside the frame area.
    let (node, now) = unsafe { exit_timed(hot, frames, frames.add(d as usize), d) };
    trace::emit(
        hot.epoch,
        trace::owner(hot),
        TraceEvent::new(SPAN_END, node, now, [0, 0]),
    );
}

/// The exit of a TSC-timed call whose frame `fp` (at depth `d`) is on
/// top: pops it, charges its times to its node and its parent. Returns
/// its node and the clock reading.
///
/// # Safety
/// Owner thread, no reference to the frames alive; `frames` is the hot
/// state's, `fp = frames + d`, and `1 <= d < hot.depth <= stack_cap`.
#[inline(always)]
unsafe fn exit_timed(
    hot: &mut hot::Hot,
    frames: *mut ShadowFrame,
    fp: *mut ShadowFrame,
    d: u32,
) -> (u32, u64) {
    let now = arch::read_tsc();
    frame::boundary_top_at(frames);
    // SAFETY: per the caller; the boundary's references are gone.
    let f = unsafe { &*fp };
    #[cfg(feature = "alloc")]
    frame::record_alloc_at(hot, frames, f);
    // Copies, so that the stores below (which the compiler cannot prove
    // distinct from the hot state) force no reloads.
    let (nodes, hist) = (hot.nodes, hot.hist);
    hot.depth = d;
    let (node, start, child) = (f.np.node, f.start, f.child);
    let incl = now.saturating_sub(start);
    let excl = incl.saturating_sub(child);
    // SAFETY: 1 <= d (frame 0 is the root sentinel, never popped), so
    // frame d-1 exists; node < node_cap.
    unsafe {
        let parent = &mut *frames.add(d as usize - 1);
        parent.child = parent.child.wrapping_add(incl);
        frame::note_top_at(frames, parent.np.node);
        // A timed call is counted by its entry in the inclusive
        // histogram; `calls` holds the untimed ones.
        let n = &*nodes.add(node as usize);
        bump(&n.total, incl);
        bump(&n.self_, excl);
        frame::hist_defer(frames, hist, node, incl, excl);
    }
    (node, now)
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: owner thread (Guard is !Send); no other reference to the
        // hot state is alive during drop.
        let hot = unsafe { &mut *hot::hot() };
        let d = self.depth;
        // Our frame is on top exactly when the depth is ours + 1. Frames
        // nest, so nothing pushed after ours can still be live here; if
        // the depth differs, either a new session reset the stack (depth
        // is 1 and ours was >= 1), or guards inside ours were leaked.
        if hot.depth == d.wrapping_add(1) {
            // One load of the frame area for the whole path (see `enter`).
            let frames = hot.frames;
            // A raw pointer, not a reference: the boundary below may read
            // the top frame (this one) out of line.
            // SAFETY: d < hot.depth <= stack_cap, inside the frame area.
            let fp = unsafe { frames.add(d as usize) };
            // SAFETY: owner thread; no reference to the frame is alive.
            let timed = unsafe { (*fp).timed };
            if timed == UNTIMED {
                frame::boundary_top_at(frames);
                // SAFETY: as above; the boundary's references are gone.
                let f = unsafe { &*fp };
                #[cfg(feature = "alloc")]
                frame::record_alloc_at(hot, frames, f);
                hot.depth = d;
                // SAFETY: 1 <= d (frame 0 is the root sentinel, never
                // popped), so frame d-1 exists.
                frame::note_top_at(frames, unsafe { (*frames.add(d as usize - 1)).np.node });
                bump(&frame::node(hot, f.np.node).calls, 1);
                return;
            }
            if timed == TIMED_TSC {
                // SAFETY: owner thread, no frame reference alive; fp is
                // frame d, on top, and 1 <= d (the root is never popped).
                unsafe { exit_timed(hot, frames, fp, d) };
                return;
            }
            if timed == TIMED_TSC | TRACE_FRAME {
                drop_traced(d);
                return;
            }
        }
        drop_slow(d);
    }
}
