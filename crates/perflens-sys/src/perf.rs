//! A per-thread CPU-clock perf event, the CPU sampler's first source: a
//! software `cpu-clock` counter on one thread (a period in ns of that
//! thread's CPU time) whose overflow signals that very thread, either as
//! `SIGTRAP` through perf's `sigtrap` delivery ([`Delivery::Trap`]) or as
//! a chosen signal sent with `O_ASYNC` ([`Delivery::Signal`]).
//!
//! Entry points (the same in `linux.rs` and `portable.rs`):
//! [`AVAILABLE`], [`TRAP_SIGNAL`], [`open_cpu_clock`], [`enable`],
//! [`disable`], [`read`], [`close`], [`is_our_trap`], and the two error
//! tests the sampler's fallbacks need, [`refused_kernel`] and
//! [`lacks_sigtrap`]. A handle is the event's file descriptor. The
//! portable implementation has no perf events: [`open_cpu_clock`] fails
//! with [`std::io::ErrorKind::Unsupported`] and [`AVAILABLE`] is false.

pub use crate::imp::perf::*;

/// How a perf event's overflow reaches its thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Delivery {
    /// `attr.sigtrap` (Linux 5.13+): the kernel queues [`TRAP_SIGNAL`] to
    /// the thread as task work on its way back to user space. About half
    /// the kernel cost of `Signal`: no irq_work, no self-IPI (which is a
    /// VM exit on a virtual machine).
    Trap,
    /// `O_ASYNC` with `F_SETSIG`/`F_SETOWN_EX`: the given (real-time)
    /// signal, sent from irq_work.
    Signal(i32),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burns about `ns` of this thread's CPU time.
    #[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
    fn spin_cpu(ns: u64) {
        let start = crate::thread::own_cpu_ns().unwrap();
        let mut x = 1u64;
        while crate::thread::own_cpu_ns().unwrap() - start < ns {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }

    #[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
    #[test]
    fn an_event_counts_its_threads_cpu_time_while_enabled() {
        let tid = crate::thread::tid() as i32;
        // A 10 s period: no overflow (and so no signal) in the 30 ms of
        // CPU the test uses. Some sandboxes refuse perf events
        // altogether; the sampler falls back to a CPU timer there.
        let fd = match open_cpu_clock(tid, 10_000_000_000, Delivery::Signal(0), false) {
            Ok(fd) => fd,
            Err(e) => {
                assert!(e.raw_os_error().is_some(), "{e}");
                return;
            }
        };
        spin_cpu(5_000_000);
        assert_eq!(read(fd), Some(0), "disabled at first");
        enable(fd).unwrap();
        spin_cpu(20_000_000);
        disable(fd);
        let counted = read(fd).unwrap();
        assert!(counted >= 15_000_000, "{counted}");
        spin_cpu(5_000_000);
        assert_eq!(read(fd), Some(counted), "stopped when disabled");
        close(fd);
    }

    #[cfg(any(not(target_os = "linux"), perflens_portable, perflens_posix))]
    #[test]
    fn there_is_no_event_to_open() {
        const { assert!(!AVAILABLE) };
        let e = open_cpu_clock(1, 1_000_000, Delivery::Trap, true).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
        assert!(!refused_kernel(&e) && !lacks_sigtrap(&e));
        assert_eq!(read(-1), None);
    }
}
