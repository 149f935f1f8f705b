//! Architectures without a usable cycle counter: the `Instant` clock is
//! always used.

#[inline(always)]
pub fn read_tsc() -> u64 {
    0
}

pub fn tsc_is_invariant() -> bool {
    false
}

/// No counter.
pub fn counter_hz() -> Option<u64> {
    None
}

/// No counter: the name is never shown.
pub const COUNTER_NAME: &str = "none";
