//! The tables of `perflens top`: which columns each one has, and the raw
//! values of its rows, read from one [`Report`].
//!
//! Nothing here knows about rates or the screen: [`rows`] turns a report
//! (and the hot paths' [`FrameTree`]) into [`RawRow`]s (counters as the report holds them), and the app
//! (`app.rs`) compares two of them to get rates, sorts, filters and
//! formats.

use perflens_report::{ChannelRow, FrameTree, FunctionRow, LockRow, Report};
use std::rc::Rc;

mod flow;
mod memory;

use flow::{channels, locks};
use memory::memory;

/// The eight tables: the Functions tab has three views, the Data flow
/// tab two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableId {
    /// Functions: calls and latency.
    Timing,
    /// Functions: bytes and allocations.
    Alloc,
    /// Functions: sampled CPU time.
    Cpu,
    /// The hot paths, as a tree of frames.
    Paths,
    /// Async functions: busy, wait, polls, cancelled.
    Async,
    /// Threads: CPU time and allocations, live or exited.
    Threads,
    /// Data flow: the channel sites (`perflens::channel!`, probes).
    Channels,
    /// Data flow: the measured lock sites (`perflens::sync`).
    Locks,
    /// Memory: bytes in use by path (feature `heap`).
    Memory,
}

impl TableId {
    /// Every table, in the order of their slots in the app's state.
    pub const ALL: [TableId; 9] = [
        TableId::Timing,
        TableId::Alloc,
        TableId::Cpu,
        TableId::Paths,
        TableId::Async,
        TableId::Threads,
        TableId::Channels,
        TableId::Locks,
        TableId::Memory,
    ];

    /// The table's slot (its index in [`TableId::ALL`]).
    pub fn slot(self) -> usize {
        self as usize
    }

    /// The table's columns; the first is always the name.
    pub fn columns(self) -> &'static [Column] {
        match self {
            TableId::Timing => TIMING,
            TableId::Alloc => ALLOC,
            TableId::Cpu => CPU,
            TableId::Paths => PATHS,
            TableId::Async => ASYNC,
            TableId::Threads => THREADS,
            TableId::Channels => CHANNELS,
            TableId::Locks => LOCKS,
            TableId::Memory => MEMORY,
        }
    }

    /// The column rows are sorted by until a key says otherwise.
    pub fn default_sort(self) -> usize {
        match self {
            TableId::Timing => 6,   // Total
            TableId::Alloc => 2,    // Alloc
            TableId::Cpu => 1,      // CPU self
            TableId::Paths => 2,    // Self
            TableId::Async => 2,    // Busy
            TableId::Threads => 0,  // Thread, in registration order
            TableId::Channels => 1, // Sent
            TableId::Locks => 4,    // Wait
            TableId::Memory => 1,   // In use (its growth, in rates)
        }
    }
}

/// How a column's values are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Text, as is.
    Text,
    /// A plain integer (an id): no separators.
    Id,
    /// A count with separators (`format_count`).
    Count,
    /// Nanoseconds (`format_duration`).
    Duration,
    /// Bytes (`format_bytes`).
    Bytes,
    /// Signed bytes (`format_signed_bytes`).
    SignedBytes,
    /// A percentage (`format_percent`).
    Percent,
}

/// What a column's value is, over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    /// A level (a percentile, a mean, live bytes): shown as the latest
    /// report has it, in both modes.
    Gauge,
    /// A total that only grows: the cumulative value, or its rate per
    /// second over the last interval.
    Counter,
    /// Time as a share of the wall time, in percent: of the session so
    /// far, or of the last interval.
    Share,
    /// A level that may fall (bytes in use): the latest value, or its
    /// change per second over the last interval (negative when it fell).
    Level,
}

/// One column of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Header text (a counter's gets `/s` in rate mode).
    pub title: &'static str,
    /// How its values are written.
    pub unit: Unit,
    /// What its values are over time.
    pub agg: Agg,
}

const fn col(title: &'static str, unit: Unit, agg: Agg) -> Column {
    Column { title, unit, agg }
}

use Agg::{Counter, Gauge, Level, Share};
use Unit::{Bytes, Count, Duration, Id, Percent, SignedBytes, Text};

const TIMING: &[Column] = &[
    col("Function", Text, Gauge),
    col("Calls", Count, Counter),
    col("Avg", Duration, Gauge),
    col("p50", Duration, Gauge),
    col("p95", Duration, Gauge),
    col("p99", Duration, Gauge),
    col("Total", Duration, Counter),
    col("Self", Duration, Counter),
    col("% Total", Percent, Share),
];

