//! The report model: what a session measured, in the shape every writer
//! reads.
//!
//! A [`Report`] is built once from a
//! [`RawSnapshot`](perflens_format::snapshot::RawSnapshot) (see `build.rs`)
//! and is then plain data. Its serde form *is* the JSON report
//! (`perflens.report/1`, documented in `docs/report-schema.md`): the
//! terminal table can be drawn again from a report read back from JSON,
//! because it reads nothing that the JSON does not hold, except the row
//! limit, which is a display setting.
//!
//! Units: every duration is an integer number of nanoseconds, every size
//! an integer number of bytes and every count an integer. In count mode no
//! clock was read, so every duration is 0 and [`Report::mode`] says why.
//!
//! Allocation fields (`alloc_*`, `free_*`, `live_bytes`, ...; on function
//! rows and hot paths, the [`AllocFigures`] group) are `Some` exactly when
//! the counting allocator was installed ([`Report::alloc`] is `Some`);
//! otherwise they are `None` and left out of the JSON, so reports of
//! programs that do not count allocations are unchanged.
//!
//! CPU fields ([`CpuFigures`]: `cpu_samples`, `cpu_ns`, `cpu_incl_ns`; and
//! [`Report::cpu`]) work the same way: [`Report::add_cpu`] adds them when
//! a CPU sampler ran; the row and path figures are `Some` on every
//! function row and hot path exactly when sampling was available
//! ([`CpuSummary::is_available`]), and are left out of the JSON otherwise.

use serde::{Deserialize, Serialize};

use crate::percentiles::Percentiles;

mod alloc;
mod cpu;
mod flow;
mod heap;
mod waits;

pub use alloc::{AllocFigures, AllocTotals};
pub use cpu::{CpuFigures, CpuSummary, CpuThreadRow, KernelTime};
pub use flow::{ChannelRow, FutureRow, LockRow, StreamRow};
pub use heap::{HeapPath, HeapProfile, HeapStack};
pub use waits::WaitRow;

pub use crate::schema::SCHEMA;

/// Rows per terminal table when [`ReportOptions::limit`] is not changed.
pub const DEFAULT_LIMIT: usize = 20;

/// How a report is built and drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Latency percentiles to report, each in `(0, 100]` (default 50, 95,
    /// 99). Values outside that range or NaN are ignored; the rest are
    /// sorted and deduplicated. The JSON always carries p50, p95 and p99
    /// as well, whatever is configured here.
    pub percentiles: Vec<f64>,
    /// Rows per terminal table (`None`: all). The JSON report always
    /// holds every row.
    pub limit: Option<usize>,
    /// Build the hot paths and allocation paths (default). `false` leaves
    /// both lists empty: a live view that does not show them saves most
    /// of the cost of a report of a large session.
    pub hot_paths: bool,
    /// Build the function rows (default). `false` leaves them empty: a
    /// live view showing the hot paths' tree or the threads does not
    /// need them.
    pub functions: bool,
    /// Await sites are listed in [`Report::waits`] when they waited at
    /// least this long in total, in ns (default [`DEFAULT_WAIT_MIN_NS`],
    /// `PERFLENS_WAIT_MIN`; 0 lists every site that ran). Not applied in
    /// count mode, where no wait was measured.
    pub wait_min_ns: u64,
}

/// The default of [`ReportOptions::wait_min_ns`]: 1 ms.
pub const DEFAULT_WAIT_MIN_NS: u64 = 1_000_000;

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            percentiles: vec![50.0, 95.0, 99.0],
            limit: Some(DEFAULT_LIMIT),
            hot_paths: true,
            functions: true,
            wait_min_ns: DEFAULT_WAIT_MIN_NS,
        }
    }
}

/// Timing mode of the session, as written in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportMode {
    /// Every call was timed.
    Timed,
    /// Calls were counted; no clock was read and every duration is 0.
    Count,
    /// One call in `sample_every` was timed; durations are estimates.
    Sampled,
}

/// Whether a function row is a plain function or a future.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    /// A synchronous function or block.
    Sync,
    /// A future: total is wall time from creation to `Ready`.
    Async,
}

