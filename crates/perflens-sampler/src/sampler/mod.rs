//! The sampling engine. One file per mechanism; every operating-system
//! call but the signal handler's goes through `perflens-sys` (`perf`,
//! `cpu_timer`, `thread`, `proc`, `modules`):
//!
//! - [`sources`]: what makes a thread's samples happen, a perf_event
//!   cpu-clock event per thread or a POSIX timer on the thread's CPU
//!   clock;
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

use std::time::Duration;

use perflens_sys::{cpu_timer, perf, thread};

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

/// Why no thread can be sampled on this build, if none can: neither
/// source exists (perflens-sys's portable implementation, which a build
/// for a platform without a port, or with `--cfg perflens_portable`,
/// uses; or its POSIX one, macOS's, here with `--cfg perflens_posix`).
pub(crate) fn unavailable() -> Option<&'static str> {
    (!perf::AVAILABLE && !cpu_timer::AVAILABLE).then_some(
        "this build has neither perf events nor per-thread CPU timers \
         (perflens-sys's portable, std-only implementation, or its posix one, \
         which macOS uses)",
    )
}

/// CLOCK_MONOTONIC in ns (async-signal-safe).
#[inline]
fn monotonic_ns() -> u64 {
    perflens_sys::clock::monotonic_ns()
}

/// The calling thread's id (async-signal-safe).
#[inline]
fn gettid() -> i32 {
    thread::tid() as i32
}

/// CPU time of thread `tid` in ns (None if the thread is gone).
pub(crate) fn thread_cpu_ns(tid: i32) -> Option<u64> {
    thread::cpu_ns(tid)
}

/// Whether thread `tid` of this process still exists (an exited thread
/// is gone at once: the kernel reaps threads as they exit).
fn thread_alive(tid: i32) -> bool {
    thread::alive(tid)
}

#[cfg(test)]
mod tests {
    use crate::{ProfilerGuard, SamplerError};

    /// A build without either source (perflens-sys's portable or POSIX one) says
    /// at start that CPU sampling is unavailable here, and why; a Linux
    /// build has both.
    #[test]
    fn a_build_without_sources_says_so_at_start() {
        if !perflens_sys::CAPABILITIES.cpu_sampling {
            match ProfilerGuard::new(100) {
                Err(e @ SamplerError::Unsupported(_)) => {
                    let said = e.to_string();
                    assert!(
                        said.contains("not supported here")
                            && said.contains(perflens_sys::CAPABILITIES.platform),
                        "{said}"
                    );
                }
                Err(e) => panic!("{e}"),
                Ok(_) => panic!("sampling started without a source"),
            }
        } else {
            assert_eq!(super::unavailable(), None);
        }
    }
}
