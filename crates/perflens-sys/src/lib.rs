//! perflens's seam with the operating system and the processor: every
//! call the readers of a session share with its writer, in one place, so
//! that a port to another platform changes this crate and not four.
//!
//! - [`arch`]: the cycle counter (`rdtsc` on x86_64; none elsewhere, where
//!   the runtime uses `Instant`).
//! - [`clock`]: the monotonic clock and the cycle counter's calibration
//!   against it, across processes.
//! - [`barrier`]: a process-wide memory barrier (`membarrier`).
//! - `live_dir` (Unix): the private directory of this user's live sessions,
//!   and the ownership checks on what is found there.
//! - [`mem`]: page-granular memory for blocks and trace buffers.
//! - [`thread`]: the calling thread's OS name and id.
//!
//! Each module has a Linux implementation and one for everywhere else
//! (portable, `std` only, with less: no shared mappings, no barrier, no
//! thread ids). The rest of the runtime's system calls (the live
//! session's files, signals, perf_event, `fork` handling) move here in
//! later slices of the restructuring (see `docs/design/layers.md`).

pub mod arch;
pub mod barrier;
pub mod clock;
pub mod cpu_timer;
#[cfg(unix)]
pub mod live_dir;
pub mod mapped;
pub mod mem;
pub mod modules;
pub mod perf;
pub mod proc;
pub mod thread;
