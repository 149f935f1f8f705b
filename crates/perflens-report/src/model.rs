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

/// The schema string written to and required in every JSON report.
pub const SCHEMA: &str = "perflens.report/1";

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

/// One channel site: every channel made at one `perflens::channel!` (or
/// reported through one probe), summed over its channels and threads.
///
/// Counts are exact. Durations are ns; latency and waits are measured in
/// timed and sampled modes alike (never scaled), and are 0 in count
/// mode or with latency off (`PERFLENS_FLOW_LATENCY=0`, `latency =
/// false`), where no clock is read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelRow {
    /// The site's label, or `file:line:col` of the macro.
    pub name: String,
    /// Channels made.
    pub created: u64,
    /// Senders alive now (made, clones included, minus dropped).
    pub senders: u64,
    /// Receivers alive now.
    pub receivers: u64,
    /// Messages sent (accepted by the channel).
    pub sent: u64,
    /// Messages received.
    pub received: u64,
    /// Messages still queued when their channel was dropped.
    pub dropped: u64,
    /// Messages queued now: `sent - received - dropped`.
    pub queued: u64,
    /// The most messages queued at once: the capacity once a send found
    /// the channel full, else the longest queue seen right after a send
    /// (each of a thread's first 256 sends at the site, then one in 64,
    /// where reading a channel's length costs a cache miss; every send
    /// for a probe that passes it).
    pub max_queued: u64,
    /// The largest capacity of a channel made here; `None` for unbounded
    /// channels, or when the capacity is not known (see
    /// [`ChannelRow::capacity_known`]).
    pub capacity: Option<u64>,
    /// Whether `capacity` is known: false when the report holds no
    /// channel made here (`created` is 0: the channels were made before
    /// the session started, or their creation could not be recorded),
    /// and then `capacity` is `None` without meaning unbounded. Reports
    /// written before this field existed lack it, and read as known.
    #[serde(default = "known")]
    pub capacity_known: bool,
    /// Time senders waited for room in a full channel, summed.
    pub send_wait_ns: u64,
    /// Time receivers waited for a message in an empty channel, summed.
    pub recv_wait_ns: u64,
    /// Messages whose send-to-receive latency was measured: each sending
    /// thread's first 256 at the site, then one in
    /// `PERFLENS_FLOW_LATENCY` (8 by default) at random; every message
    /// with `PERFLENS_FLOW_LATENCY=1`. The latency fields describe these.
    pub latency_count: u64,
    /// Their mean latency.
    pub latency_mean_ns: u64,
    /// Median send-to-receive latency.
    pub latency_p50_ns: u64,
    /// 99th percentile of the send-to-receive latency.
    pub latency_p99_ns: u64,
    /// The slowest message's latency (the histogram's resolution).
    pub latency_max_ns: u64,
}

/// One `perflens::future!` site: every future wrapped there, summed over
/// threads. Durations are ns, never scaled; 0 in count mode or with
/// `PERFLENS_FLOW_LATENCY=0`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FutureRow {
    /// The site's label, or `file:line:col` of the macro.
    pub name: String,
    /// Futures that completed (returned `Ready`).
    pub completed: u64,
    /// Futures dropped before they completed.
    pub cancelled: u64,
    /// Polls.
    pub polls: u64,
    /// Time inside their polls.
    pub busy_ns: u64,
    /// Their wall time (made to completed or dropped) less `busy_ns`: the
    /// time they spent waiting.
    pub wait_ns: u64,
    /// Their wall time, completed and cancelled ones.
    pub wall_ns: u64,
    /// Median wall time of a completed future.
    pub wall_p50_ns: u64,
    /// 99th percentile of the wall time of a completed future.
    pub wall_p99_ns: u64,
}

/// One `perflens::stream!` site: every stream wrapped there, summed over
/// threads. Durations are ns, never scaled; 0 in count mode or with
/// `PERFLENS_FLOW_LATENCY=0`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    /// The site's label, or `file:line:col` of the macro.
    pub name: String,
    /// Streams made.
    pub created: u64,
    /// Items they yielded.
    pub items: u64,
    /// Polls.
    pub polls: u64,
    /// Polls that returned `Pending`.
    pub pending_polls: u64,
    /// Streams that ended (returned `Ready(None)`).
    pub ended: u64,
    /// Streams dropped before they ended.
    pub dropped: u64,
    /// Streams whose time to the first item was measured.
    pub first_item_count: u64,
    /// Mean time from a stream's creation to its first item.
    pub first_item_mean_ns: u64,
    /// Intervals between two items of a stream that were measured.
    pub interval_count: u64,
    /// Their mean.
    pub interval_mean_ns: u64,
    /// Median interval between items.
    pub interval_p50_ns: u64,
    /// 99th percentile of the interval between items.
    pub interval_p99_ns: u64,
    /// The longest interval (to the histogram's resolution).
    pub interval_max_ns: u64,
}

