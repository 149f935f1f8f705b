//! Shared by the tests: paths of the crate's examples, and in `stress`
//! what the stress tests (alloc and CPU sampling on) inspect.

use std::path::PathBuf;

/// Path of example `name`, built by a plain `cargo test` next to the test
/// binaries (a `--test` filter skips examples).
#[allow(dead_code)] // the stress tests run no example
pub fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

pub mod stress;
