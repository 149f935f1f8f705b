//! The Linux perf event: `perf_event_open` of a software cpu-clock event
//! on one thread, `fcntl` to route its overflow signal to that thread,
//! `ioctl` to enable and disable it, `read` for its count.
//!
//! The event counts all of the thread's CPU time, user and kernel. With
//! `exclude_kernel` the kernel skips an overflow that falls in kernel
//! mode (no signal for it, the count goes on); without it the overflow is
//! taken in kernel mode too and the signal is delivered on the return to
//! user space, on the stack that made the system call.

use std::ffi::c_void;
use std::io;

use crate::perf::Delivery;

/// perf events exist here (the kernel may still refuse one: see
/// [`open_cpu_clock`]).
pub const AVAILABLE: bool = true;

/// The signal [`Delivery::Trap`] raises.
pub const TRAP_SIGNAL: i32 = libc::SIGTRAP;

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

/// Opens a disabled cpu-clock event on thread `tid` of this process whose
/// overflow, every `period_ns` of the thread's CPU time, signals `tid`.
/// `kernel`: overflows in kernel mode are taken too (`exclude_kernel`
/// clear), which the kernel refuses to a process that may not observe
/// kernel mode ([`refused_kernel`]). Returns the event's fd.
pub fn open_cpu_clock(
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
        return Err(io::Error::last_os_error());
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
        let e = io::Error::last_os_error();
        // SAFETY: closing our own fd.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    Ok(fd)
}

/// The kernel would not let this process observe kernel mode (`EACCES`
/// or `EPERM` from [`open_cpu_clock`] with `kernel`).
pub fn refused_kernel(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

/// The kernel does not know `sigtrap` delivery (before 5.13: `EINVAL` or
/// `E2BIG` for the larger attribute).
pub fn lacks_sigtrap(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::E2BIG))
}

/// Starts the event counting (and so signalling).
pub fn enable(fd: i32) -> io::Result<()> {
    // SAFETY: ioctl on a perf fd, no pointer argument.
    let rc = unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ENABLE as _, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Stops the event: no further overflow signals.
pub fn disable(fd: i32) {
    // SAFETY: ioctl on a perf fd, no pointer argument.
    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_DISABLE as _, 0) };
}

/// The event's count so far (ns of CPU time). One `read`:
/// async-signal-safe.
#[inline]
pub fn read(fd: i32) -> Option<u64> {
    let mut v = 0u64;
    // SAFETY: reading at most 8 bytes into `v`.
    let n = unsafe { libc::read(fd, &mut v as *mut u64 as *mut c_void, 8) };
    (n == 8).then_some(v)
}

/// Closes the event's fd.
pub fn close(fd: i32) {
    // SAFETY: closing an fd the caller owns, once.
    unsafe { libc::close(fd) };
}

/// Whether a `SIGTRAP` came from one of our events ([`Delivery::Trap`]),
/// not a breakpoint, a `kill -TRAP` or another tool's event.
///
/// # Safety
/// `info` is the `siginfo_t` the kernel passed to an `SA_SIGINFO`
/// handler.
#[inline]
pub unsafe fn is_our_trap(info: *const c_void) -> bool {
    let info = info as *const libc::siginfo_t;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_fallback() {
        for (errno, kernel, trap) in [
            (libc::EACCES, true, false),
            (libc::EPERM, true, false),
            (libc::EINVAL, false, true),
            (libc::E2BIG, false, true),
            (libc::ENOENT, false, false),
        ] {
            let e = io::Error::from_raw_os_error(errno);
            assert_eq!(
                (refused_kernel(&e), lacks_sigtrap(&e)),
                (kernel, trap),
                "{e}"
            );
        }
    }

    #[test]
    fn a_trap_is_ours_only_with_our_cookie() {
        // SAFETY: an all-zero siginfo_t is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let p = &mut info as *mut libc::siginfo_t;
        // SAFETY: writes inside the siginfo_t, as the kernel lays it out.
        unsafe {
            (*p).si_code = TRAP_PERF;
            (p as *mut u8)
                .add(SI_PERF_DATA_OFFSET)
                .cast::<u64>()
                .write_unaligned(TRAP_COOKIE);
        }
        // SAFETY: a whole siginfo_t.
        assert!(unsafe { is_our_trap(p as *const c_void) });
        // SAFETY: as above.
        unsafe { (*p).si_code = 1 };
        // SAFETY: a whole siginfo_t.
        assert!(!unsafe { is_our_trap(p as *const c_void) });
    }
}
