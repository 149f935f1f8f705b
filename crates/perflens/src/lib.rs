//! perflens: one profiler for Rust that puts wall time, self time, async
//! waits and hot call paths side by side.
//!
//! ```toml
//! [dependencies]
//! perflens = "0.1"
//! [features]
//! perflens = ["perflens/enabled"]
//! ```
//!
//! ```ignore
//! #[perflens::measure]
//! fn parse(buf: &[u8]) -> Msg { /* ... */ }
//!
//! #[perflens::measure]
//! async fn fetch(id: u64) -> Row { /* ... */ }
//!
//! #[tokio::main]
//! #[perflens::main]
//! async fn main() { /* ... */ }
//! ```
//!
//! `cargo run --release --features perflens` prints, when `main` returns,
//! a timing table and the hot call paths. Without the feature every macro
//! expands to its input unchanged and no runtime crate is compiled.
//!
//! What it costs: a timed call adds about two reads of the CPU's
//! time-stamp counter plus a few nanoseconds; a count-only call a few
//! nanoseconds. The README has the measured numbers and the command that
//! produces them (`perflens-bench`).
//!
//! What it is not: a sampling profiler. Only functions you mark are
//! measured.
//!
//! Programs without `#[perflens::main]` (tests, libraries, servers) use a
//! [`Session`] (with the `enabled` feature):
//!
//! ```
//! # #[cfg(feature = "enabled")] {
//! #[perflens::measure]
//! fn work(n: u64) -> u64 { (0..n).sum() }
//!
//! let session = perflens::Session::builder().start().unwrap();
//! for i in 0..10 { std::hint::black_box(work(i)); }
//! let report = session.finish();
//! let row = report.functions.iter().find(|f| f.name.ends_with("::work")).unwrap();
//! assert_eq!(row.calls, 10);
//! # }
//! ```

pub use perflens_macros::{channel, main, measure, measure_all, measure_block, skip};

pub mod flow;
pub mod sync;

mod alloc;
pub use alloc::CountingAlloc;

#[cfg(feature = "cpu")]
mod cpu;
#[cfg(feature = "enabled")]
mod main_guard;
#[cfg(feature = "enabled")]
mod session;
#[cfg(feature = "enabled")]
mod stop_signals;
#[cfg(feature = "enabled")]
mod trace;

#[cfg(feature = "enabled")]
pub use perflens_core::{ClockSource, Mode, RawSnapshot, Recursion};
#[cfg(feature = "enabled")]
pub use perflens_report::{
    ChannelRow, KernelTime, LockRow, Report, ReportOptions, write_json, write_table,
};
#[cfg(feature = "enabled")]
pub use session::{Error, Session, SessionBuilder};

/// Macro plumbing. Not a public API: generated code refers to it by
/// absolute path.
#[doc(hidden)]
#[cfg(feature = "enabled")]
pub mod __private {
    pub use crate::main_guard::{Format, MainGuard, MainOptions};
    pub use perflens_core::{
        AwaitSite, Awaited, Callsite, CountingAlloc, FlowKind, FlowSite, Guard, Instrumented,
        Internal, Mode, awaited, instrument,
    };
}
