//! The portable implementation: `std` only, for platforms perflens has
//! not been ported to (and for Linux built with `--cfg
//! perflens_portable`). Each file has the entry points of its twin in
//! `linux/`, doing what `std` allows and saying what it cannot (see
//! [`CAPABILITIES`]).

pub mod barrier;
pub mod clock;
pub mod cpu_timer;
pub mod fork;
pub mod mapped;
pub mod mem;
pub mod modules;
pub mod perf;
pub mod proc;
pub mod process;
pub mod shm;
pub mod signal;
pub mod thread;

use crate::Capabilities;

/// What `std` alone gives: none of the process-level mechanisms.
pub const CAPABILITIES: Capabilities = Capabilities {
    platform: "portable",
    live_view: false,
    stop_signals: false,
    cpu_sampling: false,
    process_barrier: false,
    fork_handling: false,
    page_release: false,
};

/// The error of a mechanism this implementation does not have.
pub(crate) fn unsupported(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not available on this platform"),
    )
}
