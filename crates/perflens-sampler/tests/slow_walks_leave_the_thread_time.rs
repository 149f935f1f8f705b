//! A thread whose stack walks take longer than its sampling period still
//! runs: after a walk that took over half a period, the next samples keep
//! their leaf only. Without that, a perf event fires again while its
//! handler runs and the thread never gets back to its own code (seen at
//! 10 kHz in an unoptimized build: a report's symbolization, deep in
//! rustc-demangle, made no progress at all in one run out of three).
//! Here a 200-frame stack in this unoptimized test build is sampled at
//! 40 kHz (a 25 µs period; one walk of it takes about 20 µs here, and
//! the signal's delivery as much again).
// Not in the portable or the POSIX build: sampling is its subject.
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]

use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `depth` frames of its own, then `n` steps of arithmetic.
#[inline(never)]
fn deep(depth: u32, n: u64) -> u64 {
    if depth == 0 {
        let mut x = 0u64;
        for i in 0..n {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        x
    } else {
        std::hint::black_box(deep(depth - 1, n)).wrapping_add(1)
    }
}

#[test]
fn a_thread_with_slow_walks_keeps_running() {
    // Enough work to take many periods, little enough that a loaded
    // machine (CI's two cores beside other builds) finishes it well
    // within the bound below: the failure this guards against is no
    // progress at all, not slow progress.
    const WORK: u64 = 2_000_000;
    let t = Instant::now();
    deep(200, WORK);
    let alone = t.elapsed();

    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(40_000)
        .max_depth(256)
        .ignore_env()
        .build()
        .expect("the sampler starts");
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let t = Instant::now();
        deep(200, WORK);
        done.send(t.elapsed()).unwrap();
    });
    // Unprofiled it takes about 0.01 s, profiled here about 0.1 s.
    let Ok(profiled) = finished.recv_timeout(Duration::from_secs(120)) else {
        // Stopping the session would wait for the handler the thread is
        // stuck in, and a panic's backtrace would be sampled at 40 kHz
        // too: say so and end the process, which fails the test.
        eprintln!("no progress in 120 s under sampling (alone: {alone:?})");
        std::process::exit(101);
    };
    let profile = guard.stop().build().expect("a profile");
    assert!(profile.total_samples() > 0);
    eprintln!(
        "alone {alone:?}, sampled at 40 kHz {profiled:?}: {} samples, {} without a walk",
        profile.total_samples(),
        profile.threads.iter().map(|t| t.truncated).sum::<u64>()
    );
}