const ALLOC: &[Column] = &[
    col("Function", Text, Gauge),
    col("Calls", Count, Counter),
    col("Alloc", Bytes, Counter),
    col("Allocs", Count, Counter),
    col("Freed", Bytes, Counter),
    col("Alloc incl", Bytes, Counter),
    col("Avg/call", Bytes, Gauge),
    col("p95/call", Bytes, Gauge),
];

const CPU: &[Column] = &[
    col("Function", Text, Gauge),
    col("CPU self", Duration, Counter),
    col("CPU incl", Duration, Counter),
    col("Samples", Count, Counter),
    col("CPU %", Percent, Share),
    col("Calls", Count, Counter),
];

/// The Hot paths table's Self p50 and p99 columns.
pub const PATHS_SELF_PERCENTILES: [usize; 2] = [4, 5];

const PATHS: &[Column] = &[
    col("Frame", Text, Gauge),
    col("Calls", Count, Counter),
    col("Self", Duration, Counter),
    col("Total", Duration, Counter),
    col("Self p50", Duration, Gauge),
    col("Self p99", Duration, Gauge),
    col("Alloc", Bytes, Counter),
];

const ASYNC: &[Column] = &[
    col("Function", Text, Gauge),
    col("Calls", Count, Counter),
    col("Busy", Duration, Counter),
    col("Wait", Duration, Counter),
    col("Polls", Count, Counter),
    col("Cancelled", Count, Counter),
    col("Busy %", Percent, Share),
    col("wall p50", Duration, Gauge),
    col("wall p99", Duration, Gauge),
];

const THREADS: &[Column] = &[
    col("Thread", Text, Gauge),
    col("TID", Id, Gauge),
    col("State", Text, Gauge),
    col("Calls", Count, Counter),
    col("CPU", Duration, Counter),
    col("CPU %", Percent, Share),
    col("Samples", Count, Counter),
    col("Alloc", Bytes, Counter),
    col("Allocs", Count, Counter),
    col("Live", SignedBytes, Gauge),
    col("Peak live", Bytes, Gauge),
];

/// Bytes in use by path (feature `heap`): estimates from the sampled
/// allocations (In use, Objects; In use's rate is its growth, so that
/// growing paths come first), and what the path allocated (exact).
const MEMORY: &[Column] = &[
    col("Path", Text, Gauge),
    col("In use", SignedBytes, Level),
    col("Objects", Count, Gauge),
    col("Sampled", Count, Gauge),
    col("Allocated", Bytes, Counter),
    col("Allocs", Count, Counter),
];

/// The channel sites (one row per `perflens::channel!` site or probe):
/// traffic (counters), what is queued and who is alive (levels), waits
/// (counters: time per second in rates) and the send-to-receive latency.
const CHANNELS: &[Column] = &[
    col("Channel", Text, Gauge),
    col("Sent", Count, Counter),
    col("Received", Count, Counter),
    col("Queued", Count, Gauge),
    col("Max queued", Count, Gauge),
    col("Capacity", Count, Gauge),
    col("Dropped", Count, Counter),
    col("Send wait", Duration, Counter),
    col("Recv wait", Duration, Counter),
    col("Latency p50", Duration, Gauge),
    col("Latency p99", Duration, Gauge),
    col("Senders", Count, Gauge),
    col("Receivers", Count, Gauge),
    col("Made", Count, Counter),
];

/// The lock sites (one row per `perflens::sync` label or place):
/// acquisitions and waits (counters), the waits' and holds'
/// percentiles and the most waiters at once (levels).
const LOCKS: &[Column] = &[
    col("Lock", Text, Gauge),
    col("Acquired", Count, Counter),
    col("Contended", Count, Counter),
    col("Shared", Count, Counter),
    col("Wait", Duration, Counter),
    col("Wait p50", Duration, Gauge),
    col("Wait p99", Duration, Gauge),
    col("Hold", Duration, Counter),
    col("Hold p50", Duration, Gauge),
    col("Hold p99", Duration, Gauge),
    col("Hold max", Duration, Gauge),
    col("Max waiters", Count, Gauge),
];

/// One value as the report holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Raw {
    /// An unsigned number (count, ns, bytes).
    U(u64),
    /// A signed number (live bytes).
    I(i64),
    /// Text.
    T(String),
    /// The row's name (the first column's value, kept once in
    /// [`RawRow::name`]).
    Name,
    /// Not measured (allocations not counted, no CPU samples, no
    /// completed call): shown as `-`.
    Missing,
}

