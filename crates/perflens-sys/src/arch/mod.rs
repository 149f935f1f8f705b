//! Architecture-specific pieces, one module per architecture with the
//! same entry points: `read_tsc()` and `tsc_is_invariant()`.

#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

#[cfg(not(target_arch = "x86_64"))]
mod generic;
#[cfg(not(target_arch = "x86_64"))]
pub use generic::*;
