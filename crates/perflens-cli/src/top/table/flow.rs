//! The Data flow tab's rows: channels and locks.

use super::*;

/// The Channels rows. Durations are `-` where no clock was read (count
/// mode), percentiles where no message's latency was measured, and the
/// capacity where it is not known.
pub(super) fn channels(report: &Report) -> Vec<RawRow> {
    let timed = report.has_timing();
    let time = |ns: u64| if timed { Raw::U(ns) } else { Raw::Missing };
    (report.channels.iter())
        .map(|c: &ChannelRow| {
            let latency = |ns: u64| {
                if timed && c.latency_count > 0 {
                    Raw::U(ns)
                } else {
                    Raw::Missing
                }
            };
            named(
                &c.name,
                vec![
                    Raw::Name,
                    Raw::U(c.sent),
                    Raw::U(c.received),
                    Raw::U(c.queued),
                    Raw::U(c.max_queued),
                    // `-` when no channel made at the site is in the
                    // report (its capacity is not known).
                    match (c.capacity_known, c.capacity) {
                        (false, _) => Raw::Missing,
                        (true, Some(cap)) => Raw::U(cap),
                        (true, None) => Raw::T("unbounded".into()),
                    },
                    Raw::U(c.dropped),
                    time(c.send_wait_ns),
                    time(c.recv_wait_ns),
                    latency(c.latency_p50_ns),
                    latency(c.latency_p99_ns),
                    Raw::U(c.senders),
                    Raw::U(c.receivers),
                    Raw::U(c.created),
                ],
            )
        })
        .collect()
}

/// The Locks rows. Durations are `-` where no clock was read (count
/// mode); the wait percentiles where no contended acquisition's wait was
/// measured, the hold ones where no hold was.
pub(super) fn locks(report: &Report) -> Vec<RawRow> {
    let timed = report.has_timing();
    let time = |ns: u64| if timed { Raw::U(ns) } else { Raw::Missing };
    (report.locks.iter())
        .map(|l: &LockRow| {
            let wait = |ns: u64| {
                if timed && l.wait_count > 0 {
                    Raw::U(ns)
                } else {
                    Raw::Missing
                }
            };
            let hold = |ns: u64| {
                if timed && l.hold_count > 0 {
                    Raw::U(ns)
                } else {
                    Raw::Missing
                }
            };
            named(
                &l.name,
                vec![
                    Raw::Name,
                    Raw::U(l.acquisitions),
                    Raw::U(l.contended),
                    Raw::U(l.shared),
                    time(l.wait_ns),
                    wait(l.wait_p50_ns),
                    wait(l.wait_p99_ns),
                    time(l.hold_ns),
                    hold(l.hold_p50_ns),
                    hold(l.hold_p99_ns),
                    hold(l.hold_max_ns),
                    Raw::U(l.max_waiters),
                ],
            )
        })
        .collect()
}
