//! `#[perflens::main]` options at work: two percentile columns (p50 and
//! p99.9), two rows per terminal table, and the report printed as JSON.
//! `PERFLENS_FORMAT=table` overrides the format.
//!
//! ```text
//! cargo run -p perflens --example main_options --features enabled
//! PERFLENS_FORMAT=table cargo run -p perflens --example main_options --features enabled
//! ```

use std::time::Duration;

#[perflens::measure]
fn slow() {
    std::thread::sleep(Duration::from_millis(3));
}

#[perflens::measure]
fn medium() {
    std::thread::sleep(Duration::from_millis(1));
}

#[perflens::measure]
fn fast(x: u64) -> u64 {
    std::hint::black_box(x * 3)
}

#[perflens::main(percentiles = [50, 99.9], limit = 2, format = "json")]
fn main() {
    for i in 0..5 {
        slow();
        medium();
        fast(i);
    }
}
