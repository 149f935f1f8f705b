//! Threads that switch often leave their perf event for the timer source.
//!
//! A perf cpu-clock event on a thread is an hrtimer that the kernel stops
//! each time the thread is switched out and starts again each time it is
//! switched in. With a period under the scheduler tick (1 kHz against a
//! 250 Hz tick), that timer is the CPU's next one, so both steps
//! reprogram the CPU's timer device; on a virtual machine each of those
//! is a write to the TSC-deadline register that exits to the hypervisor.
//! A server's I/O threads switch tens of thousands of times a second:
//! measured on a tokio server here (`perflens-bench-server`, 2 vCPUs), 34
//! switches per millisecond of the workers' CPU time, and the perf event
//! raised the server's CPU by 1.12x to 1.25x over runs, whatever the
//! sampling rate. The
//! timer source (a POSIX timer on the thread's CPU clock) is checked at
//! the scheduler tick and costs nothing per switch: on the same server,
//! 0.98x to 1.06x over runs. Its samples come at the tick, at most one per tick per thread,
//! each weighted by the thread's CPU time since the one before, so a
//! thread's CPU total stays exact; only the resolution is coarser.
//!
//! So, when the source is [`SourcePreference::Auto`](crate::SourcePreference::Auto),
//! the watcher looks at every perf-sampled thread every
//! [`CHECK_EVERY_PASSES`] passes, and moves a thread that switched more
//! than [`MAX_SWITCHES_PER_CPU_MS`] times per millisecond of its CPU time
//! to the timer source (voluntary switches only: its waits, see
//! [`switches`]). A thread not yet judged (no look has seen enough
//! of it, see [`conclusive`]) is looked at every pass in which it ran
//! (its CPU clock moved, one `clock_gettime` a pass), so a server's
//! worker leaves its perf event within a pass or two of its first busy
//! moment rather than up to 200 ms later (a tenth of a two-second
//! benchmark run at a fifth more CPU), at any sampling rate; an idle
//! thread costs no look. A CPU-bound thread (a switch per tick at most,
//! under contention) keeps its perf event and its full rate. A moved
//! thread that later runs steadily (see [`settled`]) goes back to a perf
//! event; the report says which threads are on the timer for switching.
//!
//! The move, under the session's mutex: the perf event is disabled (no
//! further overflow), the new timer's id is stored in the slot before its
//! source (a handler that reads the new source reads the new id, see
//! `SamplerState::sample_weight`), the timer is started, and the perf fd is
//! closed once the thread's handler is not running (a signal the event
//! queued before it was disabled may still arrive: it is taken as a timer
//! sample, of one period). A perf event that excluded the kernel left the
//! thread's kernel time unsampled until the move; that time is kept in the
//! thread's entry and reported as its kernel time, as before.

use std::sync::atomic::Ordering;

use super::session::{SamplerState, Shared};
use super::sources::{self, SOURCE_PERF, SOURCE_TIMER};
use super::thread_cpu_ns;
use crate::CpuSource;

/// Voluntary context switches per millisecond of a thread's CPU time
/// above which it leaves its perf event. Chosen from the cost measured here: about 6
/// µs of CPU per switch with a perf event (the server above: +325 ms over
/// 45,000 switches), so at 2 switches per CPU millisecond the perf event
/// would add about 1.2% to the thread's CPU; a CPU-bound thread switches
/// at most once per tick (0.25 per millisecond at 250 Hz).
pub(super) const MAX_SWITCHES_PER_CPU_MS: u64 = 2;

/// Watcher passes between two looks (10 ms each by default: every 100
/// ms). One look reads one small `/proc` file per perf-sampled thread.
pub(super) const CHECK_EVERY_PASSES: u64 = 10;

/// Fewest switches in a window for a move: a thread that barely ran is
/// left as it is.
const MIN_SWITCHES: u64 = 20;

