//! The terminal report: a header line, an overflow warning when anything
//! was lost, the timing table, the async table (only when there are
//! futures), the await sites that waited (only when there are any: see
//! [`Report::waits`]) and the hot paths; then, when CPU samples were added, the CPU
//! section: a line with the sampling totals and the functions by CPU self
//! time (or one line saying why sampling was unavailable); then, when
//! allocations were counted, the allocation section: functions by
//! inclusive bytes, allocation paths by the bytes their last frame
//! allocated itself (interior frames included), and a table of threads
//! ending with the session's totals; then, when the heap was sampled,
//! the heap section: what is in use by function and by path ("Still
//! live at exit" in a finished report).
//!
//! Durations are shown in human units, `-` where nothing was measured
//! (count mode), and `~` marks estimates scaled up from sampled calls.
//! Byte sizes are shown in binary units (B, KiB, MiB, GiB). [`Report::limit`]
//! caps the rows of each table; the JSON report always holds everything,
//! with exact integers.

use std::io::{self, Write};

use crate::format::{bytes, count, duration, percent, signed_bytes, truncate_left, width};
use crate::grid::Grid;
use crate::model::{
    AllocTotals, CpuSummary, FunctionRow, HotPath, KernelTime, Report, ReportMode, ThreadRow,
    WaitRow,
};
use crate::percentiles::percentile_label;

mod alloc;
mod cpu;
mod flow;
mod heap;

use alloc::{alloc_paths_table, alloc_table, threads_alloc_table};
use cpu::cpu_section;
use flow::flow_sections;
use heap::heap_section;

/// Widest function name before it is cut on the left with `…`.
const NAME_WIDTH: usize = 48;
/// Widest hot path (`a -> b -> c`) before its frames are shortened.
const PATH_WIDTH: usize = 72;
/// Widest awaited expression in the Waits table.
const EXPR_WIDTH: usize = 40;
/// Measured children named in a Waits row before `+N more`.
const CHILDREN_SHOWN: usize = 3;
/// What the Waits table says of a site whose awaits ran no measured code.
pub(crate) const UNINSTRUMENTED: &str =
    "uninstrumented: measure the awaited function (#[perflens::measure])";

/// Widest hot path in the allocation table, whose seven columns fit in
/// 120 columns with it.
const ALLOC_PATH_WIDTH: usize = 44;

/// Writes the terminal report.
pub fn write_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    header(report, w)?;
    warning(report, w)?;
    if report.functions.is_empty() {
        writeln!(w, "[perflens] no instrumented calls were recorded.")?;
        flow_sections(report, w)?;
        if let Some(cpu) = &report.cpu {
            writeln!(w)?;
            cpu_section(report, cpu, w)?;
        }
        if let Some(totals) = &report.alloc {
            writeln!(w)?;
            threads_alloc_table(report, totals, w)?;
        }
        if let Some(heap) = &report.heap {
            writeln!(w)?;
            heap_section(report, heap, w)?;
        }
        return Ok(());
    }
    writeln!(w)?;
    timing_table(report, w)?;
    if report.functions.iter().any(FunctionRow::is_async) {
        writeln!(w)?;
        async_table(report, w)?;
    }
    if !report.waits.is_empty() {
        writeln!(w)?;
        waits_table(report, w)?;
    }
    flow_sections(report, w)?;
    if !report.paths.is_empty() {
        writeln!(w)?;
        paths_table(report, w)?;
    }
    if any_sampled(report) {
        writeln!(w)?;
        writeln!(w, "{}", sampled_footnote(report))?;
    }
    if let Some(cpu) = &report.cpu {
        writeln!(w)?;
        cpu_section(report, cpu, w)?;
    }
    if let Some(totals) = &report.alloc {
        writeln!(w)?;
        alloc_table(report, totals, w)?;
        let any = |paths: &[HotPath]| paths.iter().any(|p| p.alloc.is_some_and(|a| a.bytes > 0));
        if report
            .alloc_paths
            .as_deref()
            .map_or(any(&report.paths), any)
        {
            writeln!(w)?;
            alloc_paths_table(report, totals, w)?;
        }
        writeln!(w)?;
        threads_alloc_table(report, totals, w)?;
    }
    if let Some(heap) = &report.heap {
        writeln!(w)?;
        heap_section(report, heap, w)?;
    }
    Ok(())
}