impl Raw {
    pub(super) fn opt(v: Option<u64>) -> Raw {
        v.map_or(Raw::Missing, Raw::U)
    }
}

/// A row's identity across reports: a hash of its function's name, of
/// its chain of frame names (a tree row), or its thread's index. Two
/// rows of one table with one key are one row to the app (for rates, the
/// selection and the collapsed nodes): with 64-bit keys over a few
/// thousand names, a collision is a one in 10^11 event, and would only
/// show one row's rate for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowKey(pub u64);

impl RowKey {
    /// The key of a chain of frame names (a function's name alone for a
    /// flat row).
    pub fn of(frames: &[&str]) -> RowKey {
        frames
            .iter()
            .fold(RowKey::ROOT, |parent, name| parent.child(name_hash(name)))
    }

    /// The key of a thread's row.
    pub fn thread(index: u32) -> RowKey {
        RowKey::ROOT.child(u64::from(index))
    }

    const ROOT: RowKey = RowKey(0x243f_6a88_85a3_08d3);

    /// The key of the frame with name hash `name` under this one.
    fn child(self, name: u64) -> RowKey {
        RowKey((self.0.rotate_left(23) ^ name).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

/// A name's hash, for [`RowKey`]s.
fn name_hash(name: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = KeyHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

/// One row as the report holds it: values in the table's column order
/// (the first, the name, included).
#[derive(Clone, Debug, PartialEq)]
pub struct RawRow {
    /// Identity across reports.
    pub key: RowKey,
    /// The name shown and filtered on: a function's, a tree node's frame
    /// alone, a thread's label.
    pub name: Rc<str>,
    /// Tree rows: the parent's index in the same list of rows (`None`
    /// for a root or a flat row).
    pub parent: Option<usize>,
    /// One per column.
    pub values: Vec<Raw>,
}

/// The rows of one table, from one picture, in the report's order (a
/// tree's parents before their children). The hot paths' tree is the
/// picture's own when it has one ([`FrameTree::from_snapshot`], from a
/// live session), else made from the report's paths. Made in the
/// allocations of `spare` (rows no longer needed) where it can: a large
/// tree's rows are ten thousand small vectors.
pub fn rows(
    table: TableId,
    report: &Report,
    tree: Option<&FrameTree>,
    spare: Vec<RawRow>,
) -> Vec<RawRow> {
    match table {
        TableId::Timing => functions(report, |f| {
            let latency = |v: u64| {
                if f.has_latency() {
                    Raw::U(v)
                } else {
                    Raw::Missing
                }
            };
            let share = if f.is_async() {
                f.busy_ns.unwrap_or(0)
            } else {
                f.total_ns
            };
            vec![
                Raw::U(f.calls),
                latency(f.avg_ns),
                latency(f.p50_ns),
                latency(f.p95_ns),
                latency(f.p99_ns),
                Raw::U(f.total_ns),
                Raw::U(f.self_ns),
                Raw::U(share),
            ]
        }),
        TableId::Alloc => functions(report, |f| {
            vec![
                Raw::U(f.calls),
                Raw::opt(f.alloc.map(|a| a.bytes)),
                Raw::opt(f.alloc.map(|a| a.count)),
                Raw::opt(f.alloc.map(|a| a.free_bytes)),
                Raw::opt(f.alloc.map(|a| a.incl_bytes)),
                Raw::opt(f.alloc.map(|a| a.avg_bytes)),
                Raw::opt(f.alloc.map(|a| a.p95_bytes)),
            ]
        }),
        TableId::Cpu => functions(report, |f| {
            vec![
                Raw::opt(f.cpu.map(|c| c.ns)),
                Raw::opt(f.cpu.map(|c| c.incl_ns)),
                Raw::opt(f.cpu.map(|c| c.samples)),
                Raw::opt(f.cpu.map(|c| c.ns)),
                Raw::U(f.calls),
            ]
        }),
        TableId::Async => {
            let mut rows = functions(report, |f| {
                let latency = |v: u64| {
                    if f.has_latency() {
                        Raw::U(v)
                    } else {
                        Raw::Missing
                    }
                };
                vec![
                    Raw::U(f.calls),
                    Raw::opt(f.busy_ns),
                    Raw::opt(f.wait_ns),
                    Raw::opt(f.polls),
                    Raw::opt(f.cancelled),
                    Raw::opt(f.busy_ns),
                    latency(f.p50_ns),
                    latency(f.p99_ns),
                ]
            });
            rows.retain(|r| report.function(&r.name).is_some_and(FunctionRow::is_async));
            rows
        }
        TableId::Paths => match tree {
            Some(tree) => paths(tree, spare),
            None => paths(&FrameTree::from_report(report), spare),
        },
        TableId::Threads => threads(report),
        TableId::Channels => channels(report),
        TableId::Locks => locks(report),
        TableId::Memory => memory(report),
    }
}

/// A flat row named `name`, keyed by it.
fn named(name: &str, values: Vec<Raw>) -> RawRow {
    RawRow {
        key: RowKey::of(&[name]),
        name: Rc::from(name),
        parent: None,
        values,
    }
}

fn functions(report: &Report, values: impl Fn(&FunctionRow) -> Vec<Raw>) -> Vec<RawRow> {
    (report.functions.iter())
        .map(|f| {
            let mut v = vec![Raw::Name];
            v.extend(values(f));
            RawRow {
                key: RowKey::of(&[&f.name]),
                name: Rc::from(f.name.as_str()),
                parent: None,
                values: v,
            }
        })
        .collect()
}

/// The hot paths' frames as a tree: one row per node of the frame tree
/// (a distinct chain of frame names, merged across threads).
fn paths(tree: &FrameTree, spare: Vec<RawRow>) -> Vec<RawRow> {
    let names: Vec<(Rc<str>, u64)> = (tree.names.iter())
        .map(|n| (Rc::from(n.as_str()), name_hash(n)))
        .collect();
    let mut spare = spare.into_iter().map(|r| r.values);
    let mut rows: Vec<RawRow> = Vec::with_capacity(tree.nodes.len());
    for node in &tree.nodes {
        // Parents come before their children; a node whose parent is not
        // (a malformed tree) is a root.
        let parent = (node.parent.map(|p| p as usize)).filter(|&p| p < rows.len());
        let (name, hash) = names.get(node.name as usize).cloned().unwrap_or_default();
        let key = parent.map_or(RowKey::ROOT, |p| rows[p].key).child(hash);
        let mut values = spare.next().unwrap_or_default();
        values.clear();
        values.extend([
            Raw::Name,
            Raw::U(node.calls),
            Raw::U(node.self_ns),
            Raw::U(node.total_ns),
            Raw::opt(node.self_p50_ns),
            Raw::opt(node.self_p99_ns),
            Raw::opt(node.alloc_bytes),
        ]);
        rows.push(RawRow {
            key,
            name,
            parent,
            values,
        });
    }
    rows
}

/// A hasher for the rows' keys (names and frames, not chosen by an
/// adversary): FxHash's word-at-a-time mix, far cheaper than SipHash on
/// ten thousand keys a refresh.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u64(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        // The high bits (where a multiply mixes best) folded into the
        // low ones, which pick the bucket.
        self.0 ^ (self.0 >> 29)
    }
}

/// Maps keyed by names, hashed with [`KeyHasher`].
pub type KeyHash = std::hash::BuildHasherDefault<KeyHasher>;

fn threads(report: &Report) -> Vec<RawRow> {
    let cpu = report.cpu.as_ref().filter(|c| c.is_available());
    (report.threads.iter())
        .map(|t| {
            let sampled = cpu.and_then(|c| c.threads.iter().find(|s| s.tid == t.tid && t.tid != 0));
            let name = match &t.name {
                Some(n) => format!("#{} {n}", t.index),
                None => format!("#{}", t.index),
            };
            let cpu_ns = match (cpu, sampled) {
                (Some(_), Some(s)) => Raw::U(s.cpu_ns),
                (Some(_), None) => Raw::U(0),
                (None, _) => Raw::Missing,
            };
            let samples = match (cpu, sampled) {
                (Some(_), Some(s)) => Raw::U(s.samples),
                (Some(_), None) => Raw::U(0),
                (None, _) => Raw::Missing,
            };
            RawRow {
                key: RowKey::thread(t.index),
                name: Rc::from(name),
                parent: None,
                values: vec![
                    Raw::Name,
                    if t.tid == 0 {
                        Raw::Missing
                    } else {
                        Raw::U(t.tid)
                    },
                    Raw::T(if t.exited { "exited" } else { "live" }.into()),
                    Raw::U(t.calls),
                    cpu_ns.clone(),
                    cpu_ns,
                    samples,
                    Raw::opt(t.alloc_bytes),
                    Raw::opt(t.alloc_count),
                    t.live_bytes.map_or(Raw::Missing, Raw::I),
                    Raw::opt(t.peak_live_bytes),
                ],
            }
        })
        .collect()
}
