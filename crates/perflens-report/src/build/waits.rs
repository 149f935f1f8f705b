//! The Waits section: one row per await site (`CallsiteKind::Await`).
//!
//! A site has a node per calling context and thread, like a function;
//! what its counters mean is in `perflens_core::awaits`. The rows group
//! the nodes by callsite (a site is one place in the source), and read
//! them as they are: waits are timed in sampled mode too, so nothing is
//! scaled.
//!
//! - `count` = completed awaits (`calls`) + awaits dropped while
//!   suspended (`cancelled`);
//! - `wait_ns` = the waits of the completed awaits (`total_ns`) plus
//!   those of the cancelled ones (`cancelled_ns`, also kept apart as
//!   `cancelled_wait_ns`), of the outermost nodes only (a site reached
//!   again inside its own await, by a recursion, waits inside the outer
//!   await's wait);
//! - `p50_ns`/`p99_ns` describe one completed await: the histogram holds
//!   one entry per completed await that suspended, and every other
//!   completed await (`calls - timed_calls`) waited 0. A cancelled await
//!   has no entry (its node counts it in `cancelled` and its wait in
//!   `cancelled_ns` only), so the completed awaits (`calls`, `total_ns`)
//!   and the cancelled ones (`cancelled`, `cancelled_ns`) are two sets,
//!   each with its own count and total: see [`WaitRow`] for why the
//!   cancelled waits stay out of the percentiles;
//! - `measured_children` are the function rows of the paths right below
//!   the site's paths that ran, by `total_ns` (then calls) descending;
//!   `measured_ns` the measured time run in
//!   the awaits' polls (`busy_ns`, outermost nodes). With neither, the
//!   site is `uninstrumented`.
//!
//! Where the site is in the source comes from the program's await-site
//! table ([`perflens_format::AwaitSiteInfo`]); a site missing from it (a
//! live session whose names file lost the record) is read from its
//! callsite name, `file:line:col`, with no expression.

use std::borrow::Cow;
use std::collections::HashMap;

use perflens_format::histogram::Histogram;
use perflens_format::snapshot::{AwaitSiteInfo, CallsiteKind, Mode};

use super::{Tree, merge_hist, scale};
use crate::model::{ReportOptions, WaitRow};

/// The figures of one site while they are summed.
#[derive(Default)]
struct Acc<'a> {
    calls: u64,
    timed_calls: u64,
    cancelled: u64,
    suspended: u64,
    wait_ns: u64,
    cancelled_wait_ns: u64,
    measured_ns: u64,
    hist: Cow<'a, Histogram>,
    /// `(row, awaits)` of the functions enclosing the site's paths.
    enclosing: Vec<(usize, u64)>,
    /// `(row, (total_ns, calls + cancelled))` of the function rows right
    /// below.
    children: Vec<(usize, (u64, u64))>,
}

/// Adds `v` to the entry of `key` in a short association list.
fn add_to<V: Sum>(list: &mut Vec<(usize, V)>, key: usize, v: V) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, sum)) => sum.add(v),
        None => list.push((key, v)),
    }
}

/// What [`add_to`] sums.
trait Sum {
    fn add(&mut self, v: Self);
}

impl Sum for u64 {
    fn add(&mut self, v: u64) {
        *self = self.saturating_add(v);
    }
}

impl Sum for (u64, u64) {
    fn add(&mut self, v: (u64, u64)) {
        self.0.add(v.0);
        self.1.add(v.1);
    }
}

/// Where a site is: its entry of `sites`, or its callsite name read as
/// `file:line:col`.
fn locate(name: &str, info: Option<&AwaitSiteInfo>) -> (String, u32, u32, String) {
    if let Some(i) = info {
        return (i.file.clone(), i.line, i.column, i.expr.clone());
    }
    let mut parts = name.rsplitn(3, ':');
    let (col, line, file) = (parts.next(), parts.next(), parts.next());
    match (
        file,
        line.and_then(|l| l.parse().ok()),
        col.and_then(|c| c.parse().ok()),
    ) {
        (Some(file), Some(line), Some(col)) => (file.to_string(), line, col, String::new()),
        _ => (name.to_string(), 0, 0, String::new()),
    }
}

