//! A program stopped by SIGTERM or SIGINT still writes its report and
//! still dies of the signal (into `PERFLENS_OUTPUT` when that names a
//! file); a program with its own handler keeps it; and
//! `PERFLENS_JSON_EVERY` leaves a complete JSON report even under SIGKILL.
//!
//! Each case runs a child process: an ignored test of this binary that
//! starts what `#[perflens::main]` starts and makes measured calls until
//! it is stopped.
// SIGTERM, SIGINT and SIGKILL, sent with POSIX calls: Unix only (Linux
// and macOS handle stop signals; another Unix builds the portable
// implementation, and the test asserts that it says it does not).
#![cfg(unix)]
#![cfg(feature = "enabled")]

mod common;
use common::capabilities::NO_STOP_SIGNALS_LINE;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[perflens::measure]
fn work(i: u64) -> u64 {
    std::hint::black_box(i.wrapping_mul(7))
}

static OWN_HANDLER_RAN: AtomicBool = AtomicBool::new(false);

extern "C" fn own_handler(_: libc::c_int) {
    OWN_HANDLER_RAN.store(true, Ordering::Relaxed);
}

#[test]
#[ignore = "child helper"]
fn child_runs_until_stopped() {
    if std::env::var_os("PERFLENS_STOP_CHILD").is_none() {
        return;
    }
    let own = std::env::var_os("PERFLENS_STOP_OWN_HANDLER").is_some();
    if own {
        // SAFETY: a handler of the right signature; it only stores to an
        // atomic.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = own_handler as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut act.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGTERM, &act, std::ptr::null_mut()),
                0
            );
        }
    }
    let guard = perflens::__private::MainGuard::start(Default::default());
    for i in 0..1000 {
        work(i);
    }
    println!("READY");
    let mut i = 1000;
    while !OWN_HANDLER_RAN.load(Ordering::Relaxed) {
        work(i);
        i += 1;
        std::thread::sleep(Duration::from_millis(1));
    }
    // The program's own handler asked it to stop: it ends `main` its own
    // way, and the report is the one `main` returning prints.
    drop(guard);
    std::process::exit(7);
}

fn spawn(json: &Path, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_runs_until_stopped",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("PERFLENS_STOP_CHILD", "1")
    .env("PERFLENS_JSON", json)
    .env("PERFLENS_FORMAT", "table")
    .env_remove("PERFLENS_JSON_EVERY")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // The child starts with SIGINT and SIGTERM at their defaults, as a
    // program started from a terminal or by a service manager does: a
    // test run in the background of a non-interactive shell inherits
    // SIGINT ignored (POSIX asks that of the shell), and perflens rightly
    // leaves an ignored signal ignored, so the child never stopped.
    // SAFETY: between fork and exec the closure makes two signal(2)
    // calls, which are async-signal-safe, and allocates nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("READY"));
    assert!(ready, "the child never got ready");
    child
}

/// Waits for the child to end (at most 60 s: a child that outlives its
/// signal is killed and the test fails, saying so, rather than hanging the
/// suite), with what it wrote to stderr.
fn finish(mut child: Child) -> (ExitStatus, String) {
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        err
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = reader.join().unwrap();
            panic!("the child was still running 60 s after its signal; its stderr:\n{err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, reader.join().unwrap())
}

fn json_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("perflens-stop-{tag}-{}.json", std::process::id()))
}

fn work_calls(json: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(json).ok()?;
    let report = perflens::Report::from_json_str(&text).ok()?;
    report
        .functions
        .iter()
        .find(|f| f.name.ends_with("::work"))
        .map(|f| f.calls)
}

fn stopped_by(sig: libc::c_int, name: &str) {
    let json = json_path(name);
    let _ = std::fs::remove_file(&json);
    let child = spawn(&json, &[]);
    // SAFETY: sending a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let (status, err) = finish(child);
    assert_eq!(status.signal(), Some(sig), "{status:?}\n{err}");
    if !perflens_sys::CAPABILITIES.stop_signals {
        // The portable build: the session said at start that a stop
        // signal writes no report, and the program died of it without one.
        assert!(err.contains(NO_STOP_SIGNALS_LINE), "{err}");
        assert!(!err.contains("writing the report"), "{err}");
        assert_eq!(work_calls(&json), None, "{err}");
        return;
    }
    assert!(
        err.contains(&format!("[perflens] {name}: writing the report")),
        "{err}"
    );
    // `main` was still running: the line says what that leaves out.
    assert!(
        err.contains("still running (main, open connections) are not in its timing tables"),
        "{err}"
    );
    assert!(err.contains("Function"), "the table was printed:\n{err}");
    let calls = work_calls(&json).unwrap_or_else(|| panic!("no JSON report at {json:?}\n{err}"));
    assert!(calls >= 1000, "{calls} calls");
    let _ = std::fs::remove_file(&json);
}

