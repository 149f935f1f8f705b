//! Measuring futures.
//!
//! A future is not a stack frame: it can be suspended, resumed on another
//! thread, interleaved with other futures on the same thread, or dropped
//! half-way. So `#[measure] async fn` does not use a stack guard; it wraps
//! the future in [`Instrumented`], which
//!
//! - captures the *parent path* when the future is created (the frame on
//!   top of the creating thread's shadow stack), so a future spawned onto
//!   a multi-thread runtime still lands under its logical caller;
//! - pushes a frame for the duration of each `poll` on whichever thread
//!   polls it (the node is looked up in that thread's tree by the global
//!   path, so all threads agree on identity); the frame is popped before
//!   `poll` returns, so two futures interleaved on one thread never see
//!   each other's frames;
//! - on `Ready`, records one call: wall time from creation, busy time
//!   (sum of polls), exclusive busy time (minus measured futures polled
//!   inside its polls) and the poll count;
//! - if dropped before `Ready`, counts a cancellation (its busy time and
//!   polls still count).

use crate::block::{AWAIT_FRAME, OVERFLOW_NODE, ShadowFrame, TRACE_FRAME, bump, tag};
use crate::callsite::Callsite;
use crate::clock;
use crate::frame;
use crate::hot::{self, FAST_TRACE, Hot};
use crate::snapshot::CallsiteKind;
use crate::trace::{self, FUT_DROP, FUT_NEW, POLL_BEGIN, POLL_END, TraceEvent};
use perflens_format::vocab::ROOT_PATH;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

const INERT: u8 = 0;
const PENDING: u8 = 1;
const DONE: u8 = 2;

/// Wraps `fut` so that it is measured as `callsite`. The parent path is
/// captured now, on the creating thread.
#[inline]
pub fn instrument<F: Future>(callsite: &'static Callsite, fut: F) -> Instrumented<F> {
    let mut w = Instrumented {
        inner: fut,
        callsite: 0,
        parent: ROOT_PATH,
        epoch: 0,
        state: INERT,
        timed: false,
        created: 0,
        fid: 0,
        acc: Polls::default(),
    };
    let Some(hot) = hot::active().or_else(hot::prepare) else {
        hot::count_unrecorded();
        return w;
    };
    let id = callsite.id(CallsiteKind::Async);
    let (parent_path, timed) = made_here(hot, id);
    w.timed = timed;
    w.callsite = id;
    w.parent = parent_path;
    w.epoch = hot.epoch;
    w.state = PENDING;
    w.created = if w.timed { clock::now() } else { 0 };
    if hot.fast == FAST_TRACE && w.timed {
        let owner = trace::owner(hot);
        let (fid, maker) = trace::new_future_id(hot.epoch, owner);
        w.fid = fid;
        let new = TraceEvent::new(FUT_NEW, id, w.created, [fid, maker]);
        trace::emit(hot.epoch, owner, new);
    }
    w
}

/// Where a future (or a span) of callsite `id` made now on this thread
/// belongs: the path of the frame on top of the stack, and whether it is
/// timed there.
#[inline(always)]
pub(crate) fn made_here(hot: &Hot, id: u32) -> (u32, bool) {
    // SAFETY: owner thread; the only frame reference alive here.
    let parent = unsafe { frame::top(hot) };
    let parent_path = parent.path();
    // The node is only needed for a sampled decision (its countdown):
    // resolving it otherwise would leave an empty node behind for a
    // future that its first poll moves under an await site.
    let timed = if frame::decision_reads_node(hot) {
        let node = match frame::find_child(hot, parent, tag(id)) {
            Some(found) => found.node,
            None => frame::resolve(hot, parent_path, id).np.node,
        };
        frame::decide_timed(hot, node, parent)
    } else {
        frame::decide_timed(hot, OVERFLOW_NODE, parent)
    };
    (parent_path, timed)
}

