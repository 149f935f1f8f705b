//! Measured await sites.
//!
//! `expr.await` inside a measured future becomes `awaited(&SITE,
//! expr).await`, where `SITE` is a `static` [`AwaitSite`] (the macro
//! rewrite comes later; for now the call is written by hand). The site
//! is a callsite of kind [`CallsiteKind::Await`], named `file:line:col`,
//! so it has a node per calling context like a function, under the
//! awaiting future's node.
//!
//! # The await frame
//!
//! While [`Awaited`] polls the awaited future it pushes a frame S on the
//! thread's shadow stack, above the frame P of whatever polls it (the
//! awaiting future's poll frame):
//!
//! - S names the site's *context* (`S.np.path`): measured code run inside
//!   the awaited future (a sync function it calls, or a measured future
//!   created by the awaiting future, see `future.rs`) lands under the
//!   site;
//! - S names P's *node* (`S.np.node`): what the awaited future allocates
//!   outside measured code, and the CPU samples taken there, stay the
//!   awaiting function's own, as without the site (the top node does not
//!   change at the push or the pop, so no allocation boundary is needed);
//! - S's clock part is P's (`decide_timed` masks the flags), and
//!   [`AWAIT_FRAME`] is set;
//! - measured children charge their time to `S.child`; at the pop it is
//!   passed on to `P.child`, so the awaiting future's self time is what
//!   it would be without the site, and kept as the site's measured time.
//!
//! # What a site's node counts
//!
//! On the thread that completes the await:
//!
//! | field | meaning |
//! |---|---|
//! | `calls` | completed awaits that never suspended, and in count mode all completed awaits |
//! | histogram 0, `total` | one entry per completed await that suspended: its wait, the sum over its suspensions of (re-poll start − `Pending` return) |
//! | `polls` | suspensions (`Pending` returns) |
//! | `busy` | measured time run inside the awaited future's polls |
//! | `cancelled`, `cancelled_timed`, `cancelled_wall` | awaits dropped while suspended, and their wait so far |
//!
//! So the snapshot's `calls` (untimed + histogram entries) is every
//! completed await, and `timed_calls` the ones that suspended. A
//! cancelled await adds no histogram entry and nothing to `total`: the
//! completed awaits and the cancelled ones are two sets, each with its
//! count and its total wait, which the report shows apart (its Waits
//! row's percentiles are of the completed awaits only). Waits are
//! timed in timed and sampled modes alike (a suspension costs far more
//! than two clock reads, and sampling them would make the figures scale
//! wrongly); count mode reads no clock.
//!
//! # Cost
//!
//! `awaited()` stores the site and the state, and reads no thread-local
//! state; what an await keeps once it suspends is written then. A first
//! poll that does not suspend is inlined and calls nothing but the inner
//! poll: the site's node from the awaiting frame's one-entry cache (else
//! a table probe, which refills it), the frame push and pop, and one
//! counter. Everything else (later polls, suspensions, trace mode, the
//! thread's first await in a session, a full stack) goes out of line. No
//! allocation after the site's first use on a thread, no lock, no panic.

use crate::block::{AWAIT_FRAME, NodePath, ShadowFrame, TIMED_MASK, bump};
use crate::callsite::{AwaitInfo, Callsite, located};
use crate::clock;
use crate::frame;
use crate::hot::{self, FAST_COUNT, FAST_TRACE, Hot};
use crate::snapshot::CallsiteKind;
use crate::trace::{self, AWAIT_BEGIN, AWAIT_DROP, AWAIT_END, TraceEvent};
use std::future::{Future, IntoFuture};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::{Ordering, compiler_fence};
use std::task::{Context, Poll};

/// One `.await` in the source. Created by the macros in a `static`; not
/// meant to be built by hand.
pub struct AwaitSite {
    cs: Callsite,
    file: &'static str,
    line: u32,
    column: u32,
    expr: &'static str,
}

impl AwaitSite {
    /// The site of the `.await` at `file:line:column`, awaiting `expr`
    /// (the expression's text, shortened).
    pub const fn new(file: &'static str, line: u32, column: u32, expr: &'static str) -> AwaitSite {
        AwaitSite {
            cs: Callsite::named_by_owner(),
            file,
            line,
            column,
            expr,
        }
    }

    /// The registered callsite id, registering on first use as
    /// `file:line:col`.
    #[inline(always)]
    fn id(&'static self) -> u32 {
        self.cs.id_or(|| {
            let info = AwaitInfo {
                file: self.file,
                line: self.line,
                column: self.column,
                expr: self.expr,
            };
            let name = located(self.file, self.line, self.column);
            (name, CallsiteKind::Await, Some(info))
        })
    }
}

