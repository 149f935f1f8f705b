//! A/B comparison of two reports, for a pull request: per function, the
//! new figures and their change, as a markdown table, and the rows that
//! regressed past thresholds (`perflens diff BASE.json NEW.json
//! --fail-on 'p99>+10%,alloc_bytes>+5%'`).
//!
//! A change is only ever flagged when it is larger than what the two
//! reports can tell apart:
//! - percentiles come from log-linear histograms whose buckets are 1/32
//!   of their value wide (5 significant bits), and a percentile is read
//!   as its bucket's midpoint: two readings one bucket apart may come
//!   from the same time, so a percentile change of at most 1/32 of the
//!   larger value (and at least 1 ns) is within resolution;
//! - total and self time are sums of clock differences, each read to
//!   within a tick (at most 1 ns): a change of at most one ns per call is
//!   within resolution;
//! - CPU time is a count of samples, each standing for one sampling
//!   period: a change of at most one period is within resolution;
//! - calls and allocated bytes are exact: any change counts;
//! - bytes in use (feature `heap`) are estimates from sampled
//!   allocations, each about `bytes / sqrt(samples)` off (one standard
//!   deviation): a change within twice the standard deviation of the
//!   difference is within resolution.
//!
//! Rows are matched by name. The table is sorted by impact: the largest
//! change of the row's total time, self time, allocated bytes or CPU
//! time, each as a share of the whole report's figure (the largest total
//! of a function, which is the measured program's time; the sums over
//! functions of self time, allocated bytes and CPU time), so a function
//! that went from 1 µs to 3 µs in a program that runs for seconds sorts
//! below one that took 10% more of the whole.

use crate::format::{bytes, count, duration};
use crate::model::{FunctionRow, Report};
use std::fmt::Write as _;

/// One figure of a function row that can be compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Completed calls.
    Calls,
    /// Inclusive time (`total_ns`).
    Total,
    /// Exclusive time (`self_ns`).
    SelfTime,
    /// Median inclusive duration of one call.
    P50,
    /// 99th percentile of the inclusive duration of one call.
    P99,
    /// Bytes allocated in the function itself (`alloc_bytes`).
    AllocBytes,
    /// Bytes in use that the function allocated (feature `heap`): the
    /// estimates of the heap profile's paths ending in it.
    InuseBytes,
    /// CPU time sampled in the function itself (`cpu_ns`).
    Cpu,
}

/// Every metric, in the table's column order.
pub const METRICS: [Metric; 8] = [
    Metric::Calls,
    Metric::Total,
    Metric::SelfTime,
    Metric::P50,
    Metric::P99,
    Metric::AllocBytes,
    Metric::InuseBytes,
    Metric::Cpu,
];

impl Metric {
    /// Its name in `--fail-on` (the JSON field, without `_ns`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Calls => "calls",
            Metric::Total => "total",
            Metric::SelfTime => "self",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::AllocBytes => "alloc_bytes",
            Metric::InuseBytes => "inuse_bytes",
            Metric::Cpu => "cpu",
        }
    }

    /// The metric a `--fail-on` name stands for (the JSON field names
    /// with `_ns` are accepted too).
    pub fn parse(name: &str) -> Option<Metric> {
        Some(match name {
            "calls" => Metric::Calls,
            "total" | "total_ns" => Metric::Total,
            "self" | "self_ns" => Metric::SelfTime,
            "p50" | "p50_ns" => Metric::P50,
            "p99" | "p99_ns" => Metric::P99,
            "alloc_bytes" | "alloc" => Metric::AllocBytes,
            "inuse_bytes" | "inuse" => Metric::InuseBytes,
            "cpu" | "cpu_ns" => Metric::Cpu,
            _ => return None,
        })
    }

    fn header(self) -> &'static str {
        match self {
            Metric::Calls => "Calls",
            Metric::Total => "Total",
            Metric::SelfTime => "Self",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::AllocBytes => "Alloc bytes",
            Metric::InuseBytes => "In use",
            Metric::Cpu => "CPU",
        }
    }

    /// The figure in a row; `None` when the report does not measure it
    /// (no timing in count mode, allocations or CPU not recorded).
    fn of(self, r: &FunctionRow, timed: bool) -> Option<u64> {
        match self {
            Metric::Calls => Some(r.calls),
            Metric::Total => timed.then_some(r.total_ns),
            Metric::SelfTime => timed.then_some(r.self_ns),
            Metric::P50 => (timed && r.timed_calls > 0).then_some(r.p50_ns),
            Metric::P99 => (timed && r.timed_calls > 0).then_some(r.p99_ns),
            Metric::AllocBytes => r.alloc.map(|a| a.bytes),
            Metric::Cpu => r.cpu.map(|c| c.ns),
            // From the report's heap profile: see `Side::figures`.
            Metric::InuseBytes => None,
        }
    }

    fn show(self, v: u64) -> String {
        match self {
            Metric::Calls => count(v),
            Metric::AllocBytes | Metric::InuseBytes => bytes(v),
            _ => duration(v),
        }
    }
}

