//! From a raw snapshot to a [`Report`].
//!
//! Everything starts from one step: every thread's nodes are summed by
//! path index into one merged tree ([`merge_paths`]), with sampled
//! durations scaled per node before summing (a node that timed 10 of its
//! 1000 calls is scaled by 100, whatever the other threads did). Then:
//!
//! - function rows group the merged paths by callsite *name*. Inclusive
//!   time (and async busy time) counts only paths with no ancestor of the
//!   same name, so recursion is not counted twice; calls, self time,
//!   polls, cancellations and histograms count every path;
//! - hot paths end at every function path that ran and is a leaf or
//!   spent time itself (count mode: every one that ran), by the exclusive
//!   time of that last frame (count mode: by calls), so they lead to
//!   where the time is spent, at any depth;
//! - allocation paths (when allocations were counted) are every path
//!   that ran and allocated bytes itself, leaf or interior, by those
//!   bytes, so they lead to where the bytes are;
//! - the root and overflow pseudo-callsites (kind `Internal`) are neither
//!   rows nor frames; what overflowed is reported in [`Dropped`].
//!
//! Allocations (when the snapshot has them) are never scaled: the counting
//! allocator sees every allocation in every mode. A path's inclusive
//! figures are the sum over its subtree of the merged tree, computed by
//! one walk up the tree per path that allocated ([`inclusive_alloc`]). A
//! function's inclusive figures, like its inclusive time, sum only its
//! outermost paths, so a recursion's subtree is counted once. The root
//! node holds what a thread allocated outside any measured function: it
//! counts in the thread's and the session's totals, never in a row.
//!
//! Malformed snapshots (an index out of range, a parent cycle) never
//! panic: the offending node or path is left out.

use std::borrow::Cow;
use std::collections::HashMap;

use perflens_format::histogram::{BUCKETS, Histogram};
use perflens_format::snapshot::{AwaitSiteInfo, CallsiteKind, Mode, RawSnapshot};

use crate::model::{
    AllocFigures, AllocTotals, Dropped, FunctionKind, FunctionRow, HotPath, Report, ReportMode,
    ReportOptions, SCHEMA, Segment, ThreadRow,
};
use crate::percentiles::{Percentiles, percentile_label, sanitize_percentiles};

mod heap;
mod paths;
mod rows;
pub(crate) mod waits;

use paths::{hot_paths, thread_row};
use rows::{empty_row, function_rows};

/// One path's counters summed over threads. Its histograms borrow the
/// snapshot's while one node holds values (most paths run on one
/// thread), and are copied to be merged only when a second one does.
#[derive(Clone, Debug, Default)]
pub(crate) struct Merged<'a> {
    pub(crate) calls: u64,
    timed_calls: u64,
    /// Unscaled inclusive time of the timed calls (for means).
    raw_total_ns: u64,
    /// Inclusive, self and busy time, scaled to all calls when sampled.
    /// Futures dropped before completion count here (their wall time in
    /// the inclusive time) but not in `calls`, `raw_total_ns` or the
    /// histograms, which describe completed calls.
    pub(crate) total_ns: u64,
    pub(crate) self_ns: u64,
    busy_ns: u64,
    polls: u64,
    cancelled: u64,
    timed_cancelled: u64,
    hist_total: Cow<'a, Histogram>,
    pub(crate) hist_self: Cow<'a, Histogram>,
    /// Deepest folded recursion at this path (0: none).
    pub(crate) max_depth: u32,
    /// Exclusive allocation counters (never scaled).
    pub(crate) alloc_bytes: u64,
    alloc_count: u64,
    free_bytes: u64,
    /// Per-call inclusive bytes.
    hist_alloc: Cow<'a, Histogram>,
}

/// Adds `h`'s values to `acc`: borrows `h` while `acc` is empty, the same
/// values as merging it into an empty histogram.
pub(crate) fn merge_hist<'a>(acc: &mut Cow<'a, Histogram>, h: &'a Histogram) {
    if h.count() == 0 {
        return;
    }
    if acc.count() == 0 {
        *acc = Cow::Borrowed(h);
    } else {
        acc.to_mut().merge(h);
    }
}

impl Merged<'_> {
    /// Whether the path ran: a call completed or a future was dropped
    /// before completing.
    pub(crate) fn ran(&self) -> bool {
        self.calls > 0 || self.cancelled > 0
    }
}

