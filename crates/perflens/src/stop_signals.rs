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
//! The session lives in [`MAIN`] rather than in the guard on `main`'s
//! stack, so that whichever comes first, `main` returning or a signal,
//! takes it; the other finds it gone (and the guard waits for the
//! signal's report to be written, since returning would end the process
//! under it).

use crate::outputs::{Format, emit, write_outputs_env};
use crate::session::Session;
use crate::settings;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The running `#[perflens::main]` session and its terminal format.
pub(crate) static MAIN: Mutex<Option<(Session, Format)>> = Mutex::new(None);

/// Set once a stop signal's report is written: the process is about to
/// die of the signal, and `main` returning must not beat it.
pub(crate) static REPORTED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// The pipe's write end, for the signal handler (-1: none).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The signals whose default action ends the process without a report.
const STOP_SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

/// Catches the stop signals that still have their default action, and
/// starts the thread that reports on them and rewrites the JSON report
/// every `every`, if given. Returns the signals caught. Failures (no
/// pipe, no thread) are said on stderr and leave the signals alone.
pub(crate) fn start(every: Option<Duration>) -> Vec<libc::c_int> {
    let caught: Vec<libc::c_int> = STOP_SIGNALS
        .into_iter()
        .filter(|&s| has_default_action(s))
        .collect();
    if caught.is_empty() && every.is_none() {
        return caught;
    }
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!(
            "[perflens] no report on SIGTERM/SIGINT: pipe2 failed: {}",
            std::io::Error::last_os_error()
        );
        return Vec::new();
    }
    let [read_end, write_end] = fds;
    let spawned = std::thread::Builder::new()
        .name("perflens-stop".into())
        .spawn(move || watch(read_end, every));
    if let Err(e) = spawned {
        eprintln!("[perflens] no report on SIGTERM/SIGINT: could not start a thread: {e}");
        // SAFETY: closing the descriptors just created.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return Vec::new();
    }
    PIPE_WRITE.store(write_end, Ordering::Release);
    caught
        .into_iter()
        .filter(|&s| install(s, on_stop_signal as extern "C" fn(libc::c_int) as usize))
        .collect()
}

/// Whether `sig`'s action is the default one.
fn has_default_action(sig: libc::c_int) -> bool {
    // SAFETY: queries the action into a zeroed sigaction; changes nothing.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL
    }
}

/// Sets `sig`'s handler (or `SIG_DFL`). Returns whether it took.
fn install(sig: libc::c_int, handler: usize) -> bool {
    // SAFETY: a zeroed sigaction with a handler of the right signature
    // (`extern "C" fn(c_int)`, no SA_SIGINFO) or SIG_DFL; the mask is
    // emptied with sigemptyset.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut()) == 0
    }
}

/// The handler: hands the signal to the thread. Async-signal-safe: one
/// `write` to a pipe, errno preserved.
extern "C" fn on_stop_signal(sig: libc::c_int) {
    let fd = PIPE_WRITE.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    // SAFETY: errno is thread-local; saved and restored around `write`,
    // which writes one byte from a local to our pipe.
    unsafe {
        let errno = *libc::__errno_location();
        let byte = sig as u8;
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// The thread: waits for a stop signal (rewriting the JSON report every
/// `every` meanwhile), then reports and lets the signal take its course.
fn watch(read_end: libc::c_int, every: Option<Duration>) {
    // Its allocations and its snapshots are the profiler's, not the
    // program's.
    perflens_core::exclude_current_thread();
    let timeout_ms = every.map_or(-1, |d| d.as_millis().clamp(1, i32::MAX as u128) as i32);
    loop {
        let mut pfd = libc::pollfd {
            fd: read_end,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n == 0 {
            rewrite_json();
            continue;
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        let mut byte = 0u8;
        // SAFETY: reads one byte into a local from our pipe.
        if unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) } != 1 {
            continue;
        }
        report_and_reraise(byte as libc::c_int);
    }
}

/// Finishes the session (if `main` has not already), writes its
/// outputs, and ends the process by `sig` with its default action.
fn report_and_reraise(sig: libc::c_int) -> ! {
    {
        let mut main = MAIN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((session, format)) = main.take() {
            let name = if sig == libc::SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            eprintln!("[perflens] {name}: writing the report before exiting");
            let trace = session.trace_path().map(std::path::Path::to_path_buf);
            let report = session.finish_quietly();
            emit(&report, format);
            write_outputs_env(&report, trace.as_deref());
            REPORTED.store(true, Ordering::Release);
        }
        // Held until here: a `main` returning meanwhile waits, and finds
        // nothing to report.
        install(sig, libc::SIG_DFL);
        // SAFETY: unblocks `sig` for this thread and sends it to the
        // process; its default action ends the process.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
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