/// A `--fail-on` rule: the row regresses when `metric` changed by more
/// than `percent` (a rise when `percent` is positive, a fall when it is
/// negative), beyond the reports' resolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// The figure compared.
    pub metric: Metric,
    /// The change allowed, in %: `+10` fails on a rise of more than 10%,
    /// `-20` on a fall of more than 20%.
    pub percent: f64,
}

impl Threshold {
    fn exceeded_by(&self, change: f64) -> bool {
        if self.percent >= 0.0 {
            change > self.percent
        } else {
            change < self.percent
        }
    }
}

impl std::fmt::Display for Threshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.percent >= 0.0 { '>' } else { '<' };
        write!(f, "{}{op}{:+}%", self.metric.name(), self.percent)
    }
}

/// Parses `--fail-on`: comma-separated rules `METRIC>+N%` (a rise of
/// more than N%) or `METRIC<-N%` (a fall of more than N%), for the
/// metrics `calls`, `total`, `self`, `p50`, `p99`, `alloc_bytes`,
/// `inuse_bytes`, `cpu`.
pub fn parse_fail_on(spec: &str) -> Result<Vec<Threshold>, String> {
    let mut rules = Vec::new();
    for rule in spec.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        let (at, rising) = match (rule.find('>'), rule.find('<')) {
            (Some(i), None) => (i, true),
            (None, Some(i)) => (i, false),
            _ => {
                return Err(format!(
                    "`{rule}`: expected METRIC>+N% or METRIC<-N% (for example p99>+10%)"
                ));
            }
        };
        let name = rule[..at].trim();
        let metric = Metric::parse(name).ok_or_else(|| {
            format!(
                "`{rule}`: unknown metric `{name}` (calls, total, self, p50, p99, alloc_bytes, inuse_bytes, cpu)"
            )
        })?;
        let value = rule[at + 1..].trim();
        let number = value
            .strip_suffix('%')
            .ok_or_else(|| format!("`{rule}`: the change needs a % (for example +10%)"))?;
        let percent: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or_else(|| format!("`{rule}`: `{value}` is not a percentage"))?;
        let percent = if rising {
            percent.abs()
        } else {
            -percent.abs()
        };
        if percent == 0.0 && !rising {
            return Err(format!("`{rule}`: a fall needs a size (for example -20%)"));
        }
        rules.push(Threshold { metric, percent });
    }
    if rules.is_empty() {
        return Err("--fail-on: no rule given".into());
    }
    Ok(rules)
}

/// One metric of a row present in both reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The figure.
    pub metric: Metric,
    /// Its value in the base report.
    pub base: u64,
    /// Its value in the new report.
    pub new: u64,
    /// `new` against `base`, in % (infinite when `base` is 0 and `new`
    /// is not).
    pub percent: f64,
    /// False when the change is no larger than what the reports can tell
    /// apart (see the module's documentation): it is never flagged.
    pub resolved: bool,
}

/// How a function compares.
#[derive(Clone, Debug, PartialEq)]
pub enum RowDiff {
    /// In both reports: the metrics both measure.
    Both(Vec<Change>),
    /// Only in the new report: its figures there.
    Added(Vec<(Metric, u64)>),
    /// Only in the base report: its figures there.
    Removed(Vec<(Metric, u64)>),
}

/// One function of the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffRow {
    /// The function's row name.
    pub name: String,
    /// Its figures and changes.
    pub diff: RowDiff,
    /// The largest change of total, self, allocated bytes or CPU as a
    /// share of the whole report's (see the module's documentation); the
    /// table's order.
    pub impact: f64,
    /// The `--fail-on` rules this row broke, with the change that broke
    /// each.
    pub regressions: Vec<(Threshold, f64)>,
}

