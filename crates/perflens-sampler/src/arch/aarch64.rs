//! aarch64 (Linux): registers from `ucontext_t` and framehop's aarch64
//! unwinder. The interrupted function may not have saved its return
//! address yet (a leaf, or a prologue), so the unwinder starts from the
//! link register as well as the frame pointer, as framehop's aarch64
//! rules expect.

use core::ffi::c_void;

use framehop::MustNotAllocateDuringUnwind;
use framehop::aarch64::{CacheAarch64, UnwindRegsAarch64, UnwinderAarch64};

use super::Regs;

/// The unwinder: framehop's aarch64 unwinder with the no-allocation policy.
pub(crate) type Unwinder<D> = UnwinderAarch64<D, MustNotAllocateDuringUnwind>;

/// Per-thread unwind cache (rule cache plus preallocated DWARF evaluation
/// storage). Created when a thread is armed, used only by that thread's
/// signal handler.
pub(crate) type UnwindCache = CacheAarch64<MustNotAllocateDuringUnwind>;

/// A fresh cache (allocates; call when arming, never in the handler).
pub(crate) fn new_cache() -> Box<UnwindCache> {
    Box::new(CacheAarch64::new_in())
}

/// Reads pc, sp, the frame pointer (x29) and the link register (x30) of
/// the interrupted context.
///
/// # Safety
/// `uc` must be the `ucontext_t *` passed to an `SA_SIGINFO` handler.
#[inline(always)]
pub(crate) unsafe fn regs_from_ucontext(uc: *mut c_void) -> Regs {
    // SAFETY: the caller passes the kernel-provided ucontext of this
    // signal delivery; it is valid and readable for the handler's duration.
    let mc = unsafe { &(*(uc as *const libc::ucontext_t)).uc_mcontext };
    Regs {
        pc: mc.pc,
        sp: mc.sp,
        fp: mc.regs[29],
        lr: mc.regs[30],
    }
}

/// The calling thread's thread pointer (`tpidr_el0`): the address of its
/// thread control block. Async-signal-safe (one register read).
#[inline(always)]
pub(crate) fn thread_pointer() -> u64 {
    let tp: u64;
    // SAFETY: `tpidr_el0` is readable from user space on every aarch64
    // Linux system (it holds the TLS pointer); reading it has no side
    // effects.
    unsafe {
        core::arch::asm!(
            "mrs {}, tpidr_el0",
            out(reg) tp,
            options(nomem, nostack, preserves_flags)
        )
    };
    tp
}

/// The registers the unwinder starts from: the link register, sp and the frame pointer (the pc is the first frame).
#[inline(always)]
pub(crate) fn start_regs(regs: &Regs) -> UnwindRegsAarch64 {
    UnwindRegsAarch64::new(regs.lr, regs.sp, regs.fp)
}

/// The calling function's own registers: a pc inside it (this
/// sequence), its sp, frame pointer and link register there, from which
/// the unwinder walks its callers (the allocation walker's start).
#[inline(always)]
pub(crate) fn here_regs() -> Regs {
    let (pc, sp, fp, lr): (u64, u64, u64, u64);
    // SAFETY: reads four registers; touches no memory, leaves the stack
    // and flags alone.
    unsafe {
        core::arch::asm!(
            "adr {pc}, .",
            "mov {sp}, sp",
            "mov {fp}, x29",
            "mov {lr}, x30",
            pc = out(reg) pc,
            sp = out(reg) sp,
            fp = out(reg) fp,
            lr = out(reg) lr,
            options(nomem, nostack, preserves_flags)
        )
    };
    Regs { pc, sp, fp, lr }
}
