//! No perf events (the `std`-only build): nothing opens, so the sampler
//! has no perf source and says why.

use std::ffi::c_void;
use std::io;

use crate::perf::Delivery;

/// No perf events on this build.
pub const AVAILABLE: bool = false;

/// No signal: nothing is ever delivered.
pub const TRAP_SIGNAL: i32 = 0;

/// Fails: there are no perf events here.
pub fn open_cpu_clock(
    _tid: i32,
    _period_ns: u64,
    _delivery: Delivery,
    _kernel: bool,
) -> io::Result<i32> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no perf events on this platform",
    ))
}

/// Never: no event was refused for kernel mode.
pub fn refused_kernel(_e: &io::Error) -> bool {
    false
}

/// Never: there is no `sigtrap` delivery to lack.
pub fn lacks_sigtrap(_e: &io::Error) -> bool {
    false
}

/// Fails: no event was opened.
pub fn enable(_fd: i32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no perf events on this platform",
    ))
}

/// Nothing to stop.
pub fn disable(_fd: i32) {}

/// No count.
#[inline]
pub fn read(_fd: i32) -> Option<u64> {
    None
}

/// Nothing to close.
pub fn close(_fd: i32) {}

/// Never ours: no event raises a signal here.
///
/// # Safety
/// None needed; the signature matches the Linux one.
#[inline]
pub unsafe fn is_our_trap(_info: *const c_void) -> bool {
    false
}
