//! Sampled timing times every call of a calling context until it has
//! been called `sample_warmup` times (64 by default), and only then one
//! in N: a function called a few dozen times is exact, and only hot
//! functions are estimates. Before the warm-up, a row of 20 calls whose
//! durations grow from 1 to 20 ms was estimated from its first call
//! alone (20 ms for 210 ms).
#![cfg(feature = "enabled")]

mod common;
use common::stress::{YieldOnce, block_on};
use perflens::{Mode, Report, Session};
use std::time::Duration;

#[perflens::measure]
fn rare(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

#[perflens::measure]
fn hot(i: u64) -> u64 {
    std::hint::black_box(i.wrapping_mul(31))
}

/// The thread's first measured call of the session, made before the
/// test's clock runs: it resets the thread's block, which the portable
/// build (no page release) zeroes by hand, tens of ms that are no call's.
#[perflens::measure]
fn first_call() {}

/// A long-lived future: sleeps `ms`, yields once, sleeps again.
#[perflens::measure]
async fn long_lived(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
    YieldOnce(false).await;
    std::thread::sleep(Duration::from_millis(ms));
}

/// The session's report, and the wall time the test measured around the
/// calls of `rare` and of `long_lived` (ground truth).
fn workload(mode: Mode) -> (Report, [Duration; 2]) {
    let session = Session::builder().ignore_env().mode(mode).start().unwrap();
    first_call();
    let mut truth = [Duration::ZERO; 2];
    for ms in 1..=20 {
        let t = std::time::Instant::now();
        rare(ms);
        truth[0] += t.elapsed();
    }
    for i in 0..100_000 {
        hot(i);
    }
    // 42 futures, like the row that swung by a factor of 1,000 between
    // runs when 1 or 2 of them were timed.
    for i in 0..42 {
        let t = std::time::Instant::now();
        block_on(long_lived(i % 3));
        truth[1] += t.elapsed();
    }
    (session.finish(), truth)
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

#[test]
fn sampled_totals_of_rare_rows_match_timed_mode() {
    let (timed, timed_truth) = workload(Mode::Timed);
    let (sampled, sampled_truth) = workload(Mode::Sampled { every: 64 });
    assert_eq!(sampled.sample_warmup, 64);
    for (k, f) in ["rare", "long_lived"].into_iter().enumerate() {
        let (t, s) = (
            timed.function(&name(f)).unwrap(),
            sampled.function(&name(f)).unwrap(),
        );
        assert_eq!(s.calls, t.calls, "{f}");
        // Every call of a rare row is timed, so its totals are measured,
        // not estimated.
        assert_eq!(s.timed_calls, s.calls, "{f}");
        assert!(!s.sampled, "{f}");
        // Each mode's total lies between the time the calls slept (210 ms
        // for `rare`, 2 * 14 * (0 + 1 + 2) = 84 ms for `long_lived`: a
        // sleep is never shorter) and the wall time the test measured
        // around them (which includes making and driving each future:
        // 4% more under qemu). The estimates this guards against were
        // off by 10x to 1,000x.
        let slept = Duration::from_millis([210, 84][k]).as_nanos() as u64;
        for (mode, r, truth) in [
            ("timed", t, timed_truth[k]),
            ("sampled", s, sampled_truth[k]),
        ] {
            // 0.1% either way for the tick counter's calibration
            // against the clock the sleeps and the test read.
            let truth = truth.as_nanos() as u64;
            assert!(
                (slept - slept / 1000..=truth + truth / 1000).contains(&r.total_ns),
                "{f}, {mode}: {} ns reported, {slept} ns slept, {truth} ns measured around \
                 the calls",
                r.total_ns
            );
        }
    }
    // The hot row is sampled: its first 64 calls, then one in 64.
    let hot = sampled.function(&name("hot")).unwrap();
    assert_eq!(hot.calls, 100_000);
    assert!(hot.sampled);
    assert_eq!(hot.timed_calls, 64 + (100_000 - 64) / 64);
}
