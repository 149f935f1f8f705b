//! The data-flow sections: one row per flow site, its figures summed over
//! the threads that used it (`perflens_format::flow` reads them from the
//! nodes).

use crate::model::{ChannelRow, FutureRow, LockRow, StreamRow};
use perflens_format::flow::{ChannelFigures, FutureFigures, LockFigures, StreamFigures};
use perflens_format::snapshot::{CallsiteKind, NodeSnapshot, RawSnapshot};
use perflens_format::{FlowKind, Histogram};
use std::collections::BTreeMap;

/// Whether `path` is a flow site's (its nodes are no calls).
pub(crate) fn flow_paths(snap: &RawSnapshot) -> Vec<bool> {
    (snap.paths.iter().enumerate())
        .map(|(i, p)| {
            i != 0
                && (snap.callsites.get(p.callsite as usize))
                    .is_some_and(|c| matches!(c.kind, CallsiteKind::Flow(_)))
        })
        .collect()
}

/// The summed figures of the sites of `kind` (see
/// [`perflens_format::flow`] for what a site's node holds), by row name.
fn sites<F: Default>(
    snap: &RawSnapshot,
    kind: FlowKind,
    add: impl Fn(&mut F, &NodeSnapshot),
) -> BTreeMap<&str, F> {
    let mut out: BTreeMap<&str, F> = BTreeMap::new();
    let name_of_path: Vec<Option<&str>> = (snap.paths.iter().enumerate())
        .map(|(i, p)| {
            let cs = snap.callsites.get(p.callsite as usize)?;
            (i != 0 && cs.kind == CallsiteKind::Flow(kind)).then_some(cs.name.as_str())
        })
        .collect();
    for n in snap.threads.iter().flat_map(|t| &t.nodes) {
        let Some(name) = name_of_path.get(n.path as usize).copied().flatten() else {
            continue;
        };
        add(out.entry(name).or_default(), n);
    }
    out
}

/// `quantile(h, q)`, or 0 for an empty histogram (a lock never waited
/// for, a stream with no timed interval).
fn quantile_or_zero(quantile: &dyn Fn(&Histogram, f64) -> u64, h: &Histogram, q: f64) -> u64 {
    if h.count() == 0 { 0 } else { quantile(h, q) }
}

/// `sum / n`, rounded; 0 when `n` is 0.
fn mean(sum: u64, n: u64) -> u64 {
    match n {
        0 => 0,
        n => ((u128::from(sum) + u128::from(n) / 2) / u128::from(n)) as u64,
    }
}

/// The Channels rows, by messages sent descending (then by name).
pub(crate) fn channels(
    snap: &RawSnapshot,
    quantile: &dyn Fn(&Histogram, f64) -> u64,
) -> Vec<ChannelRow> {
    let mut rows: Vec<ChannelRow> = (sites(snap, FlowKind::Channel, ChannelFigures::add))
        .into_iter()
        .map(|(name, f)| ChannelRow {
            name: name.to_string(),
            created: f.created,
            senders: f.senders(),
            receivers: f.receivers(),
            sent: f.sent,
            received: f.received,
            dropped: f.dropped,
            queued: f.queued(),
            max_queued: f.max_queued,
            capacity: f.capacity(),
            capacity_known: f.capacity_known(),
            send_wait_ns: f.send_wait_ns,
            recv_wait_ns: f.recv_wait_ns,
            latency_count: f.latency_count,
            latency_mean_ns: mean(f.latency_total_ns, f.latency_count),
            latency_p50_ns: quantile(&f.latency, 50.0),
            latency_p99_ns: quantile(&f.latency, 99.0),
            latency_max_ns: quantile(&f.latency, 100.0),
        })
        .collect();
    rows.sort_by(|a, b| b.sent.cmp(&a.sent).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// The Locks rows (see `perflens_format::flow` for a lock site's node), by
/// total wait descending, then acquisitions descending (then by name).
pub(crate) fn locks(snap: &RawSnapshot, quantile: &dyn Fn(&Histogram, f64) -> u64) -> Vec<LockRow> {
    let mut rows: Vec<LockRow> = (sites(snap, FlowKind::Lock, LockFigures::add).into_iter())
        .map(|(name, f)| {
            let waits = f.wait.count();
            let wait = |q: f64| quantile_or_zero(quantile, &f.wait, q);
            LockRow {
                name: name.to_string(),
                acquisitions: f.acquisitions,
                shared: f.shared,
                contended: f.contended,
                max_waiters: f.max_waiters,
                hold_count: f.hold_count,
                hold_ns: f.hold_ns,
                hold_mean_ns: mean(f.hold_ns, f.hold_count),
                hold_p50_ns: quantile(&f.hold, 50.0),
                hold_p99_ns: quantile(&f.hold, 99.0),
                hold_max_ns: quantile(&f.hold, 100.0),
                wait_count: waits,
                wait_ns: f.wait_ns,
                wait_mean_ns: mean(f.wait_ns, waits),
                wait_p50_ns: wait(50.0),
                wait_p99_ns: wait(99.0),
                wait_max_ns: wait(100.0),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.wait_ns.cmp(&a.wait_ns))
            .then_with(|| b.acquisitions.cmp(&a.acquisitions))
            .then_with(|| a.name.cmp(&b.name))
    });
    rows
}

/// The Futures rows (`perflens::future!`), by wall time descending (then
/// by name).
pub(crate) fn futures(
    snap: &RawSnapshot,
    quantile: &dyn Fn(&Histogram, f64) -> u64,
) -> Vec<FutureRow> {
    let mut rows: Vec<FutureRow> = (sites(snap, FlowKind::Future, FutureFigures::add))
        .into_iter()
        .map(|(name, f)| FutureRow {
            name: name.to_string(),
            completed: f.completed,
            cancelled: f.cancelled,
            polls: f.polls,
            busy_ns: f.busy_ns,
            wait_ns: f.wait_ns(),
            wall_ns: f.wall_ns(),
            wall_p50_ns: quantile(&f.wall, 50.0),
            wall_p99_ns: quantile(&f.wall, 99.0),
        })
        .collect();
    rows.sort_by(|a, b| b.wall_ns.cmp(&a.wall_ns).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// The Streams rows (`perflens::stream!`), by items descending (then by
/// name).
pub(crate) fn streams(
    snap: &RawSnapshot,
    quantile: &dyn Fn(&Histogram, f64) -> u64,
) -> Vec<StreamRow> {
    let mut rows: Vec<StreamRow> = (sites(snap, FlowKind::Stream, StreamFigures::add))
        .into_iter()
        .map(|(name, f)| {
            let intervals = f.interval.count();
            let interval = |q: f64| quantile_or_zero(quantile, &f.interval, q);
            StreamRow {
                name: name.to_string(),
                created: f.created,
                items: f.items,
                polls: f.polls,
                pending_polls: f.pending_polls,
                ended: f.ended,
                dropped: f.dropped,
                first_item_count: f.first_item_count,
                first_item_mean_ns: mean(f.first_item_ns, f.first_item_count),
                interval_count: intervals,
                interval_mean_ns: mean(f.interval_ns, intervals),
                interval_p50_ns: interval(50.0),
                interval_p99_ns: interval(99.0),
                interval_max_ns: interval(100.0),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.items.cmp(&a.items).then_with(|| a.name.cmp(&b.name)));
    rows
}