/// The Waits rows of a snapshot and the threshold they were filtered
/// with (`None` when no site ran, or in count mode, where every site that
/// ran is listed by count). `row_names` are the function rows' names by
/// row index.
pub(crate) fn waits(
    tree: &Tree<'_>,
    row_names: &[String],
    sites: &[AwaitSiteInfo],
    options: &ReportOptions,
    quantile: &dyn Fn(&Histogram, f64) -> u64,
) -> (Vec<WaitRow>, Option<u64>) {
    let snap = tree.snap;
    let n = snap.paths.len();
    if !tree.is_await.iter().any(|&a| a) {
        return (Vec::new(), None);
    }
    // Site slot of each await callsite.
    let mut slot_of_callsite: Vec<Option<usize>> = vec![None; snap.callsites.len()];
    let mut accs: Vec<Acc> = Vec::new();
    let mut callsite_of_slot: Vec<usize> = Vec::new();
    let mut slot_of_path: Vec<Option<usize>> = vec![None; n];
    for (p, slot_of) in slot_of_path.iter_mut().enumerate().skip(1) {
        if !tree.is_await[p] {
            continue;
        }
        let cs = snap.paths[p].callsite as usize;
        let Some(entry) = slot_of_callsite.get_mut(cs) else {
            continue;
        };
        let slot = *entry.get_or_insert_with(|| {
            accs.push(Acc::default());
            callsite_of_slot.push(cs);
            accs.len() - 1
        });
        *slot_of = Some(slot);
    }
    // Whether each site path has no ancestor path of the same site.
    let outermost: Vec<bool> = (0..n)
        .map(|p| {
            let Some(cs) = slot_of_path[p].map(|_| snap.paths[p].callsite) else {
                return false;
            };
            let mut q = snap.paths[p].parent as usize;
            for _ in 0..n {
                if q == 0 || q >= n {
                    return true;
                }
                if tree.is_await[q] && snap.paths[q].callsite == cs {
                    return false;
                }
                q = snap.paths[q].parent as usize;
            }
            true
        })
        .collect();
    let mut awaits_of_path = vec![0u64; n];
    for node in snap.threads.iter().flat_map(|t| &t.nodes) {
        let p = node.path as usize;
        let Some(slot) = slot_of_path.get(p).copied().flatten() else {
            // A function's node right below a site: a measured child,
            // with its inclusive time as the function rows count it
            // (outermost nodes, scaled when sampled).
            let (Some(row), Some(info)) = (
                tree.row_of_path.get(p).copied().flatten(),
                snap.paths.get(p),
            ) else {
                continue;
            };
            let Some(slot) = slot_of_path.get(info.parent as usize).copied().flatten() else {
                continue;
            };
            let all = node.calls.saturating_add(node.cancelled);
            let wall = node.total_ns.saturating_add(node.cancelled_ns);
            let total = match snap.mode {
                _ if node.nested => 0,
                Mode::Count => 0,
                Mode::Timed => wall,
                Mode::Sampled { .. } => scale(
                    wall,
                    all,
                    node.timed_calls.saturating_add(node.timed_cancelled),
                ),
            };
            add_to(&mut accs[slot].children, row, (total, all));
            continue;
        };
        let a = &mut accs[slot];
        a.calls = a.calls.saturating_add(node.calls);
        a.timed_calls = a.timed_calls.saturating_add(node.timed_calls);
        a.cancelled = a.cancelled.saturating_add(node.cancelled);
        a.suspended = a.suspended.saturating_add(node.polls);
        merge_hist(&mut a.hist, &node.hist_total);
        awaits_of_path[p] = (awaits_of_path[p])
            .saturating_add(node.calls)
            .saturating_add(node.cancelled);
        if !node.nested && outermost[p] {
            let wait = node.total_ns.saturating_add(node.cancelled_ns);
            a.wait_ns = a.wait_ns.saturating_add(wait);
            a.cancelled_wait_ns = a.cancelled_wait_ns.saturating_add(node.cancelled_ns);
            a.measured_ns = a.measured_ns.saturating_add(node.busy_ns);
        }
    }
    for (p, &slot) in slot_of_path.iter().enumerate().skip(1) {
        // The function enclosing a site path: the first ancestor with a
        // row, through other sites.
        if let Some(slot) = slot {
            let mut q = snap.paths[p].parent as usize;
            for _ in 0..n {
                if q == 0 || q >= n {
                    break;
                }
                if let Some(row) = tree.row_of_path[q] {
                    add_to(&mut accs[slot].enclosing, row, awaits_of_path[p]);
                    break;
                }
                q = snap.paths[q].parent as usize;
            }
        }
    }
    let timing = snap.mode != Mode::Count;
    let name_of = |row: usize| row_names.get(row).cloned().unwrap_or_default();
    let mut rows: Vec<WaitRow> = Vec::new();
    for (slot, a) in accs.into_iter().enumerate() {
        let count = a.calls.saturating_add(a.cancelled);
        if count == 0 {
            // Only awaits still suspended: nothing to report yet.
            continue;
        }
        let cs = callsite_of_slot[slot];
        let name = snap.callsites.get(cs).map_or("", |c| c.name.as_str());
        let info = sites.iter().find(|s| s.callsite as usize == cs);
        let (file, line, column, expr) = locate(name, info);
        let mut hist = a.hist.into_owned();
        let zeros = a.calls.saturating_sub(a.timed_calls);
        if zeros > 0 {
            hist.record_n(0, zeros);
        }
        let function = (a.enclosing.iter())
            .max_by(|x, y| x.1.cmp(&y.1).then(name_of(y.0).cmp(&name_of(x.0))))
            .map_or(String::new(), |&(row, _)| name_of(row));
        // Those that ran (a call completed or a future was dropped), by
        // time; count mode (no time): by calls.
        let mut children = a.children;
        children.retain(|(_, (_, ran))| *ran > 0);
        children.sort_by(|x, y| y.1.cmp(&x.1).then(name_of(x.0).cmp(&name_of(y.0))));
        let measured_children: Vec<String> = children.iter().map(|&(r, _)| name_of(r)).collect();
        rows.push(WaitRow {
            site: String::new(),
            function,
            file,
            line,
            column,
            expr,
            count,
            suspended: a.suspended,
            wait_ns: if timing { a.wait_ns } else { 0 },
            p50_ns: quantile(&hist, 50.0),
            p99_ns: quantile(&hist, 99.0),
            measured_ns: if timing { a.measured_ns } else { 0 },
            uninstrumented: measured_children.is_empty() && a.measured_ns == 0,
            measured_children,
            cancelled: a.cancelled,
            cancelled_wait_ns: if timing { a.cancelled_wait_ns } else { 0 },
        });
    }
    if rows.is_empty() {
        return (rows, None);
    }
    // Short names, made unique with the column where two read the same.
    let label = |r: &WaitRow| match r.function.as_str() {
        "" => format!("{}:{}", r.file, r.line),
        f => format!("{f}:{}", r.line),
    };
    let mut seen: HashMap<String, u32> = HashMap::new();
    for r in &rows {
        *seen.entry(label(r)).or_default() += 1;
    }
    for r in &mut rows {
        let l = label(r);
        r.site = match seen.get(&l) {
            Some(&k) if k > 1 => format!("{l}:{}", r.column),
            _ => l,
        };
    }
    let by_place = |a: &WaitRow, b: &WaitRow| {
        (a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
            .then(a.column.cmp(&b.column))
            .then(a.site.cmp(&b.site))
    };
    if timing {
        rows.retain(|r| r.wait_ns >= options.wait_min_ns);
        rows.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(by_place(a, b)));
        (rows, Some(options.wait_min_ns))
    } else {
        rows.sort_by(|a, b| b.count.cmp(&a.count).then(by_place(a, b)));
        (rows, None)
    }
}

