//! A report when the program is stopped, and a JSON report that is
//! never far behind.
//!
//! A server stopped with SIGTERM (systemd, `docker stop`) or SIGINT
//! (Ctrl-C) never returns from `main`, so `#[perflens::main]` would print
//! nothing. When either signal still has its default action at session
//! start, the session catches it: the handler only writes the signal's
//! number into a pipe (async-signal-safe), and a thread of the profiler's
//! own, blocked on that pipe, finishes the session and writes every
//! configured output (table, `PERFLENS_JSON`, pprof and the rest) as
//! `main` returning would. It then restores the default action and sends
//! the signal again, so the process still dies of it (exit status 143 or
//! 130 in a shell). A program that installed its own handler before the
//! session started is left alone, and one that installs its own later
//! replaces ours: either way it keeps full control.
//!
//! The same thread rewrites `PERFLENS_JSON` every `PERFLENS_JSON_EVERY`
//! seconds while the program runs, atomically (a temporary file in the
//! same directory, then a rename), so that even SIGKILL leaves the last
//! complete report.
//!
//! The signal handling (the handler, its pipe, restoring the default
//! action) is `perflens_sys::signal`'s. A platform without signals (the
//! portable build: `perflens_sys::CAPABILITIES.stop_signals` false)
//! catches nothing and says so once; the JSON rewrite still runs.
//!
//! The session lives in [`MAIN`] rather than in the guard on `main`'s
//! stack, so that whichever comes first, `main` returning or a signal,
//! takes it; the other finds it gone (and the guard waits for the
//! signal's report to be written, since returning would end the process
//! under it).

use crate::outputs::{Printed, emit, write_outputs_env};
use crate::session::Session;
use crate::settings;
use perflens_sys::signal::{self, Action, Disposition, SIGINT, SIGTERM, SelfPipe};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The running `#[perflens::main]` session and where its report goes.
pub(crate) static MAIN: Mutex<Option<(Session, Printed)>> = Mutex::new(None);

/// Set once a stop signal's report is written: the process is about to
/// die of the signal, and `main` returning must not beat it.
pub(crate) static REPORTED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// The signals whose default action ends the process without a report.
const STOP_SIGNALS: [i32; 2] = [SIGTERM, SIGINT];

/// Catches the stop signals that still have their default action, and
/// starts the thread that reports on them and rewrites the JSON report
/// every `every`, if given. Returns the signals caught. Failures (no
/// pipe, no thread) are said on stderr and leave the signals alone.
pub(crate) fn start(every: Option<Duration>) -> Vec<i32> {
    if !perflens_sys::CAPABILITIES.stop_signals {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!(
                "[perflens] no report on SIGTERM/SIGINT: signals are not handled on this platform (perflens-sys: {})",
                perflens_sys::CAPABILITIES.platform
            )
        });
    }
    let caught: Vec<i32> = STOP_SIGNALS
        .into_iter()
        .filter(|&s| signal::current(s).is_ok_and(|d| d == Disposition::Default))
        .collect();
    if caught.is_empty() && every.is_none() {
        return caught;
    }
    let (pipe, forwarder) = match signal::self_pipe() {
        Ok(ends) => ends,
        Err(e) => {
            eprintln!("[perflens] no report on SIGTERM/SIGINT: no self-pipe: {e}");
            return Vec::new();
        }
    };
    let spawned = std::thread::Builder::new()
        .name("perflens-stop".into())
        .spawn(move || watch(pipe, every));
    if let Err(e) = spawned {
        // The pipe's ends close as they drop.
        eprintln!("[perflens] no report on SIGTERM/SIGINT: could not start a thread: {e}");
        return Vec::new();
    }
    forwarder.forward(&caught)
}

/// The thread: waits for a stop signal (rewriting the JSON report every
/// `every` meanwhile), then reports and lets the signal take its course.
fn watch(pipe: SelfPipe, every: Option<Duration>) {
    // Its allocations and its snapshots are the profiler's, not the
    // program's.
    perflens_core::exclude_current_thread();
    loop {
        match pipe.wait(every) {
            Ok(None) => rewrite_json(),
            Ok(Some(sig)) => report_and_reraise(sig),
            Err(_) => return,
        }
    }
}

/// Finishes the session (if `main` has not already), writes its
/// outputs, and ends the process by `sig` with its default action.
fn report_and_reraise(sig: i32) -> ! {
    {
        let mut main = MAIN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((session, printed)) = main.take() {
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            // A call records its times when it ends: `main`, and every
            // call or future still running (a server's open
            // connections), is not in the timing tables.
            eprintln!(
                "[perflens] {name}: writing the report before exiting; calls and futures still \
                 running (main, open connections) are not in its timing tables, only in its \
                 CPU and allocation figures"
            );
            let trace = session.trace_path().map(std::path::Path::to_path_buf);
            let report = session.finish_quietly();
            emit(&report, &printed);
            write_outputs_env(&report, trace.as_deref());
            REPORTED.store(true, Ordering::Release);
        }
        // Held until here: a `main` returning meanwhile waits, and finds
        // nothing to report.
        // Unblocked for this thread and sent to the process: its
        // default action ends the process.
        let _ = signal::install(sig, Action::Default);
        signal::unblock_in_thread(sig);
        signal::send_to_process(sig);
    }
    // The signal is delivered to some thread soon; until then, wait.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Rewrites `PERFLENS_JSON` from a snapshot of the running session.
///
/// The session's lock is held until the file is renamed into place, so
/// that `main` returning (or a stop signal) meanwhile waits and writes
/// the final report after this one: released after the snapshot, a
/// rewrite could land after the final report and leave a running
/// snapshot (`"finished": false`) as the last word.
fn rewrite_json() {
    let Some(path) = settings::var_os("PERFLENS_JSON") else {
        return;
    };
    let main = MAIN.lock().unwrap_or_else(|e| e.into_inner());
    let report = match main.as_ref() {
        Some((session, _)) => session.snapshot(),
        None => return,
    };
    let written = write_atomically(std::path::Path::new(&path), &report);
    drop(main);
    if let Err(e) = written {
        eprintln!(
            "[perflens] could not rewrite PERFLENS_JSON={}: {e}",
            std::path::Path::new(&path).display()
        );
    }
}

/// Writes `report` as JSON to a temporary file next to `path`, then
/// renames it over `path`: a reader sees the old report or the new one,
/// never a part.
pub(crate) fn write_atomically(
    path: &std::path::Path,
    report: &perflens_report::Report,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        perflens_report::write_json(report, &mut w)?;
        w.flush()?;
        w.get_ref().sync_data()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// `PERFLENS_JSON_EVERY`: seconds between rewrites of `PERFLENS_JSON`.
pub(crate) fn json_every_from_env() -> Option<Duration> {
    let v = settings::var("PERFLENS_JSON_EVERY")?;
    let v = v.trim();
    if v.is_empty() {
        return None;
    }
    match v.parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() => {
            if settings::var_os("PERFLENS_JSON").is_none() {
                eprintln!(
                    "[perflens] PERFLENS_JSON_EVERY={v} has no effect without PERFLENS_JSON."
                );
                return None;
            }
            Some(Duration::from_secs_f64(s.max(0.001)))
        }
        _ => {
            eprintln!(
                "[perflens] PERFLENS_JSON_EVERY={v} is not a positive number of seconds; ignored."
            );
            None
        }
    }
}
