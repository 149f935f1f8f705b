//! The CPU section: samples per function, and where kernel time went.

use super::*;

/// The sampling totals on one line, then (when anything was sampled and
/// there are rows) every function row by CPU self time, then inclusive
/// time; or one line saying why sampling was unavailable.
pub(super) fn cpu_section<W: Write>(
    report: &Report,
    cpu: &CpuSummary,
    w: &mut W,
) -> io::Result<()> {
    if let Some(reason) = cpu.unavailable_reason() {
        return match reason {
            "" => writeln!(w, "CPU sampling unavailable."),
            reason => writeln!(w, "CPU sampling unavailable: {reason}"),
        };
    }
    let outside = cpu.outside_percent().map_or(String::new(), |p| {
        format!("; {} outside instrumented functions", percent(p))
    });
    let dropped = match cpu.dropped {
        0 => "0 dropped".to_string(),
        n => format!("{} dropped (buffers full)", count(n)),
    };
    writeln!(
        w,
        "CPU sampling: {} samples, {} CPU at {} Hz ({}){outside}; {dropped}.",
        count(cpu.samples),
        duration(cpu.cpu_ns),
        count(u64::from(cpu.frequency_hz)),
        cpu.source,
    )?;
    kernel_lines(cpu, w)?;
    if cpu.samples == 0 || report.functions.is_empty() {
        return Ok(());
    }
    // Sorted by self CPU, so the self share comes first; the inclusive
    // share says how much ran under the function.
    let headers = [
        "Function", "Samples", "CPU self", "% self", "CPU incl", "% incl",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let mut rows: Vec<&FunctionRow> = report.functions.iter().collect();
    rows.sort_by(|a, b| {
        let figures = |r: &FunctionRow| r.cpu.map(|c| (c.ns, c.incl_ns));
        (figures(b).cmp(&figures(a))).then(a.name.cmp(&b.name))
    });
    let n = shown(report, rows.len());
    for row in &rows[..n] {
        grid.row(vec![
            truncate_left(&row.name, NAME_WIDTH),
            count_cell(row.cpu.map(|c| c.samples)),
            duration_cell(row.cpu.map(|c| c.ns)),
            percent_cell(row.cpu_self_percent_of(cpu.cpu_ns)),
            duration_cell(row.cpu.map(|c| c.incl_ns)),
            percent_cell(row.cpu_percent_of(cpu.cpu_ns)),
        ]);
    }
    grid.write(w)?;
    more(w, rows.len() - n, "functions")
}

/// Where the kernel time went, when the sampler said: attributed to the
/// functions that made the system calls, or a total of its own line (never
/// added to a function).
pub(super) fn kernel_lines<W: Write>(cpu: &CpuSummary, w: &mut W) -> io::Result<()> {
    let mode = match cpu.kernel {
        None => return Ok(()),
        Some(KernelTime::Attributed) => {
            return writeln!(
                w,
                "Kernel time: attributed to the calling function ({}, kernel included).",
                cpu.source
            );
        }
        Some(KernelTime::NotAttributed) => "not attributed (kernel excluded from the samples)",
        Some(KernelTime::Partly) => {
            "attributed on some threads, not on others (kernel excluded from their samples)"
        }
    };
    writeln!(w, "Kernel time: {mode}, shown as its own line.")?;
    writeln!(
        w,
        "Kernel time, not attributed: {} (thread CPU time no sample stands for: \
         kernel time, plus user time of any overflows the kernel merged).",
        duration(cpu.kernel_unattributed_ns.unwrap_or(0)),
    )
}
