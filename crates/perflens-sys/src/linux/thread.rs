//! Linux threads: `gettid`, `prctl(PR_GET_NAME)`, `pthread_getattr_np`,
//! the kernel's per-thread CPU clock ids, `tgkill`, `getrlimit`.

use std::io;

/// The thread's name: its OS-level name (Rust names spawned threads there
/// too, cut to 15 bytes), with the main thread called `main` as in
/// `std`; `None` if it cannot be read.
pub fn name() -> Option<String> {
    // SAFETY: getpid and gettid have no preconditions.
    if unsafe { libc::getpid() } == unsafe { libc::gettid() } {
        return Some("main".to_string());
    }
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL-terminated, into
    // the buffer we pass.
    if unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr()) } != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..len]).into_owned()).filter(|n| !n.is_empty())
}

/// The thread's id as the kernel knows it (`gettid`). Async-signal-safe.
#[inline]
pub fn tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// The calling thread's stack, `[lowest, highest)` address, if the
/// system tells (`pthread_getattr_np`, exact for every thread). Not
/// async-signal-safe.
pub fn stack_bounds() -> Option<(u64, u64)> {
    // SAFETY: `attr` is initialised by pthread_getattr_np before use and
    // destroyed after; the out-pointers point to locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr = std::ptr::null_mut();
        let mut size = 0usize;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (ok && size > 0).then(|| (addr as u64, addr as u64 + size as u64))
    }
}

/// The size of the calling thread's stack, if the system tells.
pub fn stack_size() -> Option<usize> {
    stack_bounds().map(|(lo, hi)| (hi - lo) as usize)
}

/// The kernel's clock id of thread `tid`'s CPU clock (`CPUCLOCK_PERTHREAD
/// | CPUCLOCK_SCHED`), valid for any thread of this process: what
/// `pthread_getcpuclockid` returns, without needing a `pthread_t`.
pub(crate) fn cpu_clock_id(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; clock_gettime is
    // async-signal-safe.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time of thread `tid` of this process in ns (`None` if the thread
/// is gone).
pub fn cpu_ns(tid: i32) -> Option<u64> {
    clock_ns(cpu_clock_id(tid))
}

/// The calling thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`).
/// Async-signal-safe.
#[inline]
pub fn own_cpu_ns() -> Option<u64> {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Sends signal `sig` to thread `tid` of this process (`tgkill`; signal 0
/// sends nothing and only looks the thread up).
pub fn signal(tid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: tgkill takes no pointers.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, sig) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether thread `tid` of this process still exists. An exited thread
/// is gone at once (the kernel reaps threads as they exit); a thread the
/// lookup cannot rule out (any error but `ESRCH`) counts as alive.
pub fn alive(tid: i32) -> bool {
    match signal(tid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() != Some(libc::ESRCH),
    }
}

/// Signal number `SIGRTMIN + n` (glibc reserves the first real-time
/// signals, so `SIGRTMIN` is known at run time only). Not checked
/// against `SIGRTMAX`: the caller checks the range it accepts.
pub fn realtime_signal(n: i32) -> Option<i32> {
    libc::SIGRTMIN().checked_add(n)
}

/// The main thread's stack limit in bytes (`RLIMIT_STACK`), `None` if
/// unlimited or unknown: how far down the main thread's `[stack]`
/// mapping may grow.
pub fn main_stack_limit() -> Option<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) } == 0;
    (ok && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur)
}
