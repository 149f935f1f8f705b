//! The POSIX implementation: only calls that the `libc` crate has on both
//! macOS and Linux, so that the code macOS runs is code CI runs on Linux
//! (built there with `RUSTFLAGS="--cfg perflens_posix"`). It has the live
//! view (shared file mappings under the SIGBUS guard), the stop signals'
//! report (`sigaction`, a `pipe`/`fcntl` self-pipe), fork handlers
//! (`pthread_atfork`), process liveness (`kill(pid, 0)`) and start time,
//! the OS's thread names and ids; not CPU sampling, which needs Linux's
//! perf events or per-thread CPU timers (see [`CAPABILITIES`]).
//!
//! Shared, not copied: the files of `linux/` that are plain POSIX (the
//! monotonic clock, fork handlers, mapped files) are included from there,
//! and `linux/` includes what both keep here (the session files,
//! signals, the SIGBUS guard, mapping memory). What the `std`-only build
//! already answers for a mechanism this one lacks (perf events, CPU
//! timers, the process barrier, the loader's list of objects, `/proc`)
//! is included from `portable/`. Where macOS and Linux really differ
//! (where `errno` lives, the directory of session files, how a thread's
//! id and a process's start time are read) the difference is one small
//! function per system in the file concerned.

#[path = "../portable/barrier.rs"]
pub mod barrier;
mod bus_guard;
#[path = "../linux/clock.rs"]
pub mod clock;
#[path = "../portable/cpu_timer.rs"]
pub mod cpu_timer;
#[path = "../linux/fork.rs"]
pub mod fork;
#[path = "../linux/mapped.rs"]
pub mod mapped;
pub mod mem;
#[path = "../portable/modules.rs"]
pub mod modules;
mod pages;
#[path = "../portable/perf.rs"]
pub mod perf;
#[path = "../portable/proc.rs"]
pub mod proc;
pub mod process;
pub mod shm;
pub mod signal;
/// The thread facts that serve only CPU sampling (stacks, CPU clocks,
/// signals to one thread): the `std`-only build's. Its name and id are
/// not used (`thread.rs` has the OS's).
#[path = "../portable/thread.rs"]
#[allow(dead_code)]
mod std_thread;
pub mod thread;

use crate::Capabilities;
use std::os::fd::{FromRawFd, OwnedFd};

/// The live view, the stop signals' report and fork handling; no CPU
/// sampling and no process-wide barrier. Released pages read back as
/// zero where the system's page is no larger than [`crate::mem::PAGE`]
/// (Linux on x86_64, macOS on Intel); Apple silicon's 16 KiB pages give
/// back only whole 16 KiB runs of a range, so the rest keeps its bytes
/// there.
pub const CAPABILITIES: Capabilities = Capabilities {
    platform: PLATFORM,
    live_view: true,
    stop_signals: true,
    cpu_sampling: false,
    process_barrier: false,
    fork_handling: true,
    page_release: !cfg!(all(target_os = "macos", target_arch = "aarch64")),
};

/// The platform's name in messages: "macos" on a Mac.
#[cfg(target_os = "macos")]
const PLATFORM: &str = "macos";

/// The platform's name in messages: "posix" where the POSIX
/// implementation is forced (Linux with `--cfg perflens_posix`).
#[cfg(not(target_os = "macos"))]
const PLATFORM: &str = "posix";

/// A new pipe whose two ends are closed on `exec`, as `(read, write)`:
/// `pipe`, then `fcntl(FD_CLOEXEC)` on each end (macOS has no `pipe2`;
/// a thread that forks and execs in between may leak the two ends into
/// that one child, which is harmless for the self-pipe).
pub(crate) fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two descriptors just opened that nothing else owns.
    let ends = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in fds {
        // SAFETY: fcntl on a descriptor we own, no pointers.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(ends)
}
