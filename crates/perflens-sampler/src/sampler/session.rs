//! A session's lifecycle: start, snapshot, stop and free.
//!
//! `Running::start` allocates the `SamplerState` (slot table, shared state,
//! first unwinder), publishes it in `SESSION` for the signal handler, arms
//! every thread of the process (`perflens_sys::proc::threads`) and starts
//! the watcher.
//! `LIFECYCLE` serializes start, stop and `arm_current_thread`.
//!
//! Ownership: the `SamplerState` is one heap allocation owned by `Running`
//! through a raw pointer. Handlers reach it through `SESSION` and count
//! themselves in `IN_HANDLERS` before loading the pointer; the watcher
//! borrows it until joined. Shutdown therefore goes: stop and join the
//! watcher, disarm every thread (each waits for its own handler), then
//! unpublish `SESSION` and wait for `IN_HANDLERS` to reach zero; only then
//! does `Drop` free the session. Unwinders refer to module memory, so they
//! are dropped before the module sets that pin it. Everything else a
//! handler reads (slots, rings, caches) lives in the session and goes with
//! it.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use super::handler::{IN_HANDLERS, install_handler, trap_delivery};
use super::slot::{Slot, SlotOwned};
use super::stack::current_stack_bounds;
use super::watcher::{self, list_tids, refresh_name};
use super::{SamplerOptions, gettid, thread_cpu_ns};
use crate::arch::{self, Unwinder};
use crate::modules::{self, MapsSnapshot, MemBytes, ModuleInfo, ModuleSet};
use crate::profile::HANDLER_BUCKETS;
use crate::snapshot::{SampleKey, SampleValue, Snapshot, ThreadEntry};
use crate::{KernelMode, SamplerError};

/// The running session (null when none). Read by the handler.
pub(super) static SESSION: AtomicPtr<SamplerState> = AtomicPtr::new(std::ptr::null_mut());
/// Serializes session start and stop.
static LIFECYCLE: Mutex<()> = Mutex::new(());

pub(super) struct Shared {
    pub(super) owned: Vec<SlotOwned>,
    pub(super) by_tid: HashMap<i32, usize>,
    pub(super) threads: Vec<ThreadEntry>,
    pub(super) agg: HashMap<SampleKey, SampleValue>,
    pub(super) module_sets: Vec<ModuleSet>,
    /// Boxed: handlers hold raw pointers to them, which must not move.
    #[allow(clippy::vec_box)]
    pub(super) unwinders: Vec<Box<Unwinder<MemBytes>>>,
    pub(super) scratch: Vec<u64>,
    pub(super) arm_errors: u64,
}

pub(crate) struct SamplerState {
    pub(super) cfg: SamplerOptions,
    pub(super) period_ns: u64,
    /// perf events may signal with SIGTRAP ([`Delivery::Trap`](super::sources::Delivery::Trap)); cleared
    /// when the kernel refuses it.
    pub(super) trap_ok: AtomicBool,
    /// perf events may include kernel mode (`exclude_kernel` clear): set
    /// unless the configuration excludes it, cleared in auto mode once the
    /// kernel refuses it (the outcome holds for the session).
    pub(super) kernel_ok: AtomicBool,
    pub(super) pid: i32,
    pub(super) main_stack_limit: u64,
    pub(super) slots: Box<[Slot]>,
    pub(super) unwinder: AtomicPtr<Unwinder<MemBytes>>,
    pub(super) shared: Mutex<Shared>,
    pub(super) stop: AtomicBool,
    pub(super) watcher_tid: AtomicI32,
    /// The watcher's CPU time, stored by the watcher as it exits (a
    /// joined thread's CPU clock can no longer be read).
    pub(super) watcher_cpu_ns: AtomicU64,
    /// Watcher passes so far.
    pub(super) passes: AtomicU64,
    /// Signals for threads without a live slot.
    pub(super) stray: AtomicU64,
    /// Time spent in the handler's sampling path (ns) and its calls.
    pub(super) handler_ns: AtomicU64,
    pub(super) handler_calls: AtomicU64,
    /// Handler durations in [`HANDLER_BUCKET_NS`](crate::profile::HANDLER_BUCKET_NS) steps (last: longer).
    pub(super) handler_hist: [AtomicU64; HANDLER_BUCKETS],
    pub(super) started: Instant,
    pub(super) started_wall: SystemTime,
}

