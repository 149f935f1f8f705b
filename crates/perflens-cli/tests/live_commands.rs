//! `perflens list` and `perflens snapshot` on real live sessions: programs
//! (this test binary run again on `target_program`) started with
//! `PERFLENS_LIVE=1` under a private `XDG_RUNTIME_DIR`.
// Unix only: it signals processes, sets file modes, or reads a live
// session, which needs shared mappings (see docs/platforms.md).
#![cfg(unix)]

use perflens_report::Report;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

/// Set in the child: which function it runs (`alpha` or `beta`), and for
/// how many ms (`alpha:2000`).
const CHILD: &str = "PERFLENS_CLI_TEST_CHILD";

#[perflens::measure]
fn alpha(n: u64) -> u64 {
    (0..n).map(std::hint::black_box).sum()
}

#[perflens::measure]
fn beta(n: u64) -> u64 {
    let v: Vec<u64> = (0..n).collect();
    v.iter().rev().copied().map(std::hint::black_box).sum()
}

#[test]
fn target_program() {
    let Some(spec) = std::env::var(CHILD).ok() else {
        return;
    };
    let (which, ms) = spec.split_once(':').unwrap();
    let ms: u64 = ms.parse().unwrap();
    let session = perflens::Session::builder().start().unwrap();
    let until = Instant::now() + Duration::from_millis(ms);
    let mut acc = 0;
    while Instant::now() < until {
        acc ^= if which == "alpha" {
            alpha(1000)
        } else {
            beta(1000)
        };
    }
    std::hint::black_box(acc);
    session.finish();
}

