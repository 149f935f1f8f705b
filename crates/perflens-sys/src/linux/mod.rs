//! The Linux implementation of every mechanism: the one perflens was
//! built on, with everything on (see [`CAPABILITIES`]). Each file has the
//! entry points of its twin in `portable/`. What is plain POSIX is kept
//! in `posix/` and included from there (the session files, signals, the
//! SIGBUS guard, mapping memory); the POSIX implementation in turn
//! includes the files here that are plain POSIX (the clock, fork
//! handlers, mapped files).

pub mod barrier;
#[path = "../posix/bus_guard.rs"]
mod bus_guard;
pub mod clock;
pub mod cpu_timer;
pub mod fork;
pub mod mapped;
pub mod mem;
pub mod modules;
#[path = "../posix/pages.rs"]
mod pages;
pub mod perf;
pub mod proc;
pub mod process;
#[path = "../posix/shm.rs"]
pub mod shm;
#[path = "../posix/signal.rs"]
pub mod signal;
pub mod thread;

use crate::Capabilities;
use std::os::fd::{FromRawFd, OwnedFd};

/// Linux has every capability.
pub const CAPABILITIES: Capabilities = Capabilities {
    platform: "linux",
    live_view: true,
    stop_signals: true,
    cpu_sampling: true,
    process_barrier: true,
    fork_handling: true,
    page_release: true,
};

/// A new pipe whose two ends are closed on `exec` (`pipe2`), as
/// `(read, write)`: the stop signals' self-pipe (`posix/signal.rs`).
pub(crate) fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two descriptors just opened that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