/// Two reports compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    /// By impact, largest first.
    pub rows: Vec<DiffRow>,
    /// The metrics both reports measure (the table's columns).
    pub metrics: Vec<Metric>,
}

impl Diff {
    /// Whether some row broke a `--fail-on` rule.
    pub fn regressed(&self) -> bool {
        self.rows.iter().any(|r| !r.regressions.is_empty())
    }
}

/// What a report measures, and its totals (the impact's denominators).
struct Side<'a> {
    report: &'a Report,
    timed: bool,
    /// One CPU sample's worth of time, in ns.
    cpu_period_ns: u64,
    /// The largest inclusive time of a function: the measured program's
    /// time, for the share of a total.
    total_max: u64,
    self_sum: u64,
    alloc_sum: u64,
    cpu_sum: u64,
    /// Per function, the heap profile's estimated bytes in use of the
    /// paths ending in it, and the samples they rest on.
    inuse: std::collections::HashMap<&'a str, (u64, u64)>,
    inuse_sum: u64,
}

impl<'a> Side<'a> {
    fn new(report: &'a Report) -> Side<'a> {
        let f = &report.functions;
        Side {
            report,
            timed: report.has_timing(),
            cpu_period_ns: report
                .cpu
                .as_ref()
                .filter(|c| c.frequency_hz > 0)
                .map_or(0, |c| 1_000_000_000 / u64::from(c.frequency_hz)),
            total_max: f.iter().map(|r| r.total_ns).max().unwrap_or(0),
            self_sum: f.iter().map(|r| r.self_ns).sum(),
            alloc_sum: f.iter().filter_map(|r| r.alloc.map(|a| a.bytes)).sum(),
            cpu_sum: f.iter().filter_map(|r| r.cpu.map(|c| c.ns)).sum(),
            inuse: inuse_by_function(report),
            inuse_sum: report.heap.as_ref().map_or(0, |h| h.inuse_bytes),
        }
    }

    fn measures(&self, m: Metric) -> bool {
        match m {
            Metric::Calls => true,
            Metric::Total | Metric::SelfTime | Metric::P50 | Metric::P99 => self.timed,
            Metric::AllocBytes => self.report.alloc.is_some(),
            Metric::InuseBytes => self.report.heap.is_some(),
            Metric::Cpu => self.report.cpu.is_some(),
        }
    }

    fn figures(&self, r: &FunctionRow, metrics: &[Metric]) -> Vec<(Metric, u64)> {
        metrics
            .iter()
            .filter_map(|&m| match m {
                // A function that holds nothing holds 0 bytes.
                Metric::InuseBytes => Some((m, self.inuse_of(&r.name).0)),
                _ => m.of(r, self.timed).map(|v| (m, v)),
            })
            .collect()
    }

    /// Estimated bytes in use of the paths ending in `function`, and
    /// their samples.
    fn inuse_of(&self, function: &str) -> (u64, u64) {
        self.inuse.get(function).copied().unwrap_or((0, 0))
    }
}

/// The heap profile's in-use bytes and samples by the last frame of each
/// path.
fn inuse_by_function(report: &Report) -> std::collections::HashMap<&str, (u64, u64)> {
    let mut by = std::collections::HashMap::new();
    for p in report.heap.iter().flat_map(|h| &h.inuse_paths) {
        if let Some(f) = p.frames.last() {
            let e: &mut (u64, u64) = by.entry(f.as_str()).or_default();
            e.0 += p.inuse_bytes;
            e.1 += p.samples;
        }
    }
    by
}

/// What an estimate of bytes in use resting on `samples` samples may
/// differ by between two runs of the same behaviour: twice its standard
/// deviation, about `bytes / sqrt(samples)`.
fn inuse_spread(bytes: u64, samples: u64) -> f64 {
    if samples == 0 {
        0.0
    } else {
        bytes as f64 / (samples as f64).sqrt()
    }
}

/// The largest change a pair of readings of `metric` can show for the
/// same behaviour (see the module's documentation).
fn resolution(metric: Metric, base: u64, new: u64, calls: u64, cpu_period_ns: u64) -> u64 {
    match metric {
        Metric::Calls | Metric::AllocBytes => 0,
        // Set by the caller from the samples (`inuse_spread`).
        Metric::InuseBytes => 0,
        Metric::Total | Metric::SelfTime => calls,
        Metric::P50 | Metric::P99 => (base.max(new) / 32).max(1),
        Metric::Cpu => cpu_period_ns,
    }
}

fn percent(base: u64, new: u64) -> f64 {
    if base == new {
        0.0
    } else if base == 0 {
        f64::INFINITY
    } else {
        (new as f64 - base as f64) / base as f64 * 100.0
    }
}

/// The share of the whole that `delta` is, for the impact.
fn share(delta: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        delta as f64 / whole as f64
    }
}

