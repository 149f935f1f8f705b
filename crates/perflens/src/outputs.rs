//! Where a finished session's report goes: printed on stderr in the
//! chosen [`Format`], and written to the files the `PERFLENS_*` settings
//! name (JSON, HTML); and the report options those settings change. The
//! session (`Session::finish`), `#[perflens::main]`'s guard and the stop
//! signals all end here.

use crate::settings;
use perflens_report::{Report, ReportOptions};
use std::io::Write;

/// Terminal output at the end of `main`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Timing and hot-path tables (default).
    Table,
    /// The JSON report.
    Json,
    /// Nothing (use `PERFLENS_JSON` to keep a file).
    None,
}

/// What `#[perflens::main]` prints when the session ends: the report in
/// `format`, on stderr, or into the file `path` (`output_path = ".."`,
/// `PERFLENS_OUTPUT`) instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Printed {
    pub(crate) format: Format,
    /// Absolute (made so when the session started).
    pub(crate) path: Option<std::path::PathBuf>,
}

/// Prints the report as `to` says (the session wrote `PERFLENS_JSON`).
/// Failures are reported on stderr; they never panic.
pub(crate) fn emit(report: &Report, to: &Printed) {
    let format = to.format;
    if let (Some(path), false) = (&to.path, format == Format::None) {
        match write_file_atomically(path, |w| write_format(report, format, w)) {
            Ok(()) => eprintln!("[perflens] report written to {}", path.display()),
            Err(e) => eprintln!(
                "[perflens] could not write the report to {}: {e}",
                path.display()
            ),
        }
        return;
    }
    let stderr = std::io::stderr();
    let mut out = stderr.lock();
    let res = write_format(report, format, &mut out).and_then(|()| match format {
        // A blank line after the JSON on a terminal, as before.
        Format::Json => writeln!(out),
        _ => Ok(()),
    });
    if let Err(e) = res {
        let _ = writeln!(out, "[perflens] could not print the report: {e}");
    }
}

/// The report in `format` (nothing for `None`).
fn write_format<W: Write>(report: &Report, format: Format, w: &mut W) -> std::io::Result<()> {
    match format {
        Format::Table => perflens_report::write_table(report, w),
        Format::Json => perflens_report::write_json(report, w),
        Format::None => Ok(()),
    }
}

/// Writes a file through a temporary file beside it, renamed over it once
/// complete, so that the file holds a whole report or its old content,
/// never a part. Creates the missing parent directories first.
fn write_file_atomically(
    path: &std::path::Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        write(&mut w)?;
        w.flush()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes the files the environment asks for at the end of a session:
/// `PERFLENS_JSON`, then `PERFLENS_HTML` (with the timeline of `trace`,
/// the session's trace, when it is a Chrome JSON trace). Never panics.
pub(crate) fn write_outputs_env(report: &Report, trace: Option<&std::path::Path>) {
    write_json_env(report);
    write_html_env(report, trace);
    #[cfg(feature = "heap")]
    write_pprof_heap_env(report);
}

/// Writes the gzipped pprof heap profile to `PERFLENS_PPROF_HEAP`, if
/// set, and says so (or why not) on stderr. Never panics.
#[cfg(feature = "heap")]
fn write_pprof_heap_env(report: &Report) {
    let Some(path) = settings::var_os("PERFLENS_PPROF_HEAP") else {
        return;
    };
    let shown = path.to_string_lossy().into_owned();
    let Some(profile) = perflens_report::pprof::heap(report) else {
        eprintln!(
            "[perflens] PERFLENS_PPROF_HEAP={shown}: not written, the heap was not sampled \
             (PERFLENS_HEAP_RATE=0, or perflens's counting allocator is not the global allocator)"
        );
        return;
    };
    let written = std::fs::File::create(&path).and_then(|f| {
        let mut gz = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(f),
            flate2::Compression::default(),
        );
        gz.write_all(&profile)?;
        gz.finish()?.flush()
    });
    match written {
        Ok(()) => eprintln!("[perflens] pprof heap profile written to {shown}"),
        Err(e) => eprintln!("[perflens] could not write PERFLENS_PPROF_HEAP={shown}: {e}"),
    }
}

