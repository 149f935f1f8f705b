//! Threads that arm themselves (`arm_current_thread`, as perflens's
//! first-call hook does for every thread) while the watcher rescans are
//! each reported once, as live: the watcher never takes a live thread for
//! an exited one, whether it armed itself after the watcher listed
//! `/proc/self/task` or the listing missed it while other threads exited.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
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

/// The report's entries per tid (their `exited` flags).
fn entries(report: &perflens_sampler::Report) -> HashMap<u64, Vec<bool>> {
    let mut by_tid: HashMap<u64, Vec<bool>> = HashMap::new();
    for t in &report.threads {
        by_tid.entry(t.tid).or_default().push(t.exited);
    }
    by_tid
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
    for _ in 0..ROUNDS {
        let all_armed = Arc::new(Barrier::new(PER_ROUND + 1));
        let release = Arc::new(Barrier::new(PER_ROUND + 1));
        let handles: Vec<_> = (0..PER_ROUND)
            .map(|_| {
                let (all_armed, release) = (all_armed.clone(), release.clone());
                std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn(move || {
                        assert!(perflens_sampler::arm_current_thread().unwrap());
                        all_armed.wait();
                        release.wait();
                        tid()
                    })
                    .unwrap()
            })
            .collect();
        all_armed.wait();
        // All alive and armed; give the watcher passes to go wrong.
        std::thread::sleep(Duration::from_millis(30));
        let live = entries(&guard.report().build().expect("live report"));
        release.wait();
        for h in handles {
            let tid = h.join().unwrap();
            checked += 1;
            match live.get(&tid).map(Vec::as_slice) {
                Some([false]) => {}
                other => wrong.push((tid, other.map(<[bool]>::to_vec))),
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
         (tid, the exited flag of each of its entries): {wrong:?}",
        wrong.len(),
    );
    // Several exited entries under one tid are threads that came and went
    // with a reused tid (the kernel wraps tids after pid_max; a slow build,
    // such as under AddressSanitizer, creates enough threads to wrap it).
    // A live thread must have no other entry.
    let dup: Vec<_> = entries(&report)
        .into_iter()
        .filter(|(_, v)| v.len() > 1 && v.contains(&false))
        .collect();
    assert!(dup.is_empty(), "live tids with several entries: {dup:?}");
}
