//! Pushing and popping shadow-stack frames: the instructions every
//! measured call runs. Shared by the sync guard and the async wrapper.

use crate::block::{self, Frame, MODE_COUNT, MODE_TIMED, Node, OVERFLOW_NODE, bump, key};
use crate::clock;
use crate::histogram::{BUCKETS, bucket_index};
use crate::paths::{self, OVERFLOW_PATH};
use crate::thread::Hot;
use std::sync::atomic::Ordering;

/// The `(node, path)` for table key `k` on this thread, if known.
#[inline(always)]
pub(crate) fn find(hot: &Hot, k: u64) -> Option<(u32, u32)> {
    // SAFETY: `hot.table` points to `table_mask + 1` slots of this
    // thread's block.
    unsafe { block::lookup(hot.table, hot.table_mask, k) }
}

/// The `(node, path)` for `callsite` under `parent_path`, creating the
/// node (and the global path) on first use. Falls back to the overflow
/// node when the thread's tree or the path table is full.
#[cold]
#[inline(never)]
pub(crate) fn find_or_create(hot: &Hot, parent_path: u32, callsite: u32) -> (u32, u32) {
    let k = key(parent_path, callsite);
    if let Some(found) = find(hot, k) {
        return found;
    }
    let block = hot.block();
    let h = block.header();
    // A full tree maps new contexts to the overflow node without a table
    // entry, so the table never holds more than `node_cap` keys.
    if h.node_count.load(Ordering::Relaxed) >= h.node_cap {
        return (OVERFLOW_NODE, OVERFLOW_PATH);
    }
    let path = paths::child(parent_path, callsite);
    if path == OVERFLOW_PATH {
        return (OVERFLOW_NODE, OVERFLOW_PATH);
    }
    match block.push_node(path) {
        Some(node) => {
            block.insert(k, node, path);
            (node, path)
        }
        None => (OVERFLOW_NODE, OVERFLOW_PATH),
    }
}

/// Node `i` of this thread.
#[inline(always)]
pub(crate) fn node(hot: &Hot, i: u32) -> &Node {
    // SAFETY: node indices come from the table or are the overflow node,
    // both < node_cap.
    unsafe { &*hot.nodes.add(i as usize) }
}

/// Frame `i` of this thread. The reference does not borrow `hot`.
///
/// # Safety
/// `i < stack_cap`; no other reference to that frame is alive while the
/// result is used.
#[inline(always)]
pub(crate) unsafe fn frame<'a>(hot: &Hot, i: u32) -> &'a mut Frame {
    // SAFETY: per the caller's contract; frames live as long as the block,
    // which is never unmapped.
    unsafe { &mut *hot.frames.add(i as usize) }
}

/// The frame on top of the stack (the root sentinel if none). The
/// reference does not borrow `hot`: pushing writes the next frame, never
/// this one, so it stays valid while a child is pushed.
#[inline(always)]
pub(crate) fn top<'a>(hot: &Hot) -> &'a Frame {
    // SAFETY: depth >= 1 once attached, and depth <= stack_cap; frames
    // live as long as the block, which is never unmapped.
    unsafe { &*hot.frames.add(hot.depth as usize - 1) }
}

/// Whether a new call of `node` under a parent (timed or not) is timed.
/// Sampled mode times a call when its node's countdown runs out, or when
/// its parent is timed (so the parent's exclusive time stays exact).
#[inline(always)]
pub(crate) fn decide_timed(hot: &Hot, node_idx: u32, parent: &Frame) -> bool {
    match hot.mode {
        MODE_COUNT => false,
        MODE_TIMED => true,
        _ => {
            let n = node(hot, node_idx);
            let c = n.countdown.load(Ordering::Relaxed);
            if c == 0 {
                n.countdown.store(hot.sample_every - 1, Ordering::Relaxed);
                true
            } else {
                n.countdown.store(c - 1, Ordering::Relaxed);
                parent.timed != 0
            }
        }
    }
}

/// Pushes a frame. Returns a pointer to it and its index, or `None` if
/// the shadow stack is full (the call is then counted as dropped).
#[inline(always)]
pub(crate) fn push(hot: &mut Hot, node: u32, path: u32, timed: bool) -> Option<(*mut Frame, u32)> {
    let tsc = hot.tsc;
    let depth = hot.depth;
    if depth >= hot.stack_cap {
        bump(&hot.block().header().dropped_frames, 1);
        return None;
    }
    // SAFETY: depth < stack_cap; owner thread.
    let f = unsafe { frame(hot, depth) };
    f.node = node;
    f.timed = timed as u32;
    f.key_hi = key(path, 0);
    // `start` and `child` are only read when the frame is timed.
    if timed {
        f.child = 0;
        f.start = clock::now_with(tsc);
    }
    hot.depth = depth + 1;
    Some((f as *mut Frame, depth))
}

/// Pops frame `depth` (and any frames above it whose guards were leaked).
/// Returns `(inclusive, exclusive)` ticks when the call was timed, after
/// charging the inclusive time to the parent frame.
#[inline(always)]
pub(crate) fn pop(hot: &mut Hot, f: &Frame, depth: u32) -> Option<(u64, u64)> {
    hot.depth = depth;
    if f.timed == 0 {
        return None;
    }
    let dur = clock::now_with(hot.tsc).saturating_sub(f.start);
    let excl = dur.saturating_sub(f.child);
    // SAFETY: depth >= 1 (frame 0 is the root sentinel, never popped).
    let parent = unsafe { frame(hot, depth - 1) };
    parent.child = parent.child.wrapping_add(dur);
    Some((dur, excl))
}

/// Adds one to histogram `which` (0 inclusive, 1 exclusive) of a node.
#[inline(always)]
pub(crate) fn hist_add(hot: &Hot, node: u32, which: usize, value: u64) {
    // SAFETY: node < node_cap, which < 2, bucket < BUCKETS: inside the
    // histogram area of this thread's block.
    let c = unsafe {
        &*hot
            .hist
            .add((node as usize * 2 + which) * BUCKETS + bucket_index(value))
    };
    bump(c, 1);
}

/// Records one completed call on a node.
#[inline(always)]
pub(crate) fn record(hot: &Hot, node_idx: u32, timing: Option<(u64, u64)>) {
    let n = node(hot, node_idx);
    bump(&n.calls, 1);
    if let Some((incl, excl)) = timing {
        // In timed mode every call is timed: the snapshot takes
        // `timed_calls` from `calls`, so the hot path skips the store.
        if hot.mode != MODE_TIMED {
            bump(&n.timed_calls, 1);
        }
        bump(&n.total, incl);
        bump(&n.self_, excl);
        hist_add(hot, node_idx, 0, incl);
        hist_add(hot, node_idx, 1, excl);
    }
}
