//! hotpath 0.30.3's `#[hotpath::main]` options that perflens does not
//! take: each is named with the perflens way (docs/migrating-from-hotpath.md).

#[perflens::main(percentiles = [99], functions_limit = 20, channels_limit = 5)]
fn section_limits() {}

#[perflens::main(streams_limit = 1, futures_limit = 1, threads_limit = 1)]
fn more_section_limits() {}

#[perflens::main(rw_locks_limit = 1, mutexes_limit = 1)]
fn lock_limits() {}

#[perflens::main(report = "functions-timing,channels")]
fn report_sections() {}

#[perflens::main(timeout = 5000)]
fn timeout() {}

fn main() {}
