//! An await's out-of-line paths: the bookkeeping of a suspension
//! ([`Tally`]: the frame pushed for each poll, what a poll that returned
//! `Pending` or `Ready` adds to the site's node, a cancellation), and in
//! trace mode the await's begin and end events.

use super::*;

impl Tally {
    /// The suspension record.
    ///
    /// # Safety
    /// The await is [`SUSPENDED`].
    #[inline(always)]
    pub(super) unsafe fn sus(&mut self) -> &mut Suspension {
        // SAFETY: written when the await first suspended (`after`).
        unsafe { self.s.assume_init_mut() }
    }

    /// Starts a poll of an await that is not `DONE` and is not
    /// [`Awaited::poll`]'s common case (not a first poll, traced, the
    /// thread's first in the session, the stack full, or the site's node
    /// new): pushes its frame (unless the stack is full). Returns it and
    /// the site's node, or `None`, the await then being `DONE`, when the
    /// poll is not recorded (no session, or not the one the await started
    /// in).
    #[cold]
    #[inline(never)]
    pub(super) fn begin(&mut self) -> Option<(AwaitFrame, u32)> {
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            self.state = DONE;
            return None;
        };
        let epoch = hot.epoch;
        if self.state != FRESH {
            // SAFETY: not FRESH, and `poll_slow` does not begin a DONE
            // await: SUSPENDED.
            let s = unsafe { self.sus() };
            if epoch != s.epoch {
                // The session this await started in is over.
                self.state = DONE;
                return None;
            }
            if s.suspended_at != 0 {
                let now = clock::now_with(hot.tsc());
                let waited = now.saturating_sub(s.suspended_at);
                s.wait = s.wait.wrapping_add(waited);
                s.suspended_at = 0;
            }
        } else if hot.fast == FAST_TRACE {
            // Its span begins here, if it suspends (`after` keeps it).
            // SAFETY: a write of one field of the (maybe uninitialised)
            // record, through a raw pointer.
            unsafe { (&raw mut (*self.s.as_mut_ptr()).trace).write(clock::now()) };
        }
        let d = hot.depth;
        // SAFETY: attached, so 1 <= d <= stack_cap; no other reference to
        // frame d - 1 is alive.
        let parent = unsafe { frame::frame(hot, d - 1) };
        let ctx = parent.path();
        let np = match frame::find_child(hot, parent, self.site.cs.tagged()) {
            Some(np) => np,
            None => frame::resolve(hot, ctx, self.site.id()).np,
        };
        if d < hot.stack_cap {
            // SAFETY: 1 <= d < stack_cap, parent is frame d - 1; frame d
            // is above the top, so no reference to it is alive.
            unsafe { push_frame(hot, parent, frame::frame(hot, d), d, np.path) };
            Some((AwaitFrame { epoch, depth: d }, np.node))
        } else {
            // No room for the frame: its children land beside it, under
            // the awaiting future.
            bump(&hot.block().header().dropped_frames, 1);
            let depth = d | NO_FRAME;
            Some((AwaitFrame { epoch, depth }, np.node))
        }
    }

    /// The end of a recorded poll that ended in its session (at `depth`,
    /// the index of its frame, with [`NO_FRAME`] if none; the site's node
    /// is `node`; its measured children took `child`), `ready` or not,
    /// except the common case that [`Awaited::poll`] inlines.
    #[cold]
    #[inline(never)]
    pub(super) fn after(&mut self, ready: bool, depth: u32, node: u32, child: u64) {
        // SAFETY: owner thread; no other reference to the hot state is
        // alive (the frame has ended, in the session the poll began in).
        let hot = unsafe { &*hot::hot() };
        if ready {
            if self.state == FRESH {
                // Never suspended.
                let n = frame::node(hot, node);
                bump(&n.calls, 1);
                if child != 0 {
                    bump(&n.busy, child);
                }
            } else {
                let site = self.site;
                // SAFETY: not FRESH, and ended in the session: SUSPENDED.
                let s = unsafe { self.sus() };
                s.child = s.child.wrapping_add(child);
                s.record(hot, node);
                if s.trace != 0 {
                    s.trace_end(site, hot, AWAIT_END, clock::now());
                }
            }
            self.state = DONE;
            return;
        }
        if self.state == FRESH {
            // Frame depth - 1 polled it: on top when the poll began, and
            // again now.
            // SAFETY: 1 <= depth - 1 < stack_cap (without NO_FRAME); owner
            // thread, no other frame reference alive.
            let parent_ctx = unsafe { frame::frame(hot, (depth & !NO_FRAME) - 1) }.path();
            let trace = if hot.fast == FAST_TRACE {
                // SAFETY: `begin` wrote it (a traced poll always goes
                // there), and the epoch, so the mode, has not changed.
                unsafe { (&raw const (*self.s.as_ptr()).trace).read() }
            } else {
                0
            };
            self.s.write(Suspension {
                // Count mode always has `FAST_COUNT` (see `Hot::attach`).
                timed: hot.fast != FAST_COUNT,
                epoch: hot.epoch,
                parent_ctx,
                suspensions: 0,
                suspended_at: 0,
                wait: 0,
                child: 0,
                trace,
            });
            self.state = SUSPENDED;
        }
        let site = self.site;
        // SAFETY: SUSPENDED (made so above if it was FRESH).
        let s = unsafe { self.sus() };
        s.child = s.child.wrapping_add(child);
        s.suspensions += 1;
        if s.timed {
            s.suspended_at = clock::now_with(hot.tsc()).max(1);
        }
        if s.suspensions == 1 && hot.fast == FAST_TRACE {
            s.trace_begin(site, hot);
        }
    }

    /// Records the cancellation of an await dropped while suspended.
    #[cold]
    #[inline(never)]
    pub(super) fn cancel(&mut self) {
        let Some(hot) = hot::active().or_else(hot::prepare) else {
            return;
        };
        let site = self.site;
        // SAFETY: only called when SUSPENDED.
        let s = unsafe { self.sus() };
        if hot.epoch != s.epoch {
            return;
        }
        // One reading for the trace's span and the counters: the two
        // say the same wait (read apart, they differed by 116 us under
        // qemu, the node's resolution between them).
        let traced = s.trace != 0 && hot.fast == FAST_TRACE;
        let now = if traced || s.timed {
            clock::now_with(hot.tsc())
        } else {
            0
        };
        if traced {
            s.trace_end(site, hot, AWAIT_DROP, now);
        }
        let node = frame::resolve(hot, s.parent_ctx, site.id()).np.node;
        let n = frame::node(hot, node);
        bump(&n.cancelled, 1);
        bump(&n.polls, s.suspensions);
        if s.child != 0 {
            bump(&n.busy, s.child);
        }
        if s.timed {
            bump(&n.cancelled_timed, 1);
            let pending = if s.suspended_at != 0 {
                now.saturating_sub(s.suspended_at)
            } else {
                0
            };
            bump(&n.cancelled_wall, s.wait.wrapping_add(pending));
        }
    }
}