/// What `~` and `timed/calls` mean.
fn sampled_footnote(report: &Report) -> String {
    let warmup = match report.sample_warmup {
        0 => String::new(),
        1 => "the first call of each path, then ".to_string(),
        n => format!(
            "the first {} calls of each path, then ",
            count(u64::from(n))
        ),
    };
    format!(
        "~ estimated: scaled up from the timed calls ({warmup}1 in {}); Calls shows timed/all where they differ.",
        report.sample_every
    )
}

/// True when some durations are estimates scaled up from sampled calls.
fn any_sampled(report: &Report) -> bool {
    report.functions.iter().any(|f| f.sampled)
}

fn header<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let mode = match report.mode {
        ReportMode::Sampled if report.sample_warmup > 0 => format!(
            "sampled 1/{} after {} calls per path",
            report.sample_every,
            count(u64::from(report.sample_warmup))
        ),
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
            "raise PERFLENS_NODES",
        ),
        (
            d.overflow_paths,
            "found the path table full and {were} counted under [overflow]",
            "raise PERFLENS_PATHS",
        ),
        (
            d.dropped_frames,
            "{were} deeper than the shadow stack and {were} not recorded",
            "raise PERFLENS_STACK_DEPTH",
        ),
        (
            d.unrecorded_calls,
            "{were} made on threads that could get no memory for their call tree \
             (address space exhausted) and {were} not recorded",
            "check `ulimit -v`, or lower PERFLENS_NODES",
        ),
    ];
    for (n, what, advice) in causes {
        if n > 0 {
            let (calls, were) = if n == 1 {
                ("call", "was")
            } else {
                ("calls", "were")
            };
            let what = what.replace("{were}", were);
            writeln!(
                w,
                "[perflens] warning: {} {calls} {what}; {advice}.",
                count(n)
            )?;
        }
    }
    Ok(())
}

