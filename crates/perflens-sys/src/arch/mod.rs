//! Architecture-specific pieces, one module per architecture with the
//! same entry points: `read_tsc()` (the CPU's cycle or time counter),
//! `tsc_is_invariant()` (whether it is a clock: constant rate, shared by
//! every core), `counter_hz()` (its rate when the architecture says it;
//! `None`: calibrate against the monotonic clock) and `COUNTER_NAME` (its
//! name in reports).

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "aarch64")]
pub use aarch64::*;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod generic;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub use generic::*;
