//! The sampling engine (Linux): per-thread sources, the signal handler,
//! per-thread sample rings, the watcher thread and the aggregate.
//!
//! Memory ownership: everything the signal handler touches lives in the
//! `Session` (slots, rings, caches, unwinder, maps snapshots) and is
//! allocated before a thread is armed. The handler only reads atomics,
//! reads the interrupted thread's stack between its stack pointer and its
//! stack top, and writes into that thread's own ring.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::io;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::arch::{self, UnwindCache, Unwinder};
use crate::modules::{self, MapsSnapshot, MemBytes, ModuleInfo, ModuleSet};
use crate::snapshot::{SampleKey, SampleValue, Snapshot, ThreadEntry};
use crate::{CpuSource, Error, SourcePreference};

/// Most frames kept per sample (the builder's `max_depth` is capped here).
pub(crate) const MAX_DEPTH: usize = 256;

const SOURCE_NONE: u8 = 0;
const SOURCE_PERF: u8 = 1;
const SOURCE_TIMER: u8 = 2;

const TID_EMPTY: i32 = 0;
const TID_TOMBSTONE: i32 = -1;

/// The running session (null when none). Read by the handler.
static SESSION: AtomicPtr<Session> = AtomicPtr::new(std::ptr::null_mut());
/// Handlers currently executing (any thread). `stop` waits for zero after
/// unpublishing the session.
static IN_HANDLERS: AtomicUsize = AtomicUsize::new(0);
/// `fn() -> u64` as usize, 0 if unset.
static CONTEXT_HOOK: AtomicUsize = AtomicUsize::new(0);
/// Signal numbers our handler is installed for (bit per signal, < 64).
static INSTALLED: AtomicU64 = AtomicU64::new(0);
/// The SIGTRAP disposition we replaced was SIG_IGN (else SIG_DFL).
static TRAP_WAS_IGNORED: AtomicBool = AtomicBool::new(false);
/// Signals that arrived while no session was running.
static LATE_SIGNALS: AtomicU64 = AtomicU64::new(0);
/// Serializes session start and stop.
static LIFECYCLE: Mutex<()> = Mutex::new(());

