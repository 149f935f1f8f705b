//! The Windows implementation: the portable one (`std` only) for every
//! mechanism but the stop signals, which Windows delivers as console
//! control events (Ctrl-C, Ctrl-Break, the console closing; see
//! `signal.rs`). No live view (its files and mappings are POSIX's), no
//! CPU sampling, no `fork`: each says so as in the portable build.

// Every module of the portable implementation; its `signal` is used for
// what Windows shares with it (the channel the stop thread waits on, the
// constants) and the rest of it is not compiled into anything.
#[allow(dead_code)]
#[path = "../portable/mod.rs"]
mod portable;

pub(crate) use portable::unsupported;
pub use portable::{
    barrier, clock, cpu_timer, fork, mapped, mem, modules, perf, proc, process, shm, thread,
};

pub mod signal;

use crate::Capabilities;

/// The portable build's, with the stop signals (Ctrl-C and the console's
/// closing) reported.
pub const CAPABILITIES: Capabilities = Capabilities {
    platform: "windows",
    stop_signals: true,
    ..portable::CAPABILITIES
};
