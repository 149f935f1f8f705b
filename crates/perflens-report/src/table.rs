//! The terminal report: a header line, an overflow warning when anything
//! was lost, the timing table, the async table (only when there are
//! futures) and the hot paths.
//!
//! Durations are shown in human units, `-` where nothing was measured
//! (count mode), and `~` marks estimates scaled up from sampled calls.
//! [`Report::limit`] caps the rows of each table; the JSON report always
//! holds everything.

use std::io::{self, Write};

use crate::format::{count, duration, percent, truncate_left, width};
use crate::grid::Grid;
use crate::model::{FunctionRow, Report, ReportMode};
use crate::percentiles::percentile_label;

/// Widest function name before it is cut on the left with `…`.
const NAME_WIDTH: usize = 48;
/// Widest hot path (`a -> b -> c`) before its frames are shortened.
const PATH_WIDTH: usize = 72;

/// Writes the terminal report.
pub fn write_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    header(report, w)?;
    warning(report, w)?;
    if report.functions.is_empty() {
        writeln!(w, "[perflens] no instrumented calls were recorded.")?;
        return Ok(());
    }
    writeln!(w)?;
    timing_table(report, w)?;
    if report.functions.iter().any(FunctionRow::is_async) {
        writeln!(w)?;
        async_table(report, w)?;
    }
    if !report.paths.is_empty() {
        writeln!(w)?;
        paths_table(report, w)?;
    }
    if any_sampled(report) {
        writeln!(w)?;
        writeln!(
            w,
            "~ estimated: scaled up from 1 in {} timed calls.",
            report.sample_every
        )?;
    }
    Ok(())
}

/// True when some durations are estimates scaled up from sampled calls.
fn any_sampled(report: &Report) -> bool {
    report.functions.iter().any(|f| f.sampled)
}

fn header<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let mode = match report.mode {
        ReportMode::Sampled => format!("sampled 1/{}", report.sample_every),
        ReportMode::Timed => "timed".to_string(),
        ReportMode::Count => "count".to_string(),
    };
    let n = report.threads.len();
    let threads = if n == 1 {
        "1 thread".to_string()
    } else {
        format!("{n} threads")
    };
    let running = if report.finished { "" } else { " | running" };
    writeln!(
        w,
        "[perflens] {} | {mode} | {} | {threads}{running}",
        duration(report.elapsed_ns),
        report.clock
    )
}

fn warning<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let d = &report.dropped;
    let causes = [
        (
            d.overflow_calls,
            "found a thread's node table full and {were} counted under [overflow]",
            "PERFLENS_NODES",
        ),
        (
            d.overflow_paths,
            "found the path table full and {were} counted under [overflow]",
            "PERFLENS_PATHS",
        ),
        (
            d.dropped_frames,
            "{were} deeper than the shadow stack and {were} not recorded",
            "PERFLENS_STACK_DEPTH",
        ),
    ];
    for (n, what, var) in causes {
        if n > 0 {
            let (calls, were) = if n == 1 {
                ("call", "was")
            } else {
                ("calls", "were")
            };
            let what = what.replace("{were}", were);
            writeln!(
                w,
                "[perflens] warning: {} {calls} {what}; raise {var}.",
                count(n)
            )?;
        }
    }
    Ok(())
}

/// `a -> b -> c`, fitted into [`PATH_WIDTH`]: first each frame is cut to
/// its last two `::` segments, then to its last one, and only then is the
/// chain cut on the left. The segment lines below show the full names.
fn chain(frames: &[String]) -> String {
    let tail = |name: &str, keep: usize| -> String {
        let parts: Vec<&str> = name.split("::").collect();
        parts[parts.len().saturating_sub(keep)..].join("::")
    };
    let full = frames.join(" -> ");
    if width(&full) <= PATH_WIDTH {
        return full;
    }
    for keep in [2, 1] {
        let short: Vec<String> = frames.iter().map(|f| tail(f, keep)).collect();
        let short = short.join(" -> ");
        if width(&short) <= PATH_WIDTH {
            return short;
        }
    }
    let short: Vec<String> = frames.iter().map(|f| tail(f, 1)).collect();
    truncate_left(&short.join(" -> "), PATH_WIDTH)
}