/// A whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Timing mode.
    pub mode: ReportMode,
    /// One call in this many was timed: 1 when timed, N when sampled, 0 in
    /// count mode (no call was timed).
    pub sample_every: u32,
    /// Sampled mode: every call of a calling context was timed until it
    /// had been called this many times, and then one in `sample_every`
    /// (0 otherwise, and in reports written before this field existed).
    #[serde(default)]
    pub sample_warmup: u32,
    /// Clock source name (`"tsc"` or `"instant"`).
    pub clock: String,
    /// Wall time of the session so far, in ns.
    pub elapsed_ns: u64,
    /// True when the snapshot was taken at the end of the session.
    pub finished: bool,
    /// The configured percentiles, ascending, each in `(0, 100]`.
    pub percentiles: Vec<f64>,
    /// Flat rows, one per function name, by total time descending.
    pub functions: Vec<FunctionRow>,
    /// Hot paths: one chain of frames from a top-level function to every
    /// calling context that ran and is a leaf or spent time itself
    /// (`self_ns > 0`; count mode: every one that ran), so that a function
    /// doing its work itself while calling measured children ends a path
    /// of its own. By the last frame's exclusive time (`self_ns`)
    /// descending, then calls, frames and id; count mode: by calls (see
    /// [`Report::paths_by_time_spent`], which also orders reports read
    /// from JSON written when the order was the leaf's inclusive time and
    /// only leaves ended a path).
    pub paths: Vec<HotPath>,
    /// Allocation paths: every chain whose last frame ran and allocated
    /// bytes itself (its `alloc_bytes`, [`AllocFigures::bytes`]), leaf or
    /// interior, by those bytes descending. `Some` exactly when
    /// allocations were counted; a report read from JSON written before
    /// this field existed has `None` (the table then falls back to
    /// `paths`). These paths carry no CPU figures (their `cpu` is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_paths: Option<Vec<HotPath>>,
    /// Await sites (`expr.await` inside a measured future) that waited at
    /// least [`Report::wait_min_ns`] in total, by `wait_ns` descending
    /// (count mode: every site that ran, by `count`). Empty, and left out
    /// of the JSON, when the program has no await site that ran or none
    /// waited that long, so reports of sync programs are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<WaitRow>,
    /// The threshold [`Report::waits`] was filtered with, in ns
    /// ([`ReportOptions::wait_min_ns`]): present when some await site ran
    /// (and the mode measured time), absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_min_ns: Option<u64>,
    /// Channels (`perflens::channel!`, or a probe of kind channel), one
    /// row per site (its label, or `file:line:col`), by messages sent
    /// descending. Empty, and left out of the JSON, when no channel was
    /// made or used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelRow>,
    /// Locks (`perflens::sync`), one row per site (its label, or the
    /// place its constructor was called), by total wait descending, then
    /// acquisitions. Empty, and left out of the JSON, when no measured
    /// lock was acquired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<LockRow>,
    /// Streams (`perflens::stream!`), one row per site, by items
    /// descending. Empty, and left out of the JSON, when none was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamRow>,
    /// Futures (`perflens::future!`), one row per site, by wall time
    /// descending. Empty, and left out of the JSON, when none was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub futures: Vec<FutureRow>,
    /// Threads in registration order.
    pub threads: Vec<ThreadRow>,
    /// Calls and frames that could not be recorded in full.
    pub dropped: Dropped,
    /// Maximum number of distinct paths (process-wide).
    pub path_capacity: u32,
    /// Allocation totals of the session, `None` when the counting
    /// allocator was not installed (then every other allocation field of
    /// the report is `None` too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<AllocTotals>,
    /// The sampled heap profile (feature `heap`), `None` when the heap
    /// was not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap: Option<HeapProfile>,
    /// CPU sampling summary, `None` unless [`Report::add_cpu`] was called.
    /// When sampling was unavailable it says why
    /// ([`CpuSummary::unavailable_reason`]) and the CPU figures of rows and
    /// paths ([`FunctionRow::cpu`], [`HotPath::cpu`]) stay `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuSummary>,
    /// Rows per terminal table (`None`: all). A display setting: it is not
    /// written to JSON, and a report read from JSON gets the default.
    #[serde(skip, default = "default_limit")]
    pub limit: Option<usize>,
}

fn default_limit() -> Option<usize> {
    Some(DEFAULT_LIMIT)
}