/// CPU time in a window that judges a thread whatever its switches (a
/// CPU-bound thread: half of a 10 ms pass).
const JUDGE_CPU_NS: u64 = 5_000_000;

/// Whether a window of `cpu_ns` of CPU time with `switched` switches saw
/// enough of a thread to decide on its source: once one has, the thread
/// is looked at every [`CHECK_EVERY_PASSES`] passes only.
pub(super) fn conclusive(cpu_ns: u64, switched: u64) -> bool {
    switched >= MIN_SWITCHES || cpu_ns >= JUDGE_CPU_NS
}

/// Thread `tid`'s CPU time (ns) and its voluntary context switches so
/// far (the times it waited: I/O, a lock, a sleep, a parked worker), from
/// its CPU clock and `/proc/self/task/<tid>/status`. `None` if either
/// cannot be read (the thread is gone).
///
/// Only voluntary switches count: they are what the thread does by its
/// nature, while the switches others force on it come and go with the
/// machine's load. A CPU-bound thread on a loaded machine is preempted
/// often (seen in the tests beside a parallel build: enough in a 10 ms
/// window to pass the limit), and should keep its perf event and its
/// resolution when the load goes.
pub(super) fn switches(tid: i32) -> Option<(u64, u64)> {
    let voluntary = perflens_sys::proc::voluntary_switches(tid)?;
    Some((thread_cpu_ns(tid)?, voluntary))
}

/// Whether a window of `cpu_ns` of CPU time with `switched` switches
/// calls for the timer source.
pub(super) fn switches_too_often(cpu_ns: u64, switched: u64) -> bool {
    switched >= MIN_SWITCHES
        && u128::from(switched) * 1_000_000
            > u128::from(MAX_SWITCHES_PER_CPU_MS) * u128::from(cpu_ns)
}

/// Whether a moved thread that used `cpu_ns` of CPU with `switched`
/// switches in a window runs steadily enough to go back to a perf event:
/// at least 10 ms of CPU (a tenth of the window) at under a quarter of
/// the limit's switches, so that a thread near the limit does not go back
/// and forth.
pub(super) fn settled(cpu_ns: u64, switched: u64) -> bool {
    cpu_ns >= 10_000_000
        && u128::from(switched) * 4_000_000
            < u128::from(MAX_SWITCHES_PER_CPU_MS) * u128::from(cpu_ns)
}

/// Whether a pass between two regular looks looks at a thread: one on a
/// perf event, not yet judged, that ran since the last pass (its CPU clock
/// moved; an idle thread costs one clock read a pass until it runs).
pub(super) fn quick_look(on_perf: bool, judged: bool, ran: bool) -> bool {
    on_perf && !judged && ran
}

impl SamplerState {
    /// Whether the watcher's pass `pass` looks at the thread in slot
    /// `idx`: every [`CHECK_EVERY_PASSES`] passes, and every pass in which
    /// a perf-sampled thread not yet judged ran. Whether it ran is read
    /// from its CPU clock, not from its samples: at a low rate (1 Hz) a
    /// busy thread goes seconds without one, all of them on a perf event.
    pub(super) fn looks_at(&self, sh: &mut Shared, idx: usize, pass: u64) -> bool {
        if pass.is_multiple_of(CHECK_EVERY_PASSES) {
            return true;
        }
        let slot = &self.slots[idx];
        let owned = &mut sh.owned[idx];
        let on_perf = slot.source.load(Ordering::Relaxed) == SOURCE_PERF;
        if !on_perf || owned.judged {
            return false;
        }
        let tid = slot.tid.load(Ordering::Relaxed);
        let cpu = thread_cpu_ns(tid).unwrap_or(0);
        let ran = cpu != owned.cpu_at_pass;
        owned.cpu_at_pass = cpu;
        quick_look(on_perf, owned.judged, ran)
    }