/// The parts of a row name between its `::` separators, leaving those
/// inside `<...>` alone: `app::<a::T as fmt::Display>::fmt` is `app`,
/// `<a::T as fmt::Display>` and `fmt`.
fn name_parts(name: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                parts.push(&name[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&name[start..]);
    parts
}

/// Each frame cut to its last `keep` parts, or to more where fewer would
/// make two distinct functions of the chain read the same
/// (`A::apply -> B::apply`, never `apply -> apply`).
fn distinct_tails(frames: &[String], keep: usize) -> Vec<String> {
    let parts: Vec<Vec<&str>> = frames.iter().map(|f| name_parts(f)).collect();
    let mut kept: Vec<usize> = parts.iter().map(|p| keep.min(p.len())).collect();
    loop {
        let short: Vec<String> = (parts.iter().zip(&kept))
            .map(|(p, &k)| p[p.len() - k..].join("::"))
            .collect();
        let mut grown = false;
        for i in 0..frames.len() {
            let clash = (0..frames.len()).any(|j| frames[j] != frames[i] && short[j] == short[i]);
            if clash && kept[i] < parts[i].len() {
                kept[i] += 1;
                grown = true;
            }
        }
        if !grown {
            return short;
        }
    }
}

/// `a -> b -> c`, fitted into `max` columns: first each frame is cut to
/// its last two `::` segments, then to its last one (but never so far that
/// two distinct functions of the chain read the same), and only then is
/// the chain cut on the left. The segment lines below show the full names.
fn chain(frames: &[String], max: usize) -> String {
    let full = frames.join(" -> ");
    if width(&full) <= max {
        return full;
    }
    for keep in [2, 1] {
        let short = distinct_tails(frames, keep).join(" -> ");
        if width(&short) <= max {
            return short;
        }
    }
    truncate_left(&distinct_tails(frames, 1).join(" -> "), max)
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

/// The row's percentile cells: `-` when no completed call was timed (a
/// future cancelled every time has no latency, not a 0 ns one).
fn percentile_cells(report: &Report, row: &FunctionRow) -> Vec<String> {
    (report.percentiles.iter())
        .map(|&p| match row.percentiles.get(&percentile_label(p)) {
            Some(ns) if row.has_latency() || !report.has_timing() => time_cell(report, ns, false),
            _ => "-".to_string(),
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
        let mut cells = vec![
            with_depth(truncate_left(&row.name, NAME_WIDTH), row.max_depth),
            calls_cell(row),
        ];
        cells.push(match row.has_latency() {
            true => time_cell(report, row.avg_ns, false),
            false => "-".to_string(),
        });
        cells.extend(percentile_cells(report, row));
        cells.push(time_cell(report, row.total_ns, row.sampled));
        cells.push(time_cell(report, row.self_ns, row.sampled));
        cells.push(match row.share_of(report.elapsed_ns) {
            Some(p) if report.has_timing() => percent(p),
            _ => "-".to_string(),
        });
        grid.row(cells);
    }
    grid.write(w)?;
    more(w, report.functions.len() - n, "functions")?;
    let shown = &report.functions[..n];
    if shown.iter().any(|r| r.max_depth.is_some()) {
        writeln!(
            w,
            "↻ N: recursive, N frames deep at most; Total counts the outermost frames once."
        )?;
    }
    if report.has_timing() && shown.iter().any(FunctionRow::is_async) {
        writeln!(
            w,
            "Async rows: Total is wall time (creation to completion), which overlapping futures \
             add up past the session; their % Total is busy time (inside poll)."
        )?;
    }
    Ok(())
}

/// A row name with its recursion mark, if any.
fn with_depth(name: String, max_depth: Option<u32>) -> String {
    match max_depth {
        Some(d) => format!("{name} ↻{}", count(u64::from(d))),
        None => name,
    }
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

/// `s` cut to at most `max` columns on the right, the cut marked `…`.
fn truncate_right(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let keep: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{keep}…")
}

/// A Waits row's last cell: what ran inside its awaits.
fn measured_inside(row: &WaitRow) -> String {
    if row.uninstrumented {
        return UNINSTRUMENTED.to_string();
    }
    if row.measured_children.is_empty() {
        return format!("measured code, {}", duration(row.measured_ns));
    }
    let short = distinct_tails(&row.measured_children, 1);
    let mut cell = short[..short.len().min(CHILDREN_SHOWN)].join(", ");
    if short.len() > CHILDREN_SHOWN {
        cell.push_str(&format!(", +{} more", short.len() - CHILDREN_SHOWN));
    }
    cell
}

/// The await sites that waited (the report's order: by total wait,
/// cancelled awaits' included; count mode: by count), what ran inside
/// them, and a footnote on what is listed. The completed awaits (Count,
/// their Wait, p50, p99) and the cancelled ones (Cancelled, their
/// Cancelled wait) have columns of their own, so that each figure
/// describes one set of awaits (see [`WaitRow`]); the times of an empty
/// set are `-`.
fn waits_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = [
        "Await",
        "Expr",
        "Count",
        "Wait",
        "p50",
        "p99",
        "Cancelled",
        "Cancelled wait",
        "Measured inside",
    ];
    let mut grid = Grid::new(headers.map(String::from).into()).left(&[1, 8]);
    let n = shown(report, report.waits.len());
    for row in &report.waits[..n] {
        let completed = row.completed();
        let of = |awaits: u64, ns: u64| match awaits {
            0 => "-".to_string(),
            _ => time_cell(report, ns, false),
        };
        grid.row(vec![
            truncate_left(&row.site, NAME_WIDTH),
            truncate_right(&row.expr, EXPR_WIDTH),
            count(completed),
            of(completed, row.completed_wait_ns()),
            of(completed, row.p50_ns),
            of(completed, row.p99_ns),
            count(row.cancelled),
            of(row.cancelled, row.cancelled_wait_ns),
            measured_inside(row),
        ]);
    }
    grid.write(w)?;
    more(w, report.waits.len() - n, "await sites")?;
    let what = match (report.has_timing(), report.wait_min_ns) {
        (false, _) => "no clock: wait times not measured; sites by count".to_string(),
        (true, Some(min)) => format!(
            "waits ≥ {} in total (PERFLENS_WAIT_MIN), by total wait",
            duration(min)
        ),
        (true, None) => "by total wait".to_string(),
    };
    writeln!(
        w,
        "Await sites: {what}; awaits inside macros and nested async blocks are not sites."
    )?;
    writeln!(
        w,
        "Count, Wait, p50, p99: the completed awaits; Cancelled: those dropped while suspended (a select! branch that lost) and what they had waited."
    )
}

/// Hot paths by the time spent in their last frame, at any depth
/// ([`Report::paths_by_time_spent`]), each followed by its frames. A
/// path's Calls, Self and Total are its last frame's.
fn paths_table<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let headers = ["Hot path", "Calls", "Self", "Total", "Self p50", "Self p99"].map(String::from);
    let mut grid = Grid::new(headers.into());
    let estimate = any_sampled(report);
    let paths = report.paths_by_time_spent();
    let n = shown(report, paths.len());
    for path in &paths[..n] {
        grid.row(vec![
            chain(&path.frames, PATH_WIDTH),
            count(path.calls),
            time_cell(report, path.self_ns, estimate),
            time_cell(report, path.total_ns, estimate),
        ]);
        for seg in &path.segments {
            // A node with no completed call (a future cancelled every
            // time) has no per-call self time to describe.
            let per_call = |ns: u64| match seg.calls {
                0 if report.has_timing() => "-".to_string(),
                _ => time_cell(report, ns, false),
            };
            grid.row(vec![
                format!(
                    "  {}",
                    with_depth(truncate_left(&seg.name, NAME_WIDTH), seg.max_depth)
                ),
                count(seg.calls),
                time_cell(report, seg.self_ns, estimate),
                time_cell(report, seg.total_ns, estimate),
                per_call(seg.self_p50_ns),
                per_call(seg.self_p99_ns),
            ]);
        }
    }
    grid.write(w)?;
    more(w, paths.len() - n, "paths")?;
    if report.has_timing() {
        let wait = match report.functions.iter().any(FunctionRow::is_async) {
            true => "; a future's waiting is its Wait above",
            false => "",
        };
        writeln!(
            w,
            "Hot paths by the last frame's Self (time spent in it; futures: inside poll), \
             not by Total (wall time){wait}."
        )?;
    }
    Ok(())
}

/// A byte cell of an optional field (`-` when allocations were not
/// counted, which a report with [`Report::alloc`] never has).
fn bytes_cell(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), bytes)
}

