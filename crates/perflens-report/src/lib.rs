//! perflens reports: the model built from a runtime snapshot, and the
//! writers that turn it into terminal tables and JSON.
//!
//! The runtime (`perflens-core`) hands over a
//! [`RawSnapshot`](perflens_format::snapshot::RawSnapshot): every thread's
//! calling-context tree, copied. [`Report::from_snapshot`] merges the
//! threads and derives these views of it:
//!
//! - [`FunctionRow`]s: one flat row per function name, with calls, mean
//!   and percentile latency, inclusive time (outermost frames only, so
//!   recursion is not counted twice), self time, and busy/wait/polls for
//!   futures;
//! - [`HotPath`]s: a chain from the root to every node of the tree that
//!   ran, leaf or interior, with per-segment self-time percentiles, ranked
//!   by the time spent in the last frame itself
//!   ([`Report::paths_by_time_spent`]), not by wall time;
//! - a [`FrameTree`] (made apart, [`FrameTree::from_snapshot`]): the
//!   hot paths' segments as one tree of frames, each shared prefix once;
//! - [`WaitRow`]s ([`Report::waits`]): the await sites of measured
//!   futures that waited at least [`ReportOptions::wait_min_ns`], with
//!   their waits (never scaled) and the measured functions that ran
//!   inside them, or none (`uninstrumented`); where each site is in the
//!   source comes from the program's await-site table
//!   ([`Report::from_snapshot_with_sites`]);
//! - [`ThreadRow`]s and [`Dropped`]: what each thread recorded and what did
//!   not fit;
//! - when the counting allocator is installed
//!   ([`RawSnapshot::alloc`](perflens_format::snapshot::RawSnapshot::alloc)
//!   is `Some`): bytes and allocations per function, per hot path and per
//!   thread, exclusive and inclusive (a recursion's subtree counted once),
//!   per-call mean and p95, the allocation paths
//!   ([`Report::alloc_paths`]: every chain whose last frame allocated
//!   bytes itself, by those bytes), and the session's [`AllocTotals`];
//! - when a CPU sampler ran and its samples were added with
//!   [`Report::add_cpu`] (from a [`CpuInput`]): samples and CPU time per
//!   function and per hot path, exclusive and inclusive (a sample inside a
//!   recursion counted once), and the session's [`CpuSummary`].
//!
//! [`write_table`] draws the end-of-session tables; [`write_json`] writes
//! the versioned JSON report (`perflens.report/1`, see
//! `docs/report-schema.md`), which [`Report::from_json_reader`] reads back.
//!
//! This crate does not record anything and has no global state: it is
//! plain data in, text out. Building a report costs one pass over the
//! nodes plus one walk up the tree per path, and runs once per snapshot,
//! off the program's hot path.
//!
//! ```
//! use perflens_format::histogram::Histogram;
//! use perflens_format::snapshot::*;
//! use perflens_report::{Report, ReportOptions, write_json, write_table};
//!
//! let site = |name: &str, kind| CallsiteInfo { name: name.into(), kind };
//! let mut hist = Histogram::new();
//! hist.record_n(1_000, 3); // three calls of 1000 ticks each
//! let snap = RawSnapshot {
//!     mode: Mode::Timed,
//!     sample_warmup: 0,
//!     clock: ClockSource::Instant,
//!     ns_per_tick: 1.0,
//!     elapsed_ns: 10_000,
//!     finished: true,
//!     callsites: vec![
//!         site("[root]", CallsiteKind::Internal),
//!         site("[overflow]", CallsiteKind::Internal),
//!         site("app::work", CallsiteKind::Sync),
//!     ],
//!     paths: vec![
//!         PathInfo { parent: 0, callsite: 0, id: 0 },
//!         PathInfo { parent: 0, callsite: 1, id: 1 },
//!         PathInfo { parent: 0, callsite: 2, id: 0xfeed_f00d_dead_beef },
//!     ],
//!     threads: vec![ThreadSnapshot {
//!         nodes: vec![NodeSnapshot {
//!             path: 2,
//!             calls: 3,
//!             timed_calls: 3,
//!             total_ns: 3_000,
//!             self_ns: 3_000,
//!             hist_total: hist.clone(),
//!             hist_self: hist,
//!             ..Default::default()
//!         }],
//!         ..Default::default()
//!     }],
//!     path_capacity: 1024,
//!     overflow_paths: 0,
//!     unrecorded_calls: 0,
//!     alloc: None,
//!     heap: None,
//! };
//!
//! let report = Report::from_snapshot(&snap, &ReportOptions::default());
//! let work = report.function("app::work").unwrap();
//! assert_eq!((work.calls, work.total_ns, work.avg_ns, work.p99_ns), (3, 3_000, 1_000, 1_000));
//! assert_eq!(report.paths[0].frames, ["app::work"]);
//!
//! let mut json = Vec::new();
//! write_json(&report, &mut json)?;
//! assert_eq!(Report::from_json_reader(&json[..])?, report);
//!
//! let mut table = Vec::new();
//! write_table(&report, &mut table)?;
//! assert!(String::from_utf8(table)?.starts_with("[perflens] 10.00 µs | timed | instant | 1 thread"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod build;
mod cpu;
pub mod diff;
mod error;
mod flow;
mod format;
mod grid;
mod html;
mod json;
mod model;
mod percentiles;
pub mod pprof;
pub mod prometheus;
mod schema;
mod table;
pub mod trace;
mod tree;

pub use build::waits::parse_wait_min;
pub use cpu::{CpuInput, CpuThreadInput};
pub use error::ReportError;
pub use format::{
    bytes as format_bytes, count as format_count, duration as format_duration,
    percent as format_percent, signed_bytes as format_signed_bytes, truncate_left, write_bytes,
    write_count, write_duration, write_percent, write_signed_bytes,
};
pub use html::write_html;
pub use json::write_json;
pub use model::{
    AllocFigures, AllocTotals, ChannelRow, CpuFigures, CpuSummary, CpuThreadRow, DEFAULT_LIMIT,
    DEFAULT_WAIT_MIN_NS, Dropped, FunctionKind, FunctionRow, FutureRow, HeapPath, HeapProfile,
    HeapStack, HotPath, KernelTime, LockRow, Report, ReportMode, ReportOptions, SCHEMA, Segment,
    StreamRow, ThreadRow, WaitRow,
};
pub use percentiles::{Percentiles, parse_percentiles, percentile_label};
pub use prometheus::write_prometheus;
pub use table::write_table;
pub use tree::{FrameNode, FrameTree};