/// One flat row: every node of every thread whose callsite has this name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    /// Row name (`module::function`, `module::Type::method` or a label).
    pub name: String,
    /// Sync or async (async if any callsite of this name is async).
    pub kind: FunctionKind,
    /// Completed calls, counting every frame of a recursion.
    pub calls: u64,
    /// Calls whose duration was measured (all of them when timed).
    pub timed_calls: u64,
    /// Inclusive time of the outermost frames only, so recursion is not
    /// counted twice. Estimated from timed calls when sampled. Async:
    /// wall time of the futures, including those dropped before
    /// completion (creation to drop).
    pub total_ns: u64,
    /// Exclusive time summed over every frame.
    pub self_ns: u64,
    /// Mean inclusive duration of one call: the mean of the distribution
    /// the percentiles describe (equals `total_ns / calls` unless the
    /// function recurses).
    pub avg_ns: u64,
    /// Median inclusive duration of one call.
    pub p50_ns: u64,
    /// 95th percentile of the inclusive duration.
    pub p95_ns: u64,
    /// 99th percentile of the inclusive duration.
    pub p99_ns: u64,
    /// The configured percentiles of the inclusive duration, by label.
    pub percentiles: Percentiles,
    /// Async only: time spent inside `poll`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_ns: Option<u64>,
    /// Async only: `total_ns - busy_ns` (saturating), time spent waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ns: Option<u64>,
    /// Async only: number of polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polls: Option<u64>,
    /// Async only: futures dropped before completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<u64>,
    /// True when the durations were scaled up from a sample of the calls.
    pub sampled: bool,
    /// Recursive functions only: the deepest recursion seen (frames of
    /// this function on one stack at once), at least 2. Its nested calls
    /// count in `calls`, `self_ns` and the percentiles; `total_ns` holds
    /// the outermost frames only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// Allocation figures (`alloc_*` and `free_bytes` in the JSON, at
    /// this place in the row): `None` when allocations were not counted.
    #[serde(flatten, deserialize_with = "crate::json::all_or_none::deserialize")]
    pub alloc: Option<AllocFigures>,
    /// CPU figures (`cpu_*` in the JSON, at this place in the row): `None`
    /// unless CPU samples were added; all 0 for a function that was never
    /// sampled.
    #[serde(flatten, deserialize_with = "crate::json::all_or_none::deserialize")]
    pub cpu: Option<CpuFigures>,
}

impl FunctionRow {
    /// True for futures.
    pub fn is_async(&self) -> bool {
        self.kind == FunctionKind::Async
    }

    /// `total_ns` as a percentage of `elapsed_ns` (`None` when elapsed is
    /// 0). Can exceed 100 when the function runs on several threads.
    pub fn percent_of(&self, elapsed_ns: u64) -> Option<f64> {
        (elapsed_ns > 0).then(|| self.total_ns as f64 * 100.0 / elapsed_ns as f64)
    }

    /// The row's share of the session, as the table's `% Total` shows it:
    /// `total_ns` of a sync function, `busy_ns` (time inside `poll`) of
    /// an async one, as a percentage of `elapsed_ns`. An async row's wall
    /// time is no share of anything: futures alive at the same time (a
    /// thousand requests waiting on a socket) add up to far more than
    /// the session. Its busy time is work done on some thread, like a
    /// sync row's time: on one thread it cannot exceed 100%.
    pub fn share_of(&self, elapsed_ns: u64) -> Option<f64> {
        let time = if self.is_async() {
            self.busy_ns.unwrap_or(0)
        } else {
            self.total_ns
        };
        (elapsed_ns > 0).then(|| time as f64 * 100.0 / elapsed_ns as f64)
    }

    /// True when the row has latency figures: some completed call was
    /// timed. A future that was always cancelled, or a sampled row none of
    /// whose calls was timed, has none: its `avg_ns` and `p*_ns` are 0
    /// and mean nothing, and its `percentiles` are empty (count mode keeps
    /// them, all 0, as every duration).
    pub fn has_latency(&self) -> bool {
        self.timed_calls > 0
    }

    /// `alloc_incl_bytes` as a percentage of the session's allocated
    /// bytes (`None` when allocations were not counted or `total_bytes`
    /// is 0). Inclusive, so the rows of a call chain add up to more than
    /// 100.
    pub fn alloc_percent_of(&self, total_bytes: u64) -> Option<f64> {
        percent_of(self.alloc?.incl_bytes, total_bytes)
    }

    /// `cpu_incl_ns` as a percentage of the session's sampled CPU time
    /// (`None` without CPU samples or when `total_cpu_ns` is 0).
    /// Inclusive, so the rows of a call chain add up to more than 100.
    pub fn cpu_percent_of(&self, total_cpu_ns: u64) -> Option<f64> {
        percent_of(self.cpu?.incl_ns, total_cpu_ns)
    }

