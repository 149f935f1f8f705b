//! A forked child of a sampled process starts a thread of its own, whose
//! first measured call would arm it for CPU sampling in the parent. In
//! the child it must not: the sampler's locks may be held by parent
//! threads that do not exist there (the watcher takes them on every
//! pass; arming deadlocked), and no watcher drains a child's samples.
//! The child inherited the parent's perf event fds, and arming would add
//! one. The child runs its measured calls on both threads and exits by
//! itself; the parent's report holds exactly the parent's calls.
//!
//! This test is alone in its binary on purpose. A forked child of a
//! multi-threaded parent may only start a thread when no other parent
//! thread can be inside `thread::spawn` at the fork (std keeps a lock
//! there that the child would wait on forever). Here the only threads are
//! the test's, the sampler's watcher and one measured background thread,
//! all started before the first fork; the test harness starts no other.
// fork and the perf event fds in /proc: Linux only. Not in the portable
// build: it has no fork handlers (the platforms that run it have no
// fork), so forced on Linux a fork can copy the thread registry's lock
// held by another thread, and the child hangs (1 run in about 5).
#![cfg(target_os = "linux")]
#![cfg(not(perflens_portable))]
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

const FORKS: u64 = 20;
const CHILD_CALLS: u64 = 100;
/// What a child exits with when everything it checked held.
const CHILD_OK: i32 = 42;
/// What a child exits with when its new thread was armed for sampling.
const CHILD_ARMED: i32 = 43;
/// What a child exits with when a sum came out wrong.
const CHILD_WRONG_SUM: i32 = 44;

/// Forks; the child runs measured code on this thread and on a new one,
/// and exits by itself. Returns the child's pid (in the parent).
#[perflens::measure]
fn forks() -> libc::pid_t {
    // SAFETY: fork has no preconditions. The child below runs code that
    // does not depend on other parent threads: no parent thread can be
    // inside `thread::spawn` now (see the module's comment).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let sum: u64 = (0..CHILD_CALLS).map(in_child).sum();
        let perf_before = perf_fds("self");
        let on_thread = std::thread::spawn(|| (0..CHILD_CALLS).map(in_child_thread).sum::<u64>())
            .join()
            .unwrap_or(0);
        let code = if perf_fds("self") != perf_before {
            CHILD_ARMED
        } else if sum == CHILD_CALLS * (CHILD_CALLS - 1) && on_thread == sum {
            CHILD_OK
        } else {
            CHILD_WRONG_SUM
        };
        // Exits through libc's `exit` (atexit handlers, stdio, thread-local
        // destructors of this thread), as a C program would; not
        // `std::process::exit`, whose runtime cleanup takes a lock of
        // std's stack-overflow handler that a parent thread may have held
        // at the fork (see fork_and_exec_from_measured_functions_are_safe.rs).
        // SAFETY: ends the process; nothing runs after it.
        unsafe { libc::exit(code) };
    }
    pid
}

#[perflens::measure]
fn in_child(i: u64) -> u64 {
    black_box(vec![i; 16]).iter().take(2).sum()
}

#[perflens::measure]
fn in_child_thread(i: u64) -> u64 {
    black_box(vec![i; 16]).iter().take(2).sum()
}

/// Burns CPU in a measured function until `stop`, so that the sampler
/// keeps signalling this thread, and its watcher keeps passing, while
/// the other one forks.
#[perflens::measure]
fn background(stop: &AtomicBool) -> u64 {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        spin_cpu(1);
        n += 1;
    }
    n
}

#[test]
fn a_forked_childs_new_thread_is_never_armed_for_sampling() {
    if common::under_qemu(
        "qemu-user itself fails an assertion (cpu_exec: cpu == current_cpu) when a \
         forked child of a multi-threaded program starts a thread; a 20-line C \
         program does the same",
    ) {
        return;
    }
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    let stop = AtomicBool::new(false);
    let statuses = std::thread::scope(|s| {
        let bg = s.spawn(|| background(&stop));
        let statuses: Vec<Result<i32, String>> = (0..FORKS)
            .map(|_| {
                let st = wait_for(forks(), Duration::from_secs(10));
                // Let the watcher pass between forks, so some fork finds
                // it holding the sampler's locks.
                std::thread::sleep(Duration::from_millis(3));
                st
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        assert!(bg.join().unwrap() > 0);
        statuses
    });
    let report = session.finish();
    for (i, st) in statuses.iter().enumerate() {
        match st {
            Ok(st) => assert!(
                libc::WIFEXITED(*st) && libc::WEXITSTATUS(*st) == CHILD_OK,
                "child {i}: {} ({CHILD_ARMED}: armed, {CHILD_WRONG_SUM}: wrong sum)",
                describe(*st)
            ),
            Err(e) => panic!("child {i}: {e}"),
        }
    }
    let calls = |f: &str| report.function(&name(f)).map(|r| r.calls);
    assert_eq!(calls("forks"), Some(FORKS));
    assert_eq!(calls("in_child"), None);
    assert_eq!(calls("in_child_thread"), None);
    assert_eq!(calls("background"), Some(1));
    assert_eq!(report.dropped.dropped_frames, 0);
    // Without CPU sampling (the portable build) the report says so; the
    // children's checks above hold either way.
    if common::capabilities::cpu_sampled(&report) {
        let cpu = report.cpu.as_ref().unwrap();
        assert!(cpu.is_available(), "{}", cpu.source);
    }
}