impl SamplerState {
    pub(super) fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn reload_modules(&self, sh: &mut Shared) {
        let set = modules::load_modules();
        let mut u: Unwinder<MemBytes> = Unwinder::new();
        for m in &set.modules {
            if let Some(fm) = m.framehop_module() {
                framehop::Unwinder::add_module(&mut u, fm);
            }
        }
        let mut boxed = Box::new(u);
        let ptr: *mut Unwinder<MemBytes> = &mut *boxed;
        sh.unwinders.push(boxed);
        sh.module_sets.push(set);
        self.unwinder.store(ptr, Ordering::Release);
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut sh = self.lock();
        let live: Vec<usize> = sh.by_tid.values().copied().collect();
        for idx in &live {
            self.drain(&mut sh, *idx);
        }
        let mut threads = sh.threads.clone();
        for t in threads.iter_mut() {
            if let Some(idx) = t.slot {
                let s = &self.slots[idx];
                t.samples = s.samples.load(Ordering::Relaxed);
                t.sampled_ns = s.weight.load(Ordering::Relaxed);
                t.dropped = s.dropped.load(Ordering::Relaxed);
                t.dropped_ns = s.dropped_ns.load(Ordering::Relaxed);
                t.truncated = s.truncated.load(Ordering::Relaxed);
                t.off_stack = s.off_stack.load(Ordering::Relaxed);
                t.cpu_ns =
                    thread_cpu_ns(t.tid).map_or(t.cpu_ns, |c| c.saturating_sub(t.cpu_at_arm));
                refresh_name(&mut t.name, t.tid);
            }
        }
        let mut modules: Vec<ModuleInfo> = Vec::new();
        for set in sh.module_sets.iter().rev() {
            for m in &set.modules {
                if !modules
                    .iter()
                    .any(|x| x.avma.start == m.avma.start && x.name == m.name)
                {
                    modules.push(m.clone());
                }
            }
        }
        let samples = sh.agg.iter().map(|(k, v)| (k.clone(), *v)).collect();
        let me = self.watcher_tid.load(Ordering::Relaxed);
        Snapshot {
            samples,
            threads,
            modules,
            frequency: self.cfg.frequency,
            period_ns: self.period_ns,
            started_wall: self.started_wall,
            duration: self.started.elapsed(),
            handler_ns: self.handler_ns.load(Ordering::Relaxed),
            handler_calls: self.handler_calls.load(Ordering::Relaxed),
            handler_hist: self
                .handler_hist
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            // Running: its CPU clock; stopped: what it stored on exit.
            sampler_cpu_ns: (me > 0)
                .then(|| thread_cpu_ns(me))
                .flatten()
                .unwrap_or_else(|| self.watcher_cpu_ns.load(Ordering::Acquire)),
        }
    }
}

// ---- lifecycle ------------------------------------------------------------

/// A running session; stops it when dropped.
pub(crate) struct Running {
    session: *mut SamplerState,
    watcher: Option<JoinHandle<()>>,
    done: bool,
}

// SAFETY: the session is shared through atomics and a mutex; the raw
// pointer is only freed by `Running::drop`.
unsafe impl Send for Running {}
// SAFETY: see Send.
unsafe impl Sync for Running {}

