//! A program under `#[perflens::main]` (alloc and CPU sampling on) whose
//! `main` returns while a thread is still making measured calls and
//! allocating, and another makes its first measured call (arming itself
//! for sampling) as the session ends: the process exits with status 0
//! and prints its report, which holds the main thread's calls exactly.
//!
//! Runs itself as the child (`PERFLENS_STRESS_CHILD` set) a few times,
//! since what it checks is a race with the process's exit.

use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const MAIN_CALLS: u64 = 500;
const RUNS: usize = 5;

static TICKS: AtomicU64 = AtomicU64::new(0);
static ENDING: AtomicBool = AtomicBool::new(false);

#[perflens::measure]
fn on_main(i: u64) -> u64 {
    black_box(vec![i; 4]).iter().sum()
}

#[perflens::measure]
fn tick(i: u64) -> u64 {
    TICKS.fetch_add(1, Ordering::Relaxed);
    black_box(vec![i; 4]).iter().sum()
}

#[perflens::measure]
fn late_first_call() -> u64 {
    black_box(1)
}

fn child() {
    std::thread::spawn(|| {
        let mut i = 0u64;
        loop {
            black_box(tick(i));
            i += 1;
        }
    });
    std::thread::spawn(|| {
        while !ENDING.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
        loop {
            black_box(late_first_call());
        }
    });
    let sum: u64 = (0..MAIN_CALLS).map(on_main).sum();
    assert_eq!(sum, 4 * MAIN_CALLS * (MAIN_CALLS - 1) / 2);
    while TICKS.load(Ordering::Relaxed) < 1000 {
        std::thread::yield_now();
    }
    ENDING.store(true, Ordering::Relaxed);
}

fn parent() {
    let dir = std::env::temp_dir();
    for run in 0..RUNS {
        let json = dir.join(format!(
            "perflens-outlives-main-{}-{run}.json",
            std::process::id()
        ));
        let out = Command::new(std::env::current_exe().unwrap())
            .env("PERFLENS_STRESS_CHILD", "1")
            .env("PERFLENS_JSON", &json)
            .env("PERFLENS_FORMAT", "table")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "run {run}: {:?}\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains("::on_main"),
            "run {run}: no table\n{stderr}"
        );
        let text = std::fs::read_to_string(&json).unwrap();
        let _ = std::fs::remove_file(&json);
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        let calls = |f: &str| {
            report["functions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"].as_str().unwrap().ends_with(f))
                .map(|r| r["calls"].as_u64().unwrap())
        };
        assert_eq!(calls("::on_main"), Some(MAIN_CALLS), "run {run}");
        assert!(calls("::tick").unwrap() >= 1000, "run {run}");
        // The portable build samples no CPU time, and its report says so.
        assert!(
            report["cpu"]["source"]
                .as_str()
                .unwrap()
                .starts_with("unavailable")
                != perflens_sys::CAPABILITIES.cpu_sampling,
            "run {run}: {}",
            report["cpu"]["source"]
        );
    }
    println!("a_thread_running_when_main_returns_exits_cleanly: {RUNS} runs ok");
}

#[perflens::main(format = "none")]
fn main() {
    if std::env::var_os("PERFLENS_STRESS_CHILD").is_some() {
        child();
    } else {
        parent();
    }
}
