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
//! nanoseconds. The README and docs/overhead.md have the measured numbers
//! and the command that produces them (`perflens-bench`).
//!
//! What it is not: a sampling profiler. Only functions you mark are
//! measured.
//!
//! Programs without `#[perflens::main]` (tests, libraries, servers) use a
//! `Session` (with the `enabled` feature):
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

/// Counts a future at this place: its polls, the time inside them, its
/// wall time to completion, and whether it completed or was dropped
/// first; `perflens::future!(fut, label = "fetch")` names the row (else
/// `file:line:col`). The future behaves as `fut` (same output, `Unpin`
/// when `fut` is). Without `enabled` it is `fut` itself. Rows: the
/// report's Futures section.
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! future {
    ($fut:expr $(, label = $label:literal)? $(,)?) => {{
        static __PERFLENS_FLOW_SITE: $crate::__private::FlowSite = $crate::__private::FlowSite::new(
            $crate::__private::FlowKind::Future,
            $crate::__label!($($label)?),
            ::core::file!(),
            ::core::line!(),
            ::core::column!(),
            true,
        );
        $crate::flow::Measured::new(&__PERFLENS_FLOW_SITE, $fut)
    }};
}

/// See the `enabled` version: without it, the future itself.
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! future {
    ($fut:expr $(, label = $label:literal)? $(,)?) => {
        $fut
    };
}

/// Counts a stream at this place: its items, polls, `Pending` polls, the
/// time to its first item, the intervals between items, and whether it
/// ended or was dropped first; `label = "..."` names the row. The stream
/// yields the same items (`size_hint`, `Unpin` and `FusedStream` as the
/// inner one). Needs the `flow-stream` feature; without `enabled` it is
/// the stream itself. Rows: the report's Streams section.
#[cfg(all(feature = "enabled", feature = "flow-stream"))]
#[macro_export]
macro_rules! stream {
    ($stream:expr $(, label = $label:literal)? $(,)?) => {{
        static __PERFLENS_FLOW_SITE: $crate::__private::FlowSite = $crate::__private::FlowSite::new(
            $crate::__private::FlowKind::Stream,
            $crate::__label!($($label)?),
            ::core::file!(),
            ::core::line!(),
            ::core::column!(),
            true,
        );
        $crate::flow::MeasuredStream::new(&__PERFLENS_FLOW_SITE, $stream)
    }};
}

/// See the `enabled` version: without it, the stream itself.
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! stream {
    ($stream:expr $(, label = $label:literal)? $(,)?) => {
        $stream
    };
}

/// A macro's `label`, or `""`.
#[doc(hidden)]
#[macro_export]
macro_rules! __label {
    () => {
        ""
    };
    ($label:literal) => {
        $label
    };
}
pub mod sync;

pub mod alloc;
pub use alloc::CountingAlloc;

#[cfg(feature = "cpu")]
mod cpu;
#[cfg(feature = "heap")]
mod heap_stacks;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "enabled")]
mod main_guard;
#[cfg(feature = "enabled")]
mod outputs;
#[cfg(feature = "enabled")]
mod session;
#[cfg(feature = "enabled")]
mod settings;
#[cfg(feature = "enabled")]
mod stop_signals;
#[cfg(feature = "enabled")]
mod trace;
#[cfg(feature = "tracing")]
pub mod tracing;

#[cfg(feature = "enabled")]
pub use perflens_core::{ClockSource, Mode, RawSnapshot, Recursion};
#[cfg(feature = "enabled")]
pub use perflens_report::{
    ChannelRow, FunctionKind, FunctionRow, KernelTime, LockRow, Report, ReportOptions, write_json,
    write_table,
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