/// One lock site: every measured lock of one label (or made at one
/// place, `perflens::sync`), summed over its locks and threads.
///
/// Counts are exact. Durations are ns, measured for every acquisition in
/// timed and sampled modes alike (never scaled); 0 in count mode or with
/// `PERFLENS_FLOW_LATENCY=0`, where no clock is read. An acquisition is
/// counted when its guard is dropped; a contended one when its first
/// attempt failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LockRow {
    /// The lock's label, or `file:line:col` of its constructor's call.
    pub name: String,
    /// Acquisitions (their guards dropped), read and write.
    pub acquisitions: u64,
    /// Shared (read) acquisitions among them.
    pub shared: u64,
    /// Acquisitions whose first, non-blocking attempt failed: they waited
    /// (a timed wait that gave up counts too).
    pub contended: u64,
    /// The most threads (or tasks) waiting for one lock at once.
    pub max_waiters: u64,
    /// Acquisitions whose hold time was measured.
    pub hold_count: u64,
    /// Their hold times (acquired to released), summed.
    pub hold_ns: u64,
    /// Their mean hold time.
    pub hold_mean_ns: u64,
    /// Median hold time.
    pub hold_p50_ns: u64,
    /// 99th percentile of the hold time.
    pub hold_p99_ns: u64,
    /// The longest hold (the histogram's resolution).
    pub hold_max_ns: u64,
    /// Contended acquisitions whose wait was measured.
    pub wait_count: u64,
    /// Their waits (first attempt to acquired), summed.
    pub wait_ns: u64,
    /// Their mean wait.
    pub wait_mean_ns: u64,
    /// Median wait of a contended acquisition.
    pub wait_p50_ns: u64,
    /// 99th percentile of the wait of a contended acquisition.
    pub wait_p99_ns: u64,
    /// The longest wait.
    pub wait_max_ns: u64,
}

/// One await site: every await at one `expr.await` in the source, over
/// every calling context and thread.
///
/// Its figures come straight from the site's nodes and are never scaled:
/// waits are timed in sampled mode too. In count mode every duration is
/// 0.
///
/// # Completed and cancelled awaits
///
/// An await dropped while suspended (its future cancelled, as a
/// `select!` does with the branches that lost) is counted apart from the
/// completed ones, with its wait so far: the [`completed`](Self::completed)
/// awaits waited [`completed_wait_ns`](Self::completed_wait_ns) in all
/// and `p50_ns`/`p99_ns` are of one of them; the `cancelled` ones waited
/// `cancelled_wait_ns`. So every figure describes one set of awaits, and
/// a site whose awaits are mostly cancelled does not read as "58 s of
/// waiting, each wait 0 ns". The cancelled waits are kept out of the
/// percentiles rather than put in: a cancelled wait ended when something
/// else happened (the `select!` branch that won, a timeout), so its
/// length says how long the awaiting code went on without this await,
/// not how long the awaited thing took, and mixed in it would make the
/// percentiles of a `recv()` that loses every loop those of the loop's
/// period. `count` and `wait_ns` keep both (completed plus cancelled),
/// as the JSON has always had them; the table shows the two sets in
/// their own columns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitRow {
    /// The site's short name: the enclosing function's row name and the
    /// line (`app::handler:42`), with `:column` added when another site
    /// reads the same; `file:line` when no measured function encloses
    /// it.
    pub site: String,
    /// Row name of the measured function (or block) whose future awaits
    /// here; empty when none does.
    pub function: String,
    /// Source file of the `.await`, as `file!()` spells it.
    pub file: String,
    /// 1-based line of the `.await`.
    pub line: u32,
    /// 1-based column of the `.await`.
    pub column: u32,
    /// The awaited expression's text, shortened; empty when unknown.
    pub expr: String,
    /// Awaits: the completed ones plus those dropped while suspended
    /// (`cancelled`); see [`WaitRow::completed`].
    pub count: u64,
    /// Times an await here returned `Pending` (suspensions), summed.
    pub suspended: u64,
    /// Total time the awaits here waited: over every suspension, from
    /// the `Pending` return to the re-poll (to the drop for a cancelled
    /// await), cancelled awaits included (outermost calling contexts
    /// only, so a recursion counts once); see
    /// [`WaitRow::completed_wait_ns`].
    pub wait_ns: u64,
    /// Median wait of one completed await (an await that never suspended
    /// waited 0); `0` when none completed.
    pub p50_ns: u64,
    /// 99th percentile of the wait of one completed await; `0` when none
    /// completed.
    pub p99_ns: u64,
    /// Measured time run inside the awaited futures' polls (measured
    /// functions they called or polled). In sampled mode, the time of
    /// the children's timed calls only (not scaled: see
    /// `measured_children` for what ran).
    pub measured_ns: u64,
    /// Row names of the measured functions that ran directly inside the
    /// awaits here, by their `total_ns` descending.
    pub measured_children: Vec<String>,
    /// True when the awaits here ran no measured code at all: what they
    /// waited on is not measured (measure the awaited function).
    pub uninstrumented: bool,
    /// Awaits dropped while suspended (in `count`).
    pub cancelled: u64,
    /// What the cancelled awaits had waited when they were dropped (in
    /// `wait_ns`), outermost calling contexts only. Absent from reports
    /// written before it (read as 0).
    #[serde(default)]
    pub cancelled_wait_ns: u64,
}

