//! The monotonic clock, and the cycle counter calibrated against it
//! across processes: a live reader on the same machine converts a
//! session's ticks with [`ns_per_tick_since`] from the anchor the session
//! published.

use crate::arch;

/// `monotonic_ns()`: the monotonic clock in ns. On Linux and macOS
/// `CLOCK_MONOTONIC`, the same in every process of the machine (a live
/// reader converts a session's ticks with it); in the portable build, ns since this process
/// first asked (comparable within the process only: no live reader in
/// another process uses it there).
pub use crate::imp::clock::monotonic_ns;

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

#[cfg(test)]
mod tests {
    #[test]
    fn the_monotonic_clock_moves_forward() {
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::monotonic_ns();
        assert!(b >= a + 1_000_000, "{a} then {b}");
    }
}
