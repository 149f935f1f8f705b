//! 1,000 threads started and ended in 10 waves of 100, each making
//! measured calls and an allocation, under CPU sampling and allocation
//! counting: every call and byte is in the report, every thread was
//! sampled from its first measured call, and the sampler still delivers
//! samples after the churn.
// CPU sampling of a thousand threads by kernel thread id: Linux only.
#![cfg(target_os = "linux")]
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::hint::black_box;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

const WAVES: u64 = 10;
const PER_WAVE: u64 = 100;
const LEAVES: u64 = 50;
const BUFFER: usize = 4096;

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

#[perflens::measure]
fn worker(i: u64) -> u64 {
    let sum: u64 = (0..LEAVES).map(|j| leaf(i, j)).sum();
    sum + allocates() as u64
}

#[perflens::measure]
fn leaf(i: u64, j: u64) -> u64 {
    black_box(i * j)
}

#[perflens::measure]
fn allocates() -> usize {
    black_box(Vec::<u8>::with_capacity(BUFFER)).capacity()
}

#[perflens::measure]
fn after_the_waves() {
    spin_cpu(150);
}

#[test]
fn a_thousand_threads_in_waves_are_counted_exactly() {
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    let mut tids = Vec::new();
    for wave in 0..WAVES {
        let handles: Vec<_> = (0..PER_WAVE)
            .map(|k| {
                let i = wave * PER_WAVE + k;
                // The id the report gives the thread: the kernel's on
                // Linux, perflens-sys's own in the portable build.
                std::thread::spawn(move || (perflens_sys::thread::tid(), worker(i), i))
            })
            .collect();
        for h in handles {
            let (tid, sum, i) = h.join().expect("a worker panicked");
            assert_eq!(sum, i * (LEAVES * (LEAVES - 1) / 2) + BUFFER as u64);
            tids.push(tid);
        }
    }
    // Starting and joining a thousand threads switched this thread so
    // often that the sampler moved it to the timer source (a perf event
    // costs every context switch); running steadily, it goes back to its
    // perf event at the sampler's next looks (every 100 ms): give it two.
    spin_cpu(250);
    let cpu_before = thread_cpu();
    after_the_waves();
    let spun = thread_cpu() - cpu_before;
    let report = session.finish();

    let threads = WAVES * PER_WAVE;
    let row = |f: &str| {
        report
            .function(&name(f))
            .unwrap_or_else(|| panic!("no row {f}"))
    };
    assert_eq!(row("worker").calls, threads);
    assert_eq!(row("leaf").calls, threads * LEAVES);
    assert_eq!(row("allocates").calls, threads);
    assert_eq!(
        row("allocates").alloc.map(|a| a.bytes),
        Some(threads * BUFFER as u64)
    );
    assert_eq!(row("allocates").alloc.map(|a| a.count), Some(threads));
    assert_eq!(
        row("allocates").alloc.map(|a| a.free_bytes),
        Some(threads * BUFFER as u64)
    );
    assert_eq!(row("worker").alloc.map(|a| a.bytes), Some(0));
    assert_eq!(
        row("worker").alloc.map(|a| a.incl_bytes),
        Some(threads * BUFFER as u64)
    );
    let path = |frames: &[&str]| {
        let names: Vec<String> = frames.iter().map(|f| name(f)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report.path(&names).map(|p| p.calls)
    };
    assert_eq!(path(&["worker", "leaf"]), Some(threads * LEAVES));
    assert_eq!(path(&["worker", "allocates"]), Some(threads));
    assert_eq!(report.dropped.overflow_calls, 0);
    assert_eq!(report.dropped.overflow_paths, 0);
    assert_eq!(report.dropped.dropped_frames, 0);

    // Every worker is in the report, exited, with its own calls.
    for tid in &tids {
        let t: Vec<_> = report.threads.iter().filter(|t| t.tid == *tid).collect();
        assert_eq!(t.len(), 1, "thread {tid}: {} rows", t.len());
        assert!(t[0].exited, "thread {tid} not marked exited");
        assert_eq!(t[0].calls, 1 + LEAVES + 1, "thread {tid}");
    }

    // Every worker was armed for sampling (at its first measured call),
    // exactly once.
    // Without CPU sampling (the portable build) the report says so, and
    // there is nothing more to check.
    if !common::capabilities::cpu_sampled(&report) {
        return;
    }
    let cpu = report.cpu.as_ref().expect("a CPU section");
    assert!(cpu.is_available(), "{}", cpu.source);
    for tid in &tids {
        let n = cpu.threads.iter().filter(|t| t.tid == *tid).count();
        assert_eq!(n, 1, "thread {tid} is in the CPU section {n} times");
    }
    assert_eq!(cpu.dropped, 0);
    // After the churn the sampler still samples this thread: about one
    // sample per 1 ms of its CPU time (1000 Hz). The count may fall a few
    // percent short when the kernel merges overflows of a late handler
    // into one weightier sample; the weights are checked below.
    let samples = row("after_the_waves").cpu.unwrap().samples as f64;
    let periods = spun.as_secs_f64() * 1000.0;
    assert!(
        // Above: the first overflow may carry CPU time from before the
        // call, and the cpu-clock event fires on timer ticks, not at exact
        // CPU instants (CI once saw 152 in 150.1 periods).
        samples >= 0.8 * periods && samples <= periods + 2.0,
        "after the waves: {samples} samples in {periods:.1} periods"
    );
    // The CPU time those samples stand for covers the function's. No
    // upper bound: the kernel time the spawns and joins took (about 40
    // ms here, never sampled with user-only perf events) is charged to
    // the next sample in user mode, which may fall in this function;
    // see the bug report of issue 10.
    let sampled = row("after_the_waves").cpu.unwrap().ns as f64;
    let truth = spun.as_nanos() as f64;
    assert!(
        sampled >= 0.95 * truth - 1e6,
        "after the waves: {sampled} ns sampled of {truth} ns"
    );
}