/// A duration cell: `-` without timing, `~` prefix for estimates.
fn time_cell(report: &Report, ns: u64, estimate: bool) -> String {
    match (report.has_timing(), estimate) {
        (false, _) => "-".to_string(),
        (true, true) => format!("~{}", duration(ns)),
        (true, false) => duration(ns),
    }
}

fn shown(report: &Report, len: usize) -> usize {
    report.limit.map_or(len, |l| l.min(len))
}

fn more<W: Write>(w: &mut W, hidden: usize, what: &str) -> io::Result<()> {
    if hidden > 0 {
        writeln!(
            w,
            "… {hidden} more {what}; the JSON report (PERFLENS_JSON=<path>) has them all."
        )?;
    }
    Ok(())
}

fn percentile_headers(report: &Report, prefix: &str) -> Vec<String> {
    report
        .percentiles
        .iter()
        .map(|&p| format!("{prefix}{}", percentile_label(p)))
        .collect()
}

fn percentile_cells(report: &Report, row: &FunctionRow) -> Vec<String> {
    (report.percentiles.iter())
        .map(|&p| {
            time_cell(
                report,
                row.percentiles.get(&percentile_label(p)).unwrap_or(0),
                false,
            )
        })
        .collect()
}

fn timing_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let mut headers = vec!["Function".to_string(), "Calls".into(), "Avg".into()];
    headers.extend(percentile_headers(report, ""));
    headers.extend(["Total".into(), "Self".into(), "% Total".into()]);
    let mut grid = Grid::new(headers);
    let n = shown(report, report.functions.len());
    for row in &report.functions[..n] {
        let mut cells = vec![truncate_left(&row.name, NAME_WIDTH), count(row.calls)];
        cells.push(time_cell(report, row.avg_ns, false));
        cells.extend(percentile_cells(report, row));
        cells.push(time_cell(report, row.total_ns, row.sampled));
        cells.push(time_cell(report, row.self_ns, row.sampled));
        cells.push(match row.percent_of(report.elapsed_ns) {
            Some(p) if report.has_timing() => percent(p),
            _ => "-".to_string(),
        });
        grid.row(cells);
    }
    grid.write(w)?;
    more(w, report.functions.len() - n, "functions")
}

fn async_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let mut headers: Vec<String> = ["Async", "Calls", "Busy", "Wait", "Polls", "Cancelled"]
        .map(String::from)
        .into();
    headers.extend(percentile_headers(report, "wall "));
    let mut grid = Grid::new(headers);
    let rows: Vec<&FunctionRow> = report.functions.iter().filter(|f| f.is_async()).collect();
    let n = shown(report, rows.len());
    for row in &rows[..n] {
        let mut cells = vec![truncate_left(&row.name, NAME_WIDTH), count(row.calls)];
        cells.push(time_cell(report, row.busy_ns.unwrap_or(0), row.sampled));
        cells.push(time_cell(report, row.wait_ns.unwrap_or(0), row.sampled));
        cells.push(count(row.polls.unwrap_or(0)));
        cells.push(count(row.cancelled.unwrap_or(0)));
        cells.extend(percentile_cells(report, row));
        grid.row(cells);
    }
    grid.write(w)?;
    more(w, rows.len() - n, "async functions")
}

fn paths_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = ["Hot path", "Calls", "Total", "Self", "Self p50", "Self p99"].map(String::from);
    let mut grid = Grid::new(headers.into());
    let estimate = any_sampled(report);
    let n = shown(report, report.paths.len());
    for path in &report.paths[..n] {
        grid.row(vec![
            chain(&path.frames),
            count(path.calls),
            time_cell(report, path.total_ns, estimate),
        ]);
        for seg in &path.segments {
            grid.row(vec![
                format!("  {}", truncate_left(&seg.name, NAME_WIDTH)),
                count(seg.calls),
                time_cell(report, seg.total_ns, estimate),
                time_cell(report, seg.self_ns, estimate),
                time_cell(report, seg.self_p50_ns, false),
                time_cell(report, seg.self_p99_ns, false),
            ]);
        }
    }
    grid.write(w)?;
    more(w, report.paths.len() - n, "paths")
}
