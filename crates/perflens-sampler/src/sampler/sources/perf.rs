//! The perf_event source: a software cpu-clock event on one thread
//! (period in ns of the thread's CPU time) whose overflow signals that
//! very thread, either as SIGTRAP through perf's `sigtrap` delivery
//! ([`Delivery::Trap`]) or as a real-time signal sent with `O_ASYNC`
//! ([`Delivery::Signal`]).
//!
//! The event counts all of the thread's CPU time, user and kernel. With
//! `exclude_kernel` the kernel skips an overflow that falls in kernel mode
//! (no sample for it, the count goes on), so the time since the last
//! sample would include kernel time spent anywhere since then: such a
//! sample weighs one period instead (see `SamplerState::sample_weight`).
//! Without it the overflow is taken in kernel mode too, and the signal is
//! delivered on the return to user space, on the stack that made the
//! system call; the sample then weighs the thread's CPU clock since the
//! last one (not the event's count, which runs on the CPU's local clock).
//!
//! The event's fd is owned by the thread's slot: opened when the thread is
//! armed, and disabled, read (its final count) and closed by `disarm`,
//! closed only once no handler of that thread can be running.

use std::ffi::c_void;
use std::io;

use crate::sampler::last_err;

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

/// How a perf event's overflow reaches its thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::sampler) enum Delivery {
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
/// `kernel`: overflows in kernel mode are taken too (`exclude_kernel`
/// clear), which the kernel refuses with `EACCES` or `EPERM` to a process
/// that may not observe kernel mode.
pub(super) fn open_perf(
    tid: i32,
    period_ns: u64,
    delivery: Delivery,
    kernel: bool,
) -> io::Result<i32> {
    let mut attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period: period_ns,
        flags: ATTR_DISABLED | ATTR_EXCLUDE_HV | if kernel { 0 } else { ATTR_EXCLUDE_KERNEL },
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

/// The event's count so far (ns of CPU time). One `read`: async-signal-safe.
pub(super) fn perf_read(fd: i32) -> Option<u64> {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into `v` from our fd.
    let n = unsafe { libc::read(fd, &mut v as *mut u64 as *mut c_void, 8) };
    (n == 8).then_some(v)
}

/// Whether a SIGTRAP came from one of our perf events (not a breakpoint,
/// a `kill -TRAP` or another tool's event).
///
/// # Safety
/// `info` is the `siginfo_t` the kernel passed to the handler.
pub(in crate::sampler) unsafe fn is_our_trap(info: *const libc::siginfo_t) -> bool {
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

/// Starts the event counting (and so signalling).
pub(super) fn perf_enable(fd: i32) -> io::Result<()> {
    // SAFETY: ioctl on our perf fd.
    let rc = unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ENABLE as _, 0) };
    if rc == 0 { Ok(()) } else { Err(last_err()) }
}

/// Stops the event: no further overflow signals.
pub(super) fn perf_disable(fd: i32) {
    // SAFETY: ioctl on our own perf fd.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE as _, 0) };
}

/// Closes the event's fd.
pub(super) fn perf_close(fd: i32) {
    // SAFETY: closing our own fd once.
    unsafe { libc::close(fd) };
}
