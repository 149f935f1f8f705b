//! perflens's seam with the operating system and the processor: every
//! system call of the runtime, the live reader and the facade, in one
//! place, so that a port to another platform adds a module here and
//! edits no function elsewhere.
//!
//! - [`arch`]: the cycle counter (`rdtsc` on x86_64; none elsewhere, where
//!   the runtime uses `Instant`).
//! - [`clock`]: the monotonic clock and the cycle counter's calibration
//!   against it, across processes.
//! - [`barrier`]: a process-wide memory barrier (`membarrier`).
//! - [`mem`]: page-granular memory for blocks and trace buffers, shared
//!   file mappings, which pages are resident, moving a mapping.
//! - [`shm`]: the live session's files: the private directory of this
//!   user's sessions, the ownership checks on what is found there,
//!   exclusive creation, positioned writes, free space, and the read-only
//!   mapping a reader takes (guarded against a file that shrinks).
//! - [`signal`]: installing and restoring signal handlers, the stop
//!   signals' self-pipe, the alternate signal stack, `errno` kept across
//!   a handler.
//! - [`fork`]: handlers run around `fork`.
//! - [`process`]: whether a process is alive, and when it started.
//! - [`thread`]: the calling thread's OS name and id.
//! - [`CAPABILITIES`]: what this build can do, for tests and reports.
//!
//! # One implementation per platform
//!
//! The platform is chosen once, here, among four directories:
//! - `linux/` on Linux;
//! - `posix/` on macOS, and on Linux when built with `RUSTFLAGS="--cfg
//!   perflens_posix"` (so that CI runs on Linux the code macOS runs):
//!   only calls the `libc` crate has on both systems;
//! - `windows/` on Windows: `portable/` with the stop signals as console
//!   control events (Ctrl-C, Ctrl-Break, the console closing);
//! - `portable/` (`std` only) everywhere else, and wherever
//!   `RUSTFLAGS="--cfg perflens_portable"` is given (it wins over the
//!   others; CI checks and tests that build on Linux).
//!
//! All of them have the same entry points, the way framehop keeps one
//! module per architecture; the public modules above hold what they
//! share (types, documentation, tests) and re-export the implementation
//! in force. No function chooses its platform with a `#[cfg]` inside it;
//! where macOS and Linux differ inside `posix/` (where `errno` lives, the
//! session files' directory, a thread's id, a process's start time) the
//! difference is one small function per system. Files that are plain
//! POSIX are shared by `#[path]`, never copied: `linux/` includes
//! `posix/`'s session files, signals, SIGBUS guard and mapping code, and
//! `posix/` includes `linux/`'s clock, fork handlers and mapped files and
//! `portable/`'s answers for what it lacks.
//!
//! The POSIX implementation has the live view, the stop-signal report
//! and fork handling, not CPU sampling (which needs Linux's perf events
//! or per-thread CPU timers) nor a process barrier. The portable one has
//! less: no live view, no stop-signal report, no fork handling, no
//! process barrier, memory from the system allocator. [`Capabilities`]
//! lists what each has.

/// The implementation in force (see the crate docs).
#[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
#[path = "linux/mod.rs"]
mod imp;
#[cfg(all(
    not(perflens_portable),
    any(target_os = "macos", all(target_os = "linux", perflens_posix))
))]
#[path = "posix/mod.rs"]
mod imp;
#[cfg(all(target_os = "windows", not(perflens_portable)))]
#[path = "windows/mod.rs"]
mod imp;
#[cfg(any(
    perflens_portable,
    not(any(target_os = "linux", target_os = "macos", target_os = "windows"))
))]
#[path = "portable/mod.rs"]
mod imp;

pub mod arch;
pub mod barrier;
mod capabilities;
pub mod clock;
pub mod cpu_timer;
pub mod fork;
pub mod mapped;
pub mod mem;
pub mod modules;
pub mod perf;
pub mod proc;
pub mod process;
pub mod shm;
pub mod signal;
pub mod thread;

pub use capabilities::{CAPABILITIES, Capabilities};
