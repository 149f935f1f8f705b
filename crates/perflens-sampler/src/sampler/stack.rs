//! The stacks a signal handler may read.
//!
//! The handler reads the interrupted thread's stack from its stack pointer
//! up to the top of a stack known to be mapped, and nothing else. A thread
//! has two known stacks, checked on every sample:
//!
//! 1. Its own stack, `[stack_lo, stack_hi)` in its slot. It is learned
//!    once and is the same whatever the thread runs on later:
//!    - armed on the thread itself: `pthread_getattr_np`, exact;
//!    - the main thread armed by another thread: the `[stack]` mapping
//!      of the slot's `/proc/self/maps` snapshot, less the stack rlimit;
//!    - another thread armed by another thread: the snapshot's mapping
//!      that holds the thread pointer (glibc and musl put a thread's
//!      control block at the top of its stack mapping, above the stack
//!      itself), from its start to the thread pointer.
//!
//!    It is never learned from the stack pointer of a sample: a thread can
//!    be sampled on an alternate signal stack or a coroutine's stack,
//!    which may be freed or shrunk later.
//! 2. The alternate signal stack installed on the thread now
//!    (`sigaltstack(NULL, &old)`, async-signal-safe), asked only when the
//!    stack pointer is outside the thread's own stack. The kernel put the
//!    signal frame at its top, so it is mapped from the stack pointer up.
//!
//! A stack pointer on neither (a coroutine stack, say) reads no stack at
//! all: the sample keeps its leaf and its context and is counted in
//! `off_stack` (and `truncated`).
//!
//! Ownership: the maps snapshot belongs to the slot (`SlotOwned::maps`)
//! and is published to the handler through `Slot::maps` until
//! `stack_hi` is set, after the handler's last use of it; the watcher
//! then drops it.

use std::sync::atomic::Ordering;

use super::session::SamplerState;
use super::slot::Slot;
use crate::arch;

/// Stack bounds of the calling thread (not signal-safe; call when arming).
pub(super) fn current_stack_bounds() -> Option<(u64, u64)> {
    perflens_sys::thread::stack_bounds()
}

impl SamplerState {
    /// The range the handler may read for the interrupted `sp`: `[sp,
    /// top)` of the known stack that holds `sp`, or `None` (counted) if
    /// no known stack does. Signal-safe: no allocation, no lock; at most
    /// one `sigaltstack` query, only when `sp` is off the thread's stack.
    pub(super) fn stack_range(&self, slot: &Slot, tid: i32, sp: u64) -> Option<(u64, u64)> {
        let holds = |(lo, hi): (u64, u64)| sp >= lo && sp < hi;
        if let Some((_, hi)) = self.own_stack(slot, tid).filter(|&b| holds(b)) {
            return Some((sp, hi));
        }
        if let Some((_, hi)) = perflens_sys::signal::alt_stack().filter(|&b| holds(b)) {
            return Some((sp, hi));
        }
        slot.off_stack.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// The bounds of the thread's own stack, resolved from the slot's maps
    /// snapshot on first use if arming did not know them. Runs on the
    /// thread itself (its signal handler).
    fn own_stack(&self, slot: &Slot, tid: i32) -> Option<(u64, u64)> {
        let hi = slot.stack_hi.load(Ordering::Acquire);
        if hi != 0 {
            return Some((slot.stack_lo.load(Ordering::Relaxed), hi));
        }
        let m = slot.maps.load(Ordering::Acquire);
        if m.is_null() {
            return None;
        }
        // SAFETY: the snapshot is kept alive by the slot's owner until
        // `stack_hi` is set (which happens below, after the last use).
        let maps = unsafe { &*m };
        let (lo, hi) = if tid == self.pid {
            // Main thread: its `[stack]` mapping, which grows down to the
            // stack rlimit (so `sp` may be below the snapshot's start).
            let (_, b) = maps.main_stack()?;
            (b.saturating_sub(self.main_stack_limit), b)
        } else {
            // Any other thread: its control block, which the thread
            // pointer points at, sits at the top of its stack mapping.
            let tp = arch::thread_pointer();
            let (a, _) = maps.find(tp)?;
            (a, tp)
        };
        slot.stack_lo.store(lo, Ordering::Relaxed);
        slot.stack_hi.store(hi, Ordering::Release);
        Some((lo, hi))
    }
}