/// The node of callsite `id` under path `parent` in this thread's tree,
/// found or made.
#[inline(always)]
pub(crate) fn node_under(hot: &Hot, parent: u32, id: u32) -> frame::Resolved {
    match frame::find(hot, parent, tag(id)) {
        Some(np) => frame::Resolved { np, nested: false },
        None => frame::resolve(hot, parent, id),
    }
}

/// One completed future (or closed span) on `node`: its polls, the bytes
/// its polls allocated, and, when timed (`created`: the clock when it was
/// made), its wall time (inclusive, with its histogram), exclusive busy
/// time and busy time; untimed, a call.
#[inline]
pub(crate) fn record_completed(hot: &Hot, node: u32, acc: &Polls, created: Option<u64>) {
    let n = frame::node(hot, node);
    bump(&n.polls, acc.count);
    if acc.allocated != 0 {
        frame::hist_add(hot, node, frame::HIST_ALLOC, acc.allocated);
    }
    match created {
        Some(created) => {
            let wall = clock::now().saturating_sub(created);
            bump(&n.total, wall);
            bump(&n.self_, acc.self_busy);
            bump(&n.busy, acc.busy);
            frame::hist_add(hot, node, 0, wall);
            frame::hist_add(hot, node, 1, acc.self_busy);
        }
        // Timed calls are counted by the inclusive histogram.
        None => bump(&n.calls, 1),
    }
}

/// The first-poll rule for a future polled inside an await frame (see
/// `awaits.rs`): when the frame below the await frame is the context the
/// future was created in, the future was created by the very future
/// that awaits it (`b().await` in `a`), so it moves under the await
/// site's context. That refines where it lands inside the same parent
/// and never changes the parent; a future created elsewhere and passed
/// in keeps its parent.
#[inline(always)]
pub(crate) fn reparent_under_await(hot: &Hot, parent: &mut u32) {
    // SAFETY: owner thread; the only frame reference alive here.
    let top = unsafe { frame::top(hot) };
    if top.timed & AWAIT_FRAME != 0 && hot.depth >= 2 {
        // SAFETY: 0 <= depth - 2 < depth <= stack_cap.
        let below = unsafe { frame::frame(hot, hot.depth - 2) };
        if below.path() == *parent {
            *parent = top.path();
        }
    }
}

/// A measured future; see [`instrument`].
#[must_use = "futures do nothing unless polled"]
pub struct Instrumented<F> {
    inner: F,
    callsite: u32,
    parent: u32,
    epoch: u32,
    state: u8,
    timed: bool,
    created: u64,
    /// Its id in the trace (trace mode; else 0).
    fid: u64,
    acc: Polls,
}

/// What a future's polls added up to so far.
#[derive(Default, Clone, Copy)]
pub(crate) struct Polls {
    pub(crate) busy: u64,
    pub(crate) self_busy: u64,
    pub(crate) count: u64,
    /// Bytes allocated during its polls (inclusive).
    pub(crate) allocated: u64,
}

/// The frame of one poll: popped and added to the future's [`Polls`] when
/// the poll returns, or when it unwinds from a panic (a poll that panics
/// is a poll, and its time was spent).
struct PollFrame {
    epoch: u32,
    depth: u32,
    frame: *const ShadowFrame,
    acc: *mut Polls,
    ended: bool,
    /// Traced: the future the thread polled before this poll began (put
    /// back when it ends).
    polled_before: Option<u64>,
}

