//! The Linux per-thread CPU timer: raw `timer_create`, `timer_settime`,
//! `timer_delete` and `timer_getoverrun` system calls (glibc's wrappers
//! return a `timer_t` pointer; the kernel's id is an `int`), on the clock
//! id of any thread of this process.

use std::io;

/// Per-thread CPU timers exist here.
pub const AVAILABLE: bool = true;

/// Creates a disarmed timer on thread `tid`'s CPU clock whose expiry
/// sends `sig` to `tid` (signal 0: expiries only count). Returns the
/// kernel's timer id.
pub fn create(tid: i32, sig: i32) -> io::Result<i32> {
    // SAFETY: an all-zero sigevent is a valid starting value.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = if sig == 0 {
        libc::SIGEV_NONE
    } else {
        libc::SIGEV_THREAD_ID
    };
    sev.sigev_signo = sig;
    sev.sigev_notify_thread_id = tid;
    let mut id: libc::c_int = 0;
    // SAFETY: raw timer_create with a valid sigevent and out-pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            super::thread::cpu_clock_id(tid),
            &sev as *const libc::sigevent,
            &mut id as *mut libc::c_int,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

/// Arms timer `id` to expire every `period_ns` of its thread's CPU time.
pub fn arm(id: i32, period_ns: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let its = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: raw timer_settime on a timer id with a valid itimerspec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            id,
            0,
            &its as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Deletes timer `id`: no further expiry (a signal already queued may
/// still arrive).
pub fn delete(id: i32) {
    // SAFETY: deleting a timer id the caller owns.
    unsafe { libc::syscall(libc::SYS_timer_delete, id) };
}

/// Expiries of timer `id` merged into the last one delivered (0 if it
/// cannot be read). One system call: async-signal-safe.
#[inline]
pub fn overrun(id: i32) -> u64 {
    // SAFETY: timer_getoverrun takes no pointer.
    let ov = unsafe { libc::syscall(libc::SYS_timer_getoverrun, id) };
    ov.max(0) as u64
}