/// States of an [`Awaited`]: not polled yet in a session (or its first
/// poll unwound).
const FRESH: u8 = 0;
/// Returned `Pending` at least once in a session, not finished: the only
/// state in which a drop is a cancellation.
const SUSPENDED: u8 = 1;
/// Finished, or not recorded (no session, or another session).
const DONE: u8 = 2;

/// Wraps what `expr.await` awaits so that the await is measured at
/// `site`: `awaited(&SITE, expr).await` behaves exactly as `expr.await`
/// (`into_future` is called here, where `.await` would call it).
#[inline(always)]
pub fn awaited<I: IntoFuture>(site: &'static AwaitSite, into: I) -> Awaited<I::IntoFuture> {
    Awaited {
        inner: into.into_future(),
        t: Tally {
            site,
            state: FRESH,
            s: MaybeUninit::uninit(),
        },
    }
}

/// A measured await; see [`awaited`].
#[must_use = "futures do nothing unless polled"]
pub struct Awaited<F> {
    inner: F,
    t: Tally,
}

/// What an [`Awaited`] knows besides its future (not generic, so that the
/// out-of-line parts exist once). `repr(C)`, the two fields written at
/// creation first: the compiler then writes no bytes of the record.
#[repr(C)]
struct Tally {
    site: &'static AwaitSite,
    state: u8,
    /// Written when it first suspends (`trace` in trace mode when its
    /// first poll begins), so that an await that does not suspend writes
    /// none of it: initialised whenever the state is [`SUSPENDED`].
    s: MaybeUninit<Suspension>,
}

/// What an await that suspended keeps until it completes.
struct Suspension {
    /// Waits are timed (not count mode).
    timed: bool,
    epoch: u32,
    /// Context of the frame that polled it first (for a cancellation).
    parent_ctx: u32,
    suspensions: u64,
    /// Clock at the last `Pending` return, 0 when not suspended (or not
    /// timed).
    suspended_at: u64,
    /// Ticks suspended so far.
    wait: u64,
    /// Measured ticks run inside its polls so far.
    child: u64,
    /// Trace mode (else 0): the clock when its first poll began (its
    /// span's begin), until it suspends; from then on, its id in the
    /// trace.
    trace: u64,
}

/// Set in [`AwaitFrame::depth`] when the stack had no room for the frame
/// (its children then land beside it, under the awaiting future): the
/// depth is then the index the frame would have had, above the awaiting
/// frame, and no stack reaches `depth + 1`, so [`AwaitFrame::end`] takes
/// its slow path.
const NO_FRAME: u32 = 1 << 31;

/// The await frame of one poll: popped when the poll returns, or when it
/// unwinds from a panic.
struct AwaitFrame {
    /// Epoch of the session the poll is recorded in.
    epoch: u32,
    /// Index of the frame (with [`NO_FRAME`] if none).
    depth: u32,
}

impl AwaitFrame {
    /// Pops the frame and passes its children's time on to the frame
    /// below. Returns that time, or `None` when the frame is no longer
    /// ours (a new session reset the stack).
    #[inline(always)]
    fn end(&self) -> Option<u64> {
        // SAFETY: owner thread; no other reference to the hot state is
        // alive (the inner poll has returned).
        let hot = unsafe { &mut *hot::hot() };
        let d = self.depth;
        if hot.depth != d.wrapping_add(1) || hot.epoch != self.epoch {
            return self.end_slow();
        }
        let frames = hot.frames;
        // SAFETY: d < hot.depth <= stack_cap, and 1 <= d (the root
        // sentinel is below); owner thread, no other frame reference.
        let (s, p) = unsafe { (&*frames.add(d as usize), &mut *frames.add(d as usize - 1)) };
        let child = s.child;
        hot.depth = d;
        if child != 0 {
            p.child = p.child.wrapping_add(child);
        }
        Some(child)
    }

    /// [`AwaitFrame::end`] when the frame is not on top: guards inside
    /// the poll were leaked (their frames go), it is gone, or there was
    /// none ([`NO_FRAME`]).
    #[cold]
    #[inline(never)]
    fn end_slow(&self) -> Option<u64> {
        // SAFETY: as in `end`.
        let hot = unsafe { &mut *hot::hot() };
        if hot.epoch != self.epoch {
            return None;
        }
        if self.depth & NO_FRAME != 0 {
            return Some(0);
        }
        if hot.depth <= self.depth {
            return None;
        }
        frame::discard_above(hot, self.depth);
        self.end()
    }
}

impl Drop for AwaitFrame {
    /// Runs only when unwinding out of the inner poll: a poll that
    /// returns ends the frame and forgets it.
    fn drop(&mut self) {
        self.end();
    }
}

// `push_frame` writes `timed` and `cache_cs` as one word.
const _: () = assert!(
    std::mem::offset_of!(ShadowFrame, timed) == 8
        && std::mem::offset_of!(ShadowFrame, cache_cs) == 12
);

