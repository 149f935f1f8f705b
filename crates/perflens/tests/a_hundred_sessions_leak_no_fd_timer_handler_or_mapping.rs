//! 100 sessions with CPU sampling and allocation counting, started and
//! finished one after another in one process, each with threads that make
//! measured calls: no perf fd, POSIX timer, signal handler, thread or
//! mapping is left behind, and every session's report is exact.
// perf fds, POSIX timers and mappings read from /proc: Linux only.
#![cfg(target_os = "linux")]
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::collections::BTreeMap;
use std::hint::black_box;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

const SESSIONS: u64 = 100;
const WARM_UP: u64 = 3;
const CALLS: u64 = 10;

#[perflens::measure]
fn work(i: u64) -> u64 {
    black_box(vec![i; 4]).iter().sum()
}

/// One session: this thread and two short-lived ones make measured
/// calls; checks the report.
fn one_session() {
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    let mut sum: u64 = (0..CALLS).map(work).sum();
    for _ in 0..2 {
        sum += std::thread::spawn(|| (0..CALLS).map(work).sum::<u64>())
            .join()
            .unwrap();
    }
    let report = session.finish();
    assert_eq!(sum, 3 * 4 * CALLS * (CALLS - 1) / 2);
    let row = report.function(&name("work")).unwrap();
    assert_eq!(row.calls, 3 * CALLS);
    assert_eq!(row.alloc.map(|a| a.bytes), Some(3 * CALLS * 32));
    if common::capabilities::cpu_sampled(&report) {
        assert!(report.cpu.as_ref().unwrap().is_available());
    }
}

/// What the process holds that a session could leak.
#[derive(Debug, PartialEq, Eq)]
struct Held {
    fds: Vec<(i32, String)>,
    timers: usize,
    threads: usize,
    /// Handlers of the signals the sampler uses or could.
    dispositions: Vec<(i32, (usize, i32))>,
    /// Mappings: how many, and how many of each file.
    mappings: usize,
    files: BTreeMap<String, usize>,
}

fn held() -> Held {
    let maps = maps();
    let mut files = BTreeMap::new();
    for l in &maps {
        if let Some(f) = l.split_whitespace().nth(5) {
            *files.entry(f.to_string()).or_default() += 1;
        }
    }
    let signals = [
        libc::SIGTRAP,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGRTMIN() + 4,
    ];
    Held {
        fds: fds("self"),
        timers: posix_timers(),
        threads: threads(),
        dispositions: signals.iter().map(|&s| (s, disposition(s))).collect(),
        mappings: maps.len(),
        files,
    }
}

#[test]
fn a_hundred_sessions_leak_no_fd_timer_handler_or_mapping() {
    // Warm-up: the first sessions install the sampler's signal handlers
    // (kept for the life of the process on purpose, so that a late
    // signal never meets the default action), and leave memory that is
    // kept for reuse: the blocks of exited threads (handed to new threads
    // by later sessions), glibc's cache of thread stacks and its malloc
    // arenas. After that, sessions must hold nothing more.
    for _ in 0..WARM_UP {
        one_session();
    }
    let before = held();
    assert_eq!(before.timers, 0);
    assert_eq!(perf_fds("self"), 0);
    for _ in 0..SESSIONS {
        one_session();
    }
    let after = held();
    assert_eq!(after, before);
}
