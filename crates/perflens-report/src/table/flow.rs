//! The data-flow sections: channels, streams, futures and locks.

use super::*;

/// The data-flow sections that have rows, each after a blank line.
pub(super) fn flow_sections<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    if !report.channels.is_empty() {
        writeln!(w)?;
        channels_table(report, w)?;
    }
    if !report.locks.is_empty() {
        writeln!(w)?;
        locks_table(report, w)?;
    }
    if !report.streams.is_empty() {
        writeln!(w)?;
        streams_table(report, w)?;
    }
    if !report.futures.is_empty() {
        writeln!(w)?;
        futures_table(report, w)?;
    }
    Ok(())
}

/// The stream sites, by items: items, polls, how they ended, the time to
/// the first item and between items.
pub(super) fn streams_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = [
        "Stream",
        "Made",
        "Items",
        "Polls",
        "Pending",
        "Ended",
        "Dropped",
        "First item",
        "Interval p50",
        "p99",
        "max",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, report.streams.len());
    for row in &report.streams[..n] {
        let measured = |count: u64, ns: u64| match count {
            0 => "-".to_string(),
            _ => time_cell(report, ns, false),
        };
        grid.row(vec![
            truncate_left(&row.name, NAME_WIDTH),
            count(row.created),
            count(row.items),
            count(row.polls),
            count(row.pending_polls),
            count(row.ended),
            count(row.dropped),
            measured(row.first_item_count, row.first_item_mean_ns),
            measured(row.interval_count, row.interval_p50_ns),
            measured(row.interval_count, row.interval_p99_ns),
            measured(row.interval_count, row.interval_max_ns),
        ]);
    }
    grid.write(w)?;
    more(w, report.streams.len() - n, "streams")?;
    writeln!(
        w,
        "Streams: per perflens::stream! site, by items; First item: mean time from the stream's creation to its first item; Interval: between two items of one stream."
    )
}

/// The future sites, by wall time: how many completed or were dropped,
/// polls, busy and waiting time, wall time percentiles.
pub(super) fn futures_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = [
        "Future",
        "Completed",
        "Cancelled",
        "Polls",
        "Busy",
        "Wait",
        "Wall p50",
        "p99",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, report.futures.len());
    for row in &report.futures[..n] {
        let wall = |ns: u64| match row.completed {
            0 => "-".to_string(),
            _ => time_cell(report, ns, false),
        };
        grid.row(vec![
            truncate_left(&row.name, NAME_WIDTH),
            count(row.completed),
            count(row.cancelled),
            count(row.polls),
            time_cell(report, row.busy_ns, false),
            time_cell(report, row.wait_ns, false),
            wall(row.wall_p50_ns),
            wall(row.wall_p99_ns),
        ]);
    }
    grid.write(w)?;
    more(w, report.futures.len() - n, "futures")?;
    writeln!(
        w,
        "Futures: per perflens::future! site, by wall time; Busy: inside their polls; Wait: the rest of their lifetime (made to completed or dropped)."
    )
}

/// The lock sites, by total wait: acquisitions, contention, and the
/// wait and hold times' percentiles.
pub(super) fn locks_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = [
        "Lock",
        "Acquired",
        "Shared",
        "Contended",
        "Max waiters",
        "Wait",
        "Wait p50",
        "p99",
        "Hold p50",
        "p99",
        "Hold max",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, report.locks.len());
    for row in &report.locks[..n] {
        let wait = |ns: u64| match row.wait_count {
            0 => "-".to_string(),
            _ => time_cell(report, ns, false),
        };
        let hold = |ns: u64| match row.hold_count {
            0 => "-".to_string(),
            _ => time_cell(report, ns, false),
        };
        grid.row(vec![
            truncate_left(&row.name, NAME_WIDTH),
            count(row.acquisitions),
            count(row.shared),
            count(row.contended),
            count(row.max_waiters),
            time_cell(report, row.wait_ns, false),
            wait(row.wait_p50_ns),
            wait(row.wait_p99_ns),
            hold(row.hold_p50_ns),
            hold(row.hold_p99_ns),
            hold(row.hold_max_ns),
        ]);
    }
    grid.write(w)?;
    more(w, report.locks.len() - n, "locks")?;
    writeln!(
        w,
        "Locks: per perflens::sync lock site (label, or where it was made), by total wait; waits are of contended acquisitions (the first try failed)."
    )
}

/// A channel row's capacity: a number, `unbounded`, or `-` when no
/// channel made at the site is in the report (its capacity is not known).
pub(super) fn capacity_cell(row: &crate::ChannelRow) -> String {
    match (row.capacity_known, row.capacity) {
        (false, _) => "-".to_string(),
        (true, Some(c)) => count(c),
        (true, None) => "unbounded".to_string(),
    }
}

/// The channel sites, by messages sent: traffic, what is queued, waits
/// on either side, and the send-to-receive latency.
pub(super) fn channels_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = [
        "Channel",
        "Made",
        "Sent",
        "Received",
        "Queued",
        "Max queued",
        "Capacity",
        "Dropped",
        "Send wait",
        "Recv wait",
        "Latency p50",
        "p99",
        "Senders/receivers",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, report.channels.len());
    for row in &report.channels[..n] {
        let latency = |ns: u64| match row.latency_count {
            0 => "-".to_string(),
            _ => time_cell(report, ns, false),
        };
        grid.row(vec![
            truncate_left(&row.name, NAME_WIDTH),
            count(row.created),
            count(row.sent),
            count(row.received),
            count(row.queued),
            count(row.max_queued),
            capacity_cell(row),
            count(row.dropped),
            time_cell(report, row.send_wait_ns, false),
            time_cell(report, row.recv_wait_ns, false),
            latency(row.latency_p50_ns),
            latency(row.latency_p99_ns),
            format!("{}/{}", count(row.senders), count(row.receivers)),
        ]);
    }
    grid.write(w)?;
    more(w, report.channels.len() - n, "channels")?;
    writeln!(
        w,
        "Channels: per perflens::channel! site, by messages sent; Queued = sent - received - dropped with the channel; senders/receivers alive now."
    )
}