#[test]
fn sigterm_writes_the_report_and_exits_143() {
    stopped_by(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_writes_the_report_and_exits_130() {
    stopped_by(libc::SIGINT, "SIGINT");
}

#[test]
fn a_program_with_its_own_handler_keeps_it() {
    let json = json_path("own");
    let _ = std::fs::remove_file(&json);
    let child = spawn(&json, &[("PERFLENS_STOP_OWN_HANDLER", "1")]);
    // SAFETY: sending a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let (status, err) = finish(child);
    // The program's handler ran and the program exited its own way; the
    // report is the one of `main` returning.
    assert_eq!(status.code(), Some(7), "{status:?}\n{err}");
    assert!(!err.contains("writing the report before exiting"), "{err}");
    assert!(work_calls(&json).is_some_and(|c| c >= 1000), "{err}");
    let _ = std::fs::remove_file(&json);
}

#[test]
fn json_every_leaves_a_complete_report_under_sigkill() {
    let json = json_path("every");
    let _ = std::fs::remove_file(&json);
    let mut child = spawn(&json, &[("PERFLENS_JSON_EVERY", "0.05")]);
    // Rewritten while the program runs: wait for two reports with
    // different call counts (the program keeps calling `work`).
    let deadline = Instant::now() + Duration::from_secs(20);
    let first = loop {
        if let Some(c) = work_calls(&json) {
            break c;
        }
        assert!(Instant::now() < deadline, "no JSON report written");
        std::thread::sleep(Duration::from_millis(10));
    };
    loop {
        // Every read parses: the rename replaces the file whole.
        match work_calls(&json) {
            Some(c) if c > first => break,
            Some(_) => {}
            None => panic!("a rewrite left an incomplete report"),
        }
        assert!(Instant::now() < deadline, "the report was not rewritten");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    let (status, _) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(work_calls(&json).is_some_and(|c| c >= 1000));
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&format!("perflens-stop-every-{}.json.", std::process::id()))
                && n.ends_with(".tmp")
        })
        .collect();
    // A temporary file may remain only if the kill landed mid-write.
    assert!(leftovers.len() <= 1, "{leftovers:?}");
    let _ = std::fs::remove_file(&json);
}

#[test]
fn sigterm_prints_the_report_into_perflens_output() {
    // `PERFLENS_OUTPUT` (`output_path = ".."`, hotpath's option): the
    // stop signal's report goes to that file, as `main` returning's does.
    let json = json_path("output");
    let table = std::env::temp_dir().join(format!(
        "perflens-stop-output-{}/report.txt",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_dir_all(table.parent().unwrap());
    let child = spawn(&json, &[("PERFLENS_OUTPUT", table.to_str().unwrap())]);
    // SAFETY: sending a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let (status, err) = finish(child);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}\n{err}");
    if !perflens_sys::CAPABILITIES.stop_signals {
        assert!(err.contains(NO_STOP_SIGNALS_LINE), "{err}");
        assert!(!table.exists(), "{err}");
        return;
    }
    assert!(
        err.contains("[perflens] SIGTERM: writing the report"),
        "{err}"
    );
    let written = format!("[perflens] report written to {}\n", table.display());
    assert!(err.contains(&written), "{err}");
    assert!(
        !err.contains("Function"),
        "the table went to the file:\n{err}"
    );
    let text = std::fs::read_to_string(&table).unwrap();
    let row = (text.lines())
        .find(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|n| n.ends_with("::work"))
        })
        .unwrap_or_else(|| panic!("no `work` row:\n{text}"));
    // Calls as the table prints them: 1,234.
    let calls = row.split_whitespace().nth(1).unwrap().replace(',', "");
    let calls: u64 = calls.parse().unwrap_or_else(|_| panic!("{row}"));
    assert!(calls >= 1000, "{calls} calls\n{text}");
    // PERFLENS_JSON is written as well, with the same calls.
    assert_eq!(work_calls(&json), Some(calls));
    let _ = std::fs::remove_file(&json);
    std::fs::remove_dir_all(table.parent().unwrap()).unwrap();
}
