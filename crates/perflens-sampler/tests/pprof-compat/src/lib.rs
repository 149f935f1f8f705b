//! The work the shapes profile: CPU spent in functions that name
//! themselves in the stacks.

use std::time::{Duration, Instant};

/// Counts primes below `n` by trial division (pure CPU).
#[inline(never)]
pub fn count_primes(n: u64) -> u64 {
    (2..n)
        .filter(|&k| (2..k).take_while(|d| d * d <= k).all(|d| k % d != 0))
        .count() as u64
}

/// Burns CPU for `ms` milliseconds of wall time in [`count_primes`].
#[inline(never)]
pub fn burn_cpu(ms: u64) -> u64 {
    let end = Instant::now() + Duration::from_millis(ms);
    let mut acc = 0;
    while Instant::now() < end {
        acc += count_primes(std::hint::black_box(20_000));
    }
    acc
}

/// Where an example writes its files: its first argument.
pub fn out_dir() -> std::path::PathBuf {
    let dir = std::env::args().nth(1).expect("usage: EXAMPLE OUT_DIR");
    std::fs::create_dir_all(&dir).expect("create the output directory");
    dir.into()
}
