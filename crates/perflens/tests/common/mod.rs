//! Shared by the tests that run the crate's examples.

use std::path::PathBuf;

/// Path of example `name`, built by a plain `cargo test` next to the test
/// binaries (a `--test` filter skips examples).
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
