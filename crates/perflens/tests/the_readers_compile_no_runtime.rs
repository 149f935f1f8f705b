//! The crates that only read what a session wrote (the report writers,
//! the live reader, the command and the CPU sampler) should not compile
//! the runtime (`perflens-core`: its thread-local state, its allocator
//! hook) just for its data types. Issue 25 moves those types into a
//! format crate one slice at a time; this test is its ratchet. It lists,
//! for each reader, whether it compiles the runtime today, so a slice that
//! frees a reader must move it to the free side here, and no change can
//! quietly make a free reader depend on the runtime again.

mod common;
use std::path::PathBuf;

/// Each reader and whether it compiles perflens-core today (every feature
/// on, normal and build dependencies). docs/design/layers.md gives the
/// order in which they let go of it.
const READERS: &[(&str, bool)] = &[
    // Reads snapshots and traces from perflens-format (slice 1).
    ("perflens-report", false),
    // Reads the live blocks with perflens-format's reader, and finds and
    // checks the sessions' directory with perflens-sys (slice 3).
    ("perflens-live", false),
    // Its own code needs only perflens-format, and perflens-live no
    // longer brings the runtime (slice 3).
    ("perflens-cli", false),
    // Its protobuf writer is perflens-format's (slice 2).
    ("perflens-sampler", false),
];

fn compiles(package: &str) -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let root = root.to_string_lossy();
    common::tree_crates(&[
        "--all-features",
        "--package",
        package,
        "--manifest-path",
        &root,
    ])
}

#[test]
fn each_reader_compiles_the_runtime_only_where_listed() {
    let mut wrong = Vec::new();
    for &(reader, listed) in READERS {
        let crates = compiles(reader);
        assert!(
            crates.iter().any(|c| c == reader),
            "{reader} is not in its own tree: {crates:?}"
        );
        let has_core = crates.iter().any(|c| c == "perflens-core");
        if has_core != listed {
            wrong.push(format!(
                "{reader}: compiles perflens-core: {has_core}, listed as {listed}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "update READERS in this test (a reader that lets go of the runtime \
         moves to `false`; one that takes it back is a regression):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_macros_compile_no_perflens_crate() {
    let crates = compiles("perflens-macros");
    let ours: Vec<&String> = crates
        .iter()
        .filter(|c| c.starts_with("perflens") && *c != "perflens-macros")
        .collect();
    assert!(ours.is_empty(), "perflens-macros compiles {ours:?}");
}
