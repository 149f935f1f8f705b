//! The guard `#[measure]` puts at the top of a sync function.

use crate::block::Frame;
use crate::callsite::Callsite;
use crate::frame;
use crate::snapshot::CallsiteKind;
use crate::thread::{self, Hot};

/// Measures the enclosing scope: pushes a frame on creation, records the
/// call when dropped (also when unwinding from a panic).
///
/// Cost, measured by `perflens-bench` (see the README): a timed call adds
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

impl Guard {
    /// Enters `callsite` on the current thread.
    #[inline(always)]
    pub fn enter(callsite: &'static Callsite) -> Guard {
        if let Some(hot) = thread::active() {
            let parent = frame::top(hot);
            // An unregistered callsite has id 0, which is never in the
            // table, so it takes the slow path and registers there.
            let k = parent.key_hi | callsite.cached_id() as u64;
            if let Some((node, path)) = frame::find(hot, k) {
                return Guard::push(hot, node, path, parent);
            }
        }
        Guard::enter_slow(callsite)
    }

    #[cold]
    #[inline(never)]
    fn enter_slow(callsite: &'static Callsite) -> Guard {
        let Some(hot) = thread::prepare() else {
            return Guard::INERT;
        };
        let id = callsite.id(CallsiteKind::Sync);
        let parent = frame::top(hot);
        let (node, path) = frame::find_or_create(hot, parent.path(), id);
        Guard::push(hot, node, path, parent)
    }

    #[inline(always)]
    fn push(hot: &mut Hot, node: u32, path: u32, parent: &Frame) -> Guard {
        let timed = frame::decide_timed(hot, node, parent);
        match frame::push(hot, node, path, timed) {
            Some((_, depth)) => Guard { depth },
            None => Guard::INERT,
        }
    }

    const INERT: Guard = Guard { depth: INERT };
}

#[inline(always)]
fn pop_and_record(hot: &mut Hot, depth: u32) {
    // SAFETY: depth < hot.depth <= stack_cap; owner thread.
    let f = unsafe { frame::frame(hot, depth) };
    let node = f.node;
    let timing = frame::pop(hot, f, depth);
    frame::record(hot, node, timing);
}

/// Drop of a guard whose frame is not on top.
#[cold]
#[inline(never)]
fn leaked_or_stale(hot: &mut Hot, depth: u32) {
    // Inner guards were leaked (`mem::forget`): discard their frames and
    // record ours. A stale guard (depth >= hot.depth) records nothing.
    if depth != INERT && depth >= 1 && depth < hot.depth {
        hot.depth = depth + 1;
        pop_and_record(hot, depth);
    }
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: owner thread (Guard is !Send); no other reference to the
        // hot state is alive during drop.
        let hot = unsafe { &mut *thread::hot() };
        // Our frame is on top exactly when the depth is ours + 1. Frames
        // nest, so nothing pushed after ours can still be live here; if
        // the depth differs, either a new session reset the stack (depth
        // is 1 and ours was >= 1), or guards inside ours were leaked.
        if hot.depth != self.depth.wrapping_add(1) {
            leaked_or_stale(hot, self.depth);
            return;
        }
        pop_and_record(hot, self.depth);
    }
}
