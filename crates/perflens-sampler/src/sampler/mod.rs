//! The sampling engine (Linux). One file per mechanism:
//!
//! - [`sources`]: what makes a thread's samples happen, a perf_event
//!   cpu-clock event per thread (`sources/perf.rs`) or a POSIX timer on the
//!   thread's CPU clock (`sources/timer.rs`);
//! - [`handler`]: the signal handler and its installation;
//! - [`stack`]: the stacks a handler may read;
//! - [`ring`]: the per-thread sample rings (written by the handler,
//!   drained by the watcher and by snapshots);
//! - [`slot`]: the per-thread slot table the handler finds its thread in,
//!   and arming/disarming a thread (which fills and empties a slot);
//! - [`watcher`]: the thread that finds new and exited threads and drains
//!   the rings;
//! - [`moves`]: moving a thread that switches often from its perf event
//!   to the timer source (a perf event costs every context switch);
//! - [`session`]: a session's lifecycle (start, snapshot, stop, free).
//!
//! Memory ownership, the rule every file keeps: everything the signal
//! handler touches lives in the `SamplerState` (slots, rings, unwind caches,
//! unwinders, maps snapshots) and is allocated, under the session's
//! mutex, before the thread it serves is armed. The handler allocates
//! nothing and frees nothing: it only reads atomics, reads the interrupted
//! thread's stack between its stack pointer and the top of a stack known
//! to be mapped, and writes into that thread's own ring. Memory a handler
//! may be using is released only after the handler can no longer reach it
//! (see `disarm` in `slot.rs` and `Running::shutdown` in `session.rs`).

mod handler;
mod moves;
mod ring;
mod session;
mod slot;
mod sources;
mod stack;
mod watcher;

use std::io;
use std::time::Duration;

pub use handler::{
    clear_charge_hook, clear_context_hook, in_signal_handler, late_signals, set_charge_hook,
    set_context_hook,
};
pub(crate) use session::Running;
pub use session::arm_current_thread;
pub use watcher::set_watcher_start_hook;

use crate::{KernelMode, SourcePreference};

/// Most frames kept per sample (the builder's `max_depth` is capped here).
pub(crate) const MAX_DEPTH: usize = 256;

#[derive(Clone, Debug)]
pub(crate) struct SamplerOptions {
    pub frequency: u32,
    pub source: SourcePreference,
    /// Whether perf events include kernel mode.
    pub kernel: KernelMode,
    /// The real-time signal for timers and for perf events when sigtrap
    /// delivery is not used.
    pub signal: i32,
    /// Try sigtrap delivery for perf events first.
    pub trap: bool,
    pub max_threads: usize,
    pub ring_words: usize,
    pub max_depth: usize,
    pub rescan: Duration,
}

/// CLOCK_MONOTONIC in ns (clock_gettime is async-signal-safe).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions and is async-signal-safe.
    unsafe { libc::gettid() }
}

/// The kernel clock id of a thread's CPU clock (CPUCLOCK_PERTHREAD |
/// CPUCLOCK_SCHED), valid for any thread of this process.
fn thread_clock(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

/// CPU time of thread `tid` in ns (None if the thread is gone).
pub(crate) fn thread_cpu_ns(tid: i32) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(thread_clock(tid), &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Whether thread `tid` of process `pid` still exists. `tgkill` with
/// signal 0 sends nothing, it only looks the thread up; an exited thread
/// is gone at once (the kernel reaps threads as they exit).
fn thread_alive(pid: i32, tid: i32) -> bool {
    // SAFETY: signal 0 delivers nothing; the call only checks the thread.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, 0) };
    rc == 0 || last_err().raw_os_error() != Some(libc::ESRCH)
}

fn last_err() -> io::Error {
    io::Error::last_os_error()
}
