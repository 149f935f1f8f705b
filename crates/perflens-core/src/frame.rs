//! Pushing and popping shadow-stack frames: the instructions every
//! measured call runs. Shared by the sync guard and the async wrapper.

use crate::block::{Block, MODE_COUNT, MODE_TIMED, Node, OVERFLOW_NODE, bump, key};
use crate::clock;
use crate::histogram::bucket_index;
use crate::paths::{self, OVERFLOW_PATH};
use std::sync::atomic::Ordering;

/// The node for `callsite` under `parent_path` on this block, if known.
#[inline(always)]
pub(crate) fn find(block: Block, parent_path: u32, callsite: u32) -> Option<u32> {
    block.lookup(key(parent_path, callsite))
}

/// The node for `callsite` under `parent_path`, creating it (and the
/// global path) on first use. Falls back to the overflow node when the
/// thread's tree or the path table is full.
#[cold]
#[inline(never)]
pub(crate) fn find_or_create(block: Block, parent_path: u32, callsite: u32) -> u32 {
    let k = key(parent_path, callsite);
    if let Some(n) = block.lookup(k) {
        return n;
    }
    let h = block.header();
    // A full tree maps new contexts to the overflow node without a table
    // entry, so the table never holds more than `node_cap` keys.
    if h.node_count.load(Ordering::Relaxed) >= h.node_cap {
        return OVERFLOW_NODE;
    }
    let path = paths::child(parent_path, callsite);
    let node = if path == OVERFLOW_PATH {
        OVERFLOW_NODE
    } else {
        match block.push_node(path) {
            Some(n) => n,
            None => return OVERFLOW_NODE,
        }
    };
    if node != OVERFLOW_NODE {
        block.insert(k, node);
    }
    node
}

/// Decides whether a call is timed in sampled mode: when its parent is
/// timed (so the parent's self time stays exact) or when the node's
/// countdown runs out.
#[inline(always)]
pub(crate) fn sample(block: Block, node: &Node, parent_timed: bool) -> bool {
    let c = node.countdown.load(Ordering::Relaxed);
    if c == 0 {
        let every = block.header().sample_every.load(Ordering::Relaxed);
        node.countdown.store(every - 1, Ordering::Relaxed);
        true
    } else {
        node.countdown.store(c - 1, Ordering::Relaxed);
        parent_timed
    }
}

/// Whether a new call under the frame at `depth - 1` is timed.
#[inline(always)]
pub(crate) fn decide_timed(block: Block, node_idx: u32, parent_timed: bool) -> bool {
    match block.header().mode.load(Ordering::Relaxed) {
        MODE_TIMED => true,
        MODE_COUNT => false,
        _ => {
            // SAFETY: node indices come from the table or are the overflow
            // node, both < node_cap.
            let node = unsafe { block.node(node_idx) };
            sample(block, node, parent_timed)
        }
    }
}

/// Pushes a frame for `node_idx`. Returns the new frame's index, or
/// `None` if the shadow stack is full (the call is counted as dropped).
#[inline(always)]
pub(crate) fn push(block: Block, node_idx: u32, path: u32, timed: bool) -> Option<u32> {
    let h = block.header();
    let depth = h.depth.load(Ordering::Relaxed);
    if depth >= h.stack_cap {
        bump(&h.dropped_frames, 1);
        return None;
    }
    // SAFETY: depth < stack_cap; owner thread.
    let frame = unsafe { block.frame(depth) };
    frame.node = node_idx;
    frame.path = path;
    frame.child = 0;
    frame.timed = timed as u32;
    frame.start = if timed { clock::now() } else { 0 };
    h.depth.store(depth + 1, Ordering::Relaxed);
    Some(depth)
}

/// Pops frame `depth` (and any frames above it whose guards were leaked).
/// Returns `(inclusive, exclusive)` ticks when the call was timed, after
/// charging the inclusive time to the parent frame.
#[inline(always)]
pub(crate) fn pop(block: Block, depth: u32) -> Option<(u64, u64)> {
    let h = block.header();
    h.depth.store(depth, Ordering::Relaxed);
    // SAFETY: depth < stack_cap (it was pushed); owner thread.
    let frame = unsafe { block.frame(depth) };
    if frame.timed == 0 {
        return None;
    }
    let dur = clock::now().saturating_sub(frame.start);
    let excl = dur.saturating_sub(frame.child);
    // SAFETY: depth >= 1 (frame 0 is the root sentinel, never popped).
    let parent = unsafe { block.frame(depth - 1) };
    parent.child = parent.child.wrapping_add(dur);
    Some((dur, excl))
}

/// Records one completed call on a node.
#[inline(always)]
pub(crate) fn record(block: Block, node_idx: u32, timing: Option<(u64, u64)>) {
    // SAFETY: node_idx < node_cap.
    let node = unsafe { block.node(node_idx) };
    bump(&node.calls, 1);
    if let Some((incl, excl)) = timing {
        bump(&node.timed_calls, 1);
        bump(&node.total, incl);
        bump(&node.self_, excl);
        // SAFETY: node_idx < node_cap, which < 2, bucket < BUCKETS.
        unsafe {
            bump(block.bucket(node_idx, 0, bucket_index(incl)), 1);
            bump(block.bucket(node_idx, 1, bucket_index(excl)), 1);
        }
    }
}
