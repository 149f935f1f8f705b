//! Samples are split between threads like their CPU time.
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
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn sample_split_matches_thread_cpu_time() {
    let _s = serial();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    let (tx, rx) = mpsc::channel();
    let work = |cpu_ms: u64, tx: mpsc::Sender<(u64, Duration)>| {
        move || {
            perflens_sampler::arm_current_thread().expect("arm");
            let t0 = thread_cpu();
            busy_for(Duration::from_millis(cpu_ms));
            tx.send((tid(), thread_cpu() - t0)).unwrap();
            // Park until the profile is stopped.
            std::thread::park_timeout(Duration::from_secs(2));
        }
    };
    let a = std::thread::spawn(work(450, tx.clone()));
    let b = std::thread::spawn(work(150, tx.clone()));
    // A thread that only parks.
    let parked = std::thread::spawn(|| std::thread::park_timeout(Duration::from_secs(2)));
    let mut truth = vec![rx.recv().unwrap(), rx.recv().unwrap()];
    let report = guard.stop().build().expect("report");
    for h in [&a, &b, &parked] {
        h.thread().unpark();
    }
    a.join().unwrap();
    b.join().unwrap();
    parked.join().unwrap();
    truth.sort_by_key(|t| t.1);
    let total_truth: f64 = truth.iter().map(|t| t.1.as_secs_f64()).sum();
    let total_samples: u64 = truth.iter().map(|t| samples_of(&report, t.0)).sum();
    let all_samples = report.total_samples();
    eprintln!("threads: {:#?}", report.threads);
    for (t, cpu) in &truth {
        let want = cpu.as_secs_f64() / total_truth;
        let got = samples_of(&report, *t) as f64 / total_samples as f64;
        eprintln!("tid {t}: cpu share {want:.4}, sample share {got:.4}");
        assert!(
            (want - got).abs() < 0.03,
            "thread {t}: sample share {got:.4} vs cpu share {want:.4}"
        );
    }
    // Nearly all samples belong to the two busy threads (the rest of the
    // process only parks or waits).
    assert!(
        total_samples as f64 >= 0.97 * all_samples as f64,
        "{total_samples} of {all_samples} samples on the busy threads"
    );
}
