//! Start/stop/report timings and a profile of a busy loop (manual check).
use std::time::Instant;

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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()?;
    eprintln!("start: {:?}", t.elapsed());
    let t = Instant::now();
    let mut acc = 0;
    while t.elapsed().as_millis() < 300 {
        acc ^= std::hint::black_box(spin(100_000));
    }
    std::hint::black_box(acc);
    let t = Instant::now();
    let b = guard.stop();
    eprintln!("stop: {:?}", t.elapsed());
    let t = Instant::now();
    let report = b.build()?;
    eprintln!(
        "report: {:?} ({} samples)",
        t.elapsed(),
        report.total_samples()
    );
    let t = Instant::now();
    let pb = report.pprof()?;
    eprintln!("pprof: {:?} ({} bytes)", t.elapsed(), pb.len());
    let status = std::fs::read_to_string("/proc/self/status")?;
    for l in status
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
    {
        eprintln!("{l}");
    }
    Ok(())
}