/// The largest trace embedded in the HTML report (a larger one is left
/// to Perfetto: a page holding it would not open quickly).
const HTML_TRACE_MAX: u64 = 64 << 20;

/// Writes the HTML report to `PERFLENS_HTML`, if set, and says so (or why
/// not) on stderr. Never panics.
fn write_html_env(report: &Report, trace: Option<&std::path::Path>) {
    let Some(path) = settings::var_os("PERFLENS_HTML") else {
        return;
    };
    let shown = path.to_string_lossy().into_owned();
    let trace_text = trace.and_then(|t| {
        let json = t.extension().is_some_and(|e| e == "json");
        let size = std::fs::metadata(t).map(|m| m.len()).unwrap_or(0);
        if !json {
            eprintln!(
                "[perflens] HTML report: {} is not a JSON trace, the page has no timeline",
                t.display()
            );
            return None;
        }
        if size > HTML_TRACE_MAX {
            eprintln!(
                "[perflens] HTML report: the trace ({} MiB) is too large to embed; open {} in Perfetto",
                size >> 20,
                t.display()
            );
            return None;
        }
        std::fs::read_to_string(t).ok()
    });
    let program = (std::env::current_exe().ok())
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into());
    let written = std::fs::File::create(&path).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        let title = format!("perflens: {program}");
        perflens_report::write_html(report, &title, trace_text.as_deref(), &mut w)?;
        w.flush()
    });
    match written {
        Ok(()) => eprintln!("[perflens] HTML report written to {shown}"),
        Err(e) => eprintln!("[perflens] could not write PERFLENS_HTML={shown}: {e}"),
    }
}

/// Writes the JSON report to `PERFLENS_JSON`, if set, and says so (or
/// why not) on stderr. Never panics.
pub(crate) fn write_json_env(report: &Report) {
    let Some(path) = settings::var_os("PERFLENS_JSON") else {
        return;
    };
    let stderr = std::io::stderr();
    let mut out = stderr.lock();
    let written = std::fs::File::create(&path).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        perflens_report::write_json(report, &mut w)?;
        w.flush()
    });
    match written {
        Ok(()) => {
            let _ = writeln!(
                out,
                "[perflens] JSON report written to {}",
                path.to_string_lossy()
            );
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "[perflens] could not write PERFLENS_JSON={}: {e}",
                path.to_string_lossy()
            );
        }
    }
}

/// Applies `PERFLENS_PERCENTILES`, `PERFLENS_LIMIT` and
/// `PERFLENS_WAIT_MIN`.
pub(crate) fn apply_report_env(options: &mut ReportOptions) {
    // An empty variable is unset.
    let var = settings::var;
    if let Some(v) = var("PERFLENS_PERCENTILES") {
        let parsed: Result<Vec<f64>, _> = v
            .split(',')
            .map(|p| p.trim().trim_start_matches('p').parse::<f64>())
            .collect();
        match parsed {
            Ok(p) if !p.is_empty() && p.iter().all(|x| *x > 0.0 && *x <= 100.0) => {
                options.percentiles = p
            }
            _ => eprintln!(
                "[perflens] PERFLENS_PERCENTILES={v} is not a comma-separated list of numbers in (0, 100]; ignored."
            ),
        }
    }
    if let Some(v) = var("PERFLENS_LIMIT") {
        match v.trim().parse::<usize>() {
            // 0: every row, as `limit = 0` (and hotpath's `HOTPATH_LIMIT=0`).
            Ok(0) => options.limit = None,
            Ok(n) => options.limit = Some(n),
            Err(_) => eprintln!("[perflens] PERFLENS_LIMIT={v} is not a whole number; ignored."),
        }
    }
    if let Some(v) = var("PERFLENS_WAIT_MIN") {
        match perflens_report::parse_wait_min(&v) {
            Some(ns) => options.wait_min_ns = ns,
            None => eprintln!(
                "[perflens] PERFLENS_WAIT_MIN={v} is not a duration (500us, 1ms, 2s, 0; a bare number is ms); ignored."
            ),
        }
    }
}