/// `v * calls / timed`, rounded; 0 when nothing was timed.
pub(crate) fn scale(v: u64, calls: u64, timed: u64) -> u64 {
    if timed == 0 {
        return 0;
    }
    if timed == calls {
        return v;
    }
    let scaled = (v as u128 * calls as u128 + timed as u128 / 2) / timed as u128;
    scaled.min(u64::MAX as u128) as u64
}

/// `sum / n`, rounded; 0 when `n` is 0.
fn mean(sum: u64, n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        ((sum as u128 + n as u128 / 2) / n as u128) as u64
    }
}

/// Whether `path` is an await site's path.
fn is_await_path(snap: &RawSnapshot, path: u32) -> bool {
    (snap.paths.get(path as usize))
        .and_then(|p| snap.callsites.get(p.callsite as usize))
        .is_some_and(|c| c.kind == CallsiteKind::Await)
}

pub(crate) fn merge_paths(snap: &RawSnapshot) -> Vec<Merged<'_>> {
    let mut merged = vec![Merged::default(); snap.paths.len()];
    for node in snap.threads.iter().flat_map(|t| &t.nodes) {
        let Some(m) = merged.get_mut(node.path as usize) else {
            continue;
        };
        m.calls += node.calls;
        m.polls += node.polls;
        m.cancelled += node.cancelled;
        m.alloc_bytes = m.alloc_bytes.saturating_add(node.alloc_bytes);
        m.alloc_count = m.alloc_count.saturating_add(node.alloc_count);
        m.free_bytes = m.free_bytes.saturating_add(node.free_bytes);
        merge_hist(&mut m.hist_alloc, &node.hist_alloc);
        m.max_depth = m.max_depth.max(node.max_depth);
        merge_hist(&mut m.hist_total, &node.hist_total);
        merge_hist(&mut m.hist_self, &node.hist_self);
        // An await site's waits are timed in every mode but count (see
        // `perflens_core::awaits`): its figures are never scaled.
        let (timed, timed_cancelled) = match snap.mode {
            Mode::Count => continue,
            Mode::Sampled { .. } if !is_await_path(snap, node.path) => {
                (node.timed_calls, node.timed_cancelled)
            }
            Mode::Timed | Mode::Sampled { .. } => (node.calls, node.cancelled),
        };
        m.timed_calls += timed;
        m.timed_cancelled += timed_cancelled;
        m.raw_total_ns = m.raw_total_ns.saturating_add(node.total_ns);
        // Every future counts towards the sampling ratio, completed or not.
        let (all, measured) = (node.calls + node.cancelled, timed + timed_cancelled);
        m.self_ns = m.self_ns.saturating_add(scale(node.self_ns, all, measured));
        if node.nested {
            // Inside the outermost frame's inclusive time already.
            continue;
        }
        let wall = node.total_ns.saturating_add(node.cancelled_ns);
        m.total_ns = m.total_ns.saturating_add(scale(wall, all, measured));
        m.busy_ns = m.busy_ns.saturating_add(scale(node.busy_ns, all, measured));
    }
    // What holds of every call holds of the sums: self <= busy <= total.
    // Nodes are converted to ns one by one, so a path's outermost and
    // nested nodes can round 1 ns past it; sampled estimates are scaled
    // node by node, so they can overshoot by more.
    for m in &mut merged {
        m.busy_ns = m.busy_ns.min(m.total_ns);
        let bound = if m.polls > 0 { m.busy_ns } else { m.total_ns };
        m.self_ns = m.self_ns.min(bound);
    }
    merged
}

/// Inclusive allocation figures of every path (index = path): its own
/// exclusive figures plus those of every path below it.
struct Inclusive {
    bytes: Vec<u64>,
    count: Vec<u64>,
}

/// Inclusive bytes and count of every path (see [`subtree_sums`]).
fn inclusive_alloc(snap: &RawSnapshot, merged: &[Merged]) -> Inclusive {
    let bytes: Vec<u64> = merged.iter().map(|m| m.alloc_bytes).collect();
    let count: Vec<u64> = merged.iter().map(|m| m.alloc_count).collect();
    Inclusive {
        bytes: subtree_sums(snap, &bytes),
        count: subtree_sums(snap, &count),
    }
}

/// Each path's own value (`own[path]`, one per entry of `snap.paths`)
/// plus those of every path below it: adds every non-zero value to its
/// path and to every ancestor, root included. The walk up is bounded by
/// the number of paths and stops at a parent index out of range, so a
/// malformed tree cannot hang or panic. Sums saturate.
pub(crate) fn subtree_sums(snap: &RawSnapshot, own: &[u64]) -> Vec<u64> {
    let n = snap.paths.len().min(own.len());
    let mut out = vec![0u64; n];
    for (path, &v) in own.iter().enumerate().take(n) {
        if v == 0 {
            continue;
        }
        let mut p = path;
        for _ in 0..n {
            out[p] = out[p].saturating_add(v);
            let parent = snap.paths[p].parent as usize;
            if p == 0 || parent == p || parent >= n {
                break;
            }
            p = parent;
        }
    }
    out
}