/// The impact of figures changing from `base` to `new` (zero when a row
/// is absent on one side).
fn impact(base: &[(Metric, u64)], new: &[(Metric, u64)], sides: (&Side<'_>, &Side<'_>)) -> f64 {
    let get = |v: &[(Metric, u64)], m: Metric| v.iter().find(|(k, _)| *k == m).map_or(0, |p| p.1);
    [
        (Metric::Total, sides.0.total_max.max(sides.1.total_max)),
        (Metric::SelfTime, sides.0.self_sum.max(sides.1.self_sum)),
        (Metric::AllocBytes, sides.0.alloc_sum.max(sides.1.alloc_sum)),
        (Metric::InuseBytes, sides.0.inuse_sum.max(sides.1.inuse_sum)),
        (Metric::Cpu, sides.0.cpu_sum.max(sides.1.cpu_sum)),
    ]
    .iter()
    .map(|&(m, whole)| share(get(base, m).abs_diff(get(new, m)), whole))
    .fold(0.0, f64::max)
}

/// Compares `new` with `base`, and checks each row against `fail_on`.
pub fn diff(base: &Report, new: &Report, fail_on: &[Threshold]) -> Diff {
    let (b, n) = (Side::new(base), Side::new(new));
    let metrics: Vec<Metric> = METRICS
        .into_iter()
        .filter(|&m| b.measures(m) && n.measures(m))
        .collect();
    let cpu_period = b.cpu_period_ns.max(n.cpu_period_ns);
    let mut rows = Vec::new();
    for nr in &new.functions {
        let nf = n.figures(nr, &metrics);
        let Some(br) = base.functions.iter().find(|r| r.name == nr.name) else {
            rows.push(DiffRow {
                name: nr.name.clone(),
                impact: impact(&[], &nf, (&b, &n)),
                diff: RowDiff::Added(nf),
                regressions: Vec::new(),
            });
            continue;
        };
        let bf = b.figures(br, &metrics);
        let calls = br.calls.max(nr.calls);
        let changes: Vec<Change> = metrics
            .iter()
            .filter_map(|&m| {
                let base = bf.iter().find(|(k, _)| *k == m)?.1;
                let new = nf.iter().find(|(k, _)| *k == m)?.1;
                let resolved = if m == Metric::InuseBytes {
                    // Two estimates: their difference is resolved beyond
                    // twice its standard deviation.
                    let (sb, sn) = (b.inuse_of(&br.name).1, n.inuse_of(&nr.name).1);
                    let sd = inuse_spread(base, sb).hypot(inuse_spread(new, sn));
                    base.abs_diff(new) as f64 > 2.0 * sd
                } else {
                    base.abs_diff(new) > resolution(m, base, new, calls, cpu_period)
                };
                Some(Change {
                    metric: m,
                    base,
                    new,
                    percent: percent(base, new),
                    resolved,
                })
            })
            .collect();
        let regressions = fail_on
            .iter()
            .filter_map(|t| {
                let c = changes.iter().find(|c| c.metric == t.metric)?;
                (c.resolved && t.exceeded_by(c.percent)).then_some((*t, c.percent))
            })
            .collect();
        rows.push(DiffRow {
            name: nr.name.clone(),
            impact: impact(&bf, &nf, (&b, &n)),
            diff: RowDiff::Both(changes),
            regressions,
        });
    }
    for br in &base.functions {
        if !new.functions.iter().any(|r| r.name == br.name) {
            let bf = b.figures(br, &metrics);
            rows.push(DiffRow {
                name: br.name.clone(),
                impact: impact(&bf, &[], (&b, &n)),
                diff: RowDiff::Removed(bf),
                regressions: Vec::new(),
            });
        }
    }
    // Largest impact first; ties (rows that did not move) by name.
    rows.sort_by(|x, y| {
        y.impact
            .total_cmp(&x.impact)
            .then_with(|| x.name.cmp(&y.name))
    });
    Diff { rows, metrics }
}

mod markdown;
pub use markdown::write_markdown;