impl Running {
    pub(crate) fn start(cfg: SamplerOptions) -> Result<Running, SamplerError> {
        if !arch::SUPPORTED {
            return Err(SamplerError::Unsupported("no sampler for this target"));
        }
        if cfg.frequency == 0 || cfg.frequency > 100_000 {
            return Err(SamplerError::InvalidConfig(format!(
                "frequency {} not in 1..=100000",
                cfg.frequency
            )));
        }
        let _life = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        if !SESSION.load(Ordering::Acquire).is_null() {
            return Err(SamplerError::AlreadyRunning);
        }
        install_handler(cfg.signal)?;
        let trap = trap_delivery(&cfg);
        let mut cfg = cfg;
        cfg.ring_words = cfg.ring_words.max(1024).next_power_of_two();
        let period_ns = 1_000_000_000 / u64::from(cfg.frequency);
        // How far down the main thread's `[stack]` mapping may grow.
        let main_stack_limit = perflens_sys::thread::main_stack_limit()
            .map_or(64 << 20, |limit| limit.max(128 * 1024));
        let nslots = cfg.max_threads.max(1) * 2;
        let session = Box::new(SamplerState {
            period_ns,
            trap_ok: AtomicBool::new(trap),
            kernel_ok: AtomicBool::new(cfg.kernel != KernelMode::Exclude),
            pid: std::process::id() as i32,
            main_stack_limit,
            slots: (0..nslots).map(|_| Slot::new()).collect(),
            unwinder: AtomicPtr::new(std::ptr::null_mut()),
            shared: Mutex::new(Shared {
                owned: (0..nslots).map(|_| SlotOwned::default()).collect(),
                by_tid: HashMap::new(),
                threads: Vec::new(),
                agg: HashMap::new(),
                module_sets: Vec::new(),
                unwinders: Vec::new(),
                scratch: Vec::new(),
                arm_errors: 0,
            }),
            stop: AtomicBool::new(false),
            watcher_tid: AtomicI32::new(0),
            watcher_cpu_ns: AtomicU64::new(0),
            passes: AtomicU64::new(0),
            stray: AtomicU64::new(0),
            handler_ns: AtomicU64::new(0),
            handler_calls: AtomicU64::new(0),
            handler_hist: [const { AtomicU64::new(0) }; HANDLER_BUCKETS],
            started: Instant::now(),
            started_wall: SystemTime::now(),
            cfg,
        });
        {
            let mut sh = session.lock();
            session.reload_modules(&mut sh);
        }
        let ptr = Box::into_raw(session);
        SESSION.store(ptr, Ordering::SeqCst);
        // SAFETY: `ptr` was just created from a Box and is freed only in
        // `Running::drop`.
        let s: &SamplerState = unsafe { &*ptr };
        let mut running = Running {
            session: ptr,
            watcher: None,
            done: false,
        };
        {
            let mut sh = s.lock();
            let me = gettid();
            let maps = Arc::new(MapsSnapshot::read());
            let mut first_err = None;
            for tid in list_tids() {
                let bounds = if tid == me {
                    current_stack_bounds()
                } else {
                    None
                };
                if let Err(e) = s.arm(&mut sh, tid, bounds, Some(&maps)) {
                    first_err.get_or_insert(e);
                }
            }
            if sh.by_tid.is_empty() {
                drop(sh);
                drop(running);
                return Err(first_err.unwrap_or(SamplerError::NoSource(io::Error::other(
                    "no thread could be armed",
                ))));
            }
        }
        let watcher = watcher::spawn(s)?;
        running.watcher = Some(watcher);
        Ok(running)
    }

    pub(crate) fn session(&self) -> &SamplerState {
        // SAFETY: valid until drop.
        unsafe { &*self.session }
    }

    /// Stops sampling and returns the final snapshot.
    pub(crate) fn stop(mut self) -> Snapshot {
        self.shutdown();
        let snap = self.session().snapshot();
        drop(self);
        snap
    }

    fn shutdown(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        // SAFETY: the session stays allocated until `drop` frees it.
        let s: &SamplerState = unsafe { &*self.session };
        s.stop.store(true, Ordering::Release);
        if let Some(w) = self.watcher.take() {
            w.thread().unpark();
            let _ = w.join();
        }
        let _life = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        let mut sh = s.lock();
        let live: Vec<usize> = sh.by_tid.values().copied().collect();
        for idx in live {
            s.disarm(&mut sh, idx, false);
        }
        drop(sh);
        // Unpublish, then wait for handlers that may still be reading the
        // session. Signals still pending after this find no session and
        // return (the handler stays installed for that reason).
        let _ = SESSION.compare_exchange(
            self.session,
            std::ptr::null_mut(),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        while IN_HANDLERS.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
        // SAFETY: created by Box::into_raw in `start`; unpublished and no
        // handler is running (shutdown waited for IN_HANDLERS == 0).
        let mut session = unsafe { Box::from_raw(self.session) };
        let sh = session.shared.get_mut().unwrap_or_else(|e| e.into_inner());
        // Unwinders reference module memory: drop them before unpinning.
        sh.unwinders.clear();
        sh.module_sets.clear();
    }
}

/// Arms the calling thread now (with exact stack bounds) if a session is
/// running. Returns `Ok(true)` if the thread is (now) sampled. Runtimes
/// call this at thread start so no sample is missed before the watcher's
/// next scan.
pub fn arm_current_thread() -> Result<bool, SamplerError> {
    let p = SESSION.load(Ordering::Acquire);
    if p.is_null() {
        return Ok(false);
    }
    let _life = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    if SESSION.load(Ordering::Acquire) != p {
        return Ok(false);
    }
    // SAFETY: the session is published and cannot be freed while we hold
    // LIFECYCLE (shutdown takes it before unpublishing).
    let s = unsafe { &*p };
    if s.stop.load(Ordering::Acquire) {
        return Ok(false);
    }
    let bounds = current_stack_bounds();
    let mut sh = s.lock();
    s.arm(&mut sh, gettid(), bounds, None)?;
    Ok(true)
}
