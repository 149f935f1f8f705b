//! Measures the sampler's cost: CPU time of a fixed amount of work with and
//! without sampling, divided by the samples taken; plus start/stop/report
//! times and RSS. `cargo run --release -p perflens-sampler --example overhead`
use std::hint::black_box;
use std::time::{Duration, Instant};

#[inline(never)]
fn spin(n: u64) -> u64 {
    let mut x = n;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time of a fixed amount of work (best of 3).
fn work_cpu(chunks: u64) -> Duration {
    (0..3)
        .map(|_| {
            let t = thread_cpu();
            for _ in 0..chunks {
                black_box(spin(black_box(10_000)));
            }
            thread_cpu() - t
        })
        .min()
        .unwrap()
}

fn rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Calibrate ~300 ms of work.
    let t = thread_cpu();
    let mut chunks = 0;
    while thread_cpu() - t < Duration::from_millis(100) {
        black_box(spin(black_box(10_000)));
        chunks += 1;
    }
    chunks *= 3;
    eprintln!("before: {}", rss());
    for freq in [100, 1000, 4000] {
        let base = work_cpu(chunks);
        let t = Instant::now();
        let guard = perflens_sampler::ProfilerGuardBuilder::default()
            .frequency(freq)
            .build()?;
        let start = t.elapsed();
        let prof = work_cpu(chunks);
        let t = Instant::now();
        let done = guard.stop();
        let stop = t.elapsed();
        let t = Instant::now();
        let report = done.build()?;
        let build = t.elapsed();
        let samples = report.total_samples();
        let extra = prof.as_nanos() as f64 - base.as_nanos() as f64;
        // work_cpu ran 3 times under the profiler; `prof` is one run.
        let per_run = samples as f64 / 3.0;
        eprintln!(
            "{freq:>5} Hz: work {:.1} ms -> {:.1} ms ({:+.2}%), {samples} samples, ~{:.2} us/sample total, handler {:.2} us/sample; start {:.1} ms, stop {:.2} ms, report {:.1} ms; {}",
            base.as_secs_f64() * 1e3,
            prof.as_secs_f64() * 1e3,
            100.0 * extra / base.as_nanos() as f64,
            extra / per_run / 1e3,
            report.handler_ns as f64 / report.handler_calls.max(1) as f64 / 1e3,
            start.as_secs_f64() * 1e3,
            stop.as_secs_f64() * 1e3,
            build.as_secs_f64() * 1e3,
            rss()
        );
    }
    Ok(())
}
