//! Per-thread sampling sources: what makes a thread's samples happen.
//! Both are `perflens-sys` mechanisms:
//!
//! - a perf event ([`perf`]): a software cpu-clock counter on the thread
//!   (a period in ns of its CPU time) whose overflow signals that very
//!   thread, as SIGTRAP through perf's `sigtrap` delivery
//!   ([`Delivery::Trap`]) or as the session's real-time signal
//!   ([`Delivery::Signal`]);
//! - where `perf_event_open` is refused, a POSIX timer on the thread's
//!   CPU clock ([`cpu_timer`]) whose expiry signals that thread.
//!
//! Each armed thread has exactly one source, recorded in its slot as
//! `source` (which kind) and `handle` (perf fd or kernel timer id). The
//! slot owns the handle: [`SamplerState::open_source`] creates it disabled
//! before the thread is published, [`enable`] starts it once the slot is
//! ready, the thread's own handler reads it ([`SamplerState::sample_weight`]),
//! and `disarm` stops it ([`stop`]) and releases it ([`release`]) once no
//! handler can be using it any more.
//!
//! Kernel time: the timer source and a perf event that includes the
//! kernel count it and signal on the thread's return to user space, so a
//! system call's time lands on the stack that made it. A perf event that
//! excludes the kernel (`user_only` in the slot) cannot: its samples weigh
//! one period of user time each, and the thread's remaining CPU time is
//! reported apart as kernel time.

use std::io;
use std::sync::atomic::Ordering;

pub(super) use perflens_sys::perf::Delivery;
use perflens_sys::{cpu_timer, perf, thread};

use super::session::SamplerState;
use super::slot::Slot;
use crate::{KernelMode, SourcePreference};

pub(super) const SOURCE_NONE: u8 = 0;
pub(super) const SOURCE_PERF: u8 = 1;
pub(super) const SOURCE_TIMER: u8 = 2;

impl SamplerState {
    /// Opens the configured source for thread `tid`, disabled: nothing
    /// fires until [`enable`]. Returns the kind, the handle, the signal
    /// its samples will arrive with, and whether its samples include
    /// kernel time (false only for a perf event that excludes the kernel).
    pub(super) fn open_source(&self, tid: i32) -> (u8, io::Result<i32>, i32, bool) {
        let sig = self.cfg.signal;
        let with_kernel = |delivery: Delivery| -> (io::Result<i32>, bool) {
            if self.kernel_ok.load(Ordering::Relaxed) {
                match perf::open_cpu_clock(tid, self.period_ns, delivery, true) {
                    Ok(fd) => return (Ok(fd), true),
                    // May not observe kernel mode: exclude it from now on
                    // (auto), or do without perf_event (include).
                    Err(e) if perf::refused_kernel(&e) => {
                        if self.cfg.kernel == KernelMode::Include {
                            return (Err(e), true);
                        }
                        self.kernel_ok.store(false, Ordering::Relaxed);
                    }
                    Err(e) => return (Err(e), true),
                }
            }
            (
                perf::open_cpu_clock(tid, self.period_ns, delivery, false),
                false,
            )
        };
        let perf = || {
            if self.trap_ok.load(Ordering::Relaxed) {
                match with_kernel(Delivery::Trap) {
                    (Ok(fd), k) => return (Ok(fd), perf::TRAP_SIGNAL, k),
                    // A kernel before 5.13 (no sigtrap): stop trying.
                    (Err(e), _) if perf::lacks_sigtrap(&e) => {
                        self.trap_ok.store(false, Ordering::Relaxed)
                    }
                    (Err(_), _) => {}
                }
            }
            let (h, k) = with_kernel(Delivery::Signal(sig));
            (h, sig, k)
        };
        match self.cfg.source {
            SourcePreference::Timer => (SOURCE_TIMER, cpu_timer::create(tid, sig), sig, true),
            SourcePreference::PerfEvent => {
                let (h, s, k) = perf();
                (SOURCE_PERF, h, s, k)
            }
            SourcePreference::Auto => match perf() {
                (Ok(fd), s, k) => (SOURCE_PERF, Ok(fd), s, k),
                (Err(_), _, _) => (SOURCE_TIMER, cpu_timer::create(tid, sig), sig, true),
            },
        }
    }

