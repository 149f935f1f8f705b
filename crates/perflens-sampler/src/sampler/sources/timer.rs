//! The timer source, used where perf_event_open is refused: a POSIX
//! timer on the thread's CPU clock (`timer_create` with
//! `SIGEV_THREAD_ID`) whose expiry signals that thread. A sample weighs
//! the thread's CPU time since its last one, as a perf event's does
//! (`SamplerState::sample_weight`); 1 + the timer's overrun count periods only
//! where the thread's clock cannot be read.
//!
//! The kernel timer id is owned by the thread's slot: created when the
//! thread is armed, read by that thread's handler (`timer_getoverrun`),
//! deleted by `disarm`.

use std::io;

use crate::sampler::{last_err, thread_clock};

/// Creates a (disarmed) POSIX CPU timer on `tid`'s CPU clock whose
/// expiry signals `tid`.
pub(super) fn open_timer(tid: i32, sig: i32) -> io::Result<i32> {
    // SAFETY: zeroed sigevent is a valid starting value.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_notify_thread_id = tid;
    let mut id: libc::c_int = 0;
    // SAFETY: raw timer_create with a valid sigevent and out-pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            thread_clock(tid),
            &sev as *const libc::sigevent,
            &mut id as *mut libc::c_int,
        )
    };
    if rc != 0 {
        return Err(last_err());
    }
    Ok(id)
}

pub(super) fn timer_set(id: i32, period_ns: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let its = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: raw timer_settime on our timer with a valid itimerspec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            id,
            0,
            &its as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        )
    };
    if rc != 0 { Err(last_err()) } else { Ok(()) }
}

pub(super) fn timer_delete(id: i32) {
    // SAFETY: deleting our own timer id.
    unsafe { libc::syscall(libc::SYS_timer_delete, id) };
}

/// Periods this expiry stands for: 1 + the overruns since the last one
/// (the weight of a sample when the thread's CPU clock cannot be read).
/// One syscall: async-signal-safe.
pub(super) fn timer_periods(id: i32) -> u64 {
    // SAFETY: timer_getoverrun on our timer id (a syscall).
    let ov = unsafe { libc::syscall(libc::SYS_timer_getoverrun, id) };
    1 + ov.max(0) as u64
}