impl Suspension {
    /// Trace mode: the await at `site` suspended for the first time; it
    /// gets an id, and its span is written to begin when its first poll
    /// did.
    #[cold]
    #[inline(never)]
    fn trace_begin(&mut self, site: &'static AwaitSite, hot: &Hot) {
        let owner = trace::owner(hot);
        let (aid, _) = trace::new_future_id(hot.epoch, owner);
        let begun = std::mem::replace(&mut self.trace, aid);
        let begin = TraceEvent::new(AWAIT_BEGIN, site.id(), begun, [aid, trace::polling()]);
        trace::emit(hot.epoch, owner, begin);
    }

    /// Trace mode: the await at `site` completed (`AWAIT_END`) or was
    /// dropped while suspended (`AWAIT_DROP`), with the ticks it waited.
    #[cold]
    #[inline(never)]
    fn trace_end(&self, site: &'static AwaitSite, hot: &Hot, kind: u8, now: u64) {
        // Dropped while suspended: the wait so far includes this one.
        let pending = match kind {
            AWAIT_DROP if self.suspended_at != 0 => now.saturating_sub(self.suspended_at),
            _ => 0,
        };
        let end = TraceEvent::new(
            kind,
            site.id(),
            now,
            [self.trace, self.wait.wrapping_add(pending)],
        );
        trace::emit(hot.epoch, trace::owner(hot), end);
    }

    /// Records a completed await that suspended on its site's node
    /// `node`.
    #[inline(never)]
    fn record(&self, hot: &Hot, node: u32) {
        let n = frame::node(hot, node);
        if self.child != 0 {
            bump(&n.busy, self.child);
        }
        if self.timed {
            bump(&n.total, self.wait);
            frame::hist_add(hot, node, 0, self.wait);
        } else {
            bump(&n.calls, 1);
        }
        bump(&n.polls, self.suspensions);
    }
}