/// The allocation figures of a function row (summed over its paths) or of
/// a hot path (one path), while they are summed.
#[derive(Clone, Debug, Default)]
struct AllocAcc {
    bytes: u64,
    count: u64,
    free_bytes: u64,
    /// Outermost paths only.
    incl_bytes: u64,
    incl_count: u64,
    /// Every path's inclusive bytes (the sum behind the per-call mean).
    frames_incl_bytes: u64,
    hist: Histogram,
}

impl AllocAcc {
    /// The figures of one path.
    fn of_path(m: &Merged, incl: &Inclusive, path: usize) -> AllocAcc {
        let mut acc = AllocAcc::default();
        acc.add(m, incl, path, true);
        acc
    }

    /// Adds the figures of `path` (merged as `m`); its inclusive ones
    /// count only when `outermost`, so a recursion's subtree counts once.
    fn add(&mut self, m: &Merged, incl: &Inclusive, path: usize, outermost: bool) {
        self.bytes = self.bytes.saturating_add(m.alloc_bytes);
        self.count = self.count.saturating_add(m.alloc_count);
        self.free_bytes = self.free_bytes.saturating_add(m.free_bytes);
        self.frames_incl_bytes = self.frames_incl_bytes.saturating_add(incl.bytes[path]);
        if outermost {
            self.incl_bytes = self.incl_bytes.saturating_add(incl.bytes[path]);
            self.incl_count = self.incl_count.saturating_add(incl.count[path]);
        }
        self.hist.merge(&m.hist_alloc);
    }

    /// The figures, `calls` being the completed calls they were summed
    /// over (for the per-call mean).
    fn figures(&self, calls: u64) -> AllocFigures {
        AllocFigures {
            bytes: self.bytes,
            count: self.count,
            free_bytes: self.free_bytes,
            incl_bytes: self.incl_bytes,
            incl_count: self.incl_count,
            avg_bytes: self.per_call_mean(calls),
            p95_bytes: self.hist.quantile(0.95).unwrap_or(0),
        }
    }

    /// The mean bytes of one completed call, of the distribution
    /// `p95_bytes` is read from: each completed call's entry is what it
    /// allocated while it ran, with what it called in it. The tree's
    /// inclusive bytes give it exactly when they lie within the
    /// histogram's sum bounds; when they do not, the subtree also holds
    /// bytes allocated outside its completed calls (tasks it spawned,
    /// which run outside its polls, calls still running, futures
    /// cancelled), and the histogram's own sum gives it, within 1/64.
    fn per_call_mean(&self, calls: u64) -> u64 {
        let exact = mean(self.frames_incl_bytes, calls);
        if self.hist.count() != calls {
            // Not one entry per call (a reader without the histograms).
            return exact;
        }
        let (lo, hi, mid) = self.hist.sum_bounds();
        if (lo..=hi).contains(&(self.frames_incl_bytes as u128)) {
            exact
        } else {
            let calls = calls.max(1) as u128;
            ((mid + calls / 2) / calls).min(u64::MAX as u128) as u64
        }
    }
}

/// Read-only view of the snapshot with each path's function row resolved.
pub(crate) struct Tree<'a> {
    pub(crate) snap: &'a RawSnapshot,
    /// Function row of each path's callsite, `None` for internal ones
    /// and await sites.
    pub(crate) row_of_path: Vec<Option<usize>>,
    /// Whether each path's callsite is an await site: not a function, and
    /// transparent in chains (a function below an await keeps the frames
    /// above the await).
    pub(crate) is_await: Vec<bool>,
}

