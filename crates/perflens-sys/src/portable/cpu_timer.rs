//! No per-thread CPU timers (the `std`-only build): nothing is created,
//! so the sampler has no timer source and says why.

use std::io;

/// No per-thread CPU timers on this build.
pub const AVAILABLE: bool = false;

/// Fails: there are no per-thread CPU timers here.
pub fn create(_tid: i32, _sig: i32) -> io::Result<i32> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no per-thread CPU timers on this platform",
    ))
}

/// Fails: no timer was created.
pub fn arm(_id: i32, _period_ns: u64) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no per-thread CPU timers on this platform",
    ))
}

/// Nothing to delete.
pub fn delete(_id: i32) {}

/// No expiries.
#[inline]
pub fn overrun(_id: i32) -> u64 {
    0
}
