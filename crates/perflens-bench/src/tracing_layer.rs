//! Per span: what `perflens::tracing::layer()` adds to a `tracing` span
//! (made, entered, exited, closed around a tiny function), against the
//! same span under `tracing_subscriber::registry()` alone (a subscriber
//! that records nothing but keeps the spans, what every `tracing` setup
//! pays), and against no subscriber at all (spans disabled), in one
//! process, rounds interleaved. The registry is the default subscriber
//! for the timed loop only (`with_default`).

use crate::tracing_cmp::time;
use std::hint::black_box;
use tracing_subscriber::layer::SubscriberExt;

#[inline(never)]
fn spanned(x: u64) -> u64 {
    let _span = tracing::info_span!("spanned").entered();
    black_box(x).wrapping_mul(31) ^ 7
}

/// One round: ns per span with no subscriber, the registry alone, the
/// registry with perflens's layer (in a session).
fn round(n: u64) -> [f64; 3] {
    let none = time(n, spanned);
    let registry =
        tracing::subscriber::with_default(tracing_subscriber::registry(), || time(n, spanned));
    let session = perflens::Session::builder()
        .ignore_env()
        .start()
        .expect("no other session");
    let with_layer = tracing_subscriber::registry().with(perflens::tracing::layer());
    let layered = tracing::subscriber::with_default(with_layer, || time(n, spanned));
    let report = session.finish();
    let row = (report.functions.iter())
        .find(|f| f.name.ends_with("::spanned"))
        .expect("the spans' row");
    assert_eq!(row.calls, n, "every span recorded");
    [none, registry, layered]
}

/// Prints the medians of `rounds` rounds of `n` spans.
pub fn report(n: u64, rounds: usize) {
    let mut r: Vec<[f64; 3]> = Vec::new();
    for _ in 0..rounds {
        r.push(round(n));
    }
    let col = |i: usize| crate::stats::median(r.iter().map(|x| x[i]).collect());
    let added = crate::stats::median(r.iter().map(|x| x[2] - x[1]).collect());
    println!("| tracing span (N = {n}, {rounds} rounds) | ns per span |");
    println!("|---|---|");
    println!("| no subscriber (spans disabled) | {:.1} |", col(0));
    println!("| `tracing_subscriber::registry()` alone | {:.1} |", col(1));
    println!(
        "| registry + `perflens::tracing::layer()` | {:.1} |",
        col(2)
    );
    println!("| perflens's layer adds | {added:.1} |");
}
