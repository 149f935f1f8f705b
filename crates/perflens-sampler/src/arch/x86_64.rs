//! x86_64 (Linux): registers from `ucontext_t` and framehop's x86_64 unwinder.

use core::ffi::c_void;

use framehop::MustNotAllocateDuringUnwind;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};

use super::Regs;

/// The unwinder: framehop's x86_64 unwinder with the no-allocation policy.
pub(crate) type Unwinder<D> = UnwinderX86_64<D, MustNotAllocateDuringUnwind>;

/// Per-thread unwind cache (rule cache plus preallocated DWARF evaluation
/// storage). Created when a thread is armed, used only by that thread's
/// signal handler.
pub(crate) type UnwindCache = CacheX86_64<MustNotAllocateDuringUnwind>;

/// A fresh cache (allocates; call when arming, never in the handler).
pub(crate) fn new_cache() -> Box<UnwindCache> {
    Box::new(CacheX86_64::new_in())
}

/// Reads rip, rsp and rbp of the interrupted context.
///
/// # Safety
/// `uc` must be the `ucontext_t *` passed to an `SA_SIGINFO` handler.
#[inline(always)]
pub(crate) unsafe fn regs_from_ucontext(uc: *mut c_void) -> Regs {
    // SAFETY: the caller passes the kernel-provided ucontext of this
    // signal delivery; it is valid and readable for the handler's duration.
    let gregs = unsafe { &(*(uc as *const libc::ucontext_t)).uc_mcontext.gregs };
    Regs {
        pc: gregs[libc::REG_RIP as usize] as u64,
        sp: gregs[libc::REG_RSP as usize] as u64,
        fp: gregs[libc::REG_RBP as usize] as u64,
        lr: 0,
    }
}

/// The calling thread's thread pointer (the `%fs` base): the address of
/// its thread control block. Async-signal-safe (one load, no syscall).
#[inline(always)]
pub(crate) fn thread_pointer() -> u64 {
    let tp: u64;
    // SAFETY: the x86_64 TLS ABI keeps the thread pointer itself in the
    // first word of the thread control block, at `%fs:0`; reading it has
    // no side effects.
    unsafe {
        core::arch::asm!(
            "mov {}, qword ptr fs:[0]",
            out(reg) tp,
            options(nostack, readonly, preserves_flags)
        )
    };
    tp
}

/// The registers the unwinder starts from: pc, sp and the frame pointer.
#[inline(always)]
pub(crate) fn start_regs(regs: &Regs) -> UnwindRegsX86_64 {
    UnwindRegsX86_64::new(regs.pc, regs.sp, regs.fp)
}

/// The calling function's own registers: a pc inside it (the next
/// instruction of this sequence), its sp and rbp at that pc, from which
/// the unwinder walks its callers (the allocation walker's start).
#[inline(always)]
pub(crate) fn here_regs() -> Regs {
    let (pc, sp, fp): (u64, u64, u64);
    // SAFETY: reads three registers; touches no memory, leaves the
    // stack and flags alone.
    unsafe {
        core::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {fp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            fp = out(reg) fp,
            options(nomem, nostack, preserves_flags)
        )
    };
    Regs { pc, sp, fp, lr: 0 }
}