/// Pushes the await frame of a poll at index `d`, above `parent` (frame
/// `d - 1`, on top), the site's context being `path`.
///
/// # Safety
/// `hot` is attached, `1 <= d = hot.depth < stack_cap`, `parent` is frame
/// `d - 1` and `s` frame `d`.
#[inline(always)]
unsafe fn push_frame(hot: &mut Hot, parent: &ShadowFrame, s: &mut ShadowFrame, d: u32, path: u32) {
    let np = NodePath {
        node: parent.np.node,
        path,
    };
    let timed = (parent.timed & TIMED_MASK) | AWAIT_FRAME;
    // Each pair as one 8-byte store (`timed` and `cache_cs`, 0, are
    // adjacent in the `repr(C)` frame): stores are what the common case
    // of a poll has most of.
    // SAFETY: `np` and `timed` are 8-byte aligned in the frame (NodePath
    // is `align(8)`, `timed` at offset 8); `[u32; 2]` and `u64` have one
    // size and any bit pattern is valid.
    unsafe {
        (&raw mut s.np)
            .cast::<u64>()
            .write(std::mem::transmute::<NodePath, u64>(np));
        (&raw mut s.timed)
            .cast::<u64>()
            .write(std::mem::transmute::<[u32; 2], u64>([timed, 0]));
    }
    s.child = 0;
    // A sampling signal handler reads the frame at depth - 1: write the
    // frame before the depth.
    compiler_fence(Ordering::Release);
    hot.depth = d + 1;
}

impl<F: Future> Future for Awaited<F> {
    type Output = F::Output;

    /// The common case is inlined and calls nothing but the inner poll:
    /// a first poll in a timed, sampled or count session, with room on
    /// the stack, the site's node in the awaiting frame's cache (or the
    /// table), that does not suspend. Everything else goes out of line.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of
        // `self` (not here, not in Drop); the other fields are plain data.
        let this = unsafe { self.get_unchecked_mut() };
        if this.t.state == FRESH {
            // SAFETY: owner thread; the reference is not held across the
            // inner poll.
            let hot = unsafe { &mut *hot::hot() };
            if hot::is_current(hot) && hot.fast != FAST_TRACE {
                let d = hot.depth;
                if d < hot.stack_cap {
                    let frames = hot.frames;
                    // SAFETY: attached, so 1 <= d; d < stack_cap; frames
                    // d-1 (on top) and d (above it) are distinct, and no
                    // other reference to them is alive.
                    let (parent, s) = unsafe {
                        (
                            &mut *frames.add(d as usize - 1),
                            &mut *frames.add(d as usize),
                        )
                    };
                    if let Some(np) = frame::find_child(hot, parent, this.t.site.cs.tagged()) {
                        // SAFETY: as above.
                        unsafe { push_frame(hot, parent, s, d, np.path) };
                        let f = AwaitFrame {
                            epoch: hot.epoch,
                            depth: d,
                        };
                        // SAFETY: see above; `this` outlives the pinned
                        // borrow.
                        let result = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
                        let ended = f.end();
                        // Ended: its drop (for unwinding only) has nothing
                        // left to do.
                        std::mem::forget(f);
                        match ended {
                            Some(child) if result.is_ready() => {
                                // Never suspended: the common case.
                                // SAFETY: owner thread; no other reference
                                // to the hot state is alive (the frame has
                                // ended).
                                let hot = unsafe { &*hot::hot() };
                                let n = frame::node(hot, np.node);
                                bump(&n.calls, 1);
                                if child != 0 {
                                    bump(&n.busy, child);
                                }
                                this.t.state = DONE;
                            }
                            Some(child) => this.t.after(false, d, np.node, child),
                            None => this.t.state = DONE,
                        }
                        return result;
                    }
                }
            }
        }
        this.poll_slow(cx)
    }
}

impl<F: Future> Awaited<F> {
    /// [`Awaited::poll`] when its common case does not apply.
    #[inline(never)]
    fn poll_slow(&mut self, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: as in `poll` (`self` is pinned there).
        let inner = unsafe { Pin::new_unchecked(&mut self.inner) };
        let begun = if self.t.state != DONE {
            self.t.begin()
        } else {
            None
        };
        let Some((f, node)) = begun else {
            return inner.poll(cx);
        };
        let result = inner.poll(cx);
        let ended = f.end();
        let depth = f.depth;
        // Ended: its drop (for unwinding only) has nothing left to do.
        std::mem::forget(f);
        match ended {
            Some(child) => self.t.after(result.is_ready(), depth, node, child),
            None => self.t.state = DONE,
        }
        result
    }
}

impl<F> Drop for Awaited<F> {
    #[inline(always)]
    fn drop(&mut self) {
        // A completed await is `DONE`: one test, inlined.
        if self.t.state == SUSPENDED {
            self.t.cancel();
        }
    }
}

mod tally;