impl WaitRow {
    /// The awaits here that completed: the ones `p50_ns`/`p99_ns`
    /// describe (`count - cancelled`).
    pub fn completed(&self) -> u64 {
        self.count.saturating_sub(self.cancelled)
    }

    /// What the completed awaits waited in all (`wait_ns -
    /// cancelled_wait_ns`).
    pub fn completed_wait_ns(&self) -> u64 {
        self.wait_ns.saturating_sub(self.cancelled_wait_ns)
    }
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

/// The allocation figures of a function row ([`FunctionRow::alloc`]) or
/// of a hot path's last frame ([`HotPath::alloc`]). Either every figure
/// is there or none is: they are all set when the counting allocator was
/// installed.
///
/// In the JSON they are fields of the row or path itself, each named as
/// here with `alloc_` in front (`free_bytes` as is), and are all left out
/// when allocations were not counted. A row or path read from JSON
/// without any of them has no allocation figures (`None`); one with only
/// some of them is an invalid report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocFigures {
    /// Bytes allocated while a frame of this function (a path: its last
    /// frame) was the innermost measured frame (exclusive), summed over every
    /// frame.
    #[serde(rename = "alloc_bytes")]
    pub bytes: u64,
    /// Allocations made while this function (its last frame) was innermost
    /// (exclusive).
    #[serde(rename = "alloc_count")]
    pub count: u64,
    /// Bytes freed while this function (its last frame) was innermost
    /// (exclusive), whoever allocated them.
    pub free_bytes: u64,
    /// Bytes allocated by this function and everything it called
    /// (inclusive), counting a recursion's subtree once (outermost frames
    /// only, like `total_ns`). A path: bytes allocated in its last frame's
    /// subtree of the calling-context tree (the frame and every callee
    /// below it, completed or not).
    #[serde(rename = "alloc_incl_bytes")]
    pub incl_bytes: u64,
    /// Allocations made by this function and everything it called
    /// (inclusive, outermost frames only). A path: in its last frame's
    /// subtree.
    #[serde(rename = "alloc_incl_count")]
    pub incl_count: u64,
    /// Mean inclusive bytes allocated by one call (of the last frame): the mean
    /// of the distribution `p95_bytes` describes (equals
    /// `incl_bytes / calls` unless the function recurses).
    #[serde(rename = "alloc_avg_bytes")]
    pub avg_bytes: u64,
    /// 95th percentile of the inclusive bytes allocated by one call (of
    /// the last frame).
    #[serde(rename = "alloc_p95_bytes")]
    pub p95_bytes: u64,
}

/// The CPU figures of a function row ([`FunctionRow::cpu`]) or of a hot
/// path's last frame ([`HotPath::cpu`]). Either every figure is there or none
/// is: [`Report::add_cpu`] sets them all on every row and hot path when
/// sampling was available, and none otherwise.
///
/// In the JSON they are fields of the row or path itself, each named as
/// here with `cpu_` in front, and are all left out without CPU samples. A
/// row or path read from JSON without any of them has no CPU figures
/// (`None`); one with only some of them is an invalid report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// CPU samples taken while a frame of this function (a path: its last
    /// frame) was the innermost measured frame of the interrupted thread
    /// (exclusive), summed over every frame. 0 for a function that was
    /// never sampled.
    #[serde(rename = "cpu_samples")]
    pub samples: u64,
    /// CPU time those samples stand for (exclusive), in ns.
    #[serde(rename = "cpu_ns")]
    pub ns: u64,
    /// CPU time of every sample taken while this function was anywhere on
    /// the interrupted thread's stack of measured frames (inclusive). Each
    /// sample counts once, however many frames of the function (recursion)
    /// were on the stack. A path: the samples taken in its last frame's
    /// subtree of the calling-context tree (the frame and every callee
    /// below it, completed or not).
    #[serde(rename = "cpu_incl_ns")]
    pub incl_ns: u64,
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

