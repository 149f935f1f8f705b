//! The guard has an inlined fast path (TSC clock, frame on top) and an
//! out-of-line one (`Instant` clock, leaked inner guards). Both must give
//! the same tree and counts, and times that add up.
#![cfg(feature = "enabled")]

use perflens::__private::{Callsite, Guard};
use perflens::{ClockSource, Mode, Report, Session};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One session at a time per process: the tests here take turns.
static ONE_SESSION: Mutex<()> = Mutex::new(());

fn one_session() -> MutexGuard<'static, ()> {
    ONE_SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

#[perflens::measure]
fn inner() {
    std::thread::sleep(Duration::from_millis(2));
}

#[perflens::measure]
fn outer() {
    inner();
    inner();
}

#[perflens::measure]
fn hot(i: u64) -> u64 {
    std::hint::black_box(i + 1)
}

#[perflens::measure]
fn sampled_parent() {
    for i in 0..10 {
        hot(i);
    }
}

fn path(report: &Report, frames: &[&str]) -> u64 {
    let frames: Vec<String> = frames.iter().map(|f| name(f)).collect();
    let frames: Vec<&str> = frames.iter().map(String::as_str).collect();
    report.path(&frames).map_or(0, |p| p.calls)
}

fn timed_run(clock: ClockSource) -> Report {
    let session = Session::builder()
        .ignore_env()
        .clock(clock)
        .start()
        .unwrap();
    for _ in 0..3 {
        outer();
    }
    session.finish()
}

#[test]
fn both_clocks_record_the_same_tree_and_plausible_times() {
    let _turn = one_session();
    for clock in [ClockSource::Tsc, ClockSource::Instant] {
        let report = timed_run(clock);
        if clock == ClockSource::Tsc && report.clock != "tsc" {
            // No invariant TSC on this CPU: the runtime fell back, which
            // the Instant run below covers.
            continue;
        }
        assert_eq!(report.clock, clock.name());
        let o = report.function(&name("outer")).unwrap();
        let i = report.function(&name("inner")).unwrap();
        assert_eq!((o.calls, i.calls), (3, 6), "{clock:?}");
        assert_eq!(path(&report, &["outer", "inner"]), 6);
        // Six sleeps of 2 ms.
        assert!(i.total_ns >= 12_000_000, "{clock:?}: {}", i.total_ns);
        assert!(o.total_ns >= i.total_ns, "{clock:?}");
        // outer's own work is tiny next to its children's sleeps.
        assert!(o.self_ns < o.total_ns / 10, "{clock:?}: {o:?}");
        // Exclusive = inclusive - children, up to tick-to-ns rounding.
        assert!(
            (o.self_ns + i.total_ns).abs_diff(o.total_ns) <= 8,
            "{clock:?}: {o:?} {i:?}"
        );
    }
}

#[test]
fn sampled_mode_with_the_instant_clock_is_exact() {
    let _turn = one_session();
    let session = Session::builder()
        .ignore_env()
        .clock(ClockSource::Instant)
        .mode(Mode::Sampled { every: 8 })
        // The 1-in-8 mechanics from the first call (the warm-up that
        // times the first calls of each context is tested on its own).
        .sample_warmup(0)
        .start()
        .unwrap();
    for i in 0..1000 {
        hot(i);
    }
    for _ in 0..16 {
        sampled_parent();
    }
    let report = session.finish();
    let parent = report.function(&name("sampled_parent")).unwrap();
    assert_eq!((parent.calls, parent.timed_calls), (16, 2));
    let hot_row = report.function(&name("hot")).unwrap();
    assert_eq!(hot_row.calls, 1160);
    // As in `overflow_and_modes_are_reported`: 125 top-level and 36 under
    // the parent.
    assert_eq!(hot_row.timed_calls, 125 + 36);
}

static LEAKY: Callsite = Callsite::new("leaky", || "");
static KEPT: Callsite = Callsite::new("kept", || "");

#[test]
fn a_leaked_inner_guard_does_not_corrupt_its_parent() {
    let _turn = one_session();
    for clock in [ClockSource::Tsc, ClockSource::Instant] {
        let session = Session::builder()
            .ignore_env()
            .clock(clock)
            .start()
            .unwrap();
        for _ in 0..4 {
            let kept = Guard::enter(&KEPT);
            std::mem::forget(Guard::enter(&LEAKY));
            // Called after the leak: lands under the leaked frame, which
            // is still on the stack until `kept` drops.
            hot(1);
            drop(kept);
            // Back at the root.
            hot(2);
        }
        let report = session.finish();
        assert_eq!(report.function("kept").unwrap().calls, 4, "{clock:?}");
        // A leaked guard never completes, so its call is not counted.
        assert_eq!(report.function("leaky").map_or(0, |f| f.calls), 0);
        let hot = name("hot");
        let under = report.path(&["kept", "leaky", &hot]);
        assert_eq!(under.map(|p| p.calls), Some(4), "{clock:?}");
        assert_eq!(report.path(&[&hot]).map(|p| p.calls), Some(4), "{clock:?}");
    }
}