thread_local! {
    /// True while this thread runs the sampler's signal handler.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is inside the sampler's signal handler (for
/// allocation checks in tests: a global allocator can assert this is false).
pub fn in_signal_handler() -> bool {
    IN_HANDLER.with(|f| f.get())
}

/// Signals that arrived after a session stopped (handled harmlessly).
pub fn late_signals() -> u64 {
    LATE_SIGNALS.load(Ordering::Relaxed)
}

/// Sets the context hook: the handler calls it on every sample and stores
/// the returned value with the sample. It must be async-signal-safe (no
/// allocation, no locks). Replaces any previous hook.
pub fn set_context_hook(f: fn() -> u64) {
    CONTEXT_HOOK.store(f as usize, Ordering::Release);
}

/// Removes the context hook.
pub fn clear_context_hook() {
    CONTEXT_HOOK.store(0, Ordering::Release);
}

/// `fn()` run first on the sampler's watcher thread (0 = none).
static WATCHER_START_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` at the start of every session's watcher thread, before it
/// does anything else: a runtime can use it to leave that thread out of
/// its own accounting (perflens does not count the sampler's
/// allocations as the program's).
pub fn set_watcher_start_hook(f: fn()) {
    WATCHER_START_HOOK.store(f as usize, Ordering::Release);
}

#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub frequency: u32,
    pub source: SourcePreference,
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

/// Per-thread state shared with the signal handler.
struct Slot {
    tid: AtomicI32,
    live: AtomicBool,
    source: AtomicU8,
    /// perf fd or kernel timer id.
    handle: AtomicI64,
    stack_lo: AtomicU64,
    stack_hi: AtomicU64,
    maps: AtomicPtr<MapsSnapshot>,
    last_count: AtomicU64,
    ring: AtomicPtr<AtomicU64>,
    ring_mask: AtomicUsize,
    head: AtomicU64,
    tail: AtomicU64,
    cache: AtomicPtr<UnwindCache>,
    /// Reentrancy guard (a handler never nests on one thread, but a
    /// second signal number could be configured by another session).
    busy: AtomicBool,
    samples: AtomicU64,
    weight: AtomicU64,
    dropped: AtomicU64,
    dropped_ns: AtomicU64,
    truncated: AtomicU64,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            tid: AtomicI32::new(TID_EMPTY),
            live: AtomicBool::new(false),
            source: AtomicU8::new(SOURCE_NONE),
            handle: AtomicI64::new(-1),
            stack_lo: AtomicU64::new(0),
            stack_hi: AtomicU64::new(0),
            maps: AtomicPtr::new(std::ptr::null_mut()),
            last_count: AtomicU64::new(0),
            ring: AtomicPtr::new(std::ptr::null_mut()),
            ring_mask: AtomicUsize::new(0),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            cache: AtomicPtr::new(std::ptr::null_mut()),
            busy: AtomicBool::new(false),
            samples: AtomicU64::new(0),
            weight: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            dropped_ns: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
        }
    }
}

/// Allocations backing a slot (never touched by the handler directly).
#[derive(Default)]
struct SlotOwned {
    ring: Option<Box<[AtomicU64]>>,
    cache: Option<Box<UnwindCache>>,
    maps: Option<Arc<MapsSnapshot>>,
    entry: usize,
}

struct Shared {
    owned: Vec<SlotOwned>,
    by_tid: HashMap<i32, usize>,
    threads: Vec<ThreadEntry>,
    agg: HashMap<SampleKey, SampleValue>,
    module_sets: Vec<ModuleSet>,
    /// Boxed: handlers hold raw pointers to them, which must not move.
    #[allow(clippy::vec_box)]
    unwinders: Vec<Box<Unwinder<MemBytes>>>,
    scratch: Vec<u64>,
    arm_errors: u64,
}

pub(crate) struct Session {
    cfg: Config,
    period_ns: u64,
    /// perf events may signal with SIGTRAP ([`Delivery::Trap`]); cleared
    /// when the kernel refuses it.
    trap_ok: AtomicBool,
    pid: i32,
    main_stack_limit: u64,
    slots: Box<[Slot]>,
    unwinder: AtomicPtr<Unwinder<MemBytes>>,
    shared: Mutex<Shared>,
    stop: AtomicBool,
    watcher_tid: AtomicI32,
    /// The watcher's CPU time, stored by the watcher as it exits (a
    /// joined thread's CPU clock can no longer be read).
    watcher_cpu_ns: AtomicU64,
    /// Watcher passes so far.
    passes: AtomicU64,
    /// Signals for threads without a live slot.
    stray: AtomicU64,
    /// Time spent in the handler's sampling path (ns) and its calls.
    handler_ns: AtomicU64,
    handler_calls: AtomicU64,
    /// Handler durations in [`HANDLER_BUCKET_NS`] steps (last: longer).
    handler_hist: [AtomicU64; HANDLER_BUCKETS],
    started: Instant,
    started_wall: SystemTime,
}

use crate::report::{HANDLER_BUCKET_NS, HANDLER_BUCKETS};

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

fn hash_tid(tid: i32, len: usize) -> usize {
    (tid as u32 as usize).wrapping_mul(0x9E37_79B9) % len
}

// ---- perf_event and timer sources ----------------------------------------

#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
}

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_REMOVE_ON_EXEC: u64 = 1 << 36;
const ATTR_SIGTRAP: u64 = 1 << 37;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `si_code` of a SIGTRAP raised by a perf event with `sigtrap` set.
const TRAP_PERF: libc::c_int = 6;
/// `sig_data` of our events, echoed in `si_perf_data`: tells our SIGTRAPs
/// from breakpoints and from other tools' perf events.
const TRAP_COOKIE: u64 = 0x7065_7266_6c65_6e73; // "perflens"
/// Byte offset of `si_perf_data` in `siginfo_t` on 64-bit Linux: three
/// ints and padding, then `si_addr`, then the union holding `_perf`.
const SI_PERF_DATA_OFFSET: usize = 24;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct FOwnerEx {
    type_: libc::c_int,
    pid: libc::pid_t,
}

fn last_err() -> io::Error {
    io::Error::last_os_error()
}

/// How a perf event's overflow reaches its thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Delivery {
    /// `attr.sigtrap` (Linux 5.13+): the kernel queues SIGTRAP to the
    /// thread as task work on its way back to user space. About half the
    /// kernel cost of `Signal` here: no irq_work, no self-IPI (which is a
    /// VM exit on a virtual machine).
    Trap,
    /// `O_ASYNC` with `F_SETSIG`/`F_SETOWN_EX`: the given (real-time)
    /// signal, sent from irq_work.
    Signal(i32),
}

/// Opens a disabled cpu-clock event on `tid` whose overflow signals `tid`.
fn open_perf(tid: i32, period_ns: u64, delivery: Delivery) -> io::Result<i32> {
    let mut attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period: period_ns,
        flags: ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
        wakeup_events: 1,
        ..Default::default()
    };
    if delivery == Delivery::Trap {
        // The kernel insists on remove_on_exec with sigtrap (an exec'd
        // program has no handler for it).
        attr.flags |= ATTR_SIGTRAP | ATTR_REMOVE_ON_EXEC;
        attr.sig_data = TRAP_COOKIE;
    }
    // SAFETY: `attr` is a valid perf_event_attr of the size it states.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    } as i32;
    if fd < 0 {
        return Err(last_err());
    }
    let Delivery::Signal(sig) = delivery else {
        return Ok(fd);
    };
    let owner = FOwnerEx {
        type_: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: fcntl on the fd we just opened, with valid arguments.
    let ok = unsafe {
        libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC | libc::O_NONBLOCK) == 0
            && libc::fcntl(fd, F_SETSIG, sig) == 0
            && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
    };
    if !ok {
        let e = last_err();
        // SAFETY: closing our own fd.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    Ok(fd)
}

/// Creates a (disarmed) POSIX CPU timer on `tid`'s CPU clock whose
/// expiry signals `tid`.
fn open_timer(tid: i32, sig: i32) -> io::Result<i32> {
    // SAFETY: zeroed sigevent is a valid starting value.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_notify_thread_id = tid;
    let mut id: libc::c_int = 0;
    // SAFETY: raw timer_create with a valid sigevent and out-pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            thread_clock(tid),
            &sev as *const libc::sigevent,
            &mut id as *mut libc::c_int,
        )
    };
    if rc != 0 {
        return Err(last_err());
    }
    Ok(id)
}

fn timer_set(id: i32, period_ns: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let its = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: raw timer_settime on our timer with a valid itimerspec.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            id,
            0,
            &its as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        )
    };
    if rc != 0 { Err(last_err()) } else { Ok(()) }
}

fn timer_delete(id: i32) {
    // SAFETY: deleting our own timer id.
    unsafe { libc::syscall(libc::SYS_timer_delete, id) };
}

fn perf_read(fd: i32) -> Option<u64> {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into `v` from our fd.
    let n = unsafe { libc::read(fd, &mut v as *mut u64 as *mut c_void, 8) };
    (n == 8).then_some(v)
}

/// Stack bounds of the calling thread (not signal-safe; call when arming).
fn current_stack_bounds() -> Option<(u64, u64)> {
    // SAFETY: standard pthread_getattr_np / getstack / destroy sequence on
    // a zeroed attr owned here.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (rc == 0 && size > 0).then(|| (addr as u64, addr as u64 + size as u64))
    }
}

fn thread_name(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| format!("thread-{tid}"))
}

fn list_tids() -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc/self/task") {
        for e in rd.flatten() {
            if let Some(t) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) {
                out.push(t);
            }
        }
    }
    out.sort_unstable();
    out
}

// ---- signal handler -----------------------------------------------------

/// Whether a SIGTRAP came from one of our perf events (not a breakpoint,
/// a `kill -TRAP` or another tool's event).
///
/// # Safety
/// `info` is the `siginfo_t` the kernel passed to the handler.
unsafe fn is_our_trap(info: *const libc::siginfo_t) -> bool {
    // SAFETY: `info` points at a whole siginfo_t (128 bytes); the fields
    // read are inside it whatever the signal's union member is.
    unsafe {
        (*info).si_code == TRAP_PERF
            && (info as *const u8)
                .add(SI_PERF_DATA_OFFSET)
                .cast::<u64>()
                .read_unaligned()
                == TRAP_COOKIE
    }
}

/// A SIGTRAP that is not ours: do what the disposition we replaced would
/// have done. Ignored stays ignored; the default action (core dump) is
/// restored and the signal raised again, so it takes effect as soon as
/// the handler returns. Async-signal-safe (sigaction, raise).
fn foreign_trap() {
    if TRAP_WAS_IGNORED.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: restoring the default disposition and re-raising; both are
    // async-signal-safe. SIGTRAP stays blocked until the handler returns.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGTRAP, &dfl, std::ptr::null_mut());
        INSTALLED.fetch_and(!(1u64 << libc::SIGTRAP), Ordering::AcqRel);
        libc::raise(libc::SIGTRAP);
    }
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut c_void) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: valid thread-local errno pointer.
    let saved = unsafe { *errno };
    // SAFETY: `info` comes from the kernel (SA_SIGINFO handler).
    if sig == libc::SIGTRAP && !unsafe { is_our_trap(info) } {
        foreign_trap();
        // SAFETY: restore errno for the interrupted code.
        unsafe { *errno = saved };
        return;
    }
    IN_HANDLER.with(|f| f.set(true));
    IN_HANDLERS.fetch_add(1, Ordering::SeqCst);
    let s = SESSION.load(Ordering::SeqCst);
    if s.is_null() {
        LATE_SIGNALS.fetch_add(1, Ordering::Relaxed);
    } else {
        // SAFETY: a published session is freed only after it has been
        // unpublished and IN_HANDLERS dropped to zero, and we incremented
        // IN_HANDLERS before loading the pointer.
        let s = unsafe { &*s };
        let t0 = monotonic_ns();
        s.sample(uc);
        let took = monotonic_ns().saturating_sub(t0);
        s.handler_ns.fetch_add(took, Ordering::Relaxed);
        s.handler_calls.fetch_add(1, Ordering::Relaxed);
        let bucket = ((took / HANDLER_BUCKET_NS) as usize).min(HANDLER_BUCKETS - 1);
        s.handler_hist[bucket].fetch_add(1, Ordering::Relaxed);
    }
    IN_HANDLERS.fetch_sub(1, Ordering::SeqCst);
    IN_HANDLER.with(|f| f.set(false));
    // SAFETY: restore errno for the interrupted code.
    unsafe { *errno = saved };
}

impl Session {
    fn lookup(&self, tid: i32) -> Option<&Slot> {
        let n = self.slots.len();
        let mut i = hash_tid(tid, n);
        for _ in 0..n {
            let s = &self.slots[i];
            let t = s.tid.load(Ordering::Acquire);
            if t == tid {
                return Some(s);
            }
            if t == TID_EMPTY {
                return None;
            }
            i = (i + 1) % n;
        }
        None
    }

    /// Stack bounds for the interrupted `sp`: `[sp, top)` if `sp` is inside
    /// the thread's known stack. Signal-safe (no allocation, no syscalls).
    fn stack_range(&self, slot: &Slot, tid: i32, sp: u64) -> Option<(u64, u64)> {
        let mut lo = slot.stack_lo.load(Ordering::Acquire);
        let mut hi = slot.stack_hi.load(Ordering::Acquire);
        if hi == 0 {
            let m = slot.maps.load(Ordering::Acquire);
            if m.is_null() {
                return None;
            }
            // SAFETY: the snapshot is kept alive by the slot's owner until
            // `stack_hi` is set (which happens below, after the last use).
            let maps = unsafe { &*m };
            if tid == self.pid {
                // Main thread: only its `[stack]` mapping counts (it grows
                // down, so `sp` may be below the snapshot's start); an `sp`
                // elsewhere (an alternate signal stack) resolves nothing.
                let (_, b) = maps.main_stack()?;
                if sp >= b || b - sp > self.main_stack_limit {
                    return None;
                }
                lo = b.saturating_sub(self.main_stack_limit);
                hi = b;
            } else {
                let (a, b) = maps.find(sp)?;
                lo = a;
                hi = b;
            }
            slot.stack_lo.store(lo, Ordering::Relaxed);
            slot.stack_hi.store(hi, Ordering::Release);
        }
        (sp >= lo && sp < hi).then_some((sp, hi))
    }

    /// The signal path. Async-signal-safe: atomics, `read`/`timer_getoverrun`
    /// syscalls, validated stack reads, writes into this thread's ring.
    fn sample(&self, uc: *mut c_void) {
        let tid = gettid();
        let Some(slot) = self.lookup(tid) else {
            self.stray.fetch_add(1, Ordering::Relaxed);
            return;
        };
        // `busy` first, then `live` (both SeqCst, mirrored in `disarm`):
        // either disarm sees `busy` and waits, or we see `!live` and leave
        // before touching the slot's ring, cache or maps.
        if slot.busy.swap(true, Ordering::SeqCst) {
            self.stray.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if !slot.live.load(Ordering::SeqCst) {
            slot.busy.store(false, Ordering::Release);
            self.stray.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let handle = slot.handle.load(Ordering::Relaxed);
        let weight = match slot.source.load(Ordering::Relaxed) {
            SOURCE_PERF => match perf_read(handle as i32) {
                Some(v) => v.saturating_sub(slot.last_count.swap(v, Ordering::Relaxed)),
                None => self.period_ns,
            },
            _ => {
                // SAFETY: timer_getoverrun on our timer id (a syscall).
                let ov = unsafe { libc::syscall(libc::SYS_timer_getoverrun, handle as i32) };
                (1 + ov.max(0) as u64) * self.period_ns
            }
        };
        let hook = CONTEXT_HOOK.load(Ordering::Acquire);
        let context = if hook == 0 {
            0
        } else {
            // SAFETY: only `fn() -> u64` values are stored in CONTEXT_HOOK.
            let f: fn() -> u64 = unsafe { std::mem::transmute::<usize, fn() -> u64>(hook) };
            f()
        };
        // SAFETY: `uc` is the ucontext passed by the kernel to this handler.
        let regs = unsafe { arch::regs_from_ucontext(uc) };
        let mut frames = [0u64; MAX_DEPTH];
        let depth = self.cfg.max_depth.clamp(1, MAX_DEPTH);
        let unwinder = self.unwinder.load(Ordering::Acquire);
        let cache = slot.cache.load(Ordering::Relaxed);
        let n = match self.stack_range(slot, tid, regs.sp) {
            Some((lo, hi)) if !unwinder.is_null() && !cache.is_null() => {
                let mut read_stack = |addr: u64| -> Result<u64, ()> {
                    if addr >= lo
                        && addr.is_multiple_of(8)
                        && addr.checked_add(8).is_some_and(|e| e <= hi)
                    {
                        // SAFETY: [lo, hi) is the interrupted thread's own
                        // stack from its stack pointer to its top, which is
                        // mapped while the thread runs (this handler).
                        Ok(unsafe { std::ptr::read_volatile(addr as *const u64) })
                    } else {
                        Err(())
                    }
                };
                // SAFETY: the unwinder is kept alive for the session; the
                // cache belongs to this slot and only this thread's handler
                // (guarded by `busy`) uses it.
                let (u, c) = unsafe { (&*unwinder, &mut *cache) };
                arch::unwind(u, c, &regs, &mut read_stack, &mut frames[..depth]).max(1)
            }
            _ => {
                slot.truncated.fetch_add(1, Ordering::Relaxed);
                1
            }
        };
        frames[0] = regs.pc;
        self.push(slot, weight, context, &frames[..n]);
        slot.busy.store(false, Ordering::Release);
    }

    fn push(&self, slot: &Slot, weight: u64, context: u64, frames: &[u64]) {
        let ring = slot.ring.load(Ordering::Acquire);
        let mask = slot.ring_mask.load(Ordering::Relaxed);
        let need = frames.len() as u64 + 3;
        let head = slot.head.load(Ordering::Relaxed);
        let tail = slot.tail.load(Ordering::Acquire);
        if ring.is_null() || head - tail + need > mask as u64 + 1 {
            slot.dropped.fetch_add(1, Ordering::Relaxed);
            slot.dropped_ns.fetch_add(weight, Ordering::Relaxed);
            return;
        }
        let put = |i: u64, v: u64| {
            // SAFETY: index masked into the ring of `mask + 1` words, which
            // lives as long as the slot is armed.
            unsafe { &*ring.add(((head + i) as usize) & mask) }.store(v, Ordering::Relaxed);
        };
        put(0, frames.len() as u64);
        put(1, weight);
        put(2, context);
        for (i, &f) in frames.iter().enumerate() {
            put(3 + i as u64, f);
        }
        slot.head.store(head + need, Ordering::Release);
        slot.samples.fetch_add(1, Ordering::Relaxed);
        slot.weight.fetch_add(weight, Ordering::Relaxed);
    }

    // ---- non-signal side ------------------------------------------------

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves a slot's ring contents into the aggregate.
    fn drain(&self, sh: &mut Shared, idx: usize) {
        let slot = &self.slots[idx];
        let ring = slot.ring.load(Ordering::Acquire);
        if ring.is_null() {
            return;
        }
        let tid = sh.threads[sh.owned[idx].entry].tid;
        let mask = slot.ring_mask.load(Ordering::Relaxed);
        let get = |i: u64| {
            // SAFETY: masked index into the slot's ring.
            unsafe { &*ring.add((i as usize) & mask) }.load(Ordering::Relaxed)
        };
        let head = slot.head.load(Ordering::Acquire);
        let mut tail = slot.tail.load(Ordering::Relaxed);
        let mut scratch = std::mem::take(&mut sh.scratch);
        while tail < head {
            let n = get(tail);
            let weight = get(tail + 1);
            let context = get(tail + 2);
            scratch.clear();
            scratch.extend((0..n).map(|i| get(tail + 3 + i)));
            let key = SampleKey {
                tid,
                context,
                stack: scratch.as_slice().into(),
            };
            let v = sh.agg.entry(key).or_default();
            v.count += 1;
            v.weight_ns += weight;
            tail += 3 + n;
        }
        sh.scratch = scratch;
        slot.tail.store(tail, Ordering::Release);
    }

    fn free_slot_index(&self, tid: i32) -> Option<usize> {
        let n = self.slots.len();
        let mut i = hash_tid(tid, n);
        for _ in 0..n {
            let t = self.slots[i].tid.load(Ordering::Relaxed);
            if t == TID_EMPTY || t == TID_TOMBSTONE {
                return Some(i);
            }
            i = (i + 1) % n;
        }
        None
    }

    /// Arms thread `tid`. `bounds`: exact stack bounds when called on the
    /// thread itself; otherwise `maps` resolves them on the first sample.
    fn arm(
        &self,
        sh: &mut Shared,
        tid: i32,
        bounds: Option<(u64, u64)>,
        maps: Option<&Arc<MapsSnapshot>>,
    ) -> Result<(), Error> {
        if let Some(&idx) = sh.by_tid.get(&tid) {
            if let Some((lo, hi)) = bounds {
                // Called on the thread itself: exact bounds, current name.
                let s = &self.slots[idx];
                s.stack_lo.store(lo, Ordering::Relaxed);
                s.stack_hi.store(hi, Ordering::Release);
                let e = sh.owned[idx].entry;
                sh.threads[e].name = thread_name(tid);
            }
            return Ok(());
        }
        let Some(idx) = self.free_slot_index(tid) else {
            sh.arm_errors += 1;
            return Err(Error::InvalidConfig(format!(
                "more than max_threads ({}) threads",
                self.slots.len() / 2
            )));
        };
        let slot = &self.slots[idx];
        let owned = &mut sh.owned[idx];
        let ring = owned.ring.get_or_insert_with(|| {
            (0..self.cfg.ring_words)
                .map(|_| AtomicU64::new(0))
                .collect()
        });
        let ring_ptr = ring.as_ptr() as *mut AtomicU64;
        let cache = owned.cache.get_or_insert_with(arch::new_cache);
        let cache_ptr: *mut UnwindCache = &mut **cache;
        owned.maps = maps.cloned();
        slot.ring.store(ring_ptr, Ordering::Relaxed);
        slot.ring_mask
            .store(self.cfg.ring_words - 1, Ordering::Relaxed);
        slot.head.store(0, Ordering::Relaxed);
        slot.tail.store(0, Ordering::Relaxed);
        slot.cache.store(cache_ptr, Ordering::Relaxed);
        let (lo, hi) = bounds.unwrap_or((0, 0));
        slot.stack_lo.store(lo, Ordering::Relaxed);
        slot.stack_hi.store(hi, Ordering::Relaxed);
        slot.maps.store(
            owned.maps.as_ref().map_or(std::ptr::null_mut(), |m| {
                Arc::as_ptr(m) as *mut MapsSnapshot
            }),
            Ordering::Relaxed,
        );
        slot.last_count.store(0, Ordering::Relaxed);
        for c in [
            &slot.samples,
            &slot.weight,
            &slot.dropped,
            &slot.dropped_ns,
            &slot.truncated,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        slot.busy.store(false, Ordering::Relaxed);

        // Open the source (before publishing the tid: nothing fires while
        // the event is disabled / the timer disarmed).
        let sig = self.cfg.signal;
        let perf = || {
            if self.trap_ok.load(Ordering::Relaxed) {
                match open_perf(tid, self.period_ns, Delivery::Trap) {
                    Ok(fd) => return (Ok(fd), libc::SIGTRAP),
                    // A kernel before 5.13 (no sigtrap): stop trying.
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::E2BIG)) => {
                        self.trap_ok.store(false, Ordering::Relaxed)
                    }
                    Err(_) => {}
                }
            }
            (open_perf(tid, self.period_ns, Delivery::Signal(sig)), sig)
        };
        let (source, handle, signal) = match self.cfg.source {
            SourcePreference::Timer => (SOURCE_TIMER, open_timer(tid, sig), sig),
            SourcePreference::PerfEvent => {
                let (h, s) = perf();
                (SOURCE_PERF, h, s)
            }
            SourcePreference::Auto => match perf() {
                (Ok(fd), s) => (SOURCE_PERF, Ok(fd), s),
                (Err(_), _) => (SOURCE_TIMER, open_timer(tid, sig), sig),
            },
        };
        let handle = match handle {
            Ok(h) => h,
            Err(e) => {
                sh.arm_errors += 1;
                slot.maps.store(std::ptr::null_mut(), Ordering::Relaxed);
                sh.owned[idx].maps = None;
                return Err(Error::NoSource(e));
            }
        };
        slot.source.store(source, Ordering::Relaxed);
        slot.handle.store(handle as i64, Ordering::Relaxed);
        slot.tid.store(tid, Ordering::Release);
        slot.live.store(true, Ordering::Release);

        let cpu_at_arm = thread_cpu_ns(tid).unwrap_or(0);
        let enabled = if source == SOURCE_PERF {
            // SAFETY: ioctl on our perf fd.
            let rc = unsafe { libc::ioctl(handle, PERF_EVENT_IOC_ENABLE as _, 0) };
            if rc == 0 { Ok(()) } else { Err(last_err()) }
        } else {
            timer_set(handle, self.period_ns)
        };
        let entry = sh.threads.len();
        sh.threads.push(ThreadEntry {
            tid,
            name: thread_name(tid),
            source: if source == SOURCE_PERF {
                CpuSource::PerfEvent
            } else {
                CpuSource::Timer
            },
            signal,
            samples: 0,
            sampled_ns: 0,
            cpu_ns: 0,
            dropped: 0,
            dropped_ns: 0,
            truncated: 0,
            exited: false,
            slot: Some(idx),
            cpu_at_arm,
            armed_pass: self.passes.load(Ordering::Relaxed),
        });
        sh.owned[idx].entry = entry;
        sh.by_tid.insert(tid, idx);
        if let Err(e) = enabled {
            sh.arm_errors += 1;
            self.disarm(sh, idx, false);
            return Err(Error::NoSource(e));
        }
        Ok(())
    }

    /// Stops sampling thread in slot `idx`: disables and closes its source,
    /// drains its ring and finalizes its entry. `exited`: the thread is gone
    /// (its slot can be reused).
    fn disarm(&self, sh: &mut Shared, idx: usize, exited: bool) {
        let slot = &self.slots[idx];
        let handle = slot.handle.load(Ordering::Relaxed) as i32;
        let source = slot.source.load(Ordering::Relaxed);
        let tid = slot.tid.load(Ordering::Relaxed);
        let mut final_count = None;
        if source == SOURCE_PERF {
            // SAFETY: ioctl and close on our own perf fd.
            unsafe { libc::ioctl(handle, PERF_EVENT_IOC_DISABLE as _, 0) };
            final_count = perf_read(handle);
        } else if source == SOURCE_TIMER {
            timer_delete(handle);
        }
        let measured = thread_cpu_ns(tid);
        slot.live.store(false, Ordering::SeqCst);
        // A handler already past the `live` check on that thread finishes
        // its push (it runs on the thread itself; an exited thread runs
        // none). Wait for it before draining and releasing the maps.
        while slot.busy.load(Ordering::SeqCst) && !exited {
            std::thread::yield_now();
        }
        if source == SOURCE_PERF {
            // SAFETY: closing our own fd once.
            unsafe { libc::close(handle) };
        }
        slot.source.store(SOURCE_NONE, Ordering::Relaxed);
        self.drain(sh, idx);
        let e = sh.owned[idx].entry;
        let entry = &mut sh.threads[e];
        entry.samples = slot.samples.load(Ordering::Relaxed);
        entry.sampled_ns = slot.weight.load(Ordering::Relaxed);
        entry.dropped = slot.dropped.load(Ordering::Relaxed);
        entry.dropped_ns = slot.dropped_ns.load(Ordering::Relaxed);
        entry.truncated = slot.truncated.load(Ordering::Relaxed);
        let cpu = match (measured, final_count) {
            (Some(m), _) => m.saturating_sub(entry.cpu_at_arm),
            (None, Some(c)) => c,
            (None, None) => entry.cpu_ns.max(entry.sampled_ns + entry.dropped_ns),
        };
        entry.cpu_ns = cpu;
        entry.exited = exited;
        entry.name = if exited {
            entry.name.clone()
        } else {
            thread_name(tid)
        };
        entry.slot = None;
        sh.by_tid.remove(&tid);
        slot.maps.store(std::ptr::null_mut(), Ordering::Relaxed);
        sh.owned[idx].maps = None;
        // Tombstone: lookups probe past it; arming may reuse it.
        slot.tid.store(TID_TOMBSTONE, Ordering::Release);
    }

    /// One watcher pass: arm new threads, disarm exited ones, drain rings,
    /// reload modules if new ones were loaded.
    fn rescan(&self) {
        let tids = list_tids();
        let me = self.watcher_tid.load(Ordering::Relaxed);
        let mut sh = self.lock();
        let gone: Vec<usize> = sh
            .by_tid
            .iter()
            .filter(|(t, _)| tids.binary_search(t).is_err())
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
        for idx in live {
            self.drain(&mut sh, idx);
            // Threads name themselves after they start (std does so before
            // running user code): re-read names of recently armed threads
            // every pass and of all threads every 100 passes, so exited
            // threads keep their final name.
            let e = sh.owned[idx].entry;
            if pass.wrapping_sub(sh.threads[e].armed_pass) < 20 || pass.is_multiple_of(100) {
                let tid = sh.threads[e].tid;
                sh.threads[e].name = thread_name(tid);
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

    fn reload_modules(&self, sh: &mut Shared) {
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
                t.cpu_ns =
                    thread_cpu_ns(t.tid).map_or(t.cpu_ns, |c| c.saturating_sub(t.cpu_at_arm));
                t.name = thread_name(t.tid);
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

/// Installs our handler for `sig` unless the program has its own there.
/// Returns the disposition it replaced (`SIG_DFL` or `SIG_IGN`), or
/// `None` if it was already ours. The handler stays installed for the
/// life of the process, so a late signal never meets the default action.
fn take_signal(sig: i32) -> Result<Option<libc::sighandler_t>, Error> {
    if !(1..64).contains(&sig) {
        return Err(Error::InvalidConfig(format!("signal {sig} out of range")));
    }
    if INSTALLED.load(Ordering::Acquire) & (1u64 << sig) != 0 {
        return Ok(None);
    }
    // SAFETY: querying and installing signal dispositions with valid
    // sigaction structs; the handler is async-signal-safe.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
            return Err(Error::Io(last_err()));
        }
        if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            return Err(Error::SignalInUse(sig));
        }
        if sig == libc::SIGTRAP {
            TRAP_WAS_IGNORED.store(old.sa_sigaction == libc::SIG_IGN, Ordering::Relaxed);
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
            return Err(Error::Io(last_err()));
        }
        INSTALLED.fetch_or(1u64 << sig, Ordering::AcqRel);
        Ok(Some(old.sa_sigaction))
    }
}

/// Whether a debugger (or strace) is attached: it would stop the program
/// at every SIGTRAP, so sigtrap delivery is not used then.
fn traced() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("TracerPid:"))
                .map(|v| v.trim() != "0")
        })
        .unwrap_or(false)
}

/// Whether this session may deliver perf samples as SIGTRAP: allowed by
/// the configuration, no tracer attached, and SIGTRAP not handled by the
/// program itself.
fn trap_delivery(cfg: &Config) -> bool {
    cfg.trap && !traced() && take_signal(libc::SIGTRAP).is_ok()
}

fn install_handler(sig: i32) -> Result<(), Error> {
    if take_signal(sig)?.is_none() {
        return Ok(());
    }
    // SAFETY: querying and installing the SIGIO disposition with valid
    // sigaction structs.
    unsafe {
        // If a real-time signal queue ever overflows, the kernel falls back
        // to SIGIO for perf fds, whose default action kills the process.
        // Ignore SIGIO unless the program handles it.
        let mut io_old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGIO, std::ptr::null(), &mut io_old) == 0
            && io_old.sa_sigaction == libc::SIG_DFL
        {
            let mut ign: libc::sigaction = std::mem::zeroed();
            ign.sa_sigaction = libc::SIG_IGN;
            libc::sigaction(libc::SIGIO, &ign, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// A running session; stops it when dropped.
pub(crate) struct Running {
    session: *mut Session,
    watcher: Option<JoinHandle<()>>,
    done: bool,
}

// SAFETY: the session is shared through atomics and a mutex; the raw
// pointer is only freed by `Running::drop`.
unsafe impl Send for Running {}
// SAFETY: see Send.
unsafe impl Sync for Running {}

impl Running {
    pub(crate) fn start(cfg: Config) -> Result<Running, Error> {
        if !arch::SUPPORTED {
            return Err(Error::Unsupported("no sampler for this target"));
        }
        if cfg.frequency == 0 || cfg.frequency > 100_000 {
            return Err(Error::InvalidConfig(format!(
                "frequency {} not in 1..=100000",
                cfg.frequency
            )));
        }
        let _life = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        if !SESSION.load(Ordering::Acquire).is_null() {
            return Err(Error::AlreadyRunning);
        }
        install_handler(cfg.signal)?;
        let trap = trap_delivery(&cfg);
        let mut cfg = cfg;
        cfg.ring_words = cfg.ring_words.max(1024).next_power_of_two();
        let period_ns = 1_000_000_000 / u64::from(cfg.frequency);
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid out-pointer.
        let main_stack_limit = if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) } == 0
            && rl.rlim_cur != libc::RLIM_INFINITY
        {
            rl.rlim_cur.max(128 * 1024)
        } else {
            64 << 20
        };
        let nslots = cfg.max_threads.max(1) * 2;
        let session = Box::new(Session {
            period_ns,
            trap_ok: AtomicBool::new(trap),
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
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
        let s: &Session = unsafe { &*ptr };
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
                return Err(first_err.unwrap_or(Error::NoSource(io::Error::other(
                    "no thread could be armed",
                ))));
            }
        }
        let addr = ptr as usize;
        let watcher = std::thread::Builder::new()
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
                let s: &Session = unsafe { &*(addr as *const Session) };
                s.watcher_tid.store(gettid(), Ordering::Relaxed);
                while !s.stop.load(Ordering::Acquire) {
                    s.rescan();
                    std::thread::park_timeout(s.cfg.rescan);
                }
                let cpu = thread_cpu_ns(gettid()).unwrap_or(0);
                s.watcher_cpu_ns.store(cpu, Ordering::Release);
            })?;
        running.watcher = Some(watcher);
        Ok(running)
    }

    pub(crate) fn session(&self) -> &Session {
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
        let s: &Session = unsafe { &*self.session };
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
pub fn arm_current_thread() -> Result<bool, Error> {
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
