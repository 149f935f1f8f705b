//! Signals with POSIX calls: `sigaction`, `raise`, `pthread_sigmask`,
//! `kill`, a self-pipe (made by the implementation's `cloexec_pipe`:
//! `pipe2` on Linux, `pipe` and `fcntl` in the POSIX implementation,
//! since macOS has no `pipe2`), `errno`, `sigaltstack`. The Linux and
//! the POSIX implementations share this file; only where `errno` lives
//! differs by system.

use crate::signal::{Action, Disposition};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

pub const SIGINT: i32 = libc::SIGINT;
pub const SIGTERM: i32 = libc::SIGTERM;
pub const SIGTRAP: i32 = libc::SIGTRAP;
pub const SIGIO: i32 = libc::SIGIO;

/// The signal's details an `SA_SIGINFO` handler gets.
pub type Info = libc::siginfo_t;

/// What `sig` does now.
pub fn current(sig: i32) -> std::io::Result<Disposition> {
    // SAFETY: queries the action into a zeroed sigaction; changes nothing.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(match old.sa_sigaction {
        libc::SIG_DFL => Disposition::Default,
        libc::SIG_IGN => Disposition::Ignore,
        _ => Disposition::Handler,
    })
}

/// Sets `sig`'s action, with an empty mask. Async-signal-safe (one
/// `sigaction`, nothing allocated).
pub fn install(sig: i32, action: Action) -> std::io::Result<()> {
    // SAFETY: a zeroed sigaction is valid; the mask is emptied below.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    (act.sa_sigaction, act.sa_flags) = match action {
        Action::Default => (libc::SIG_DFL, libc::SA_RESTART),
        Action::Plain(f) => (f as usize, libc::SA_RESTART),
        Action::Info(f) => (f as usize, libc::SA_SIGINFO | libc::SA_RESTART),
    };
    // SAFETY: a handler of the signature its flags announce (or SIG_DFL),
    // an emptied mask.
    let rc = unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to the calling thread. Async-signal-safe.
pub fn raise(sig: i32) {
    // SAFETY: raise has no memory preconditions.
    unsafe { libc::raise(sig) };
}

/// Unblocks `sig` for the calling thread.
pub fn unblock_in_thread(sig: i32) {
    // SAFETY: a zeroed, then emptied set with one signal added.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// Sends `sig` to this process (any thread that does not block it takes
/// it).
pub fn send_to_process(sig: i32) {
    // SAFETY: kill and getpid have no memory preconditions.
    unsafe { libc::kill(libc::getpid(), sig) };
}

/// This thread's `errno` slot (glibc and musl: `__errno_location`).
#[cfg(target_os = "linux")]
#[inline]
fn errno_slot() -> *mut libc::c_int {
    // SAFETY: no preconditions; returns this thread's errno slot.
    unsafe { libc::__errno_location() }
}

/// This thread's `errno` slot (macOS: `__error`).
#[cfg(target_os = "macos")]
#[inline]
fn errno_slot() -> *mut libc::c_int {
    // SAFETY: no preconditions; returns this thread's errno slot.
    unsafe { libc::__error() }
}

/// `errno` as a handler found it, put back when dropped.
#[derive(Debug)]
pub struct SavedErrno(libc::c_int);

impl SavedErrno {
    /// Saves this thread's `errno`. Async-signal-safe.
    pub fn save() -> SavedErrno {
        // SAFETY: errno_slot returns this thread's errno slot.
        SavedErrno(unsafe { *errno_slot() })
    }
}

impl Drop for SavedErrno {
    fn drop(&mut self) {
        // SAFETY: as in `save`.
        unsafe { *errno_slot() = self.0 };
    }
}

/// The alternate signal stack installed on the calling thread, if any,
/// as `[lo, hi)`. Async-signal-safe: one `sigaltstack` that only queries.
pub fn alt_stack() -> Option<(u64, u64)> {
    // SAFETY: an all-zero stack_t is a valid out-value.
    let mut ss: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: querying only (no new stack); `ss` is a valid out-pointer.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut ss) } != 0 {
        return None;
    }
    if ss.ss_flags & libc::SS_DISABLE != 0 || ss.ss_size == 0 {
        return None;
    }
    let lo = ss.ss_sp as u64;
    Some((lo, lo.checked_add(ss.ss_size as u64)?))
}

/// The write end of the forwarding pipe, for the handler (-1: none).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The read end of a self-pipe: a thread waits on it for the signals a
/// [`SignalForwarder`] forwards.
#[derive(Debug)]
pub struct SelfPipe {
    read: OwnedFd,
}

/// The write end of a self-pipe, until [`SignalForwarder::forward`]
/// hands it to the signal handler.
#[derive(Debug)]
pub struct SignalForwarder {
    write: OwnedFd,
}

/// A new self-pipe (close-on-exec: see the implementation's
/// `cloexec_pipe`).
pub fn self_pipe() -> std::io::Result<(SelfPipe, SignalForwarder)> {
    let (read, write) = super::cloexec_pipe()?;
    Ok((SelfPipe { read }, SignalForwarder { write }))
}

/// The handler: writes the signal's number into the pipe.
/// Async-signal-safe: one `write`, errno preserved.
extern "C" fn forward_signal(sig: i32) {
    let fd = PIPE_WRITE.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    let _errno = SavedErrno::save();
    let byte = sig as u8;
    // SAFETY: writes one byte from a local to our pipe.
    unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
}

impl SignalForwarder {
    /// Hands the write end to the handler (for the life of the process)
    /// and installs it for each of `signals`. Returns those it took for.
    pub fn forward(self, signals: &[i32]) -> Vec<i32> {
        PIPE_WRITE.store(self.write.into_raw_fd(), Ordering::Release);
        signals
            .iter()
            .copied()
            .filter(|&s| install(s, Action::Plain(forward_signal)).is_ok())
            .collect()
    }
}

impl SelfPipe {
    /// Waits up to `timeout` (`None`: for ever) for a forwarded signal:
    /// its number, or `None` when the time is up. Interrupted waits and
    /// failed reads wait again.
    pub fn wait(&self, timeout: Option<Duration>) -> std::io::Result<Option<i32>> {
        let timeout_ms = timeout.map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as i32);
        loop {
            let mut pfd = libc::pollfd {
                fd: self.read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
            if n == 0 {
                return Ok(None);
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let mut byte = 0u8;
            // SAFETY: reads one byte into a local from our pipe.
            if unsafe { libc::read(self.read.as_raw_fd(), (&mut byte as *mut u8).cast(), 1) } == 1 {
                return Ok(Some(byte as i32));
            }
        }
    }
}
