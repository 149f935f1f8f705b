//! Linux's monotonic clock: `clock_gettime(CLOCK_MONOTONIC)`.

/// `CLOCK_MONOTONIC` in ns: the same in every process of the machine.
/// Inlined: the sampler's signal handler reads it.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
