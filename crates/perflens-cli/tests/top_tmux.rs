//! `perflens top` end to end: a real program rewrites its JSON report
//! while it runs, and `perflens top` watches it in a tmux pane of 120x40
//! that the test reads with `capture-pane` and types into with
//! `send-keys`.
//!
//! The target is an ignored test of this binary (`target_program`), run
//! as a child: it starts what `#[perflens::main]` starts and makes
//! measured calls until the test creates its stop file, then returns from
//! "main", which writes the final report (`"finished": true`).
//!
//! tmux is required: without it the test fails (CI installs it).
// Unix only: it signals processes, sets file modes, or reads a live
// session, which needs shared mappings (see docs/platforms.md).
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[perflens::measure]
fn parse_record(i: u64) -> u64 {
    (0..200u64).fold(i, |a, b| std::hint::black_box(a.wrapping_mul(31) ^ b))
}

#[perflens::measure]
fn render_frame(i: u64) -> u64 {
    (0..100u64).fold(i, |a, b| std::hint::black_box(a.rotate_left(3) ^ b))
}

/// A future that is pending once, then ready: two polls.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
}

#[perflens::measure]
async fn fetch_item(i: u64) -> u64 {
    YieldOnce(false).await;
    i + 1
}

/// Runs a future to completion on this thread.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[perflens::measure]
fn outer_loop(i: u64) -> u64 {
    parse_record(i) ^ render_frame(i) ^ block_on(fetch_item(i))
}

