//! The signal handler: one function for every sampling signal (SIGTRAP
//! from perf's sigtrap delivery, or the configured real-time signal), and
//! its installation.
//!
//! What the handler may touch, and who owns it:
//!
//! - the published session (`SESSION`), kept alive while `IN_HANDLERS`
//!   counts this handler: `Running::shutdown` unpublishes the session and
//!   waits for `IN_HANDLERS` to reach zero before it is freed;
//! - its own thread's slot, found by tid, and only after setting the
//!   slot's `busy` flag and then seeing `live` (both SeqCst): `disarm`
//!   clears `live` and then waits for `busy` to clear before it releases
//!   the slot's source handle, ring, cache or maps snapshot;
//! - the interrupted thread's stack, from its stack pointer to the top of
//!   the known stack that holds it (`stack.rs`), nothing else;
//! - the unwinder published in the session (freed only with the session).
//!
//! It allocates nothing, takes no lock, calls no libgcc unwinder and
//! preserves `errno`. The handler stays installed for the life of the
//! process, so a signal that arrives after its session stopped finds no
//! session and returns.
//!
//! Installing, restoring and raising signals, and `errno`, go through
//! `perflens_sys::signal`.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use perflens_sys::signal::{self, Action, Disposition, SIGIO, SIGTRAP, SavedErrno};

use super::session::{SESSION, SamplerState};
use super::sources::is_our_trap;
use super::{MAX_DEPTH, SamplerOptions, gettid, monotonic_ns};
use crate::SamplerError;
use crate::arch;
use crate::profile::{HANDLER_BUCKET_NS, HANDLER_BUCKETS};

/// Handlers currently executing (any thread). `stop` waits for zero after
/// unpublishing the session.
pub(super) static IN_HANDLERS: AtomicUsize = AtomicUsize::new(0);
/// `fn() -> u64` as usize, 0 if unset.
static CONTEXT_HOOK: AtomicUsize = AtomicUsize::new(0);
/// `fn(u64)` as usize, 0 if unset.
static CHARGE_HOOK: AtomicUsize = AtomicUsize::new(0);
/// Signal numbers our handler is installed for (bit per signal, < 64).
static INSTALLED: AtomicU64 = AtomicU64::new(0);
/// The SIGTRAP disposition we replaced was SIG_IGN (else SIG_DFL).
static TRAP_WAS_IGNORED: AtomicBool = AtomicBool::new(false);
/// Signals that arrived while no session was running.
static LATE_SIGNALS: AtomicU64 = AtomicU64::new(0);

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

/// Sets the charge hook: the handler calls it with the sample's weight
/// (ns of CPU time) after every sample it stored, on the sampled thread
/// (so a profiler can keep live per-context counters that agree with the
/// stored samples). It must be async-signal-safe. Replaces any previous
/// hook.
pub fn set_charge_hook(f: fn(u64)) {
    CHARGE_HOOK.store(f as usize, Ordering::Release);
}

/// Removes the charge hook.
pub fn clear_charge_hook() {
    CHARGE_HOOK.store(0, Ordering::Release);
}

/// A SIGTRAP that is not ours: do what the disposition we replaced would
/// have done. Ignored stays ignored; the default action (core dump) is
/// restored and the signal raised again, so it takes effect as soon as
/// the handler returns. Async-signal-safe (sigaction, raise).
fn foreign_trap() {
    if TRAP_WAS_IGNORED.load(Ordering::Relaxed) {
        return;
    }
    // Restoring the default disposition and re-raising, both
    // async-signal-safe. SIGTRAP stays blocked until the handler returns.
    let _ = signal::install(SIGTRAP, Action::Default);
    INSTALLED.fetch_and(!(1u64 << SIGTRAP), Ordering::AcqRel);
    signal::raise(SIGTRAP);
}

extern "C" fn on_signal(sig: i32, info: *mut signal::Info, uc: *mut c_void) {
    // Put back for the interrupted code when the handler returns.
    let _errno = SavedErrno::save();
    // SAFETY: `info` comes from the kernel (SA_SIGINFO handler).
    if sig == SIGTRAP && !unsafe { is_our_trap(info.cast::<c_void>()) } {
        foreign_trap();
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
        s.sample(uc, t0);
        let took = monotonic_ns().saturating_sub(t0);
        s.handler_ns.fetch_add(took, Ordering::Relaxed);
        s.handler_calls.fetch_add(1, Ordering::Relaxed);
        let bucket = ((took / HANDLER_BUCKET_NS) as usize).min(HANDLER_BUCKETS - 1);
        s.handler_hist[bucket].fetch_add(1, Ordering::Relaxed);
    }
    IN_HANDLERS.fetch_sub(1, Ordering::SeqCst);
    IN_HANDLER.with(|f| f.set(false));
}