    /// `cpu_ns` (self) as a percentage of the session's sampled CPU time:
    /// the rows add up to at most 100.
    pub fn cpu_self_percent_of(&self, total_cpu_ns: u64) -> Option<f64> {
        percent_of(self.cpu?.ns, total_cpu_ns)
    }
}

fn percent_of(part: u64, total: u64) -> Option<f64> {
    (total > 0).then(|| part as f64 * 100.0 / total as f64)
}

/// A channel row's capacity as read from a report that lacks
/// `capacity_known` (written before it existed): known.
fn known() -> bool {
    true
}

/// One hot path: a chain of frames from a top-level function to a calling
/// context that ran, leaf or interior (see [`Report::paths`]; in
/// [`Report::alloc_paths`], to one that allocated bytes itself). Its figures are those of the chain's
/// last frame; the inclusive ones cover that frame's whole subtree of the
/// calling-context tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotPath {
    /// Stable path id (same path, same id, in every run and on every
    /// machine). Written to JSON as 16 lowercase hex digits.
    #[serde(with = "crate::json::hex_id")]
    pub id: u64,
    /// Row names, outermost first.
    pub frames: Vec<String>,
    /// Completed calls of the last frame.
    pub calls: u64,
    /// Inclusive time of the last frame (its measured callees included).
    pub total_ns: u64,
    /// Exclusive time of the last frame: what [`Report::paths`] are
    /// ranked by.
    pub self_ns: u64,
    /// One entry per frame, outermost first.
    pub segments: Vec<Segment>,
    /// Allocation figures of the last frame (`alloc_*` and `free_bytes`
    /// in the JSON, at this place in the path): `None` when allocations
    /// were not counted.
    #[serde(flatten, deserialize_with = "crate::json::all_or_none::deserialize")]
    pub alloc: Option<AllocFigures>,
    /// CPU figures of the last frame (`cpu_*` in the JSON, at this place
    /// in the path): `None` unless CPU samples were added.
    #[serde(flatten, deserialize_with = "crate::json::all_or_none::deserialize")]
    pub cpu: Option<CpuFigures>,
}

impl HotPath {
    /// The order of paths that rank the same: more calls first, then by
    /// frames and id, so that every ordering is total and stable.
    pub(crate) fn tie_break(&self, other: &HotPath) -> std::cmp::Ordering {
        (other.calls.cmp(&self.calls))
            .then(self.frames.cmp(&other.frames))
            .then(self.id.cmp(&other.id))
    }

    /// The allocation paths' order: by the last frame's own bytes, then
    /// by the bytes allocated below it.
    pub(crate) fn by_alloc(&self, other: &HotPath) -> std::cmp::Ordering {
        let figures = |p: &HotPath| p.alloc.map(|a| (a.bytes, a.incl_bytes));
        (figures(other).cmp(&figures(self))).then(self.tie_break(other))
    }

    /// `alloc_bytes` (what the last frame allocated itself) as a
    /// percentage of the session's allocated bytes (`None` when
    /// allocations were not counted or `total_bytes` is 0). Exclusive, so
    /// the allocation paths' shares add up to at most 100.
    pub fn alloc_self_percent_of(&self, total_bytes: u64) -> Option<f64> {
        percent_of(self.alloc?.bytes, total_bytes)
    }

    /// `alloc_incl_bytes` as a percentage of the session's allocated bytes
    /// (`None` when allocations were not counted or `total_bytes` is 0).
    pub fn alloc_percent_of(&self, total_bytes: u64) -> Option<f64> {
        percent_of(self.alloc?.incl_bytes, total_bytes)
    }

    /// `cpu_incl_ns` as a percentage of the session's sampled CPU time
    /// (`None` without CPU samples or when `total_cpu_ns` is 0).
    pub fn cpu_percent_of(&self, total_cpu_ns: u64) -> Option<f64> {
        percent_of(self.cpu?.incl_ns, total_cpu_ns)
    }
}