fn runtime_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perflens-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn program(runtime: &Path, spec: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "target_program", "--test-threads=1"])
        .env(CHILD, spec)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("PERFLENS_LIVE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

fn perflens(runtime: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perflens"));
    cmd.args(args).env("XDG_RUNTIME_DIR", runtime);
    cmd
}

fn run(runtime: &Path, args: &[&str]) -> Output {
    perflens(runtime, args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Where the build has no live view (`perflens_sys::CAPABILITIES`: the
/// portable build), asserts what the commands say instead: `perflens
/// list` and `perflens snapshot` fail with exit code 2 and one line
/// saying the live view is not available on this platform. Returns
/// whether that was so (the caller then has no session to look at).
fn no_live_view_here(runtime: &Path) -> bool {
    if perflens_sys::CAPABILITIES.live_view {
        return false;
    }
    for args in [&["list"][..], &["snapshot"], &["snapshot", "4000000"]] {
        let out = run(runtime, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("the live view is not available on this platform"),
            "{args:?}: {err}"
        );
    }
    true
}

/// Waits (bounded) until `perflens list` shows `n` running sessions.
fn wait_running(runtime: &Path, n: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = stdout(&run(runtime, &["list"]));
        if out.matches(" running ").count() == n {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "never {n} running sessions:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded) until a snapshot of `pid` shows calls of `function`.
fn wait_calls(runtime: &Path, pid: u32, function: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let snap = run(runtime, &["snapshot", &pid.to_string()]);
        if Report::from_json_str(&stdout(&snap)).is_ok_and(|r| calls(&r, function) > 0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no calls seen: {}",
            stderr(&snap)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn calls(report: &Report, suffix: &str) -> u64 {
    report
        .functions
        .iter()
        .find(|f| f.name.ends_with(suffix))
        .map_or(0, |f| f.calls)
}

#[test]
fn two_programs_and_two_readers_at_once_need_no_configuration() {
    let runtime = runtime_dir("two");
    if no_live_view_here(&runtime) {
        return;
    }
    let mut a = program(&runtime, "alpha:3000", &[]);
    let mut b = program(&runtime, "beta:3000", &[]);
    let listed = wait_running(&runtime, 2);
    for child in [&a, &b] {
        assert!(
            listed.contains(&format!(" {} ", child.id())),
            "pid {} not listed:\n{listed}",
            child.id()
        );
    }
    wait_calls(&runtime, a.id(), "::alpha");
    wait_calls(&runtime, b.id(), "::beta");
    // Two readers at once, one per program.
    let (fa, fb) = (runtime.join("a.json"), runtime.join("b.json"));
    let ra = perflens(
        &runtime,
        &["snapshot", &a.id().to_string(), "-o", fa.to_str().unwrap()],
    )
    .spawn()
    .unwrap();
    let rb = perflens(
        &runtime,
        &["snapshot", &b.id().to_string(), "-o", fb.to_str().unwrap()],
    )
    .spawn()
    .unwrap();
    for r in [ra, rb] {
        assert!(r.wait_with_output().unwrap().status.success());
    }
    let ja = Report::from_json_str(&std::fs::read_to_string(&fa).unwrap()).unwrap();
    let jb = Report::from_json_str(&std::fs::read_to_string(&fb).unwrap()).unwrap();
    assert!(
        !ja.finished && !jb.finished,
        "snapshots of running programs"
    );
    assert!(calls(&ja, "::alpha") > 0 && calls(&ja, "::beta") == 0);
    assert!(calls(&jb, "::beta") > 0 && calls(&jb, "::alpha") == 0);
    // More than one session running: `snapshot` needs to be told which.
    let ambiguous = run(&runtime, &["snapshot"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(
        stderr(&ambiguous).contains("2 running sessions"),
        "{}",
        stderr(&ambiguous)
    );
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    // Ended without PERFLENS_LIVE_KEEP: nothing left.
    assert!(stdout(&run(&runtime, &["list"])).starts_with("no live sessions"));
    let _ = std::fs::remove_dir_all(&runtime);
}

#[test]
fn a_killed_program_is_stale_and_clean_removes_it() {
    let runtime = runtime_dir("stale");
    if no_live_view_here(&runtime) {
        return;
    }
    let mut victim = program(&runtime, "alpha:30000", &[]);
    wait_running(&runtime, 1);
    // Killed once it has made calls.
    wait_calls(&runtime, victim.id(), "::alpha");
    victim.kill().unwrap();
    victim.wait().unwrap();
    let listed = stdout(&run(&runtime, &["list"]));
    assert!(listed.contains(" stale "), "{listed}");
    assert!(listed.contains("--clean"), "{listed}");
    // Its last state can still be read.
    let snap = run(&runtime, &["snapshot", &victim.id().to_string()]);
    assert!(snap.status.success(), "{}", stderr(&snap));
    let report = Report::from_json_str(&stdout(&snap)).unwrap();
    assert!(calls(&report, "::alpha") > 0);
    let cleaned = run(&runtime, &["list", "--clean"]);
    assert!(
        stdout(&cleaned).contains("removed "),
        "{}",
        stdout(&cleaned)
    );
    assert!(
        stdout(&cleaned).contains("no live sessions"),
        "{}",
        stdout(&cleaned)
    );
    assert_eq!(
        std::fs::read_dir(runtime.join("perflens")).unwrap().count(),
        0,
        "the entry's directory is gone"
    );
    let _ = std::fs::remove_dir_all(&runtime);
}

#[test]
fn a_kept_session_is_listed_finished_and_snapshots_its_final_report() {
    let runtime = runtime_dir("kept");
    if no_live_view_here(&runtime) {
        return;
    }
    let json = runtime.join("own.json");
    let mut p = program(
        &runtime,
        "beta:300",
        &[
            ("PERFLENS_LIVE_KEEP", "1"),
            ("PERFLENS_JSON", json.to_str().unwrap()),
        ],
    );
    assert!(p.wait().unwrap().success());
    let listed = stdout(&run(&runtime, &["list"]));
    assert!(listed.contains(" finished "), "{listed}");
    let out = runtime.join("snap.json");
    let snap = run(
        &runtime,
        &["snapshot", &p.id().to_string(), "-o", out.to_str().unwrap()],
    );
    assert!(snap.status.success(), "{}", stderr(&snap));
    assert!(stderr(&snap).contains("finished"), "{}", stderr(&snap));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&json).unwrap(),
        "the snapshot of a finished session is the program's own final report"
    );
    // `--clean` keeps finished sessions: they are not stale.
    assert!(!stdout(&run(&runtime, &["list", "--clean"])).contains("removed"));
    let _ = std::fs::remove_dir_all(&runtime);
}

#[test]
fn bad_targets_get_one_line_and_exit_code_2() {
    let runtime = runtime_dir("bad");
    if no_live_view_here(&runtime) {
        return;
    }
    let cases: &[(&[&str], &str)] = &[
        (&["snapshot", "4000000"], "no live session of pid 4000000"),
        (&["snapshot"], "no running live session"),
        (
            &["snapshot", "not-a-pid"],
            "neither a pid nor a session directory",
        ),
        (&["snapshot", "/"], "refused"),
        (&["list", "--bogus"], "unexpected argument"),
    ];
    for (args, needle) in cases {
        let out = run(&runtime, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&runtime);
}
