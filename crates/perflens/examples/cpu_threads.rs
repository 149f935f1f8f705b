//! Two threads burn CPU in measured functions under `#[perflens::main]`
//! with CPU sampling; at the end the program prints the CPU time the
//! kernel accounted to its threads (`se.sum_exec_runtime` in
//! `/proc/thread-self/sched`), so the pprof, flamegraph and JSON outputs
//! can be checked against it.
//!
//! ```text
//! PERFLENS_PPROF=cpu.pb.gz cargo run --release -p perflens --example cpu_threads --features cpu
//! go tool pprof -top cpu.pb.gz
//! ```

use std::hint::black_box;

/// `iters` rounds of a dependent multiply-add chain (about 1 ns each).
#[perflens::measure]
fn burn(iters: u64) -> u64 {
    let mut x = iters | 1;
    for _ in 0..iters {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

#[perflens::measure]
fn worker(iters: u64) -> u64 {
    burn(iters / 4) ^ burn(iters - iters / 4)
}

/// This thread's CPU time in ns as the scheduler accounts it, or 0 where
/// the kernel does not expose it.
fn sched_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("se.sum_exec_runtime"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|ms| ms.trim().parse::<f64>().ok())
        .map_or(0, |ms| (ms * 1e6) as u64)
}

#[perflens::main]
fn main() {
    let iters: u64 = std::env::var("PERFLENS_EXAMPLE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400_000_000);
    let workers: Vec<_> = [1, 2]
        .into_iter()
        .map(|k| {
            std::thread::spawn(move || {
                black_box(worker(iters * k));
                sched_cpu_ns()
            })
        })
        .collect();
    let mut cpu: u64 = workers.into_iter().map(|h| h.join().unwrap()).sum();
    cpu += sched_cpu_ns();
    println!("threads' cpu_ns (/proc): {cpu}");
}