#[test]
#[ignore = "child helper: the target program of watches_a_running_program"]
fn target_program() {
    let Some(stop) = std::env::var_os("PERFLENS_TOP_STOP") else {
        return;
    };
    let stop = PathBuf::from(stop);
    let guard = perflens::__private::MainGuard::start(perflens::__private::MainOptions {
        format: Some(perflens::__private::Format::None),
        ..Default::default()
    });
    // Bounded even if the test dies before creating the stop file.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut i = 0;
    while !stop.exists() && Instant::now() < deadline {
        std::hint::black_box(outer_loop(i));
        i += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    // "main" returns: the final report, `"finished": true`.
    drop(guard);
}

#[test]
#[ignore = "child helper: the target program of top_shows_the_data_flow_of_a_live_program"]
fn flow_program() {
    let Some(stop) = std::env::var_os("PERFLENS_TOP_STOP") else {
        return;
    };
    let stop = PathBuf::from(stop);
    let guard = perflens::__private::MainGuard::start(perflens::__private::MainOptions {
        format: Some(perflens::__private::Format::None),
        ..Default::default()
    });
    let (tx, rx) = perflens::channel!(std::sync::mpsc::sync_channel::<u64>(64), label = "jobs");
    let totals = std::sync::Arc::new(perflens::lock!(
        perflens::sync::Mutex::new(0u64),
        label = "totals"
    ));
    let consumer = std::thread::spawn({
        let totals = totals.clone();
        move || {
            for v in rx {
                *totals.lock().unwrap() += v;
            }
        }
    });
    // Bounded even if the test dies before creating the stop file.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut i = 0;
    while !stop.exists() && Instant::now() < deadline {
        {
            // Sent while the lock is held a while: the consumer waits
            // for it (contended acquisitions, measured waits).
            let mut t = totals.lock().unwrap();
            tx.send(i).unwrap();
            std::thread::sleep(Duration::from_micros(300));
            *t += 1;
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(tx);
    consumer.join().unwrap();
    // "main" returns: the final report, `"finished": true`.
    drop(guard);
}

/// The target program, killed if the test ends before it does.
struct Target(Child);

/// How `perflens top` watches the target.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// The live session in shared memory (`PERFLENS_LIVE=1`), by pid.
    Live,
    /// The JSON report the target rewrites every 0.2 s.
    Json,
}

impl Target {
    /// Starts the target (`program`: one of the helper tests); with
    /// [`Watch::Live`] its session is published under `runtime` (its
    /// `XDG_RUNTIME_DIR`), else it rewrites `json`.
    fn spawn(program: &str, how: Watch, runtime: &Path, json: &Path, stop: &Path) -> Target {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            program,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PERFLENS_TOP_STOP", stop)
        .env("XDG_RUNTIME_DIR", runtime)
        .env_remove("PERFLENS_FORMAT")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        match how {
            Watch::Live => cmd.env("PERFLENS_LIVE", "1"),
            Watch::Json => cmd
                .env("PERFLENS_JSON", json)
                .env("PERFLENS_JSON_EVERY", "0.2"),
        };
        Target(cmd.spawn().expect("start the target program"))
    }

    /// Waits (bounded) for the target to exit; its exit status.
    fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let end = Instant::now() + timeout;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < end,
                "the target did not exit within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tmux server of our own (its own socket, in the temporary
/// directory), killed and its socket removed when dropped, even when the
/// test fails.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(width: u16, height: u16) -> Tmux {
        match Command::new("tmux").arg("-V").output() {
            Ok(o) if o.status.success() => {}
            other => panic!(
                "tmux is required by this test and could not be run ({other:?}): \
                 install it (apt-get install tmux)"
            ),
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let tmux = Tmux {
            socket: std::env::temp_dir()
                .join(format!("perflens-top-{}-{nanos}.tmux", std::process::id())),
        };
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "top",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "-e",
            "ENV=",
            "sh",
        ]);
        assert!(out.status.success(), "tmux new-session: {out:?}");
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            // -u: UTF-8 whatever the locale (the tree's markers, the
            // filter's cursor).
            .arg("-u")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// Types `keys` (tmux key names: `Enter`, `Left`, `Escape`, ...).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "top"];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(out.status.success(), "tmux send-keys {keys:?}: {out:?}");
    }

    /// Types `text` as it is.
    fn text(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", "top", "-l", text]);
        assert!(out.status.success(), "tmux send-keys -l {text:?}: {out:?}");
    }

    /// The pane's text.
    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "top"]);
        assert!(out.status.success(), "tmux capture-pane: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A tmux format of the pane (`#{alternate_on}`, ...).
    fn pane(&self, format: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", "top", format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls the screen (every 50 ms, for at most `timeout`) until `ok`
    /// holds; the screen then. Fails with the last screen otherwise.
    fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < end,
                "waited {timeout:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The line of `screen` whose first word is `name` (a flat row), if any.
fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
}

/// The Calls column of a Functions row: the first number after the name.
fn calls(screen: &str, name: &str) -> Option<u64> {
    let line = row(screen, name)?;
    line.split_whitespace()
        .nth(1)?
        .replace(',', "")
        .parse()
        .ok()
}

/// The Calls column of a Hot paths row (after its marker, if any).
fn tree_calls(screen: &str, name: &str) -> Option<u64> {
    let line = (screen.lines()).find(|l| l.split_whitespace().any(|c| c == name))?;
    let cells: Vec<&str> = line.split_whitespace().collect();
    let at = cells.iter().position(|c| *c == name)?;
    cells.get(at + 1)?.replace(',', "").parse().ok()
}

/// The Self p99 of a Hot paths row, in ns: the duration before the
/// last column (Alloc, `-` here), as `12.3 µs`.
fn self_p99_ns(screen: &str, name: &str) -> Option<f64> {
    let line = screen.lines().find(|l| l.trim_start().starts_with(name))?;
    let cells: Vec<&str> = line.split_whitespace().collect();
    let [value, unit, _alloc] = cells.get(cells.len().checked_sub(3)?..)? else {
        return None;
    };
    let scale = match *unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(value.replace(',', "").parse::<f64>().ok()? * scale)
}

/// The duration whose number is word `at` of `line` (its unit the next
/// word), in ns.
fn duration_ns(line: &str, at: usize) -> Option<f64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let scale = match *words.get(at + 1)? {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(words.get(at)?.replace(',', "").parse::<f64>().ok()? * scale)
}

/// The exit status the shell printed after perflens (`perflens exited
/// with N` alone on a line: the typed command, which holds the same
/// words, may wrap anywhere, but never into that).
fn exit_status(screen: &str) -> Option<i32> {
    screen.lines().find_map(|l| {
        l.trim_end()
            .strip_prefix("perflens exited with ")?
            .parse()
            .ok()
    })
}

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perflens-top-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const PARSE: &str = "top_tmux::parse_record";
const RENDER: &str = "top_tmux::render_frame";
const OUTER: &str = "top_tmux::outer_loop";
const FETCH: &str = "top_tmux::fetch_item";
const WAIT: Duration = Duration::from_secs(20);

/// What `perflens top` says, asked for a live session, without a live
/// view (the portable build).
const NO_LIVE_VIEW: &str = "the live view is not available on this platform";

/// Where the build has no live view, asserts that `top` says so when
/// asked to watch a live session, and returns true.
fn no_live_view_here(dir: &Path) -> bool {
    if perflens_sys::CAPABILITIES.live_view {
        return false;
    }
    let runtime = runtime_dir(dir);
    refused(&runtime, &["top"], NO_LIVE_VIEW);
    refused(&runtime, &["top", "4000000"], NO_LIVE_VIEW);
    true
}

#[test]
fn top_watches_a_live_session_by_pid() {
    let dir = temp_dir("live-none");
    if no_live_view_here(&dir) {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let _ = std::fs::remove_dir_all(&dir);
    watches_a_running_program(Watch::Live);
}

#[test]
fn top_watches_a_program_through_its_json_report() {
    watches_a_running_program(Watch::Json);
}

fn watches_a_running_program(how: Watch) {
    let dir = temp_dir(if how == Watch::Live {
        "e2e-live"
    } else {
        "e2e"
    });
    let json = dir.join("r.json");
    let stop = dir.join("stop");
    let runtime = dir.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut target = Target::spawn("target_program", how, &runtime, &json, &stop);
    let pid = target.0.id();
    let tmux = Tmux::start(120, 40);
    tmux.wait_for("the shell's prompt", WAIT, |s| !s.trim().is_empty());

    let watched = match how {
        // By pid: the session must be there first.
        Watch::Live => {
            let end = Instant::now() + WAIT;
            while perflens_live::find(&runtime.join("perflens"), Some(&pid.to_string())).is_err() {
                assert!(
                    Instant::now() < end,
                    "the target's live session never appeared"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            pid.to_string()
        }
        // Started before the program wrote its first report: it waits
        // for it.
        Watch::Json => json.display().to_string(),
    };
    let command = format!(
        "XDG_RUNTIME_DIR='{}' '{}' top '{watched}' --interval 300ms; echo \"perflens exited with $?\"",
        runtime.display(),
        env!("CARGO_BIN_EXE_perflens"),
    );
    tmux.text(&command);
    tmux.keys(&["Enter"]);

    // The function rows appear, and the target runs.
    let screen = tmux.wait_for("the function rows", WAIT, |s| {
        row(s, PARSE).is_some() && row(s, RENDER).is_some() && row(s, OUTER).is_some()
    });
    assert!(screen.contains("● running:"), "{screen}");
    assert!(screen.contains("Functions [timing]"), "{screen}");
    assert!(screen.contains("Calls/s"), "rates by default:\n{screen}");

    // Totals (`r`): the calls grow between two captures.
    tmux.keys(&["r"]);
    let screen = tmux.wait_for("totals", WAIT, |s| {
        s.contains("· totals") && calls(s, PARSE).is_some()
    });
    let before = calls(&screen, PARSE).unwrap();
    let screen = tmux.wait_for("more calls", WAIT, |s| {
        calls(s, PARSE).is_some_and(|n| n > before)
    });
    assert!(!screen.contains("Calls/s"), "{screen}");

    // Hot paths (`h`): the tree of frames, the root expanded.
    tmux.keys(&["h"]);
    let indented = |s: &str, name: &str| {
        s.lines()
            .any(|l| l.trim_start().starts_with(name) && l.starts_with("    "))
    };
    let screen = tmux.wait_for("the hot paths' tree", WAIT, |s| {
        s.contains(&format!("▾ {OUTER}")) && indented(s, PARSE) && indented(s, RENDER)
    });
    assert!(screen.contains("Frame"), "{screen}");
    // Every timing figure of a row on screen is there, the Self
    // percentiles included (a live source reads those for the rows on
    // screen only); the last column, Alloc, is `-` (no counting
    // allocator in the target).
    let timing_shown = |s: &str| {
        row(s, PARSE).is_some_and(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.len() > 8 && !cells[..cells.len() - 1].contains(&"-")
        })
    };
    let screen = tmux.wait_for("the rows' Self percentiles", WAIT, timing_shown);
    assert!(screen.contains("Self p99"), "{screen}");
    // Left collapses the selected root: its children go; Right expands.
    tmux.keys(&["Home", "Left"]);
    tmux.wait_for("the root collapsed", WAIT, |s| {
        s.contains(&format!("▸ {OUTER}")) && !s.contains(PARSE) && !s.contains(RENDER)
    });
    tmux.keys(&["Right"]);
    tmux.wait_for("the root expanded", WAIT, |s| {
        s.contains(&format!("▾ {OUTER}")) && indented(s, PARSE)
    });
    // `6` twice sorts by Self p99, smallest first (read live for the
    // rows it orders; render's loop is half parse's, so not their names'
    // order): the root's children in the order of the figures they show.
    tmux.keys(&["6", "6"]);
    let sorted =
        |s: &str| s.contains("Self p99▲") && timing_shown(s) && self_p99_ns(s, RENDER).is_some();
    let screen = tmux.wait_for("the tree sorted by Self p99", WAIT, sorted);
    // A later picture, ordered as it was read (not only the rows read
    // for the last one, again).
    let calls_then = tree_calls(&screen, OUTER);
    let screen = tmux.wait_for("a later picture, sorted", WAIT, |s| {
        sorted(s) && tree_calls(s, OUTER) > calls_then
    });
    let at = |name: &str| {
        screen
            .lines()
            .position(|l| l.trim_start().starts_with(name))
    };
    let (parse, render) = (self_p99_ns(&screen, PARSE), self_p99_ns(&screen, RENDER));
    let (first, second) = match at(PARSE) < at(RENDER) {
        true => (parse, render),
        false => (render, parse),
    };
    assert!(first <= second, "{parse:?} {render:?}\n{screen}");

    // Async (`a`) and Threads (`t`).
    tmux.keys(&["a"]);
    let screen = tmux.wait_for("the async tab", WAIT, |s| {
        row(s, FETCH).is_some() && s.contains("Polls") && row(s, PARSE).is_none()
    });
    assert!(screen.contains("Cancelled"), "{screen}");
    tmux.keys(&["t"]);
    tmux.wait_for("the threads tab", WAIT, |s| {
        s.contains("TID")
            && s.lines()
                .any(|l| l.trim_start().starts_with("#0") && l.contains("live"))
    });

    // Back to Functions; `/render` Enter keeps only the matching rows.
    tmux.keys(&["f", "/"]);
    tmux.text("render");
    tmux.wait_for("the filter being typed", WAIT, |s| {
        s.contains("filter: render▏")
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the filtered rows", WAIT, |s| {
        row(s, RENDER).is_some() && !s.contains(PARSE) && !s.contains(OUTER) && !s.contains(FETCH)
    });
    assert!(screen.contains("filter: render"), "{screen}");
    // Esc clears it.
    tmux.keys(&["Escape"]);
    tmux.wait_for("every row again", WAIT, |s| {
        row(s, RENDER).is_some() && row(s, PARSE).is_some()
    });

    // The target ends: the screen says so and keeps the last picture.
    std::fs::write(&stop, b"").unwrap();
    let status = target.wait(WAIT);
    assert!(status.success(), "target: {status:?}");
    let screen = tmux.wait_for("the target's exit", WAIT, |s| s.contains("target exited"));
    let who = match how {
        Watch::Live => format!("(pid {pid})"),
        Watch::Json => json.display().to_string(),
    };
    assert!(screen.contains(&who), "{screen}");
    assert!(
        row(&screen, PARSE).is_some(),
        "the last picture stays:\n{screen}"
    );
    let last = calls(&screen, PARSE).unwrap();
    assert!(last > before, "{screen}");

    // `q`: perflens exits with 0, the alternate screen is gone, the shell
    // is back, the cursor shown and the mouse released.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("perflens to exit", WAIT, |s| exit_status(s).is_some());
    assert_eq!(exit_status(&screen), Some(0), "{screen}");
    assert!(!screen.contains("target exited"), "{screen}");
    assert!(!screen.contains(PARSE), "{screen}");
    assert_eq!(tmux.pane("#{alternate_on}"), "0");
    assert_eq!(tmux.pane("#{cursor_flag}"), "1");
    assert_eq!(tmux.pane("#{mouse_any_flag}"), "0");
    assert_eq!(tmux.pane("#{pane_current_command}"), "sh");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory for a live session's runtime files (its
/// `XDG_RUNTIME_DIR`, private as one is), in `dir`.
fn runtime_dir(dir: &Path) -> PathBuf {
    let runtime = dir.join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    runtime
}

/// Waits (bounded) for the live session of `pid` to appear under
/// `runtime`.
fn wait_for_session(runtime: &Path, pid: u32) {
    let end = Instant::now() + WAIT;
    while perflens_live::find(&runtime.join("perflens"), Some(&pid.to_string())).is_err() {
        assert!(
            Instant::now() < end,
            "the target's live session never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn top_shows_the_data_flow_of_a_live_program() {
    let dir = temp_dir("flow");
    if no_live_view_here(&dir) {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let stop = dir.join("stop");
    let runtime = runtime_dir(&dir);
    let mut target = Target::spawn(
        "flow_program",
        Watch::Live,
        &runtime,
        &dir.join("r.json"),
        &stop,
    );
    let pid = target.0.id();
    let tmux = Tmux::start(120, 40);
    tmux.wait_for("the shell's prompt", WAIT, |s| !s.trim().is_empty());
    wait_for_session(&runtime, pid);
    tmux.text(&format!(
        "XDG_RUNTIME_DIR='{}' '{}' top {pid} --interval 300ms; echo \"perflens exited with $?\"",
        runtime.display(),
        env!("CARGO_BIN_EXE_perflens"),
    ));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the first picture", WAIT, |s| s.contains("● running:"));

    // `d`: the Data flow tab, the channels first (rates), and a word
    // about the locks.
    tmux.keys(&["d"]);
    // The lock's row comes with its first release, which may be a
    // refresh after the channel's first message.
    let screen = tmux.wait_for("the channel's row and the lock", WAIT, |s| {
        s.contains("Data flow [channels]")
            && calls(s, "jobs").is_some()
            && s.contains("v: the locks (1)")
    });
    assert!(screen.contains("Sent/s"), "rates by default:\n{screen}");
    // Totals (`r`): the messages sent grow between two captures.
    tmux.keys(&["r"]);
    let screen = tmux.wait_for("totals", WAIT, |s| {
        s.contains("· totals") && calls(s, "jobs").is_some()
    });
    let before = calls(&screen, "jobs").unwrap();
    let screen = tmux.wait_for("more messages sent", WAIT, |s| {
        calls(s, "jobs").is_some_and(|n| n > before)
    });
    assert!(!screen.contains("Sent/s"), "{screen}");
    // Its capacity, and its send-to-receive latency's p50 read live
    // (the inclusive-time histograms: without, 0): the word after the
    // name, five counts and two waits.
    let jobs = row(&screen, "jobs").unwrap();
    assert_eq!(jobs.split_whitespace().nth(5), Some("64"), "{screen}");
    assert!(duration_ns(jobs, 11).is_some_and(|ns| ns > 0.0), "{screen}");

    // `v`: the lock, contended at every message: every figure measured,
    // its waits' percentiles included (a live source reads those of the
    // lock sites alone).
    tmux.keys(&["v"]);
    let screen = tmux.wait_for("the lock's row", WAIT, |s| {
        s.contains("Data flow [locks]")
            && row(s, "totals").is_some_and(|l| !l.split_whitespace().any(|c| c == "-"))
    });
    assert!(screen.contains("Wait p50"), "{screen}");
    // Wait p50 after three counts and the total wait; Hold p50 after the
    // wait's percentiles and the total hold.
    let totals = row(&screen, "totals").unwrap();
    assert!(
        duration_ns(totals, 6).is_some_and(|ns| ns > 0.0),
        "{screen}"
    );
    assert!(
        duration_ns(totals, 12).is_some_and(|ns| ns > 0.0),
        "{screen}"
    );
    assert!(calls(&screen, "totals").is_some_and(|n| n > 0), "{screen}");

    std::fs::write(&stop, b"").unwrap();
    let status = target.wait(WAIT);
    assert!(status.success(), "target: {status:?}");
    tmux.wait_for("the target's exit", WAIT, |s| s.contains("target exited"));
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("perflens to exit", WAIT, |s| exit_status(s).is_some());
    assert_eq!(exit_status(&screen), Some(0), "{screen}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A report with one function, `app::steady`, called `calls` times.
fn steady_report(elapsed_ns: u64, calls: u64, finished: bool) -> String {
    format!(
        r#"{{"schema": "perflens.report/1", "mode": "timed", "sample_every": 1,
            "clock": "tsc", "elapsed_ns": {elapsed_ns}, "finished": {finished},
            "percentiles": [50.0, 95.0, 99.0],
            "functions": [{{"name": "app::steady", "kind": "sync", "calls": {calls},
                "timed_calls": {calls}, "total_ns": {calls}000, "self_ns": {calls}000,
                "avg_ns": 1000, "p50_ns": 1000, "p95_ns": 1000, "p99_ns": 1000,
                "percentiles": {{}}, "sampled": false}}],
            "paths": [], "threads": [], "dropped": {{"overflow_calls": 0,
            "overflow_paths": 0, "dropped_frames": 0}}, "path_capacity": 1024}}"#
    )
}

/// Replaces `path` atomically, as a program does.
fn rewrite(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn top_keeps_the_last_picture_when_a_read_fails() {
    let dir = temp_dir("read-error");
    let json = dir.join("r.json");
    rewrite(&json, &steady_report(1_000_000_000, 10, false));
    let tmux = Tmux::start(120, 40);
    tmux.wait_for("the shell's prompt", WAIT, |s| !s.trim().is_empty());
    tmux.text(&format!(
        "'{}' top '{}' --interval 100; echo \"perflens exited with $?\"",
        env!("CARGO_BIN_EXE_perflens"),
        json.display()
    ));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the row", WAIT, |s| row(s, "app::steady").is_some());
    // The next one: 20 calls in one more second.
    rewrite(&json, &steady_report(2_000_000_000, 30, false));
    tmux.wait_for("the rate", WAIT, |s| {
        row(s, "app::steady").is_some_and(|l| l.split_whitespace().nth(1) == Some("20"))
    });

    // Not JSON any more: the error in the status line, the picture stays.
    rewrite(&json, "{ this is not");
    let screen = tmux.wait_for("the read error", WAIT, |s| {
        s.contains("read failed, showing the last good report")
    });
    assert!(screen.contains("r.json"), "{screen}");
    assert_eq!(calls(&screen, "app::steady"), Some(20), "{screen}");
    assert!(screen.contains("● running:"), "{screen}");
    // Gone: the same.
    std::fs::remove_file(&json).unwrap();
    tmux.wait_for("the open error", WAIT, |s| {
        s.contains("cannot open") && row(s, "app::steady").is_some()
    });

    // The final report: the error goes, the end is said.
    rewrite(&json, &steady_report(3_000_000_000, 40, true));
    let screen = tmux.wait_for("the target's exit", WAIT, |s| s.contains("target exited"));
    assert!(!screen.contains("read failed"), "{screen}");
    assert_eq!(calls(&screen, "app::steady"), Some(10), "{screen}");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("perflens to exit", WAIT, |s| exit_status(s).is_some());
    assert_eq!(exit_status(&screen), Some(0), "{screen}");
    assert_eq!(tmux.pane("#{alternate_on}"), "0");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Exit code 2 and exactly one line on stderr, naming the problem.
fn refused(runtime: &Path, args: &[&str], says: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_perflens"))
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn top_refuses_what_it_cannot_watch_in_one_line() {
    let dir = temp_dir("refused");
    // No live session runs under this runtime directory.
    let refused = |args: &[&str], says: &str| refused(&dir, args, says);
    // The portable build has no live view, and says so (in one line too).
    let (no_session, no_pid) = if perflens_sys::CAPABILITIES.live_view {
        ("no running live session", "no live session of pid 4000000")
    } else {
        (NO_LIVE_VIEW, NO_LIVE_VIEW)
    };
    refused(&["top"], no_session);
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a report").unwrap();
    let not_a_report = dir.join("other.json");
    std::fs::write(&not_a_report, r#"{"name": "x"}"#).unwrap();
    refused(&["top", "4000000"], no_pid);
    refused(&["top", text.to_str().unwrap()], "JSON report");
    refused(
        &["top", not_a_report.to_str().unwrap()],
        "not a perflens report",
    );
    refused(&["top", "/nonexistent/perflens.txt"], "cannot open");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn top_with_a_wrong_command_line_gets_the_usage() {
    for args in [
        &["top", "x.json", "--interval"][..],
        &["top", "x.json", "--interval", "soon"][..],
        &["top", "x.json", "--colour"][..],
        &["top", "x.json", "y.json"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_perflens"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("perflens top [PID|PATH] [--interval MS]"),
            "{err}"
        );
    }
}
