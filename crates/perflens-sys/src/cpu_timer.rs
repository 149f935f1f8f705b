//! POSIX per-thread CPU timers, the CPU sampler's fallback source where
//! perf events are refused: a timer on one thread's CPU clock whose
//! expiry signals that very thread (`timer_create` with
//! `SIGEV_THREAD_ID`).
//!
//! Entry points (the same in `linux.rs` and `portable.rs`):
//! [`AVAILABLE`], [`create`], [`arm`], [`delete`], [`overrun`]. A handle
//! is the kernel's timer id. The portable implementation has no such
//! timers: [`create`] fails with [`std::io::ErrorKind::Unsupported`] and
//! [`AVAILABLE`] is false.

pub use crate::imp::cpu_timer::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
    #[test]
    fn a_timer_is_created_armed_and_deleted() {
        let tid = crate::thread::tid() as i32;
        // Signal 0 sends nothing; the expiry only counts (and overruns).
        let id = create(tid, 0).expect("timer_create on this thread's CPU clock");
        assert_eq!(overrun(id), 0);
        // Disarmed at first, then armed at a period far above the test's
        // CPU time: no expiry either way.
        arm(id, 10_000_000_000).unwrap();
        assert_eq!(overrun(id), 0);
        delete(id);
        // A thread that does not exist has no clock.
        assert!(create(-5, 0).is_err());
    }

    #[cfg(any(not(target_os = "linux"), perflens_portable, perflens_posix))]
    #[test]
    fn there_is_no_timer_to_create() {
        const { assert!(!AVAILABLE) };
        let e = create(1, 1).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
        assert_eq!(overrun(7), 0);
    }
}