/// Whether a snapshot has any await callsite.
pub(crate) fn has_sites(snap: &perflens_format::snapshot::RawSnapshot) -> bool {
    (snap.callsites.iter().skip(2)).any(|c| c.kind == CallsiteKind::Await)
}

/// Parses a wait threshold (`PERFLENS_WAIT_MIN`, `perflens report
/// --wait-min`) into ns: a number with a unit, `ns`, `us` (or `µs`), `ms`
/// or `s` (`500us`, `1.5ms`, `2s`), a bare number meaning ms, `0` for
/// every site. `None` for anything else (negative, not a number, an
/// unknown unit, too large).
pub fn parse_wait_min(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let scale = match unit.trim() {
        "" | "ms" => 1e6,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "s" => 1e9,
        _ => return None,
    };
    let v: f64 = number.parse().ok()?;
    let ns = (v * scale).round();
    (v.is_finite() && (0.0..=u64::MAX as f64).contains(&ns)).then_some(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_wait_min;

    #[test]
    fn wait_thresholds_parse_with_their_units() {
        let ms = 1_000_000;
        for (text, ns) in [
            ("500us", 500_000),
            ("500µs", 500_000),
            ("1ms", ms),
            (" 1.5 ms ", 1_500_000),
            ("2s", 2_000 * ms),
            ("0", 0),
            ("3", 3 * ms),
            ("250ns", 250),
            ("0.5", ms / 2),
        ] {
            assert_eq!(parse_wait_min(text), Some(ns), "{text}");
        }
        for bad in [
            "",
            "ms",
            "-1ms",
            "1 h",
            "1e3",
            "1..2ms",
            "x",
            "99999999999999999999s",
        ] {
            assert_eq!(parse_wait_min(bad), None, "{bad:?}");
        }
    }
}
