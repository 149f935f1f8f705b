//! `perflens list` and `perflens snapshot`: live sessions in shared
//! memory (see `perflens-live`), read without touching the programs.

use crate::Failure;
use perflens_live::{LiveSession, State};
use perflens_report::ReportOptions;
use std::io::Write;

/// `perflens list [--clean]`.
pub(crate) fn list(args: &[String]) -> Result<(), Failure> {
    let mut clean = false;
    for a in args {
        match a.as_str() {
            "--clean" => clean = true,
            other => {
                return Err(Failure::Usage(format!(
                    "list: unexpected argument `{other}`"
                )));
            }
        }
    }
    let root = perflens_live::root().map_err(|e| Failure::Input(e.0))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if clean {
        for dir in perflens_live::clean(&root) {
            writeln!(out, "removed {}", dir.display()).map_err(Failure::Output)?;
        }
    }
    let sessions = perflens_live::list(&root);
    if sessions.is_empty() {
        writeln!(out, "no live sessions in {}", root.display()).map_err(Failure::Output)?;
        return Ok(());
    }
    let width = sessions
        .iter()
        .map(|s| s.program.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(7, 32);
    writeln!(
        out,
        "{:>8}  {:<width$}  {:<19}  {:>7}  {:<8}  ENTRY",
        "PID", "PROGRAM", "STARTED (UTC)", "THREADS", "STATE"
    )
    .map_err(Failure::Output)?;
    for s in &sessions {
        let program: String = s.program.chars().take(width).collect();
        writeln!(
            out,
            "{:>8}  {:<width$}  {:<19}  {:>7}  {:<8}  {}",
            s.pid,
            program,
            utc(s.start_unix_ns),
            s.threads,
            s.state.name(),
            s.dir.display()
        )
        .map_err(Failure::Output)?;
    }
    let stale = sessions.iter().filter(|s| s.state == State::Stale).count();
    if stale > 0 {
        writeln!(
            out,
            "{stale} stale (the program is gone without ending its session): `perflens list --clean` removes them"
        )
        .map_err(Failure::Output)?;
    }
    out.flush().map_err(Failure::Output)
}

/// `perflens snapshot [PID|PATH] [-o FILE.json]`.
pub(crate) fn snapshot(args: &[String]) -> Result<(), Failure> {
    let mut which: Option<&str> = None;
    let mut output: Option<&str> = None;
    let mut options = ReportOptions::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--wait-min" => {
                let v = it
                    .next()
                    .ok_or_else(|| Failure::Usage(format!("{a} needs a value")))?;
                options.wait_min_ns = crate::wait_min_arg(v)?;
            }
            "-o" | "--output" => {
                output = Some(
                    it.next()
                        .map(String::as_str)
                        .ok_or_else(|| Failure::Usage(format!("{a} needs a file")))?,
                );
            }
            flag if flag.starts_with('-') => {
                return Err(Failure::Usage(format!("unknown option `{flag}`")));
            }
            w if which.is_none() => which = Some(w),
            extra => return Err(Failure::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    let root = perflens_live::root().map_err(|e| Failure::Input(e.0))?;
    let dir = perflens_live::find(&root, which).map_err(|e| Failure::Input(e.0))?;
    let mut session = LiveSession::open(&dir).map_err(|e| Failure::Input(e.0))?;
    let live = session
        .raw_snapshot(true)
        .map_err(|e| Failure::Input(e.0))?;
    if let Some(missing) = live.missing() {
        eprintln!("perflens: the snapshot is incomplete: {missing}");
    }
    let report = live.report(&options);
    match output {
        Some(path) => {
            // Written next to the target and renamed: a reader of the
            // file never sees half a report.
            let tmp = format!("{path}.tmp{}", std::process::id());
            let written = std::fs::File::create(&tmp).and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                perflens_report::write_json(&report, &mut w)?;
                w.flush()
            });
            let done = written.and_then(|()| std::fs::rename(&tmp, path));
            if let Err(e) = done {
                let _ = std::fs::remove_file(&tmp);
                return Err(Failure::Input(format!("cannot write {path}: {e}")));
            }
            eprintln!(
                "perflens: snapshot of pid {} ({}, {}) written to {path}",
                session.pid(),
                session.program(),
                session.state().name()
            );
            Ok(())
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            perflens_report::write_json(&report, &mut out)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush())
                .map_err(Failure::Output)
        }
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a time in ns since the Unix epoch.
pub(crate) fn utc(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00");
        // 2026-11-24 07:37:30 UTC.
        assert_eq!(
            super::utc(1_795_505_850 * 1_000_000_000),
            "2026-11-24 07:37:30"
        );
        // A leap day.
        assert_eq!(
            super::utc(951_782_400 * 1_000_000_000),
            "2000-02-29 00:00:00"
        );
    }
}
