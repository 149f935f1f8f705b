//! The portable monotonic clock: `Instant`, from this process's first
//! reading.

/// Monotonic ns since this process first asked: comparable within the
/// process only (no live reader in another process uses it here).
pub fn monotonic_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}
