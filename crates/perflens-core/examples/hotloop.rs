//! Quick hot-path timing loop used while tuning (the real benchmark is
//! `perflens-bench`): `cargo run --release -p perflens-core --example hotloop`.
use perflens_core::{Callsite, Guard, Mode, RecordingOptions, start};
use std::hint::black_box;
use std::time::Instant;

static CS: Callsite = Callsite::new("tiny", || "");

#[inline(never)]
fn tiny(x: u64) -> u64 {
    let _g = Guard::enter(&CS);
    black_box(x.wrapping_mul(3))
}

#[inline(never)]
fn bare(x: u64) -> u64 {
    black_box(x.wrapping_mul(3))
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let only = std::env::args().nth(2);
    for mode in [Mode::Timed, Mode::Count, Mode::Sampled { every: 64 }] {
        if only.as_deref().is_some_and(|o| o != mode.name()) {
            continue;
        }
        let t = Instant::now();
        for i in 0..n {
            black_box(bare(i));
        }
        let base = t.elapsed().as_nanos() as f64 / n as f64;
        let rec = start(&RecordingOptions {
            mode,
            ..RecordingOptions::default()
        })
        .unwrap();
        let t = Instant::now();
        for i in 0..n {
            black_box(tiny(i));
        }
        let inst = t.elapsed().as_nanos() as f64 / n as f64;
        let snap = rec.finish();
        let calls: u64 = snap
            .threads
            .iter()
            .flat_map(|t| &t.nodes)
            .map(|n| n.calls)
            .sum();
        println!(
            "{:8} base {base:.2} ns  instrumented {inst:.2} ns  added {:.2} ns  calls {calls}",
            mode.name(),
            inst - base
        );
    }
    let t = Instant::now();
    let mut acc = 0u64;
    for _ in 0..n {
        acc = acc.wrapping_add(perflens_sys::arch::read_tsc());
    }
    black_box(acc);
    println!(
        "{} {:.2} ns",
        perflens_sys::arch::COUNTER_NAME,
        t.elapsed().as_nanos() as f64 / n as f64
    );
}
