//! perflens's seam with the operating system and the processor: every
//! call the readers of a session share with its writer, in one place, so
//! that a port to another platform changes this crate and not four.
//!
//! - [`arch`]: the cycle counter (`rdtsc` on x86_64; none elsewhere, where
//!   the runtime uses `Instant`).
//! - [`clock`]: the monotonic clock and the cycle counter's calibration
//!   against it, across processes.
//! - [`live_dir`]: the private directory of this user's live sessions,
//!   and the ownership checks on what is found there.
//!
//! The rest of the runtime's system calls (memory mappings, signals,
//! perf_event, `fork` handling) move here in later slices of the
//! restructuring (see `docs/design/layers.md`).

pub mod arch;
pub mod clock;
pub mod live_dir;