    /// A new, disarmed timer on `tid`'s CPU clock that signals `tid` with
    /// the session's signal (the timer source).
    pub(super) fn open_timer(&self, tid: i32) -> io::Result<i32> {
        cpu_timer::create(tid, self.cfg.signal)
    }

    /// The CPU time (ns) the current sample stands for. Signal path:
    /// at most one `clock_gettime` (and one `timer_getoverrun` if the
    /// thread's clock cannot be read).
    ///
    /// A sample weighs the thread's CPU time since its last sample, read
    /// from the thread's own CPU clock (the scheduler's account, as in
    /// `ThreadProfile::cpu_ns`), whatever its source, so that the samples
    /// of a thread always add up to its CPU time. Neither source's own
    /// count does: a perf cpu-clock count runs on the CPU's local clock,
    /// which keeps running while a virtual machine's CPU is taken away
    /// (steal time) and may step at a migration (on a loaded host the
    /// counts summed to up to 6% more than the thread's CPU time), and a
    /// timer's `1 + overruns` periods miss every expiry whose signal was
    /// not taken (8% short on a loaded 2-vCPU machine).
    ///
    /// A perf event that excludes the kernel weighs one period: the time
    /// since the last sample includes kernel time, which belongs to
    /// whatever made the system calls, not to this stack. (Overflows the
    /// kernel merged into one are lost to the stacks too; they end up in
    /// the thread's kernel line, see `ThreadProfile::kernel_ns`.)
    pub(super) fn sample_weight(&self, slot: &Slot) -> u64 {
        // The source first: a thread moved to the timer source gets its
        // timer's id stored before the source (`moves.rs`).
        let source = slot.source.load(Ordering::Acquire);
        let handle = slot.handle.load(Ordering::Relaxed);
        if source == SOURCE_PERF && slot.user_only.load(Ordering::Relaxed) {
            return self.period_ns;
        }
        let by_source = || {
            if source == SOURCE_PERF {
                self.period_ns
            } else {
                // 1 + the overruns: the periods this expiry stands for.
                (1 + cpu_timer::overrun(handle as i32)) * self.period_ns
            }
        };
        match thread::own_cpu_ns() {
            Some(now) => match slot.last_cpu.swap(now, Ordering::Relaxed) {
                // No start reading (the thread's clock could not be read
                // when it was armed): what the source says.
                0 => by_source(),
                last => now.saturating_sub(last),
            },
            None => by_source(),
        }
    }
}

/// Whether a SIGTRAP came from one of our perf events (not a breakpoint,
/// a `kill -TRAP` or another tool's event).
///
/// # Safety
/// `info` is the `siginfo_t` the kernel passed to the handler.
#[inline]
pub(super) unsafe fn is_our_trap<T>(info: *const T) -> bool {
    // SAFETY: per the caller.
    unsafe { perf::is_our_trap(info.cast()) }
}

/// Starts a source opened by [`SamplerState::open_source`].
pub(super) fn enable(source: u8, handle: i32, period_ns: u64) -> io::Result<()> {
    if source == SOURCE_PERF {
        perf::enable(handle)
    } else {
        cpu_timer::arm(handle, period_ns)
    }
}

/// Stops a source: no further signals are sent for it (one may still be
/// pending). A timer is deleted here; a perf event is disabled and its
/// final count returned, and its fd stays open until [`release`].
pub(super) fn stop(source: u8, handle: i32) -> Option<u64> {
    if source == SOURCE_PERF {
        perf::disable(handle);
        perf::read(handle)
    } else {
        if source == SOURCE_TIMER {
            cpu_timer::delete(handle);
        }
        None
    }
}

/// Releases what [`stop`] left: the perf event's fd. Call only when no
/// handler can read the handle any more.
pub(super) fn release(source: u8, handle: i32) {
    if source == SOURCE_PERF {
        perf::close(handle);
    }
}
