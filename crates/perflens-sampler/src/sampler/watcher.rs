//! The watcher: one thread per session that keeps the set of armed
//! threads equal to the process's threads and moves samples out of the
//! rings. Every `rescan` interval it arms threads that appeared, disarms
//! threads that exited, drains every ring into the aggregate, re-reads
//! the names of recently armed threads, and reloads the unwinder when new
//! modules were loaded.
//!
//! Ownership: the watcher borrows the session (a raw pointer that
//! `Running` keeps alive until it has joined the watcher) and does all its
//! work under the session's mutex, listing the threads included, so it
//! never races `arm_current_thread`, a snapshot or `stop`. It drops a slot's maps snapshot once the slot's
//! stack bounds are resolved; the handler stops reading the snapshot then.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use super::session::{SamplerState, Shared};
use super::sources::SOURCE_TIMER;
use super::{gettid, thread_alive, thread_cpu_ns};
use crate::SourcePreference;
use crate::modules::{self, MapsSnapshot};

/// `fn()` run first on the sampler's watcher thread (0 = none).
static WATCHER_START_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` at the start of every session's watcher thread, before it
/// does anything else: a runtime can use it to leave that thread out of
/// its own accounting (perflens does not count the sampler's
/// allocations as the program's).
pub fn set_watcher_start_hook(f: fn()) {
    WATCHER_START_HOOK.store(f as usize, Ordering::Release);
}

/// Thread `tid`'s name (`thread-<tid>` if it cannot be read).
pub(super) fn thread_name(tid: i32) -> String {
    read_name(tid).unwrap_or_else(|| format!("thread-{tid}"))
}

/// Re-reads thread `tid`'s name into `name`; keeps the name it has if the
/// thread is gone (an exited thread keeps its last name).
pub(super) fn refresh_name(name: &mut String, tid: i32) {
    if let Some(n) = read_name(tid) {
        *name = n;
    }
}

/// The OS name of thread `tid` (what Rust sets for a named thread, cut
/// to 15 bytes), and `main` for the main thread as in `std`: the name
/// `perflens-core` records for the report, so that a thread has one name
/// in the table, the JSON, pprof and the flamegraph.
fn read_name(tid: i32) -> Option<String> {
    if tid == std::process::id() as i32 {
        return Some("main".to_string());
    }
    perflens_sys::proc::thread_name(tid)
}

/// The process's threads, sorted (`/proc/self/task` on Linux).
pub(super) fn list_tids() -> Vec<i32> {
    perflens_sys::proc::threads()
}

impl SamplerState {
    /// One watcher pass: arm new threads, disarm exited ones, drain rings,
    /// reload modules if new ones were loaded.
    ///
    /// A thread is disarmed as exited only if it is missing from a listing
    /// of `/proc/self/task` taken under the mutex, so after it was armed
    /// (a thread armed itself between an unlocked listing and the lock
    /// used to be taken for an exited one, its source closed under its
    /// handler and the thread armed again with a second entry), and if the
    /// kernel confirms it is gone: `/proc` directory reads are not atomic
    /// snapshots, and a live thread must never be disarmed as exited.
    pub(super) fn rescan(&self) {
        let me = self.watcher_tid.load(Ordering::Relaxed);
        let mut sh = self.lock();
        let tids = list_tids();
        let gone: Vec<usize> = sh
            .by_tid
            .iter()
            .filter(|&(&t, _)| tids.binary_search(&t).is_err() && !thread_alive(t))
            .map(|(_, &i)| i)
            .collect();
        for idx in gone {
            self.disarm(&mut sh, idx, true);
        }
        let new: Vec<i32> = tids
            .iter()
            .copied()
            .filter(|t| *t != me && !sh.by_tid.contains_key(t))
            .collect();
        if !new.is_empty() {
            let maps = Arc::new(MapsSnapshot::read());
            for tid in new {
                let _ = self.arm(&mut sh, tid, None, Some(&maps));
            }
        }
        let live: Vec<usize> = sh.by_tid.values().copied().collect();
        let pass = self.passes.fetch_add(1, Ordering::Relaxed);
        let auto = self.cfg.source == SourcePreference::Auto;
        for idx in live {
            if auto && self.looks_at(&mut sh, idx, pass) {
                self.check_switches(&mut sh, idx);
            }
            self.nudge_if_late(&mut sh, idx);
            self.drain(&mut sh, idx);
            // Threads name themselves after they start (std does so before
            // running user code): re-read names of recently armed threads
            // every pass and of all threads every 100 passes, so exited
            // threads keep their final name.
            let e = sh.owned[idx].entry;
            if pass.wrapping_sub(sh.threads[e].armed_pass) < 20 || pass.is_multiple_of(100) {
                let tid = sh.threads[e].tid;
                refresh_name(&mut sh.threads[e].name, tid);
            }
            // Release the maps snapshot once the bounds are resolved.
            if self.slots[idx].stack_hi.load(Ordering::Acquire) != 0 && sh.owned[idx].maps.is_some()
            {
                self.slots[idx]
                    .maps
                    .store(std::ptr::null_mut(), Ordering::Release);
                sh.owned[idx].maps = None;
            }
        }
        let adds = sh.module_sets.last().map_or(0, |m| m.adds);
        if modules::current_adds() != adds {
            self.reload_modules(&mut sh);
        }
    }
}

/// How far past its last sample (ns of its CPU time) a thread on the
/// timer source runs before the watcher sends its signal itself: the
/// kernel finds a timer's expiry at its tick (every 4 ms at 250 Hz, 10 ms
/// at 100 Hz), so an on-time sample comes within a period and a tick or
/// two; this is two periods and 20 ms.
fn late_after_ns(period_ns: u64) -> u64 {
    period_ns.saturating_mul(2).saturating_add(20_000_000)
}

impl SamplerState {
    /// Sends the sampling signal to the timer-sampled thread in slot
    /// `idx` if its timer's signal is late: the thread ran since the last
    /// pass, more than a period of CPU time, and is [`late_after_ns`]
    /// past its last sample.
    ///
    /// Why: on a loaded machine (a 2-core VM with 16 busy loops beside the
    /// program, kernel 6.18) the kernel held a per-thread CPU timer's
    /// signal for up to 190 ms of the thread's CPU time, its overrun
    /// count saying 192 expiries had passed. A plain C program with the
    /// same timer saw the same; one whose second thread sent a signal with
    /// `tgkill` whenever the first had run 10 ms past its last one got
    /// every such signal at once and the timer's own on time after it
    /// (largest gap 12 ms). Such a gap is not a bias (the late sample
    /// weighs all of it) but few samples make a noisy profile, and what
    /// runs after the last one is in none. The signal's handler weighs the
    /// thread's CPU time since its last sample, whichever sent it.
    ///
    /// Only a thread that ran more than a period since the last pass: one
    /// that has blocked since is left alone (a signal would interrupt its
    /// system call; with `SA_RESTART` most restart, but not all).
    pub(super) fn nudge_if_late(&self, sh: &mut Shared, idx: usize) {
        let slot = &self.slots[idx];
        if slot.source.load(Ordering::Acquire) != SOURCE_TIMER || !slot.live.load(Ordering::Acquire)
        {
            return;
        }
        let tid = slot.tid.load(Ordering::Relaxed);
        let Some(now) = thread_cpu_ns(tid) else {
            return;
        };
        let owned = &mut sh.owned[idx];
        let ran = now.saturating_sub(owned.timer_cpu_at_pass);
        owned.timer_cpu_at_pass = now;
        let last = slot.last_cpu.load(Ordering::Relaxed);
        if last == 0
            || ran <= self.period_ns
            || now.saturating_sub(last) <= late_after_ns(self.period_ns)
        {
            return;
        }
        if perflens_sys::thread::signal(tid, self.cfg.signal).is_ok() {
            let e = owned.entry;
            sh.threads[e].nudged += 1;
        }
    }
}

/// Starts the watcher thread of `session`, which must stay allocated until
/// the thread is joined (it runs until `session.stop` is set).
pub(super) fn spawn(session: &SamplerState) -> io::Result<JoinHandle<()>> {
    let addr = session as *const SamplerState as usize;
    std::thread::Builder::new()
        .name("perflens-sampler".into())
        .spawn(move || {
            let hook = WATCHER_START_HOOK.load(Ordering::Acquire);
            if hook != 0 {
                // SAFETY: only `set_watcher_start_hook` stores here,
                // and it stores a `fn()`.
                let f: fn() = unsafe { std::mem::transmute::<usize, fn()>(hook) };
                f();
            }
            // SAFETY: the session outlives the watcher (joined in drop).
            let s: &SamplerState = unsafe { &*(addr as *const SamplerState) };
            s.watcher_tid.store(gettid(), Ordering::Relaxed);
            while !s.stop.load(Ordering::Acquire) {
                s.rescan();
                std::thread::park_timeout(s.cfg.rescan);
            }
            let cpu = thread_cpu_ns(gettid()).unwrap_or(0);
            s.watcher_cpu_ns.store(cpu, Ordering::Release);
        })
}
