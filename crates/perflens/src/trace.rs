//! Trace mode's settings from the environment, and the trace file written
//! when the session ends.

use crate::settings;
use perflens_core::RawSnapshot;
use perflens_core::trace::RawTrace;
use perflens_report::trace::{chrome, model::Timeline, pftrace};
use std::path::{Path, PathBuf};

/// The largest trace buffer.
const MAX_BUFFER: u64 = 16 << 30;

/// `PERFLENS_TRACE` (the file; overrides `trace`),
/// `PERFLENS_TRACE_BUFFER` (its buffer; overrides `buffer`) and
/// `PERFLENS_TRACE_SHORT_THREAD_MS` (overrides `short_thread_ns`). A bad
/// value is described on stderr and ignored.
pub(crate) fn apply_env(
    trace: &mut Option<PathBuf>,
    buffer: &mut Option<usize>,
    short_thread_ns: &mut u64,
) {
    if let Some(v) = settings::var("PERFLENS_TRACE_SHORT_THREAD_MS") {
        match perflens_report::trace::collapse::short_thread_ns(Some(&v)) {
            Ok(ns) => *short_thread_ns = ns,
            Err(e) => eprintln!("[perflens] {e} Ignored."),
        }
    }
    if let Some(path) = settings::var_os("PERFLENS_TRACE") {
        *trace = Some(PathBuf::from(path));
    }
    if let Some(v) = settings::var("PERFLENS_TRACE_BUFFER") {
        match parse_buffer(&v) {
            Some(bytes) => *buffer = Some(bytes),
            None => eprintln!(
                "[perflens] PERFLENS_TRACE_BUFFER={v} is not a size from 1MiB to 16GiB \
                 (a number of bytes, or with K, M or G); ignored."
            ),
        }
    }
}

/// A buffer size: bytes, or with a `K`, `M` or `G` suffix (powers of
/// 1024; `KiB`, `MB` and the like too), from 1 MiB to 16 GiB.
pub fn parse_buffer(v: &str) -> Option<usize> {
    let v = v.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    let bytes = n.checked_mul(1 << shift)?;
    let min = perflens_core::trace::MIN_BUFFER as u64;
    (min..=MAX_BUFFER)
        .contains(&bytes)
        .then(|| usize::try_from(bytes).ok())
        .flatten()
}

/// The program's name, for the trace's process.
fn program() -> String {
    (std::env::current_exe().ok())
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into())
}

/// Writes the trace of a session that ended to `path`, by its extension,
/// and says so (or why not) on stderr.
pub(crate) fn write(
    path: &Path,
    trace: Option<&RawTrace>,
    snap: &RawSnapshot,
    short_thread_ns: u64,
) {
    let shown = path.display();
    let Some(trace) = trace else {
        eprintln!("[perflens] trace: nothing recorded, {shown} not written");
        return;
    };
    let mut timeline = Timeline::new(trace, snap);
    timeline.collapse_short_threads(short_thread_ns);
    let (pid, program) = (std::process::id(), program());
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let pftrace = matches!(ext, "pftrace" | "perfetto-trace");
    if !pftrace && ext != "json" {
        eprintln!("[perflens] trace: {shown} is neither .json nor .pftrace: writing JSON");
    }
    let written = std::fs::File::create(path).and_then(|file| {
        if pftrace {
            pftrace::write_timeline(&timeline, pid, &program, file)
        } else {
            chrome::write_chrome_json(&timeline, pid, &program, file)
        }
    });
    match written {
        Ok(()) => {
            let dropped = match timeline.dropped() {
                0 => String::new(),
                n => format!(
                    ", {n} oldest events dropped (buffer {} MiB)",
                    timeline.buffer_bytes >> 20
                ),
            };
            let threads = timeline.threads.len();
            eprintln!(
                "[perflens] trace: {shown} ({} calls on {threads} thread{}{dropped})",
                timeline.slices(),
                if threads == 1 { "" } else { "s" }
            );
        }
        Err(e) => eprintln!("[perflens] trace: cannot write {shown}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_buffer;

    #[test]
    fn buffer_sizes() {
        assert_eq!(parse_buffer("64MiB"), Some(64 << 20));
        assert_eq!(parse_buffer("1M"), Some(1 << 20));
        assert_eq!(parse_buffer(" 2g "), Some(2 << 30));
        assert_eq!(parse_buffer("2048 KiB"), Some(2 << 20));
        assert_eq!(parse_buffer("1048576"), Some(1 << 20));
        // Out of range, or not a size.
        for bad in ["1K", "0", "17G", "64 MiBs", "M", "-1M", "1.5M", ""] {
            assert_eq!(parse_buffer(bad), None, "{bad}");
        }
    }
}
