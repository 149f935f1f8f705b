//! The monotonic clock, and the cycle counter calibrated against it
//! across processes: a live reader on the same machine converts a
//! session's ticks with [`ns_per_tick_since`] from the anchor the session
//! published.

use crate::arch;

/// `CLOCK_MONOTONIC` in ns, the clock `Instant` reads on Linux: the same
/// in every process of the machine.
#[cfg(unix)]
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

/// Monotonic ns since this process first asked: comparable within the
/// process only (no live reader in another process uses it here).
#[cfg(not(unix))]
pub fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// Nanoseconds per TSC tick since an anchor taken by
/// perflens-core's `clock::anchor_facts`, possibly in another process on this machine.
pub fn ns_per_tick_since(anchor_tsc: u64, anchor_mono_ns: u64) -> f64 {
    let t0 = arch::read_tsc();
    let ns = monotonic_ns().saturating_sub(anchor_mono_ns) as f64;
    let t1 = arch::read_tsc();
    let ticks = (t0 / 2 + t1 / 2).wrapping_sub(anchor_tsc);
    if ticks == 0 || ns == 0.0 {
        1.0
    } else {
        ns / ticks as f64
    }
}