    /// Looks at the perf-sampled thread in slot `idx` and moves it to the
    /// timer source if it switched too often since the last look.
    pub(super) fn check_switches(&self, sh: &mut Shared, idx: usize) {
        let slot = &self.slots[idx];
        let moved = sh.threads[sh.owned[idx].entry].moved_to_timer;
        let source = slot.source.load(Ordering::Relaxed);
        if source != SOURCE_PERF && !(source == SOURCE_TIMER && moved) {
            return;
        }
        let tid = slot.tid.load(Ordering::Relaxed);
        let Some(now) = switches(tid) else {
            return;
        };
        let Some((cpu0, n0)) = sh.owned[idx].switches else {
            sh.owned[idx].switches = Some(now);
            return;
        };
        let (cpu, switched) = (now.0.saturating_sub(cpu0), now.1.saturating_sub(n0));
        if conclusive(cpu, switched) {
            sh.owned[idx].judged = true;
        } else if source == SOURCE_PERF {
            // Too little seen to judge: the window goes on from the same
            // start (quick looks would otherwise cut it into pieces none
            // of which ever holds enough switches).
            return;
        }
        sh.owned[idx].switches = Some(now);
        if source == SOURCE_PERF && switches_too_often(cpu, switched) {
            self.move_to_timer(sh, idx);
        } else if source == SOURCE_TIMER && settled(cpu, switched) {
            self.move_to_perf(sh, idx);
        }
    }

    /// Moves a thread that [`move_to_timer`](Self::move_to_timer) moved
    /// back to a perf event, now that it runs without switching (a main
    /// thread that started and joined a thousand threads, then computes).
    /// Only where the perf event includes the kernel: a thread's kernel
    /// time is then on its samples under both sources. A handler that
    /// read the timer source just before the swap weighs its sample by
    /// the thread's CPU clock all the same.
    pub(super) fn move_to_perf(&self, sh: &mut Shared, idx: usize) {
        let slot = &self.slots[idx];
        let tid = slot.tid.load(Ordering::Relaxed);
        let timer = slot.handle.load(Ordering::Relaxed) as i32;
        let (source, handle, signal, kernel) = self.open_source(tid);
        let fd = match handle {
            Ok(fd) if source == SOURCE_PERF && kernel => fd,
            Ok(h) => {
                sources::stop(source, h);
                sources::release(source, h);
                return;
            }
            Err(_) => return,
        };
        // `last_cpu` stays where the timer's last sample left it: the perf
        // event's first sample weighs the CPU time since then, the tail of
        // the timer's time included (reset here, a sparse timer's last
        // tens of ms were on no sample: 83% of the CPU accounted under a
        // loaded loop).
        slot.user_only.store(false, Ordering::Relaxed);
        slot.handle.store(i64::from(fd), Ordering::Relaxed);
        slot.source.store(SOURCE_PERF, Ordering::Release);
        if sources::enable(SOURCE_PERF, fd, self.period_ns).is_err() {
            sh.arm_errors += 1;
        }
        sources::stop(SOURCE_TIMER, timer);
        let entry = &mut sh.threads[sh.owned[idx].entry];
        entry.source = CpuSource::PerfEvent;
        entry.signal = signal;
        entry.moved_to_timer = false;
    }

