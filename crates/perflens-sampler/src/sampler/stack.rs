//! The stacks a signal handler may read.
//!
//! The handler reads the interrupted thread's stack from its stack
//! pointer up, and nothing outside a range known to be mapped. A slot's
//! stack bounds come from `pthread_getattr_np` when the thread is armed on
//! itself, or from the `/proc/self/maps` snapshot the slot holds (the
//! slot owns it until the bounds are resolved; the watcher then drops it).

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use super::session::Session;
use super::slot::Slot;

/// Stack bounds of the calling thread (not signal-safe; call when arming).
pub(super) fn current_stack_bounds() -> Option<(u64, u64)> {
    // SAFETY: standard pthread_getattr_np / getstack / destroy sequence on
    // a zeroed attr owned here.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && size > 0).then(|| (addr as u64, addr as u64 + size as u64))
    }
}

impl Session {
    /// Stack bounds for the interrupted `sp`: `[sp, top)` if `sp` is inside
    /// the thread's known stack. Signal-safe (no allocation, no syscalls).
    pub(super) fn stack_range(&self, slot: &Slot, tid: i32, sp: u64) -> Option<(u64, u64)> {
        let mut lo = slot.stack_lo.load(Ordering::Acquire);
        let mut hi = slot.stack_hi.load(Ordering::Acquire);
        if hi == 0 {
            let m = slot.maps.load(Ordering::Acquire);
            if m.is_null() {
                return None;
            }
            // SAFETY: the snapshot is kept alive by the slot's owner until
            // `stack_hi` is set (which happens below, after the last use).
            let maps = unsafe { &*m };
            if tid == self.pid {
                // Main thread: only its `[stack]` mapping counts (it grows
                // down, so `sp` may be below the snapshot's start); an `sp`
                // elsewhere (an alternate signal stack) resolves nothing.
                let (_, b) = maps.main_stack()?;
                if sp >= b || b - sp > self.main_stack_limit {
                    return None;
                }
                lo = b.saturating_sub(self.main_stack_limit);
                hi = b;
            } else {
                let (a, b) = maps.find(sp)?;
                lo = a;
                hi = b;
            }
            slot.stack_lo.store(lo, Ordering::Relaxed);
            slot.stack_hi.store(hi, Ordering::Release);
        }
        (sp >= lo && sp < hi).then_some((sp, hi))
    }
}
