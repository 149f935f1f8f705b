//! A program written for hotpath 0.30.3, with `hotpath::` replaced by
//! `perflens::`: the `main` options whose meaning perflens shares, and
//! `future = true` and `label` on `measure` (`output_path`, which writes
//! a file, is run by tests/a_hotpath_program_runs_under_perflens.rs).
#![deny(warnings)]

use std::time::Duration;

#[perflens::measure]
fn sync_function(sleep: u64) {
    std::thread::sleep(Duration::from_nanos(sleep));
}

#[perflens::measure(future = true)]
async fn async_function(sleep: u64) {
    tokio::time::sleep(Duration::from_nanos(sleep)).await;
}

#[perflens::measure(label = "custom_block")]
fn labelled() -> u64 {
    perflens::measure_block!("inner", { std::hint::black_box(7) })
}

#[tokio::main(flavor = "current_thread")]
#[perflens::main(
    percentiles = [50, 95, 99.9],
    format = "json-pretty",
    limit = 0,
    allocator = std::alloc::System
)]
async fn main() {
    for i in 0..3 {
        sync_function(i);
        async_function(i * 2).await;
        labelled();
    }
}
