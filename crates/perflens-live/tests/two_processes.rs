//! A program and a reader in two processes (issue 12): while the program
//! runs, successive live snapshots only grow; once it has finished with
//! `PERFLENS_LIVE_KEEP=1`, the reader's report is the program's own final
//! JSON report, byte for byte: calls, paths, bytes and samples.
//!
//! The program is this test binary run again on one test
//! (`target_program`), with `PERFLENS_LIVE_TEST_CHILD` set; each test runs
//! it under its own `XDG_RUNTIME_DIR`, so tests running at once (or other
//! programs of the user) never see each other's sessions.
// Not in the portable build: it reads a live session, and that build has
// none (tests/the_live_view_is_there_or_says_why.rs checks what it says).
#![cfg(not(perflens_portable))]

use perflens_live::{LiveSession, State};
use perflens_report::{Report, ReportOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

/// Set in the child: how long it runs its workload, in ms.
const CHILD: &str = "PERFLENS_LIVE_TEST_CHILD";

mod common;
use common::{live_session, parse, run_workers};

#[perflens::measure]
fn only_in_the_forked_child(i: u64) -> u64 {
    parse(i % 100)
}

/// The program: a CPU-sampled, allocation-counted live session with a
/// few threads of measured work, for `CHILD` ms (`fork:<ms>`: it also
/// forks a child that makes calls of its own and ends the session it
/// inherited).
#[test]
fn target_program() {
    let Some(spec) = std::env::var(CHILD).ok() else {
        return;
    };
    let (fork, ms) = match spec.strip_prefix("fork:") {
        Some(ms) => (true, ms),
        None => (false, spec.as_str()),
    };
    let ms: u64 = ms.parse().unwrap();
    let session = live_session();
    let until = Instant::now() + Duration::from_millis(ms);
    let mut acc = run_workers(3, 9, until);
    if fork {
        // SAFETY: fork in a test process; the child only makes measured
        // calls, ends its copy of the session and leaves with _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            for i in 0..1000 {
                acc ^= only_in_the_forked_child(i);
            }
            std::hint::black_box(acc);
            let report = session.finish();
            let ok = report
                .functions
                .iter()
                .any(|f| f.name.ends_with("only_in_the_forked_child") && f.calls == 1000);
            // SAFETY: leaves the child without running the test harness.
            unsafe { libc::_exit(if ok { 0 } else { 3 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child's own report has its 1000 calls: status {status:#x}"
        );
    }
    std::hint::black_box(acc);
    session.finish();
}

/// A private runtime directory for one test's child.
fn runtime_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perflens-live-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn spawn(runtime: &Path, ms: u64, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "target_program",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, ms.to_string())
    .env("XDG_RUNTIME_DIR", runtime)
    .env("PERFLENS_LIVE", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Waits (bounded) for the one session under `root` and opens it.
fn wait_for_session(root: &Path) -> LiveSession {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let [one] = perflens_live::list(root).as_slice() {
            return LiveSession::open(&one.dir).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no live session appeared in {root:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every figure that only grows while a program runs, per function row.
fn growing(report: &Report) -> Vec<(String, [u64; 6])> {
    let mut rows: Vec<_> = report
        .functions
        .iter()
        .map(|f| {
            (
                f.name.clone(),
                [
                    f.calls,
                    f.total_ns,
                    f.self_ns,
                    f.alloc.map_or(0, |a| a.count),
                    f.alloc.map_or(0, |a| a.bytes),
                    f.cpu.map_or(0, |c| c.samples),
                ],
            )
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn snapshots_only_grow_while_the_program_runs() {
    let runtime = runtime_dir("grow");
    let root = runtime.join("perflens");
    // The program works until the test has read it while it ran (at
    // most a minute).
    let stop = runtime.join("stop");
    let mut child = spawn(
        &runtime,
        60_000,
        &[(common::STOP_FILE, stop.to_str().unwrap())],
    );
    let mut live = wait_for_session(&root);
    assert_eq!(live.pid(), child.id());
    let mut previous: Vec<(String, [u64; 6])> = Vec::new();
    let mut paths_before = 0;
    let mut snapshots = 0;
    let mut grew = 0;
    // qemu-user makes up the start time a program reads of itself
    // (`/proc/self/stat`), a few clock ticks off the kernel's, so a
    // reader sees its entry as stale: the child's handle says whether it
    // runs there instead.
    let qemu = common::under_qemu("a running program's entry reads as running");
    let mut running = |live: &LiveSession| {
        if qemu {
            child.try_wait().unwrap().is_none()
        } else {
            live.state() == State::Running
        }
    };
    while running(&live) {
        let report = match live.report(&ReportOptions::default()) {
            Ok(r) => r,
            // The program ended and removed its entry between the state
            // check and the read.
            Err(_) if !running(&live) => break,
            Err(e) => panic!("live read failed: {e}"),
        };
        let rows = growing(&report);
        for (name, before) in &previous {
            let now = rows
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("row {name} disappeared"));
            for (i, (b, n)) in before.iter().zip(now.1).enumerate() {
                assert!(n >= *b, "{name}: figure {i} went from {b} to {n}");
            }
        }
        assert!(report.paths.len() >= paths_before, "paths only grow");
        if rows != previous {
            grew += 1;
        }
        paths_before = report.paths.len();
        previous = rows;
        snapshots += 1;
        if snapshots >= 8 && grew >= 6 {
            std::fs::write(&stop, b"").unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(child.wait().unwrap().success());
    assert!(snapshots >= 5, "only {snapshots} snapshots while it ran");
    assert!(
        grew >= 4,
        "the figures grew in only {grew} of {snapshots} snapshots"
    );
    let names: Vec<&str> = previous.iter().map(|(n, _)| n.as_str()).collect();
    // `worker` returns only when the program ends: while it runs, its row
    // is there by its CPU samples, in a build that samples.
    let sampled = perflens_sys::CAPABILITIES.cpu_sampling;
    let expected = ["request", "parse", "spin", "worker"];
    for f in &expected[..if sampled { 4 } else { 3 }] {
        let name = format!("two_processes::common::{f}");
        assert!(
            names.contains(&name.as_str()),
            "{name} missing from {names:?}"
        );
    }
    let last = &previous
        .iter()
        .find(|(n, _)| n.ends_with("::parse"))
        .unwrap()
        .1;
    assert!(
        last[3] > 0 && last[4] > 0,
        "parse's allocations are counted live"
    );
    // Not kept: the entry is gone once the program has ended.
    assert!(
        perflens_live::list(&root).is_empty(),
        "the entry is removed at the end"
    );
    let _ = std::fs::remove_dir_all(&runtime);
}

/// Runs the program with `PERFLENS_LIVE_KEEP=1` and `PERFLENS_JSON` (and
/// `env`), and returns its one kept entry read back as JSON, and the JSON
/// the program wrote itself.
fn kept_run(test: &str, ms: u64, env: &[(&str, &str)]) -> (String, String) {
    let runtime = runtime_dir(test);
    let root = runtime.join("perflens");
    let json = runtime.join("report.json");
    let mut all = vec![
        ("PERFLENS_LIVE_KEEP", "1"),
        ("PERFLENS_JSON", json.to_str().unwrap()),
    ];
    all.extend_from_slice(env);
    let mut child = spawn(&runtime, ms, &all);
    assert!(child.wait().unwrap().success());
    // One entry (a forked child published nothing, and ending its copy
    // of the session removed nothing).
    let sessions = perflens_live::list(&root);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].state, State::Finished);
    let mut live = LiveSession::open(&sessions[0].dir).unwrap();
    let report = live.report(&ReportOptions::default()).unwrap();
    // Four threads made the measured calls, and the session's thread
    // count is the report's. The CPU sampler's watcher may have a block
    // file too (under load its start-up allocation came after the live
    // session started, 1 run in 5 with 12 busy loops), which it then
    // marks excluded: neither counts it.
    let calling = report.threads.iter().filter(|t| t.calls > 0).count();
    assert_eq!(calling, 4, "{:?}", report.threads);
    assert_eq!(
        sessions[0].threads,
        report.threads.len(),
        "{:?}",
        report.threads
    );
    self_histograms_read_apart_are_those_read_with_the_rest(&mut live);
    let mut ours = Vec::new();
    perflens_report::write_json(&report, &mut ours).unwrap();
    let theirs = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_dir_all(&runtime);
    (String::from_utf8(ours).unwrap(), theirs)
}

/// A snapshot read without its histograms (the inclusive ones only
/// counted), then the exclusive-time ones of its nodes read apart (as
/// `perflens top` does for the rows on screen): the same calls and
/// histograms as one read of everything.
fn self_histograms_read_apart_are_those_read_with_the_rest(live: &mut LiveSession) {
    let full = live.raw_snapshot(true).unwrap();
    // No histogram at all: the inclusive ones only counted.
    let part = live
        .raw_snapshot_with(perflens_live::Histograms::Counts)
        .unwrap();
    let mut nodes = Vec::new();
    for (t, thread) in part.snapshot.threads.iter().enumerate() {
        for (j, node) in thread.nodes.iter().enumerate() {
            assert!(node.hist_self.is_empty() && node.hist_total.is_empty());
            let whole = &full.snapshot.threads[t].nodes[j];
            assert_eq!(
                (node.calls, node.timed_calls),
                (whole.calls, whole.hist_total.count()),
                "counted as read whole"
            );
            nodes.push((t, j));
        }
    }
    // In any order, and past the ends (read as empty).
    nodes.reverse();
    nodes.push((part.snapshot.threads.len(), 0));
    nodes.push((0, usize::MAX));
    let hists = live.self_histograms(&part, &nodes).unwrap();
    let mut timed = 0;
    for (&(t, j), h) in nodes.iter().zip(&hists) {
        match full.snapshot.threads.get(t).and_then(|th| th.nodes.get(j)) {
            Some(node) => {
                assert_eq!(h, &node.hist_self, "thread {t} node {j}");
                timed += h.count();
            }
            None => assert!(h.is_empty()),
        }
    }
    assert!(timed > 10, "the histograms hold the timed calls: {timed}");
    // Read in step and cut at a quantile's rank, by path (a frame's
    // contexts on every thread) and one context at a time: the same
    // quantiles up to that one as the whole histograms merged.
    let mut by_path: std::collections::BTreeMap<u32, Vec<(usize, usize)>> = Default::default();
    for (t, thread) in part.snapshot.threads.iter().enumerate() {
        for (j, node) in thread.nodes.iter().enumerate() {
            by_path.entry(node.path).or_default().push((t, j));
        }
    }
    let mut frames: Vec<Vec<(usize, usize)>> = by_path.into_values().collect();
    let singles: Vec<Vec<(usize, usize)>> = frames.iter().flatten().map(|&c| vec![c]).collect();
    frames.extend(singles);
    frames.push(vec![(part.snapshot.threads.len(), 0), (0, usize::MAX)]);
    let sets: Vec<&[(usize, usize)]> = frames.iter().map(Vec::as_slice).collect();
    let mut cut_short = 0;
    for q in [0.5, 0.99, 1.0] {
        let cut = live.self_quantile_histograms(&part, &sets, q).unwrap();
        for (contexts, h) in frames.iter().zip(&cut) {
            let mut whole = perflens_format::Histogram::default();
            for &(t, j) in contexts {
                if let Some(node) = full.snapshot.threads.get(t).and_then(|th| th.nodes.get(j)) {
                    whole.merge(&node.hist_self);
                }
            }
            assert_eq!(
                h.count(),
                whole.count(),
                "{contexts:?}: every timed call counted"
            );
            let qs = [0.0, 0.25, 0.5, q * 0.9, q];
            assert_eq!(
                h.quantiles(qs),
                whole.quantiles(qs),
                "{contexts:?} up to {q}"
            );
            if q < 1.0 && h != &whole {
                cut_short += 1;
            }
        }
    }
    assert!(cut_short > 0, "some reads stop before the largest value");
}

/// Fails naming the differing lines (rather than printing 100 KB).
fn assert_same_report(ours: &str, theirs: &str) {
    if ours != theirs {
        let diff: Vec<String> = ours
            .lines()
            .zip(theirs.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(12)
            .map(|(i, (a, b))| format!("line {}: reader {a:?}, program {b:?}", i + 1))
            .collect();
        panic!(
            "the reader's report differs from the program's ({} and {} lines):\n{}",
            ours.lines().count(),
            theirs.lines().count(),
            diff.join("\n")
        );
    }
}

#[test]
fn a_kept_session_reads_back_as_the_programs_own_report() {
    let (ours, theirs) = kept_run("keep", 600, &[]);
    // The workload is real: calls, allocations and CPU samples.
    let program = Report::from_json_str(&theirs).unwrap();
    let request = program
        .functions
        .iter()
        .find(|f| f.name.ends_with("::request"))
        .unwrap();
    assert!(
        request.calls > 10 && request.alloc.unwrap().incl_count > 0,
        "{request:?}"
    );
    // CPU samples where the build samples; elsewhere (the POSIX build)
    // the CPU section says why there are none, and the kept session says
    // the same.
    let cpu = program.cpu.as_ref().unwrap();
    if perflens_sys::CAPABILITIES.cpu_sampling {
        // qemu-user delivers a CPU timer's signal only when its translated
        // code next checks for one, so far fewer arrive.
        let least = if common::under_qemu("over 100 CPU samples in 300 ms of CPU time") {
            1
        } else {
            100
        };
        assert!(cpu.samples > least, "{cpu:?}");
    } else {
        assert!(
            cpu.samples == 0
                && cpu.source.starts_with("unavailable:")
                && cpu.source.contains(perflens_sys::CAPABILITIES.platform),
            "{cpu:?}"
        );
    }
    assert_same_report(&ours, &theirs);
}

#[test]
fn a_forked_child_never_writes_into_its_parents_entry() {
    // `fork:` makes the program fork once its workers are done.
    let (ours, theirs) = kept_run("fork", 0, &[(CHILD, "fork:400")]);
    let report = Report::from_json_str(&ours).unwrap();
    assert!(
        !report
            .functions
            .iter()
            .any(|f| f.name.contains("forked_child")),
        "the child's calls are not in the parent's entry"
    );
    // The entry still reads as the parent's own final report.
    assert_same_report(&ours, &theirs);
}

/// A session that ends removes its entry (unless kept); a thread that
/// started just before, whose block the reader had not mapped yet, can no
/// longer be read: the reader says how many such threads it lacks rather
/// than failing. (Here: a finished entry whose session file and one block
/// file were removed after the reader opened it, as `remove_dir_all`
/// does; in a kept entry a missing block is an error, see
/// hostile_input.rs.)
#[test]
fn a_block_removed_with_its_finished_entry_is_counted_not_fatal() {
    let runtime = runtime_dir("gone");
    let root = runtime.join("perflens");
    let mut child = spawn(&runtime, 200, &[("PERFLENS_LIVE_KEEP", "1")]);
    assert!(child.wait().unwrap().success());
    let dir = perflens_live::list(&root)[0].dir.clone();
    let mut live = LiveSession::open(&dir).unwrap();
    // The program's four threads have blocks, and sometimes the test
    // harness's main thread too (it allocated while the session ran: 2
    // runs in 30).
    let blocks = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('b')
        })
        .count();
    assert!((4..=5).contains(&blocks), "{blocks} block files");
    std::fs::remove_file(dir.join("b3")).unwrap();
    std::fs::remove_file(dir.join("session")).unwrap();
    let read = live.raw_snapshot(true).unwrap();
    assert_eq!(read.unread_threads, 1);
    assert_eq!(
        read.missing().as_deref(),
        Some("1 thread(s) not shown: they started as it ended, and its entry was removed first")
    );
    assert_eq!(read.snapshot.threads.len(), blocks - 1);
    assert!(read.snapshot.finished);
    let _ = std::fs::remove_dir_all(&runtime);
}