impl PollFrame {
    /// Pops the frame and adds the poll to the future's sums (and, traced,
    /// writes its end with `flags`). False when the frame is no longer
    /// ours (a new session reset the stack).
    fn end(&mut self, flags: u8) -> bool {
        self.ended = true;
        if let Some(before) = self.polled_before.take() {
            trace::set_polling(before);
        }
        // SAFETY: owner thread; the reference taken by `poll` is not used
        // after the inner poll, which may have touched the hot state.
        let hot = unsafe { &mut *hot::hot() };
        if hot.epoch != self.epoch || hot.depth <= self.depth {
            return false;
        }
        // SAFETY: checked above that frame `depth` is still ours; `acc`
        // points into the future, which outlives its poll (`poll` takes
        // it pinned, and this frame lives inside `poll`).
        let (f, acc) = unsafe { (&*self.frame, &mut *self.acc) };
        acc.allocated = acc.allocated.wrapping_add(frame::alloc_since(hot, f));
        let timing = frame::pop(hot, f, self.depth);
        if f.timed & TRACE_FRAME != 0 {
            if let Some((dur, _)) = timing {
                let end = TraceEvent {
                    flags,
                    ..TraceEvent::new(POLL_END, f.np.node, f.start.wrapping_add(dur), [0, 0])
                };
                trace::emit(hot.epoch, trace::owner(hot), end);
            }
        }
        acc.count += 1;
        if let Some((dur, excl)) = timing {
            acc.busy += dur;
            acc.self_busy += excl;
        }
        true
    }
}

impl Drop for PollFrame {
    fn drop(&mut self) {
        if !self.ended {
            // Unwinding out of the inner poll.
            self.end(0);
        }
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of
        // `self` (not here, not in Drop); the other fields are plain data.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this` outlives the pinned borrow.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        if this.state != PENDING {
            return inner.poll(cx);
        }
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            return inner.poll(cx);
        };
        if hot.epoch != this.epoch {
            // The session this future was created in is over.
            this.state = INERT;
            return inner.poll(cx);
        }
        if this.acc.count == 0 {
            reparent_under_await(hot, &mut this.parent);
        }
        let to = node_under(hot, this.parent, this.callsite);
        let node = to.np.node;
        let Some((fp, depth)) = frame::push(hot, to, this.timed) else {
            return inner.poll(cx);
        };
        let mut polled_before = None;
        if this.fid != 0 && hot.fast == FAST_TRACE {
            // SAFETY: the frame just pushed, below hot.depth; owner
            // thread, no other reference to it alive.
            let f = unsafe { &mut *fp };
            f.timed |= TRACE_FRAME;
            let begin = TraceEvent::new(POLL_BEGIN, node, f.start, [this.fid, 0]);
            trace::emit(hot.epoch, trace::owner(hot), begin);
            polled_before = Some(trace::set_polling(this.fid));
        }
        let mut poll_frame = PollFrame {
            epoch: this.epoch,
            depth,
            frame: fp,
            acc: &raw mut this.acc,
            ended: false,
            polled_before,
        };
        // The inner poll runs measured code that uses the hot state too.
        let result = inner.poll(cx);
        let ready = if result.is_ready() { trace::READY } else { 0 };
        if !poll_frame.end(ready) {
            return result;
        }
        // SAFETY: owner thread; no other reference to the hot state is
        // alive (the poll frame has ended).
        let hot = unsafe { &mut *hot::hot() };
        if result.is_ready() {
            this.state = DONE;
            record_completed(hot, node, &this.acc, this.timed.then_some(this.created));
        }
        result
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        if self.state != PENDING {
            return;
        }
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            return;
        };
        if hot.epoch != self.epoch {
            return;
        }
        if self.fid != 0 && hot.fast == FAST_TRACE {
            let dropped = TraceEvent::new(FUT_DROP, self.callsite, clock::now(), [self.fid, 0]);
            trace::emit(hot.epoch, trace::owner(hot), dropped);
        }
        let n = frame::node(hot, frame::resolve(hot, self.parent, self.callsite).np.node);
        bump(&n.cancelled, 1);
        bump(&n.polls, self.acc.count);
        if self.timed {
            // Its lifetime, polls and self time count like a completed
            // call's; only its duration stays out of `total` and the
            // histograms, which describe completed calls.
            bump(&n.cancelled_timed, 1);
            bump(&n.cancelled_wall, clock::now().saturating_sub(self.created));
            bump(&n.busy, self.acc.busy);
            bump(&n.self_, self.acc.self_busy);
        }
    }
}
