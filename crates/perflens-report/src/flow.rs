//! The data-flow sections: one row per flow site (see
//! `perflens_core::flow` for what a site's node counts), summed over the
//! threads that used it.

use crate::model::{ChannelRow, FutureRow, LockRow, StreamRow};
use perflens_format::snapshot::{CallsiteKind, RawSnapshot};
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

/// Per row name, the callsites of `kind`, and the merged figures of
/// their nodes.
#[derive(Default)]
struct Site {
    calls: u64,
    timed: u64,
    total: u64,
    self_ns: u64,
    busy_ns: u64,
    polls: u64,
    cancelled: u64,
    timed_cancelled: u64,
    cancelled_ns: u64,
    made: [u64; 2],
    gone: [u64; 2],
    max: u64,
    capacity: u64,
    hist: Histogram,
    hist_self: Histogram,
}

/// The figures of the sites of `kind`, by row name.
fn sites(snap: &RawSnapshot, kind: FlowKind) -> BTreeMap<&str, Site> {
    let mut out: BTreeMap<&str, Site> = BTreeMap::new();
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
        let s = out.entry(name).or_default();
        // Saturating: a live block may hold any counts.
        s.calls = s.calls.saturating_add(n.calls);
        s.timed = s.timed.saturating_add(n.timed_calls);
        s.total = s.total.saturating_add(n.total_ns);
        s.self_ns = s.self_ns.saturating_add(n.self_ns);
        s.busy_ns = s.busy_ns.saturating_add(n.busy_ns);
        s.polls = s.polls.saturating_add(n.polls);
        s.cancelled = s.cancelled.saturating_add(n.cancelled);
        s.timed_cancelled = s.timed_cancelled.saturating_add(n.timed_cancelled);
        s.cancelled_ns = s.cancelled_ns.saturating_add(n.cancelled_ns);
        s.made[0] = s.made[0].wrapping_add(n.alloc_bytes);
        s.gone[0] = s.gone[0].wrapping_add(n.alloc_count);
        s.made[1] = s.made[1].wrapping_add(n.free_bytes);
        s.gone[1] = s.gone[1].wrapping_add(n.free_count);
        s.max = s.max.max(u64::from(n.max_depth));
        s.capacity = s.capacity.max(u64::from(n.capacity));
        s.hist.merge(&n.hist_total);
        if kind == FlowKind::Lock {
            s.hist_self.merge(&n.hist_self);
        }
    }
    out
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
    let mut rows: Vec<ChannelRow> = (sites(snap, FlowKind::Channel).into_iter())
        .map(|(name, s)| {
            let (sent, received, dropped) = (s.polls, s.calls, s.cancelled);
            ChannelRow {
                name: name.to_string(),
                created: s.timed_cancelled,
                // Endpoints are made and dropped on any thread: only the
                // sums over threads mean something.
                senders: s.made[0].saturating_sub(s.gone[0]),
                receivers: s.made[1].saturating_sub(s.gone[1]),
                sent,
                received,
                dropped,
                queued: sent.saturating_sub(received).saturating_sub(dropped),
                max_queued: s.max,
                // Stored as 1 + capacity; 0: unbounded, when a channel
                // was made here. With none made in this report (made
                // before the session), 0 says nothing.
                capacity: s.capacity.checked_sub(1).filter(|_| s.timed_cancelled != 0),
                capacity_known: s.timed_cancelled != 0,
                send_wait_ns: s.busy_ns,
                recv_wait_ns: s.self_ns,
                latency_count: s.timed,
                latency_mean_ns: mean(s.total, s.timed),
                latency_p50_ns: quantile(&s.hist, 50.0),
                latency_p99_ns: quantile(&s.hist, 99.0),
                latency_max_ns: quantile(&s.hist, 100.0),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.sent.cmp(&a.sent).then_with(|| a.name.cmp(&b.name)));
    rows
}

/// The Locks rows (see `perflens_core::flow` for a lock site's node), by
/// total wait descending, then acquisitions descending (then by name).
pub(crate) fn locks(snap: &RawSnapshot, quantile: &dyn Fn(&Histogram, f64) -> u64) -> Vec<LockRow> {
    let mut rows: Vec<LockRow> = (sites(snap, FlowKind::Lock).into_iter())
        .map(|(name, s)| {
            let waits = s.hist_self.count();
            let wait = |q: f64| {
                if waits == 0 {
                    0
                } else {
                    quantile(&s.hist_self, q)
                }
            };
            LockRow {
                name: name.to_string(),
                acquisitions: s.calls,
                shared: s.cancelled,
                contended: s.polls,
                max_waiters: s.max,
                hold_count: s.timed,
                hold_ns: s.total,
                hold_mean_ns: mean(s.total, s.timed),
                hold_p50_ns: quantile(&s.hist, 50.0),
                hold_p99_ns: quantile(&s.hist, 99.0),
                hold_max_ns: quantile(&s.hist, 100.0),
                wait_count: waits,
                wait_ns: s.self_ns,
                wait_mean_ns: mean(s.self_ns, waits),
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
    let mut rows: Vec<FutureRow> = (sites(snap, FlowKind::Future).into_iter())
        .map(|(name, s)| {
            let wall = s.total.saturating_add(s.cancelled_ns);
            let timed = s.timed != 0 || s.timed_cancelled != 0;
            FutureRow {
                name: name.to_string(),
                completed: s.calls,
                cancelled: s.cancelled,
                polls: s.polls,
                busy_ns: s.busy_ns,
                // Wall time of the timed futures, less their polls.
                wait_ns: if timed {
                    wall.saturating_sub(s.busy_ns)
                } else {
                    0
                },
                wall_ns: wall,
                wall_p50_ns: quantile(&s.hist, 50.0),
                wall_p99_ns: quantile(&s.hist, 99.0),
            }
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
    let mut rows: Vec<StreamRow> = (sites(snap, FlowKind::Stream).into_iter())
        .map(|(name, s)| {
            let intervals = s.hist.count();
            let interval = |q: f64| {
                if intervals == 0 {
                    0
                } else {
                    quantile(&s.hist, q)
                }
            };
            StreamRow {
                name: name.to_string(),
                created: s.gone[1],
                items: s.made[0],
                polls: s.polls,
                pending_polls: s.gone[0],
                ended: s.timed_cancelled,
                dropped: s.cancelled,
                first_item_count: s.made[1],
                first_item_mean_ns: mean(s.self_ns, s.made[1]),
                interval_count: intervals,
                interval_mean_ns: mean(s.total, intervals),
                interval_p50_ns: interval(50.0),
                interval_p99_ns: interval(99.0),
                interval_max_ns: interval(100.0),
            }
        })
        .collect();
    rows.sort_by(|a, b| b.items.cmp(&a.items).then_with(|| a.name.cmp(&b.name)));
    rows
}