impl SamplerState {
    /// The signal path. Async-signal-safe: atomics, `read`/`timer_getoverrun`
    /// syscalls, validated stack reads, writes into this thread's ring.
    ///
    /// A walk that takes more than a sampling period (a deep stack in an
    /// unoptimized build, at a high frequency) leaves the thread no time
    /// of its own: with a perf event the next period elapses in the
    /// handler, the signal is pending when it returns, and the thread
    /// makes no progress at all (seen at 10 kHz: 235 µs per walk against a
    /// 100 µs period). So a sample that comes less than half a period
    /// (of wall time, which the thread's CPU time cannot outrun) after a
    /// walk that took more than half a period keeps its leaf only, counted
    /// in `truncated`, its weight exact; the thread then runs until the
    /// next one. Preemption can make a walk look slow but never makes the
    /// gap short, so a loaded machine does not trigger it.
    pub(super) fn sample(&self, uc: *mut c_void, started_ns: u64) {
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
        let weight = self.sample_weight(slot);
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
        let starved = slot.last_walk_slow.load(Ordering::Relaxed)
            && (started_ns.saturating_sub(slot.last_exit_ns.load(Ordering::Relaxed)))
                .saturating_mul(2)
                < self.period_ns;
        let mut walked = false;
        let n = match self.stack_range(slot, tid, regs.sp) {
            Some((lo, hi)) if !starved && !unwinder.is_null() && !cache.is_null() => {
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
                walked = true;
                arch::unwind(u, c, &regs, &mut read_stack, &mut frames[..depth]).max(1)
            }
            _ => {
                slot.truncated.fetch_add(1, Ordering::Relaxed);
                1
            }
        };
        frames[0] = regs.pc;
        if self.push(slot, weight, context, &frames[..n]) {
            let charge = CHARGE_HOOK.load(Ordering::Acquire);
            if charge != 0 {
                // SAFETY: only `fn(u64)` values are stored in CHARGE_HOOK.
                let f: fn(u64) = unsafe { std::mem::transmute::<usize, fn(u64)>(charge) };
                f(weight);
            }
        }
        let ended_ns = monotonic_ns();
        let slow = walked && ended_ns.saturating_sub(started_ns).saturating_mul(2) > self.period_ns;
        slot.last_walk_slow.store(slow, Ordering::Relaxed);
        slot.last_exit_ns.store(ended_ns, Ordering::Relaxed);
        slot.busy.store(false, Ordering::Release);
    }
}

/// Installs our handler for `sig` unless the program has its own there.
/// Returns the disposition it replaced (default or ignored), or `None`
/// if it was already ours. The handler stays installed for the life of
/// the process, so a late signal never meets the default action.
fn take_signal(sig: i32) -> Result<Option<Disposition>, SamplerError> {
    if !(1..64).contains(&sig) {
        return Err(SamplerError::InvalidConfig(format!(
            "signal {sig} out of range"
        )));
    }
    if INSTALLED.load(Ordering::Acquire) & (1u64 << sig) != 0 {
        return Ok(None);
    }
    let old = signal::current(sig).map_err(SamplerError::Io)?;
    if old == Disposition::Handler {
        return Err(SamplerError::SignalInUse(sig));
    }
    if sig == SIGTRAP {
        TRAP_WAS_IGNORED.store(old == Disposition::Ignore, Ordering::Relaxed);
    }
    signal::install(sig, Action::Info(on_signal)).map_err(SamplerError::Io)?;
    INSTALLED.fetch_or(1u64 << sig, Ordering::AcqRel);
    Ok(Some(old))
}

/// Whether a debugger (or strace) is attached: it would stop the program
/// at every SIGTRAP, so sigtrap delivery is not used then.
fn traced() -> bool {
    perflens_sys::proc::status_field("TracerPid").is_some_and(|v| v != "0")
}

/// Whether this session may deliver perf samples as SIGTRAP: allowed by
/// the configuration, no tracer attached, and SIGTRAP not handled by the
/// program itself.
pub(super) fn trap_delivery(cfg: &SamplerOptions) -> bool {
    cfg.trap && !traced() && take_signal(SIGTRAP).is_ok()
}

/// SIGIO's handler while the sampler runs: does nothing (see
/// `install_handler`). Async-signal-safe.
extern "C" fn swallow_sigio(_: i32) {}

pub(super) fn install_handler(sig: i32) -> Result<(), SamplerError> {
    if take_signal(sig)?.is_none() {
        return Ok(());
    }
    // If a real-time signal queue ever overflows, the kernel falls back
    // to SIGIO for perf fds, whose default action kills the process.
    // Catch SIGIO with a handler that does nothing, unless the program
    // handles it. Not SIG_IGN: an ignored signal stays ignored in the
    // programs this process executes, a handler is reset by `exec`.
    if signal::current(SIGIO).is_ok_and(|d| d == Disposition::Default) {
        let _ = signal::install(SIGIO, Action::Plain(swallow_sigio));
    }
    Ok(())
}
