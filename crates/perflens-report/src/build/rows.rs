//! The function rows: every function's calling contexts merged into one
//! row, async and sync alike.

use super::*;

/// Fills the rows from the merged paths, drops rows without calls, sorts.
pub(super) fn function_rows(
    tree: &Tree<'_>,
    rows: Vec<FunctionRow>,
    merged: &[Merged<'_>],
    incl: Option<&Inclusive>,
    percentiles: &[f64],
    quantile: &dyn Fn(&Histogram, f64) -> u64,
) -> Vec<FunctionRow> {
    let mut acc = vec![Merged::default(); rows.len()];
    let mut hists: Vec<Vec<&Histogram>> = vec![Vec::new(); rows.len()];
    let mut alloc_acc = vec![AllocAcc::default(); rows.len()];
    for (path, m) in merged.iter().enumerate() {
        let Some(row) = tree.row_of_path[path] else {
            continue;
        };
        let outermost = tree.is_outermost(path, row);
        if let Some(incl) = incl {
            alloc_acc[row].add(m, incl, path, outermost);
        }
        let a = &mut acc[row];
        a.calls += m.calls;
        a.timed_calls += m.timed_calls;
        a.raw_total_ns = a.raw_total_ns.saturating_add(m.raw_total_ns);
        a.self_ns = a.self_ns.saturating_add(m.self_ns);
        a.polls += m.polls;
        a.cancelled += m.cancelled;
        a.timed_cancelled += m.timed_cancelled;
        if outermost {
            a.total_ns = a.total_ns.saturating_add(m.total_ns);
            a.busy_ns = a.busy_ns.saturating_add(m.busy_ns);
        } else if m.ran() {
            a.max_depth = a.max_depth.max(tree.depth_of(path, row));
        }
        a.max_depth = a.max_depth.max(m.max_depth);
        if m.hist_total.count() > 0 {
            hists[row].push(&m.hist_total);
        }
    }
    // Each row's latency histogram: its one path's, or every path's
    // buckets summed at once (merging them one by one copied the growing
    // sum at every path).
    let mut dense = vec![0u64; BUCKETS];
    for (a, hs) in acc.iter_mut().zip(&hists) {
        match hs.as_slice() {
            [] => {}
            [h] => a.hist_total = Cow::Borrowed(*h),
            _ => {
                for h in hs {
                    for &(i, c) in h.buckets() {
                        dense[i as usize] += c;
                    }
                }
                a.hist_total = Cow::Owned(Histogram::from_dense(dense.iter().copied()));
                dense.fill(0);
            }
        }
    }
    let sampled_mode = matches!(tree.snap.mode, Mode::Sampled { .. });
    let mut out: Vec<FunctionRow> = (rows.into_iter().zip(acc).zip(alloc_acc))
        .filter(|((_, a), _)| a.ran())
        .map(|((mut row, mut a), b)| {
            row.calls = a.calls;
            row.timed_calls = a.timed_calls;
            row.total_ns = a.total_ns;
            row.self_ns = a.self_ns;
            // As for paths (see `merge_paths`).
            a.busy_ns = a.busy_ns.min(a.total_ns);
            let bound = if row.is_async() {
                a.busy_ns
            } else {
                a.total_ns
            };
            row.self_ns = row.self_ns.min(bound);
            row.max_depth = (a.max_depth >= 2).then_some(a.max_depth);
            row.avg_ns = mean(a.raw_total_ns, a.timed_calls);
            row.p50_ns = quantile(&a.hist_total, 50.0);
            row.p95_ns = quantile(&a.hist_total, 95.0);
            row.p99_ns = quantile(&a.hist_total, 99.0);
            // No completed call was timed (a future cancelled every time):
            // no duration to describe, so no percentile is claimed. Count
            // mode keeps its zeros, as every duration.
            let no_latency = tree.snap.mode != Mode::Count && a.timed_calls == 0;
            row.percentiles = Percentiles(
                (percentiles.iter())
                    .filter(|_| !no_latency)
                    .map(|&p| (percentile_label(p), quantile(&a.hist_total, p)))
                    .collect(),
            );
            if row.is_async() {
                row.busy_ns = Some(a.busy_ns);
                row.wait_ns = Some(a.total_ns.saturating_sub(a.busy_ns));
                row.polls = Some(a.polls);
                row.cancelled = Some(a.cancelled);
            }
            row.sampled =
                sampled_mode && a.timed_calls + a.timed_cancelled != a.calls + a.cancelled;
            row.alloc = incl.map(|_| b.figures(a.calls));
            row
        })
        .collect();
    out.sort_by(|a, b| {
        (b.total_ns.cmp(&a.total_ns))
            .then(b.calls.cmp(&a.calls))
            .then(a.name.cmp(&b.name))
    });
    out
}

pub(super) fn empty_row(name: &str, kind: FunctionKind) -> FunctionRow {
    FunctionRow {
        name: name.to_string(),
        kind,
        calls: 0,
        timed_calls: 0,
        total_ns: 0,
        self_ns: 0,
        avg_ns: 0,
        p50_ns: 0,
        p95_ns: 0,
        p99_ns: 0,
        percentiles: Percentiles::default(),
        busy_ns: None,
        wait_ns: None,
        polls: None,
        cancelled: None,
        sampled: false,
        max_depth: None,
        alloc: None,
        cpu: None,
    }
}
