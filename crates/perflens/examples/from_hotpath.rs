//! A program written for hotpath 0.30.3, in the shape of hotpath's own
//! README and macro docs, with one change: `hotpath::` became
//! `perflens::` (docs/migrating-from-hotpath.md has the whole map). The
//! `#[perflens::main]` options are hotpath's: one percentile column
//! (p99), pretty JSON, every row (`limit = 0`), and the report written to
//! `output_path` (relative to the working directory; missing directories
//! are made) instead of printed. `PERFLENS_FORMAT`, `PERFLENS_LIMIT` and
//! `PERFLENS_OUTPUT` override them, as `HOTPATH_OUTPUT_FORMAT`,
//! `HOTPATH_LIMIT` and `HOTPATH_OUTPUT_PATH` do hotpath's.
//!
//! ```text
//! cargo run -p perflens --example from_hotpath --features enabled
//! PERFLENS_FORMAT=table PERFLENS_OUTPUT=/dev/stderr cargo run -p perflens --example from_hotpath --features enabled
//! ```
//!
//! Without the `enabled` feature every macro is the code as written, as
//! without hotpath's `hotpath` feature.

use std::time::Duration;

/// Iterations of the loop in `main`.
const ITERATIONS: u64 = 10;

#[perflens::measure]
fn sync_function(sleep: u64) {
    std::thread::sleep(Duration::from_micros(sleep));
}

#[perflens::measure]
async fn async_function(sleep: u64) {
    tokio::time::sleep(Duration::from_micros(sleep)).await;
}

/// hotpath's `future = true` (its lifecycle: polls, cancellation), what
/// perflens records for every measured async fn.
#[perflens::measure(future = true)]
async fn fetch(id: u64) -> u64 {
    tokio::task::yield_now().await;
    id * 2
}

#[perflens::measure(label = "db_query")]
fn query(id: u64) -> u64 {
    std::hint::black_box(id + 1)
}

struct Worker {
    done: u64,
}

#[perflens::measure_all]
impl Worker {
    fn step(&mut self, n: u64) {
        self.done += query(n);
    }

    #[perflens::skip]
    fn done(&self) -> u64 {
        self.done
    }
}

#[tokio::main(flavor = "current_thread")]
#[perflens::main(
    percentiles = [99],
    format = "json-pretty",
    limit = 0,
    output_path = "target/from_hotpath/report.json"
)]
async fn main() {
    let mut worker = Worker { done: 0 };
    let mut fetched = 0;
    for i in 0..ITERATIONS {
        sync_function(i);
        async_function(i * 2).await;
        fetched += fetch(i).await;
        worker.step(i);
        perflens::measure_block!("custom_block", {
            std::hint::black_box(query(i));
        });
    }
    println!("fetched {fetched}, worker did {}", worker.done());
}
