//! CPU samples go to the innermost measured function on the interrupted
//! thread's shadow stack: exclusive and inclusive figures for nested
//! functions, an `#[inline(always)]` function that has no symbol of its
//! own, a thread that parks while another burns CPU, and threads that
//! live shorter than the sampler's scan for new threads.
// CPU sampling (perf events, per-thread CPU timers) and Linux's clock id: Linux only.
#![cfg(target_os = "linux")]
#![cfg(feature = "cpu")]

mod common;

use perflens::Session;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

/// Burns this thread's CPU for `ms` milliseconds of its own CPU time.
fn spin_cpu(ms: u64) {
    let start = thread_cpu();
    let mut x = 1u64;
    while thread_cpu() - start < Duration::from_millis(ms) {
        for _ in 0..10_000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn thread_cpu() -> Duration {
    let mut ts = libc_timespec();
    // SAFETY: valid pointer to a timespec.
    unsafe { clock_gettime(3, &mut ts) }; // CLOCK_THREAD_CPUTIME_ID
    Duration::new(ts.0 as u64, ts.1 as u32)
}

#[repr(C)]
struct Timespec(i64, i64);
fn libc_timespec() -> Timespec {
    Timespec(0, 0)
}
unsafe extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

#[perflens::measure]
fn outer() {
    spin_cpu(300);
    inner();
}

#[perflens::measure]
fn inner() {
    spin_cpu(150);
}

#[perflens::measure]
#[inline(always)]
fn inlined() {
    spin_cpu(150);
}

/// Returns the CPU time its body took: what the sampler can see of it
/// (the thread's first measured call arms its sampler before the body
/// runs; under load that took more than a millisecond of the thread's
/// CPU, which no sample can cover).
#[perflens::measure]
fn short_burst() -> Duration {
    let start = thread_cpu();
    spin_cpu(6);
    thread_cpu() - start
}

#[test]
fn cpu_samples_attribute_to_measured_functions() {
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    let parked = std::thread::spawn(|| std::thread::sleep(Duration::from_millis(400)));
    let wall = Instant::now();
    outer();
    inlined();
    parked.join().unwrap();
    let report = session.finish();
    // Without CPU sampling (the portable build) the report says why.
    if !common::capabilities::cpu_sampled(&report) {
        return;
    }
    let cpu = report.cpu.as_ref().expect("a CPU section");
    assert!(!cpu.source.starts_with("unavailable"), "{}", cpu.source);
    let total = cpu.cpu_ns as f64;
    // 600 ms of CPU on this thread, plus a little elsewhere.
    assert!(total >= 0.58e9, "total {total} after {:?}", wall.elapsed());
    let share = |ns: Option<u64>| ns.unwrap() as f64 / total * 100.0;
    let row = |f: &str| report.function(&name(f)).unwrap();
    let close = |got: f64, want: f64, what: &str| {
        assert!(
            (got - want).abs() <= 3.0,
            "{what}: {got:.1}% of CPU, expected {want:.1}%"
        );
    };
    let (o, i, n) = (row("outer"), row("inner"), row("inlined"));
    // Truth, as shares of the 600 ms: outer itself 50%, inner 25%,
    // inlined 25%; outer inclusive 75%.
    close(share(o.cpu.map(|c| c.ns)), 50.0, "outer exclusive");
    close(share(o.cpu.map(|c| c.incl_ns)), 75.0, "outer inclusive");
    close(share(i.cpu.map(|c| c.ns)), 25.0, "inner");
    close(share(i.cpu.map(|c| c.incl_ns)), 25.0, "inner inclusive");
    close(
        share(n.cpu.map(|c| c.ns)),
        25.0,
        "inlined (no symbol of its own)",
    );
    assert!(
        o.cpu.unwrap().samples > 200,
        "{:?}",
        o.cpu.map(|c| c.samples)
    );
    // The parked thread burns (almost) nothing.
    assert!(
        cpu.outside_cpu_ns as f64 / total < 0.03,
        "{}",
        cpu.outside_cpu_ns
    );

    // Threads started after the session that live shorter than the
    // sampler's watcher scan (10 ms): each is armed at its first measured
    // call, so their measured CPU is sampled whole.
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    let mut measured = Duration::ZERO;
    for _ in 0..20 {
        measured += std::thread::spawn(short_burst).join().unwrap();
    }
    let report = session.finish();
    let burst = report.function(&name("short_burst")).unwrap();
    let sampled = burst.cpu.unwrap().ns as f64;
    let truth = measured.as_nanos() as f64;
    // Each thread can lose the partial sampling period (1 ms) it exits
    // in; beyond that, within 3%.
    let period = 1e6;
    assert!(
        sampled >= 0.97 * truth - 20.0 * period && sampled <= 1.03 * truth,
        "short threads: {sampled} ns sampled of {truth} ns"
    );
}
