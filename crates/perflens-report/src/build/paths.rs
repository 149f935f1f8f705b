//! The hot paths (every chain whose last frame spent time itself) and the
//! thread rows.

use super::*;

/// The hot paths and, when allocations were counted, the allocation
/// paths.
///
/// A hot path ends at every function path that ran and is a leaf (no
/// function child of it ran) or spent time itself (`self_ns > 0`; in
/// count mode, where no time is known, every path that ran), so a
/// function that does its work itself and also calls measured children
/// leads as a leaf would: ending only at leaves hid a socket write behind
/// the few microseconds of its callees. An interior frame with no Self
/// (a future whose polls were all in its measured callees) would only
/// repeat a prefix with nothing spent at its end. The paths are ranked by
/// the last frame's exclusive time (count mode: by calls), then calls,
/// frames and id: where time is spent, not which frames wrap it (by
/// inclusive time every prefix would lead its own extensions, the
/// top-level frame first).
///
/// Allocation paths are every path that ran and allocated bytes itself,
/// leaf or not, by those bytes.
pub(super) fn hot_paths(
    tree: &Tree<'_>,
    merged: &[Merged],
    incl: Option<&Inclusive>,
    timing: bool,
    quantile: &dyn Fn(&Histogram, f64) -> u64,
) -> (Vec<HotPath>, Option<Vec<HotPath>>) {
    let snap = tree.snap;
    // A path is not a leaf when some function child of it ran, directly
    // or below await sites (which are transparent).
    let mut has_live_child = vec![false; snap.paths.len()];
    for (q, info) in snap.paths.iter().enumerate().skip(1) {
        let mut parent = info.parent as usize;
        if merged[q].ran() && tree.row_of_path[q].is_some() && parent != q {
            // Bounded: a malformed snapshot may hold a cycle.
            for _ in 0..snap.paths.len() {
                if parent == 0 || !tree.is_await.get(parent).copied().unwrap_or(false) {
                    break;
                }
                parent = snap.paths[parent].parent as usize;
            }
            if let Some(flag) = has_live_child.get_mut(parent) {
                *flag = true;
            }
        }
    }
    let ends_a_path = |p: usize| {
        merged[p].ran()
            && tree.row_of_path[p].is_some()
            && (!timing || !has_live_child[p] || merged[p].self_ns > 0)
    };
    let names = |p: usize| snap.callsites[snap.paths[p].callsite as usize].name.clone();
    // Each node's self quantiles, computed once: every path through a
    // node has the same segment there.
    let mut quantiles: Vec<Option<(u64, u64)>> = vec![None; snap.paths.len()];
    let mut chain = Vec::new();
    let mut path_of = |last: usize| -> Option<HotPath> {
        if !tree.chain_into(last, &mut chain) {
            return None;
        }
        let segments: Vec<Segment> = (chain.iter())
            .map(|&p| {
                let (self_p50_ns, self_p99_ns) = *quantiles[p].get_or_insert_with(|| {
                    let h = &merged[p].hist_self;
                    (quantile(h, 50.0), quantile(h, 99.0))
                });
                Segment {
                    name: names(p),
                    calls: merged[p].calls,
                    total_ns: merged[p].total_ns,
                    self_ns: merged[p].self_ns,
                    self_p50_ns,
                    self_p99_ns,
                    max_depth: (merged[p].max_depth >= 2).then_some(merged[p].max_depth),
                    alloc_bytes: incl.map(|_| merged[p].alloc_bytes),
                    alloc_incl_bytes: incl.map(|i| i.bytes[p]),
                }
            })
            .collect();
        let m = &merged[last];
        Some(HotPath {
            id: snap.paths[last].id,
            frames: segments.iter().map(|s| s.name.clone()).collect(),
            calls: m.calls,
            total_ns: m.total_ns,
            self_ns: m.self_ns,
            segments,
            alloc: incl.map(|i| AllocAcc::of_path(m, i, last).figures(m.calls)),
            cpu: None,
        })
    };
    // Sorted before the rows are built, in the order of
    // `Report::paths_by_time_spent` (Self, then what `HotPath::tie_break`
    // compares): moving thousands of built rows (strings, segments) while
    // sorting cost more than building them.
    let mut buf = Vec::new();
    let mut frames_of = |p: usize| -> Vec<&str> {
        if !tree.chain_into(p, &mut buf) {
            return Vec::new();
        }
        (buf.iter())
            .map(|&q| {
                snap.callsites[snap.paths[q].callsite as usize]
                    .name
                    .as_str()
            })
            .collect()
    };
    #[allow(clippy::type_complexity)]
    let mut order: Vec<(std::cmp::Reverse<(u64, u64)>, Vec<&str>, u64, usize)> =
        (1..snap.paths.len())
            .filter(|&p| ends_a_path(p))
            .map(|p| {
                let time = if timing { merged[p].self_ns } else { 0 };
                (
                    std::cmp::Reverse((time, merged[p].calls)),
                    frames_of(p),
                    snap.paths[p].id,
                    p,
                )
            })
            .collect();
    order.sort_unstable();
    let mut out = Vec::with_capacity(order.len());
    out.extend(order.into_iter().filter_map(|(.., p)| path_of(p)));
    let alloc_paths = incl.map(|_| {
        let mut paths: Vec<HotPath> = (1..snap.paths.len())
            .filter(|&p| merged[p].ran() && merged[p].alloc_bytes > 0)
            .filter_map(&mut path_of)
            .collect();
        paths.sort_by(|a, b| a.by_alloc(b));
        paths
    });
    (out, alloc_paths)
}

/// A thread's row; its allocation fields are `Some` when `alloc`. Its
/// calls leave out the paths that count no calls (`not_calls`: await and
/// flow sites).
pub(super) fn thread_row(
    t: &perflens_format::snapshot::ThreadSnapshot,
    alloc: bool,
    not_calls: &[bool],
) -> ThreadRow {
    let sum = |f: fn(&perflens_format::snapshot::NodeSnapshot) -> u64| {
        alloc.then(|| (t.nodes.iter().map(f)).fold(0u64, u64::saturating_add))
    };
    let unattributed = alloc.then(|| {
        (t.nodes.iter().filter(|n| n.path == 0))
            .map(|n| n.alloc_bytes)
            .fold(0u64, u64::saturating_add)
    });
    ThreadRow {
        index: t.index,
        tid: t.tid,
        name: t.name.clone(),
        exited: t.exited,
        nodes: t.nodes.len() as u64,
        node_capacity: t.node_capacity,
        calls: t
            .nodes
            .iter()
            .filter(|n| n.path != 0 && !not_calls.get(n.path as usize).copied().unwrap_or(false))
            .map(|n| n.calls)
            .sum(),
        overflow_calls: t.overflow_calls,
        dropped_frames: t.dropped_frames,
        alloc_bytes: sum(|n| n.alloc_bytes),
        alloc_count: sum(|n| n.alloc_count),
        free_bytes: sum(|n| n.free_bytes),
        free_count: sum(|n| n.free_count),
        live_bytes: alloc.then_some(t.live_bytes),
        peak_live_bytes: alloc.then_some(t.peak_live_bytes),
        unattributed_alloc_bytes: unattributed,
    }
}
