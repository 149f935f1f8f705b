//! The heap profile of a running program, read from another process: the
//! program (this binary run again, feature `heap`) holds 32 MiB in 4 KiB
//! blocks in one function and frees 64 MiB in another; the reader maps
//! its sample table and sees the held set by its path, within the
//! sampling's spread, and nothing of the churn. When the program has
//! finished (its entry kept), the reader has the profile as it was at
//! the end, with the held set freed.
#![cfg(not(perflens_portable))]

use perflens_live::{LiveSession, State};
use perflens_report::{Report, ReportOptions};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

const CHILD: &str = "PERFLENS_LIVE_HEAP_TEST_CHILD";
const MIB: usize = 1 << 20;

#[perflens::measure]
fn hold(out: &mut Vec<Vec<u8>>) {
    for i in 0..32 * MIB / 4096 {
        out.push(vec![i as u8; 4096]);
    }
}

#[perflens::measure]
fn churn() {
    for i in 0..64 * MIB / 4096 {
        drop(std::hint::black_box(vec![i as u8; 4096]));
    }
}

#[test]
fn heap_program() {
    let Ok(stop) = std::env::var(CHILD) else {
        return;
    };
    let session = perflens::Session::builder()
        .live(true)
        .heap_rate(64 << 10)
        .start()
        .unwrap();
    let mut held = Vec::with_capacity(32 * MIB / 4096);
    hold(&mut held);
    churn();
    // Hold until the reader has seen it (at most a minute).
    let until = Instant::now() + Duration::from_secs(60);
    while !Path::new(&stop).exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(held);
    drop(session.finish());
}

/// The estimated bytes in use of the path ending in `function`.
fn inuse(report: &Report, function: &str) -> u64 {
    (report.heap.iter().flat_map(|h| &h.inuse_paths))
        .filter(|p| p.frames.last().is_some_and(|f| f.ends_with(function)))
        .map(|p| p.inuse_bytes)
        .sum()
}

#[test]
fn the_reader_sees_the_held_set_while_it_runs_and_the_end_once_finished() {
    let runtime = std::env::temp_dir().join(format!("perflens-live-heap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&runtime);
    std::fs::create_dir_all(&runtime).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let stop = runtime.join("stop");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "heap_program", "--nocapture"])
        .env(CHILD, &stop)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("PERFLENS_LIVE_KEEP", "1")
        .spawn()
        .unwrap();
    let root = runtime.join("perflens");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Read until the held set is there (the program builds it first).
    let mut live = loop {
        if let [one] = perflens_live::list(&root).as_slice() {
            break LiveSession::open(&one.dir).unwrap();
        }
        assert!(Instant::now() < deadline, "no session");
        std::thread::sleep(Duration::from_millis(20));
    };
    let running = loop {
        let report = live.report(&ReportOptions::default()).unwrap();
        if inuse(&report, "::hold") > 0
            && report.functions.iter().any(|f| f.name.ends_with("::churn"))
        {
            break report;
        }
        assert!(Instant::now() < deadline, "the held set never showed");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::fs::write(&stop, b"").unwrap();
    assert!(child.wait().unwrap().success());
    // ~512 samples at 64 KiB: one standard deviation is 4.4%.
    let held = inuse(&running, "::hold") as f64;
    let truth = (32 * MIB) as f64;
    assert!(
        (held / truth - 1.0).abs() < 0.2,
        "hold: {held} bytes in use, truth {truth}: {:?}",
        running.heap
    );
    assert_eq!(inuse(&running, "::churn"), 0, "{:?}", running.heap);
    let heap = running.heap.as_ref().unwrap();
    assert_eq!((heap.rate_bytes, heap.dropped), (64 << 10, 0));
    // Finished: the profile at the end, the held set freed before it.
    assert_eq!(live.state(), State::Finished);
    let end = live.report(&ReportOptions::default()).unwrap();
    assert!(end.finished && end.heap.is_some(), "{:?}", end.heap);
    assert_eq!(inuse(&end, "::hold"), 0, "{:?}", end.heap);
    std::fs::remove_dir_all(&runtime).ok();
}