/// Completed calls, as `timed/all` when sampled timing timed only some.
fn calls_cell(row: &FunctionRow) -> String {
    if row.sampled && row.timed_calls != row.calls {
        format!("{}/{}", count(row.timed_calls), count(row.calls))
    } else {
        count(row.calls)
    }
}

fn count_cell(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), count)
}

fn duration_cell(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), duration)
}

/// A percentage cell of an optional figure (`-` when absent).
fn percent_cell(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_string(), percent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(frames: &[&str]) -> Vec<String> {
        frames.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn name_parts_leave_trait_impls_whole() {
        assert_eq!(
            name_parts("app::<a::T as fmt::Display>::fmt"),
            ["app", "<a::T as fmt::Display>", "fmt"]
        );
        assert_eq!(name_parts("label"), ["label"]);
    }

    #[test]
    fn shortened_frames_keep_distinct_functions_distinct() {
        let frames = names(&[
            "app::<a::T as fmt::Display>::fmt",
            "app::<a::T as fmt::Debug>::fmt",
            "x::y::Db::get",
            "x::z::Db::get",
            "x::helper",
        ]);
        assert_eq!(
            distinct_tails(&frames, 1),
            [
                "<a::T as fmt::Display>::fmt",
                "<a::T as fmt::Debug>::fmt",
                "y::Db::get",
                "z::Db::get",
                "helper",
            ]
        );
        // The same function twice (an expanded recursion) is no clash.
        let frames = names(&["m::fib", "m::fib"]);
        assert_eq!(chain(&frames, 10), "fib -> fib");
    }
}
