//! The guard `#[measure]` puts at the top of a sync function.

use crate::block::{Block, Header};
use crate::callsite::Callsite;
use crate::frame;
use crate::snapshot::CallsiteKind;
use crate::thread;
use std::sync::atomic::Ordering;

/// Measures the enclosing scope: pushes a frame on creation, records the
/// call when dropped (also when unwinding from a panic).
///
/// Cost, measured by `perflens-bench` (see the README): a timed call adds
/// about two clock reads; a count-only call a few nanoseconds.
#[must_use = "the guard measures until it is dropped"]
pub struct Guard {
    block: *mut Header,
    depth: u32,
    epoch: u32,
}

impl Guard {
    /// Enters `callsite` on the current thread.
    #[inline(always)]
    pub fn enter(callsite: &'static Callsite) -> Guard {
        if let Some((block, epoch)) = thread::active_block() {
            let id = callsite.cached_id();
            if id != 0 {
                let h = block.header();
                let depth = h.depth.load(Ordering::Relaxed);
                // SAFETY: depth >= 1 once reset; frame depth-1 exists; owner.
                let parent = unsafe { block.frame(depth - 1) };
                let (parent_path, parent_timed) = (parent.path, parent.timed != 0);
                if let Some(node) = frame::find(block, parent_path, id) {
                    return Guard::push(block, epoch, node, parent_timed);
                }
            }
        }
        Guard::enter_slow(callsite)
    }

    #[cold]
    #[inline(never)]
    fn enter_slow(callsite: &'static Callsite) -> Guard {
        let Some((block, epoch)) = thread::prepare() else {
            return Guard::inert();
        };
        let id = callsite.id(CallsiteKind::Sync);
        let depth = block.header().depth.load(Ordering::Relaxed);
        // SAFETY: depth >= 1 after `prepare`; owner thread.
        let parent = unsafe { block.frame(depth - 1) };
        let (parent_path, parent_timed) = (parent.path, parent.timed != 0);
        let node = frame::find_or_create(block, parent_path, id);
        Guard::push(block, epoch, node, parent_timed)
    }

    #[inline(always)]
    fn push(block: Block, epoch: u32, node: u32, parent_timed: bool) -> Guard {
        let timed = frame::decide_timed(block, node, parent_timed);
        // SAFETY: node < node_cap.
        let path = unsafe { block.node(node) }.path.load(Ordering::Relaxed);
        match frame::push(block, node, path, timed) {
            Some(depth) => Guard {
                block: block.0,
                depth,
                epoch,
            },
            None => Guard::inert(),
        }
    }

    #[inline(always)]
    fn inert() -> Guard {
        Guard {
            block: std::ptr::null_mut(),
            depth: 0,
            epoch: 0,
        }
    }
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.block.is_null() {
            return;
        }
        let block = Block(self.block);
        let h = block.header();
        // A new session reset the block, or an outer guard already popped
        // this frame: nothing of ours to record.
        if h.epoch.load(Ordering::Relaxed) != self.epoch || h.depth.load(Ordering::Relaxed) <= self.depth {
            return;
        }
        // SAFETY: depth < stack_cap; owner thread (Guard is !Send).
        let node = unsafe { block.frame(self.depth) }.node;
        let timing = frame::pop(block, self.depth);
        frame::record(block, node, timing);
    }
}
