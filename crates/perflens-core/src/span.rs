//! Spans of an outside tracer (the `tracing` crate's, through the
//! facade's layer): a unit of work that is entered and exited any number
//! of times and then closed. A span entered once is a call; a span
//! entered once per poll (a future instrumented with `tracing`) is a
//! future. Both are recorded as `crate::future` records a measured
//! future, without a future to wrap:
//!
//! - the parent is the frame on top of the creating thread's stack when
//!   the span is made ([`Span::new`]), so a span created in one place and
//!   entered in another (a future spawned onto a runtime) lands under its
//!   creator;
//! - each enter pushes a frame for the span's node on whichever thread
//!   enters it ([`Span::enter`]), and its exit pops it and adds the time
//!   to the span's busy and exclusive sums ([`Span::exit`]);
//! - closing ([`Span::close`]) records one completed call: its wall time
//!   from creation (the inclusive time and histogram), its exclusive busy
//!   time, its busy time and its enters as polls. A span never entered
//!   records nothing.
//!
//! In trace mode each enter is a slice of the entering thread's track, as
//! a measured call's (a future's polls are its slices; there are no
//! future lanes or arrows for spans).
//!
//! Whether the row shows it as a function or a future is its callsite's
//! kind (the layer registers a span name as async once one of its spans
//! is entered twice); the node holds both readings.

use crate::block::{ShadowFrame, TRACE_FRAME};
use crate::callsite::Callsite;
use crate::clock;
use crate::frame;
use crate::future::{Polls, made_here, node_under, record_completed, reparent_under_await};
use crate::hot::{self, FAST_TRACE};
use crate::snapshot::CallsiteKind;
use crate::trace::{self, SPAN_BEGIN, SPAN_END, TraceEvent};
use perflens_format::vocab::ROOT_PATH;

/// One span's record (see the module's documentation). Not `Clone`: one
/// per span.
#[derive(Debug)]
pub struct Span {
    callsite: u32,
    parent: u32,
    /// The session it records in (0: none).
    epoch: u32,
    timed: bool,
    created: u64,
    acc: Polls,
}

impl std::fmt::Debug for Polls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Polls")
            .field("count", &self.count)
            .field("busy", &self.busy)
            .finish()
    }
}

/// A span entered on this thread: give it back to [`Span::exit`] on the
/// same thread. Holds a pointer into this thread's frame stack, so it is
/// neither `Send` nor `Sync`.
#[derive(Debug)]
pub struct Entered {
    epoch: u32,
    depth: u32,
    frame: *const ShadowFrame,
}

impl Span {
    /// A span of `callsite` made now, under the frame on top of this
    /// thread's stack. Outside a session it records nothing.
    pub fn new(callsite: &'static Callsite) -> Span {
        let mut s = Span {
            callsite: 0,
            parent: ROOT_PATH,
            epoch: 0,
            timed: false,
            created: 0,
            acc: Polls::default(),
        };
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            hot::count_unrecorded();
            return s;
        };
        let id = callsite.id(CallsiteKind::Sync);
        let (parent_path, timed) = made_here(hot, id);
        s.timed = timed;
        s.callsite = id;
        s.parent = parent_path;
        s.epoch = hot.epoch;
        s.created = if s.timed { clock::now() } else { 0 };
        s
    }

    /// Times it was entered (and exited) so far.
    pub fn entered(&self) -> u64 {
        self.acc.count
    }

    /// Enters the span on this thread: its frame goes on the stack, so
    /// what runs now is its child. `None` when it records nothing (no
    /// session, another session, a full stack).
    pub fn enter(&mut self) -> Option<Entered> {
        if self.epoch == 0 {
            return None;
        }
        let hot = hot::active().or_else(hot::prepare)?;
        if hot.epoch != self.epoch {
            // The session it was made in is over.
            self.epoch = 0;
            return None;
        }
        if self.acc.count == 0 {
            reparent_under_await(hot, &mut self.parent);
        }
        let to = node_under(hot, self.parent, self.callsite);
        let node = to.np.node;
        let (fp, depth) = frame::push(hot, to, self.timed)?;
        if self.timed && hot.fast == FAST_TRACE {
            // Each enter is a slice of the thread's track, as a measured
            // call's (a future's polls are its slices).
            // SAFETY: the frame just pushed, below hot.depth; owner
            // thread, no other reference to it alive.
            let f = unsafe { &mut *fp };
            f.timed |= TRACE_FRAME;
            let begin = TraceEvent::new(SPAN_BEGIN, node, f.start, [0, 0]);
            trace::emit(hot.epoch, trace::owner(hot), begin);
        }
        Some(Entered {
            epoch: self.epoch,
            depth,
            frame: fp,
        })
    }

    /// Exits what [`Span::enter`] entered on this thread: its frame comes
    /// off the stack (with any frame left above it) and its time is added
    /// to the span's sums.
    pub fn exit(&mut self, e: Entered) {
        // SAFETY: owner thread (an `Entered` stays on its thread).
        let hot = unsafe { &mut *hot::hot() };
        if hot.epoch != e.epoch || hot.depth <= e.depth {
            // A new session reset the stack: the frame is not ours.
            return;
        }
        // Frames a callee left above (an exit out of order) go first.
        if hot.depth > e.depth + 1 {
            frame::discard_above(hot, e.depth);
        }
        // SAFETY: checked above that frame `depth` is still ours.
        let f = unsafe { &*e.frame };
        self.acc.allocated = self.acc.allocated.wrapping_add(frame::alloc_since(hot, f));
        let timing = frame::pop(hot, f, e.depth);
        if f.timed & TRACE_FRAME != 0 {
            if let Some((dur, _)) = timing {
                let end = TraceEvent::new(SPAN_END, f.np.node, f.start.wrapping_add(dur), [0, 0]);
                trace::emit(hot.epoch, trace::owner(hot), end);
            }
        }
        self.acc.count += 1;
        if let Some((dur, excl)) = timing {
            self.acc.busy += dur;
            self.acc.self_busy += excl;
        }
    }

    /// Closes the span: one completed call of its node (see the module's
    /// documentation), on the closing thread's block. `last_enter_dropped`:
    /// the last enter was not a poll but the dropping of the future (as
    /// `tracing`'s `Instrumented` enters its span to drop its future), so
    /// it is not counted as one (its time still is).
    pub fn close(mut self, last_enter_dropped: bool) {
        if last_enter_dropped && self.acc.count > 0 {
            self.acc.count -= 1;
            if self.acc.count == 0 {
                // Made and dropped, never polled: no call completed.
                return;
            }
        }
        if self.epoch == 0 || self.acc.count == 0 {
            return;
        }
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            return;
        };
        if hot.epoch != self.epoch {
            return;
        }
        let node = node_under(hot, self.parent, self.callsite).np.node;
        record_completed(hot, node, &self.acc, self.timed.then_some(self.created));
    }
}
