//! What a measured recursive call costs, folded (the default) or
//! expanded: `cargo run --release -p perflens-core --example recursion --
//! ROUNDS fold|expand`, each round a recursion 101 calls deep. For
//! instruction counts that do not depend on the machine's load:
//! `valgrind --tool=callgrind target/release/examples/recursion 2000 fold`.
use perflens_core::{Callsite, Guard, RecordingOptions, Recursion, start};
use std::hint::black_box;
use std::time::Instant;
static CS: Callsite = Callsite::new("rec", || "");
#[inline(never)]
fn rec(n: u32) -> u32 {
    let _g = Guard::enter(&CS);
    if n == 0 { 0 } else { black_box(rec(n - 1)) + 1 }
}
#[inline(never)]
fn bare(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        black_box(bare(n - 1)) + 1
    }
}
fn main() {
    // Arguments: rounds (default 10,000), then `fold` or `expand`.
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let which = std::env::args().nth(2).unwrap_or_default();
    let recursion = if which == "expand" {
        Recursion::Expand
    } else {
        Recursion::Fold
    };
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(bare(black_box(100)));
    }
    let base = t.elapsed().as_nanos() as f64 / (rounds as f64 * 101.0);
    let r = start(&RecordingOptions {
        recursion,
        ..RecordingOptions::default()
    })
    .unwrap();
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(rec(black_box(100)));
    }
    let inst = t.elapsed().as_nanos() as f64 / (rounds as f64 * 101.0);
    let s = r.finish();
    let calls: u64 = s
        .threads
        .iter()
        .flat_map(|t| &t.nodes)
        .map(|n| n.calls)
        .sum();
    println!(
        "{which}: base {base:.2} ns/call, recursive measured {inst:.2} ns/call, added {:.2}, calls {calls}",
        inst - base
    );
}
