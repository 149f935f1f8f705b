//! Threads that arm themselves (`arm_current_thread`, as perflens's
//! first-call hook does for every thread) while the watcher rescans are
//! each reported once, as live: the watcher never takes a live thread for
//! an exited one, whether it armed itself after the watcher listed
//! `/proc/self/task` or the listing missed it while other threads exited.
// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod common;
use common::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

const ROUNDS: usize = 4;
const PER_ROUND: usize = 320;
/// Debug builds need more than 128 KiB under a signal handler.
const STACK: usize = 512 * 1024;

/// The report's entries per thread, as (tid, name), with their `exited`
/// flags. The name tells threads apart that had the same tid: the kernel
/// hands out tids again once it wraps at pid_max (32,768 here), which a
/// test creating thousands of threads on a busy machine can reach.
fn entries(report: &perflens_sampler::CpuProfile) -> HashMap<(u64, String), Vec<bool>> {
    let mut by_thread: HashMap<(u64, String), Vec<bool>> = HashMap::new();
    for t in &report.threads {
        by_thread
            .entry((t.tid, t.name.clone()))
            .or_default()
            .push(t.exited);
    }
    by_thread
}

/// Runs `f` on a new thread until `stop` is set.
fn background(stop: &Arc<AtomicBool>, f: impl Fn() + Send + 'static) -> JoinHandle<()> {
    let stop = stop.clone();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            f();
        }
    })
}

#[test]
fn threads_arming_themselves_during_rescans_are_reported_once_and_live() {
    let _s = serial();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .max_threads(2048)
        .buffer_bytes(16 * 1024)
        // Rescan as often as possible: every pass is a chance for the race.
        .rescan_interval(Duration::from_micros(50))
        .build()
        .expect("start");
    let stop = Arc::new(AtomicBool::new(false));
    // Short-lived threads start, arm themselves and exit all along, and
    // two threads keep both CPUs busy so the watcher is preempted often.
    let mut helpers = vec![background(&stop, || {
        let batch: Vec<_> = (0..8)
            .map(|_| {
                std::thread::Builder::new()
                    .name("churn".into())
                    .stack_size(STACK)
                    .spawn(|| {
                        perflens_sampler::arm_current_thread().unwrap();
                    })
                    .unwrap()
            })
            .collect();
        for h in batch {
            h.join().unwrap();
        }
    })];
    for _ in 0..2 {
        helpers.push(background(&stop, || {
            busy_for(Duration::from_millis(1));
        }));
    }

    let mut wrong = Vec::new();
    let mut checked = 0;
    for round in 0..ROUNDS {
        let all_armed = Arc::new(Barrier::new(PER_ROUND + 1));
        let release = Arc::new(Barrier::new(PER_ROUND + 1));
        let handles: Vec<_> = (0..PER_ROUND)
            .map(|i| {
                let (all_armed, release) = (all_armed.clone(), release.clone());
                std::thread::Builder::new()
                    .name(format!("r{round}t{i}"))
                    .stack_size(STACK)
                    .spawn(move || {
                        assert!(perflens_sampler::arm_current_thread().unwrap());
                        all_armed.wait();
                        release.wait();
                        (tid(), format!("r{round}t{i}"))
                    })
                    .unwrap()
            })
            .collect();
        all_armed.wait();
        // All alive and armed; give the watcher passes to go wrong.
        std::thread::sleep(Duration::from_millis(30));
        let live = entries(&guard.profile().build().expect("live report"));
        release.wait();
        for h in handles {
            let thread = h.join().unwrap();
            checked += 1;
            match live.get(&thread).map(Vec::as_slice) {
                Some([false]) => {}
                other => wrong.push((thread, other.map(<[bool]>::to_vec))),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in helpers {
        h.join().unwrap();
    }
    let report = guard.stop().build().expect("report");

    assert!(
        wrong.is_empty(),
        "{} of {checked} live threads not reported exactly once as live \
         ((tid, name), the exited flag of each of its entries): {wrong:?}",
        wrong.len(),
    );
    // Each of the checked threads (named r<round>t<i>) has one entry. The
    // churn threads all share a name, so a reused tid gives them several.
    let dup: Vec<_> = entries(&report)
        .into_iter()
        .filter(|((_, name), v)| name.starts_with('r') && v.len() > 1)
        .collect();
    assert!(dup.is_empty(), "threads with several entries: {dup:?}");
}