    /// Moves the thread in slot `idx` from its perf event to a timer (see
    /// the module's comment). If the timer cannot be made, the thread
    /// keeps its perf event.
    pub(super) fn move_to_timer(&self, sh: &mut Shared, idx: usize) {
        let slot = &self.slots[idx];
        let tid = slot.tid.load(Ordering::Relaxed);
        let fd = slot.handle.load(Ordering::Relaxed) as i32;
        let Ok(timer) = self.open_timer(tid) else {
            return;
        };
        sources::stop(SOURCE_PERF, fd);
        let e = sh.owned[idx].entry;
        if slot.user_only.load(Ordering::Relaxed) {
            // Until now the kernel's time was on no sample: keep it as the
            // thread's kernel time (what `ThreadProfile::kernel_ns` is for
            // a thread that excluded the kernel throughout).
            let cpu = thread_cpu_ns(tid).map_or(0, |c| c.saturating_sub(sh.threads[e].cpu_at_arm));
            let sampled =
                slot.weight.load(Ordering::Relaxed) + slot.dropped_ns.load(Ordering::Relaxed);
            sh.threads[e].kernel_unsampled_ns = cpu.saturating_sub(sampled);
            // The timer's samples weigh the CPU time from here on (those
            // of a perf event without the kernel weighed one period each
            // and left `last_cpu` at the arming).
            slot.last_cpu
                .store(thread_cpu_ns(tid).unwrap_or(0), Ordering::Relaxed);
            slot.user_only.store(false, Ordering::Relaxed);
        }
        slot.handle.store(i64::from(timer), Ordering::Relaxed);
        // Release: a handler that reads the timer source reads its id.
        slot.source.store(SOURCE_TIMER, Ordering::Release);
        if sources::enable(SOURCE_TIMER, timer, self.period_ns).is_err() {
            sh.arm_errors += 1;
        }
        // The perf fd: closed once this thread's handler is not running
        // (as `disarm` does; the handler does not read a perf fd, but
        // nothing it may be reading is released under it).
        while slot.busy.load(Ordering::SeqCst) {
            if !super::thread_alive(tid) {
                break;
            }
            std::thread::yield_now();
        }
        sources::release(SOURCE_PERF, fd);
        let entry = &mut sh.threads[e];
        entry.source = CpuSource::Timer;
        // A timer signals with the session's signal, not perf's SIGTRAP.
        entry.signal = self.cfg.signal;
        entry.kernel = true;
        entry.moved_to_timer = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_moves_switching_threads_and_keeps_cpu_bound_ones() {
        // The tokio server: 34 switches per CPU millisecond.
        assert!(switches_too_often(100_000_000, 3_400));
        // A CPU-bound thread preempted at every 250 Hz tick.
        assert!(!switches_too_often(100_000_000, 25));
        // Exactly at the limit: kept.
        assert!(!switches_too_often(10_000_000, 20));
        assert!(switches_too_often(10_000_000, 21));
        // Too few switches to judge, however little CPU.
        assert!(!switches_too_often(0, MIN_SWITCHES - 1));
        assert!(switches_too_often(0, MIN_SWITCHES));
        // Judged: enough switches or enough CPU; a thread that barely ran
        // is looked at again at its next sampled pass.
        assert!(conclusive(1_000, MIN_SWITCHES));
        assert!(conclusive(JUDGE_CPU_NS, 0));
        assert!(!conclusive(JUDGE_CPU_NS - 1, MIN_SWITCHES - 1));
        // Quick looks: only at a perf thread not yet judged that ran.
        assert!(quick_look(true, false, true));
        assert!(!quick_look(true, true, true));
        assert!(!quick_look(true, false, false));
        assert!(!quick_look(false, false, true));
        // Back to perf: steady CPU, few switches.
        assert!(settled(100_000_000, 25));
        assert!(!settled(100_000_000, 50));
        assert!(!settled(9_000_000, 0));
    }

    #[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
    #[test]
    fn a_threads_switches_are_read_and_grow() {
        let tid = perflens_sys::thread::tid() as i32;
        let (cpu0, n0) = switches(tid).expect("this thread's switches");
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        let (cpu1, n1) = switches(tid).unwrap();
        // Each sleep switches this thread out and back in.
        assert!(n1 >= n0 + 50, "{n0} -> {n1}");
        assert!(cpu1 >= cpu0);
        assert_eq!(switches(-5), None);
    }

    /// Without /proc or per-thread CPU clocks no thread's switches are
    /// known, so no thread is ever moved.
    #[cfg(any(not(target_os = "linux"), perflens_portable, perflens_posix))]
    #[test]
    fn no_switches_are_known_without_proc() {
        assert_eq!(switches(perflens_sys::thread::tid() as i32), None);
    }
}
