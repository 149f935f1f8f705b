//! The perflens demo: three functions that are slow for three different
//! reasons, called in a loop under tokio.
//!
//! ```text
//! cargo run --release -p perflens --example overview --features alloc,cpu
//! ```
//!
//! - `sync_work` burns CPU,
//! - `sync_alloc` allocates (1000 buffers of 1 KiB per call),
//! - `async_sleep` only waits (a 10 ms timer): large wall time, almost no
//!   busy time.
//!
//! Set `PERFLENS_JSON=report.json` to also keep the JSON report, and
//! `PERFLENS_EXAMPLE_ITERS=N` to change the number of iterations (default 100).

use std::hint::black_box;
use std::time::Duration;

#[perflens::measure]
fn sync_work() -> u64 {
    let mut result: u64 = 1;
    for i in 0..200_000u64 {
        result = result.wrapping_mul(black_box(i).wrapping_add(7));
        result ^= result >> 3;
    }
    result
}

#[perflens::measure]
fn sync_alloc() {
    for _ in 0..1000 {
        let buf: Vec<u8> = vec![1; 1024];
        black_box(&buf);
    }
}

#[perflens::measure]
async fn async_sleep() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[perflens::measure]
async fn iteration() -> u64 {
    let r = sync_work();
    sync_alloc();
    async_sleep().await;
    r
}

#[tokio::main]
#[perflens::main]
async fn main() {
    let iters: u64 = std::env::var("PERFLENS_EXAMPLE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut total = 0u64;
    for _ in 0..iters {
        total = total.wrapping_add(iteration().await);
    }
    black_box(total);
}
