//! Per span: perflens's trace mode against `tracing` spans recorded by
//! `tracing-chrome` 0.7 (a `Layer` that sends each span's begin and end
//! to a writer thread, which writes Chrome JSON), on the same tiny
//! function, in one process, interleaved with an uninstrumented twin.
//! Each run starts its recorder before the timed loop and finishes it
//! (writing its file) after; the files go to the temporary directory and
//! are removed.

use std::hint::black_box;
use std::time::Instant;

#[inline(never)]
fn bare(x: u64) -> u64 {
    black_box(x).wrapping_mul(31) ^ 7
}

#[perflens::measure]
#[inline(never)]
fn traced(x: u64) -> u64 {
    black_box(x).wrapping_mul(31) ^ 7
}

#[inline(never)]
fn tracing_span(x: u64) -> u64 {
    let _span = tracing::info_span!("tracing_span").entered();
    black_box(x).wrapping_mul(31) ^ 7
}

/// ns per call of `f`, `n` calls.
pub(crate) fn time(n: u64, f: fn(u64) -> u64) -> f64 {
    let start = Instant::now();
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(f(i));
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / n as f64
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("perflens-bench-{}-{name}", std::process::id()))
}

/// One round: ns per call of the bare twin, perflens traced, tracing.
fn round(n: u64) -> [f64; 3] {
    let bare_ns = time(n, bare);
    let path = temp("cmp.pftrace");
    let session = perflens::Session::builder()
        .ignore_env()
        .trace(&path)
        .trace_buffer(64 << 20)
        .start()
        .expect("no other session");
    let perflens_ns = time(n, traced);
    drop(session.finish());
    let _ = std::fs::remove_file(&path);

    use tracing_subscriber::prelude::*;
    let path = temp("cmp.json");
    let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .file(&path)
        .build();
    let subscriber = tracing_subscriber::registry().with(layer);
    let tracing_ns = tracing::subscriber::with_default(subscriber, || time(n, tracing_span));
    // Flushes the writer thread's file.
    drop(guard);
    let _ = std::fs::remove_file(&path);
    [bare_ns, perflens_ns, tracing_ns]
}

/// Prints the comparison over `rounds` rounds of `n` spans.
pub fn report(n: u64, rounds: usize) {
    let runs: Vec<[f64; 3]> = (0..rounds).map(|_| round(n)).collect();
    let added = |k: usize| -> Vec<f64> { runs.iter().map(|r| r[k] - r[0]).collect() };
    let (perflens, tracing) = (added(1), added(2));
    let ratios: Vec<f64> = (perflens.iter().zip(&tracing))
        .map(|(p, t)| t / p.max(0.01))
        .collect();
    println!(
        "trace, 1 thread, N = {n} spans: perflens traced {:.2} ns added, tracing + tracing-chrome 0.7 {:.2} ns added, tracing/perflens {:.1}x (medians of {rounds} rounds; goal >= 10x)",
        crate::stats::median(perflens),
        crate::stats::median(tracing),
        crate::stats::median(ratios),
    );
}