/// Allocation totals of a session, over all threads: everything the
/// counting allocator saw, inside measured functions or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocTotals {
    /// Bytes allocated (sum of every thread's `alloc_bytes`).
    pub total_bytes: u64,
    /// Number of allocations (sum of every thread's `alloc_count`).
    pub total_count: u64,
    /// Bytes freed (sum of every thread's `free_bytes`).
    pub free_bytes: u64,
    /// Bytes allocated minus bytes freed during the session, process-wide.
    pub live_bytes: i64,
    /// Highest process-wide live byte count seen during the session. Each
    /// thread publishes its live bytes in steps of
    /// `peak_resolution_bytes`, so this may be low by up to that much per
    /// allocating thread; it is never below the largest per-thread peak.
    pub peak_live_bytes: u64,
    /// Publication step of the per-thread counters behind
    /// `peak_live_bytes`.
    pub peak_resolution_bytes: u64,
}

/// The CPU sampling summary of a session: what the sampler saw, inside
/// measured functions or not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// Sampling frequency per thread, in samples per second of CPU time.
    pub frequency_hz: u32,
    /// Where samples came from: `"perf_event"`, `"timer"` (or another
    /// sampler-defined name), or `"unavailable: <reason>"` when no sampling
    /// took place; then every count is 0 and `threads` is empty.
    pub source: String,
    /// Samples taken, inside measured functions or not.
    pub samples: u64,
    /// CPU time the samples stand for, in ns, inside measured functions or
    /// not.
    pub cpu_ns: u64,
    /// Samples taken while no measured function was running on the
    /// interrupted thread (included in `samples`).
    pub outside_samples: u64,
    /// CPU time of those samples (included in `cpu_ns`).
    pub outside_cpu_ns: u64,
    /// Samples lost because a buffer was full, over all threads (not in
    /// `samples`).
    pub dropped: u64,
    /// Per sampled thread, in the sampler's order.
    pub threads: Vec<CpuThreadRow>,
    /// Where the kernel time of the sampled threads went (`None`: the
    /// sampler did not say, as before this field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelTime>,
    /// CPU time of the threads whose samples excluded the kernel that no
    /// sample stands for, in ns: their kernel time, plus user time whose
    /// overflows the kernel merged or skipped. Not in `cpu_ns`, and in no
    /// row. Present when `kernel` is `not_attributed` or `partly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_unattributed_ns: Option<u64>,
}

/// Where the kernel time (system calls, page faults) of sampled threads
/// went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelTime {
    /// In the samples: each system call's time is on the function that
    /// made it (perf_event with the kernel included, or the timer source).
    Attributed,
    /// Left out of the samples (perf_event with the kernel excluded): the
    /// samples stand for user time only, and the rest is
    /// [`CpuSummary::kernel_unattributed_ns`].
    NotAttributed,
    /// Attributed on some threads, not on others.
    Partly,
}

impl CpuSummary {
    /// True when samples were taken (`source` does not start with
    /// `"unavailable"`).
    pub fn is_available(&self) -> bool {
        self.unavailable_reason().is_none()
    }

    /// Why sampling was unavailable: the text after `"unavailable:"` in
    /// `source`, trimmed (possibly empty); `None` when it was available.
    pub fn unavailable_reason(&self) -> Option<&str> {
        let rest = self.source.strip_prefix("unavailable")?;
        Some(rest.strip_prefix(':').unwrap_or(rest).trim())
    }

    /// `outside_cpu_ns` as a percentage of `cpu_ns` (`None` when `cpu_ns`
    /// is 0).
    pub fn outside_percent(&self) -> Option<f64> {
        percent_of(self.outside_cpu_ns, self.cpu_ns)
    }
}

/// One sampled thread, as the sampler reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuThreadRow {
    /// OS thread id.
    pub tid: u64,
    /// Thread name, if any.
    pub name: Option<String>,
    /// Samples taken on this thread.
    pub samples: u64,
    /// CPU time of this thread's samples, in ns.
    pub cpu_ns: u64,
    /// Samples of this thread lost because its buffer was full.
    pub dropped: u64,
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
