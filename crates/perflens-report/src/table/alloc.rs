//! The allocation sections: functions by bytes, allocation paths, and
//! threads.

use super::*;

/// Functions by inclusive bytes: every function row, including those that
/// allocated nothing.
pub(super) fn alloc_table<W: Write>(
    report: &Report,
    totals: &AllocTotals,
    w: &mut W,
) -> io::Result<()> {
    let headers = [
        "Allocations",
        "Calls",
        "Avg/call",
        "p95/call",
        "Bytes (self)",
        "Bytes (incl)",
        "Count (self)",
        "Freed",
        "% Total",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let mut rows: Vec<&FunctionRow> = report.functions.iter().collect();
    rows.sort_by(|a, b| {
        let incl = |r: &FunctionRow| r.alloc.map(|a| a.incl_bytes);
        (incl(b).cmp(&incl(a)))
            .then(b.calls.cmp(&a.calls))
            .then(a.name.cmp(&b.name))
    });
    let n = shown(report, rows.len());
    for row in &rows[..n] {
        grid.row(vec![
            truncate_left(&row.name, NAME_WIDTH),
            count(row.calls),
            bytes_cell(row.alloc.map(|a| a.avg_bytes)),
            bytes_cell(row.alloc.map(|a| a.p95_bytes)),
            bytes_cell(row.alloc.map(|a| a.bytes)),
            bytes_cell(row.alloc.map(|a| a.incl_bytes)),
            count_cell(row.alloc.map(|a| a.count)),
            bytes_cell(row.alloc.map(|a| a.free_bytes)),
            percent_cell(row.alloc_percent_of(totals.total_bytes)),
        ]);
    }
    grid.write(w)?;
    more(w, rows.len() - n, "functions")
}

/// Allocation paths by the bytes their last frame allocated itself, leaf
/// or interior ([`Report::alloc_paths`]), each followed by its frames'
/// exclusive and inclusive bytes. A report without `alloc_paths` (read
/// from older JSON) shows its hot paths that allocated, by the same key.
pub(super) fn alloc_paths_table<W: Write>(
    report: &Report,
    totals: &AllocTotals,
    w: &mut W,
) -> io::Result<()> {
    let headers = [
        "Allocation path (by last frame's self bytes)",
        "Calls",
        "Avg/call",
        "p95/call",
        "Bytes (self)",
        "% Self",
        "Bytes (incl)",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let paths: Vec<&HotPath> = match &report.alloc_paths {
        Some(paths) => paths.iter().collect(),
        None => {
            let mut paths: Vec<&HotPath> = (report.paths.iter())
                .filter(|p| p.alloc.is_some_and(|a| a.bytes > 0))
                .collect();
            paths.sort_by(|a, b| a.by_alloc(b));
            paths
        }
    };
    let n = shown(report, paths.len());
    for path in &paths[..n] {
        grid.row(vec![
            chain(&path.frames, ALLOC_PATH_WIDTH),
            count(path.calls),
            bytes_cell(path.alloc.map(|a| a.avg_bytes)),
            bytes_cell(path.alloc.map(|a| a.p95_bytes)),
            bytes_cell(path.alloc.map(|a| a.bytes)),
            percent_cell(path.alloc_self_percent_of(totals.total_bytes)),
            bytes_cell(path.alloc.map(|a| a.incl_bytes)),
        ]);
        for seg in &path.segments {
            grid.row(vec![
                format!("  {}", truncate_left(&seg.name, ALLOC_PATH_WIDTH - 2)),
                count(seg.calls),
                String::new(),
                String::new(),
                bytes_cell(seg.alloc_bytes),
                String::new(),
                bytes_cell(seg.alloc_incl_bytes),
            ]);
        }
    }
    grid.write(w)?;
    more(w, paths.len() - n, "paths that allocated")?;
    writeln!(
        w,
        "Paths by the last frame's Bytes (self), at any depth; % Self: its share of all \
         bytes allocated (rows add up to at most 100%); Avg/call, p95/call: inclusive, \
         what one call allocated while it ran (tasks it spawned are in Bytes (incl) only)."
    )
}

/// `main`, `#2` for an unnamed thread, with ` (exited)` when it had.
pub(super) fn thread_label(t: &ThreadRow) -> String {
    let name = t.name.clone().unwrap_or_else(|| format!("#{}", t.index));
    let name = truncate_left(&name, NAME_WIDTH);
    if t.exited {
        format!("{name} (exited)")
    } else {
        name
    }
}

/// Per thread allocated, freed, live and peak bytes, then the session's
/// totals, and what the session peak's resolution means.
pub(super) fn threads_alloc_table<W: Write>(
    report: &Report,
    totals: &AllocTotals,
    w: &mut W,
) -> io::Result<()> {
    let headers = [
        "Thread",
        "Allocated",
        "Allocs",
        "Freed",
        "Frees",
        "Live",
        "Peak live",
        "Outside measured functions",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, report.threads.len());
    for t in &report.threads[..n] {
        grid.row(vec![
            thread_label(t),
            bytes_cell(t.alloc_bytes),
            count_cell(t.alloc_count),
            bytes_cell(t.free_bytes),
            count_cell(t.free_count),
            t.live_bytes.map_or_else(|| "-".to_string(), signed_bytes),
            bytes_cell(t.peak_live_bytes),
            bytes_cell(t.unattributed_alloc_bytes),
        ]);
    }
    let sum = |f: fn(&ThreadRow) -> Option<u64>| {
        (report.threads.iter().filter_map(f)).fold(0u64, u64::saturating_add)
    };
    grid.row(vec![
        "all threads".to_string(),
        bytes(totals.total_bytes),
        count(totals.total_count),
        bytes(totals.free_bytes),
        count(sum(|t| t.free_count)),
        signed_bytes(totals.live_bytes),
        bytes(totals.peak_live_bytes),
        bytes(sum(|t| t.unattributed_alloc_bytes)),
    ]);
    grid.write(w)?;
    more(w, report.threads.len() - n, "threads")?;
    if totals.peak_resolution_bytes > 0 {
        writeln!(
            w,
            "The session's peak is read in steps of {} per thread: it may be low by up to \
             that much per allocating thread.",
            bytes(totals.peak_resolution_bytes)
        )?;
    }
    if report.threads.iter().any(|t| t.live_bytes < Some(0)) {
        writeln!(
            w,
            "Negative live: the thread freed memory allocated by another thread or before \
             the session. A thread's peak live counts from its lowest point."
        )?;
    }
    Ok(())
}