impl Tree<'_> {
    /// The chain of path indices from the top-level frame down to `path`,
    /// or `None` if it passes through an internal callsite or is broken.
    /// Await sites on the way are left out (`path` too, if it is one).
    pub(crate) fn chain(&self, path: usize) -> Option<Vec<usize>> {
        let mut out = Vec::new();
        self.chain_into(path, &mut out).then_some(out)
    }

    /// [`Tree::chain`] into `out` (cleared first): false where `chain`
    /// gives `None`.
    pub(crate) fn chain_into(&self, path: usize, out: &mut Vec<usize>) -> bool {
        out.clear();
        let mut p = path;
        for _ in 0..self.snap.paths.len() {
            if p == 0 {
                out.reverse();
                return true;
            }
            if self.is_await.get(p).copied().unwrap_or(false) {
                p = self.snap.paths[p].parent as usize;
                continue;
            }
            if self.row_of_path.get(p).copied().flatten().is_none() {
                return false;
            }
            out.push(p);
            p = self.snap.paths[p].parent as usize;
        }
        false
    }

    /// Frames of function `row` on the chain of `path`, `path` included
    /// (more than 1 when an expanded recursion reached it).
    pub(crate) fn depth_of(&self, path: usize, row: usize) -> u32 {
        let mut depth = 1;
        let mut p = self.snap.paths[path].parent as usize;
        for _ in 0..self.snap.paths.len() {
            if p == 0 || p >= self.snap.paths.len() {
                break;
            }
            if self.row_of_path[p] == Some(row) {
                depth += 1;
            }
            p = self.snap.paths[p].parent as usize;
        }
        depth
    }

    /// True when no ancestor of `path` belongs to the same function row.
    pub(crate) fn is_outermost(&self, path: usize, row: usize) -> bool {
        let mut p = self.snap.paths[path].parent as usize;
        for _ in 0..self.snap.paths.len() {
            if p == 0 || p >= self.snap.paths.len() {
                return true;
            }
            if self.row_of_path[p] == Some(row) {
                return false;
            }
            p = self.snap.paths[p].parent as usize;
        }
        true
    }
}

impl Report {
    /// Builds the report of a snapshot. Never fails: malformed parts of
    /// the snapshot are left out.
    ///
    /// The Waits rows ([`Report::waits`]) then have no expression and
    /// take their file, line and column from the sites' callsite names:
    /// [`Report::from_snapshot_with_sites`] gives them the program's
    /// await-site table.
    pub fn from_snapshot(snap: &RawSnapshot, options: &ReportOptions) -> Report {
        Report::from_snapshot_with_sites(snap, &[], options)
    }

    /// [`Report::from_snapshot`], with where the await sites of the
    /// snapshot are in the source: `perflens_core::await_sites()` in the
    /// program, `LiveSession::await_sites()` (perflens-live) from a live
    /// session. A site missing from `sites` is read from its callsite
    /// name (`file:line:col`) with an empty expression.
    pub fn from_snapshot_with_sites(
        snap: &RawSnapshot,
        sites: &[AwaitSiteInfo],
        options: &ReportOptions,
    ) -> Report {
        let percentiles = sanitize_percentiles(&options.percentiles);
        let timing = snap.mode != Mode::Count;
        let quantile = |h: &Histogram, p: f64| -> u64 {
            if !timing {
                return 0;
            }
            h.quantile(p / 100.0).map_or(0, |t| snap.ticks_to_ns(t))
        };
        // Neither rows nor paths: only the threads and totals, from the
        // threads' own figures.
        let merged = if options.functions || options.hot_paths {
            merge_paths(snap)
        } else {
            Vec::new()
        };
        let incl = (snap.alloc)
            .filter(|_| !merged.is_empty())
            .map(|_| inclusive_alloc(snap, &merged));
        let (tree, rows) = resolve_rows(snap);
        let (waits, wait_min_ns) = if waits::has_sites(snap) {
            let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
            waits::waits(&tree, &names, sites, options, &quantile)
        } else {
            (Vec::new(), None)
        };
        let functions = if options.functions {
            function_rows(&tree, rows, &merged, incl.as_ref(), &percentiles, &quantile)
        } else {
            Vec::new()
        };
        let (paths, alloc_paths) = if options.hot_paths {
            hot_paths(&tree, &merged, incl.as_ref(), timing, &quantile)
        } else {
            (Vec::new(), snap.alloc.map(|_| Vec::new()))
        };
        let flow = crate::flow::flow_paths(snap);
        let not_calls: Vec<bool> = (tree.is_await.iter().zip(&flow))
            .map(|(a, f)| *a || *f)
            .collect();
        let threads: Vec<ThreadRow> = (snap.threads.iter())
            .map(|t| thread_row(t, snap.alloc.is_some(), &not_calls))
            .collect();
        let channels = crate::flow::channels(snap, &quantile);
        let locks = crate::flow::locks(snap, &quantile);
        let streams = crate::flow::streams(snap, &quantile);
        let futures = crate::flow::futures(snap, &quantile);
        let alloc = snap.alloc.map(|summary| {
            let sum = |f: fn(&ThreadRow) -> Option<u64>| {
                (threads.iter().filter_map(f)).fold(0u64, u64::saturating_add)
            };
            AllocTotals {
                total_bytes: sum(|t| t.alloc_bytes),
                total_count: sum(|t| t.alloc_count),
                free_bytes: sum(|t| t.free_bytes),
                live_bytes: summary.live_bytes,
                peak_live_bytes: summary.peak_live_bytes,
                peak_resolution_bytes: summary.peak_resolution_bytes,
            }
        });
        let heap = heap::heap_profile(&tree);
        let dropped = Dropped {
            overflow_calls: snap.threads.iter().map(|t| t.overflow_calls).sum(),
            overflow_paths: snap.overflow_paths,
            unrecorded_calls: snap.unrecorded_calls,
            dropped_frames: snap.threads.iter().map(|t| t.dropped_frames).sum(),
        };
        let (mode, sample_every) = match snap.mode {
            Mode::Timed => (ReportMode::Timed, 1),
            Mode::Count => (ReportMode::Count, 0),
            Mode::Sampled { every } => (ReportMode::Sampled, every),
        };
        Report {
            schema: SCHEMA.to_string(),
            mode,
            sample_every,
            sample_warmup: snap.sample_warmup,
            clock: snap.clock.name().to_string(),
            elapsed_ns: snap.elapsed_ns,
            finished: snap.finished,
            percentiles,
            functions,
            paths,
            alloc_paths,
            waits,
            wait_min_ns,
            channels,
            locks,
            streams,
            futures,
            threads,
            dropped,
            path_capacity: snap.path_capacity,
            alloc,
            heap,
            cpu: None,
            limit: options.limit,
        }
    }
}