/// One frame of a hot path: the node of that prefix of the chain, merged
/// across threads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Row name of the frame.
    pub name: String,
    /// Completed calls of this node.
    pub calls: u64,
    /// Inclusive time of this node.
    pub total_ns: u64,
    /// Exclusive time of this node.
    pub self_ns: u64,
    /// Median exclusive duration of one call of this node.
    pub self_p50_ns: u64,
    /// 99th percentile of the exclusive duration of one call.
    pub self_p99_ns: u64,
    /// When the frame's function recursed here: the deepest recursion
    /// seen. Nested calls are folded into this node (in `calls` and
    /// `self_ns`; `total_ns` counts the outermost frames only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// Bytes allocated while this node was innermost (exclusive). `None`
    /// when allocations were not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_bytes: Option<u64>,
    /// Bytes allocated by this node's subtree (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_incl_bytes: Option<u64>,
}

/// One thread's tree, summarized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    /// Registration order, starting at 0.
    pub index: u32,
    /// OS thread id, 0 where unknown.
    pub tid: u64,
    /// `std::thread` name, if any.
    pub name: Option<String>,
    /// The thread had exited when the snapshot was taken.
    pub exited: bool,
    /// Nodes in the thread's tree.
    pub nodes: u64,
    /// Maximum nodes the thread's tree can hold.
    pub node_capacity: u32,
    /// Completed calls recorded in the thread's tree (overflow included).
    pub calls: u64,
    /// Calls counted under the overflow node because the tree was full.
    pub overflow_calls: u64,
    /// Calls deeper than the shadow stack, not recorded.
    pub dropped_frames: u64,
    /// Bytes the thread allocated, summed over its nodes (the root node's
    /// bytes included). `None` when allocations were not counted, as for
    /// every allocation field of the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_bytes: Option<u64>,
    /// Allocations the thread made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_count: Option<u64>,
    /// Bytes the thread freed (whoever allocated them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
    /// Frees the thread made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_count: Option<u64>,
    /// Bytes allocated minus bytes freed by this thread during the session;
    /// negative when it freed memory that other threads allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_bytes: Option<i64>,
    /// Highest `live_bytes` of the thread during the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_live_bytes: Option<u64>,
    /// Bytes the thread allocated outside any measured function (its root
    /// node); included in `alloc_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unattributed_alloc_bytes: Option<u64>,
}

/// What could not be recorded in full, summed over threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// Calls counted under the overflow node because a thread's tree was
    /// full (raise `PERFLENS_NODES`).
    pub overflow_calls: u64,
    /// Calls counted under the overflow node because the path table was
    /// full (raise `PERFLENS_PATHS`).
    pub overflow_paths: u64,
    /// Calls deeper than the shadow stack, not recorded (raise
    /// `PERFLENS_STACK_DEPTH`).
    pub dropped_frames: u64,
    /// Calls made on threads that could get no memory for their call
    /// tree (the address space was exhausted), not recorded.
    #[serde(default)]
    pub unrecorded_calls: u64,
}

impl Dropped {
    /// True when nothing was lost.
    pub fn is_empty(&self) -> bool {
        self.overflow_calls == 0
            && self.overflow_paths == 0
            && self.dropped_frames == 0
            && self.unrecorded_calls == 0
    }
}

impl Report {
    /// True when durations were measured (not count mode).
    pub fn has_timing(&self) -> bool {
        self.mode != ReportMode::Count
    }

    /// The function row with this name.
    pub fn function(&self, name: &str) -> Option<&FunctionRow> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The hot paths as the terminal ranks them: by the time threads spent
    /// in the last frame itself (`self_ns`: exclusive time, for a future
    /// the time inside `poll` less its measured callees), at any depth,
    /// not by its wall time, so a future that only waits (`select!`
    /// creating and cancelling it on every loop) does not lead, and a
    /// function that does the work itself leads whatever it calls. Then
    /// by calls, frames and id; count mode: by calls. The order of
    /// [`Report::paths`] as built; a report read from older JSON (ordered
    /// by the leaf's inclusive time) is sorted here.
    pub fn paths_by_time_spent(&self) -> Vec<&HotPath> {
        let mut paths: Vec<&HotPath> = self.paths.iter().collect();
        let timing = self.has_timing();
        paths.sort_by(|a, b| {
            let by_time = if timing {
                b.self_ns.cmp(&a.self_ns)
            } else {
                std::cmp::Ordering::Equal
            };
            by_time.then(a.tie_break(b))
        });
        paths
    }

    /// The hot path with exactly these frames, outermost first.
    pub fn path(&self, frames: &[&str]) -> Option<&HotPath> {
        self.paths.iter().find(|p| {
            p.frames
                .iter()
                .map(String::as_str)
                .eq(frames.iter().copied())
        })
    }
}