/// One empty row per distinct function name (in order of first
/// appearance), and the row of every path.
pub(crate) fn resolve_rows(snap: &RawSnapshot) -> (Tree<'_>, Vec<FunctionRow>) {
    let mut rows: Vec<FunctionRow> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut row_of_callsite = vec![None; snap.callsites.len()];
    for (i, cs) in snap.callsites.iter().enumerate().skip(2) {
        let kind = match cs.kind {
            CallsiteKind::Internal | CallsiteKind::Await | CallsiteKind::Flow(_) => continue,
            CallsiteKind::Async => FunctionKind::Async,
            CallsiteKind::Sync => FunctionKind::Sync,
        };
        let row = *by_name.entry(&cs.name).or_insert_with(|| {
            rows.push(empty_row(&cs.name, kind));
            rows.len() - 1
        });
        if kind == FunctionKind::Async {
            rows[row].kind = FunctionKind::Async;
        }
        row_of_callsite[i] = Some(row);
    }
    let row_of_path = (snap.paths.iter().enumerate())
        .map(|(i, p)| match i {
            0 => None,
            _ => row_of_callsite.get(p.callsite as usize).copied().flatten(),
        })
        .collect();
    let is_await = (snap.paths.iter().enumerate())
        .map(|(i, p)| {
            i != 0
                && (snap.callsites.get(p.callsite as usize))
                    .is_some_and(|c| c.kind == CallsiteKind::Await)
        })
        .collect();
    (
        Tree {
            snap,
            row_of_path,
            is_await,
        },
        rows,
    )
}

/// Each function row's latency histogram (ticks of one call's inclusive
/// time, over the timed calls, every frame of a recursion counted, as the
/// row's percentiles) and the sum of those durations in ns, by row name:
/// what a Prometheus histogram of the row is made from.
pub(crate) fn row_histograms(snap: &RawSnapshot) -> HashMap<String, (Histogram, u64)> {
    let merged = merge_paths(snap);
    let (tree, rows) = resolve_rows(snap);
    let mut dense: Vec<Option<(Vec<u64>, u64)>> = vec![None; rows.len()];
    for (path, m) in merged.iter().enumerate() {
        let Some(row) = tree.row_of_path[path] else {
            continue;
        };
        if m.hist_total.count() == 0 {
            continue;
        }
        let (d, sum) = dense[row].get_or_insert_with(|| (vec![0u64; BUCKETS], 0));
        for &(i, c) in m.hist_total.buckets() {
            d[i as usize] += c;
        }
        *sum = sum.saturating_add(m.raw_total_ns);
    }
    (rows.into_iter().zip(dense))
        .filter_map(|(row, d)| {
            let (d, sum) = d?;
            Some((row.name, (Histogram::from_dense(d), sum)))
        })
        .collect()
}
