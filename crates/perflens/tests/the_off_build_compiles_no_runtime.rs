//! Without the `enabled` feature, a user crate compiles only the facade
//! and the macros crate (no runtime, no report writer), on every target
//! perflens supports, and the macros leave the program's behaviour
//! unchanged.

mod common;
use std::path::PathBuf;
use std::process::Command;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/off-build/Cargo.toml")
}

fn cargo() -> Command {
    let mut c = Command::new(env!("CARGO"));
    // A target dir of its own: the outer `cargo test` holds the lock on ours.
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/off-build");
    c.env("CARGO_TARGET_DIR", target);
    c.env_remove("RUSTFLAGS");
    c
}

#[test]
fn the_off_build_compiles_no_runtime() {
    let crates = common::tree_crates(&[PathBuf::from("--manifest-path"), fixture()]);
    // The same on every target perflens supports (issue 26): each one's
    // resolution differs only in parking_lot_core's system crate (libc,
    // or windows-link on Windows). `cargo tree --target` resolves for a
    // target without its standard library installed.
    for target in [
        "aarch64-unknown-linux-gnu",
        "aarch64-apple-darwin",
        "x86_64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        let mut theirs = common::tree_crates(&[
            PathBuf::from("--manifest-path"),
            fixture(),
            PathBuf::from("--target"),
            PathBuf::from(target),
        ]);
        if target.contains("windows") {
            let at = theirs.iter().position(|c| c == "windows-link");
            assert!(at.is_some(), "{target}: no windows-link: {theirs:?}");
            theirs.remove(at.unwrap());
            theirs.push("libc".into());
            theirs.sort_unstable();
        }
        assert_eq!(
            theirs, crates,
            "crates compiled without `enabled` for {target}"
        );
    }
    // The user's crate, the facade, the macros and the macros' own
    // compile-time dependencies, and the channel crates the user's crate
    // uses (crossbeam, flume, async-channel, futures-channel: perflens's
    // aliases are their own types there) with their own dependencies
    // (flume's spin and its lock_api, async-channel's event-listener,
    // futures-core and futures-sink, which perflens's backends name too;
    // tokio's sync; parking_lot with its core, whose libc, cfg-if and
    // smallvec are checked to be its alone below): no runtime, sampler,
    // report writer or anything they pull in.
    assert_eq!(
        crates,
        [
            "async-channel",
            "cfg-if",
            "concurrent-queue",
            "crossbeam-channel",
            "crossbeam-utils",
            "event-listener",
            "event-listener-strategy",
            "flume",
            "futures-channel",
            "futures-core",
            "futures-sink",
            "libc",
            "lock_api",
            "parking",
            "parking_lot",
            "parking_lot_core",
            "perflens",
            "perflens-macros",
            "perflens-off-build",
            "pin-project-lite",
            "proc-macro2",
            "quote",
            "scopeguard",
            "smallvec",
            "spin",
            "syn",
            "tokio",
            "unicode-ident",
        ],
        "crates compiled without `enabled`:\n{crates:?}"
    );
    // perflens itself pulls none of parking_lot's system crates in.
    for system in ["libc", "cfg-if", "smallvec"] {
        let out = cargo()
            .args([
                "tree", "--edges", "normal", "--prefix", "none", "--format", "{p}",
            ])
            .args(["--invert", system, "--depth", "1", "--manifest-path"])
            .arg(fixture())
            .output()
            .expect("cargo runs");
        let users = String::from_utf8_lossy(&out.stdout);
        let users: Vec<&str> = (users.lines().skip(1))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(users, ["parking_lot_core"], "who uses {system}:\n{users:?}");
    }

    let run = cargo()
        .args(["run", "--quiet", "--manifest-path"])
        .arg(fixture())
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the off build failed:\n{stderr}");
    assert_eq!(String::from_utf8_lossy(&run.stdout), "off-build ok 6\n");
    assert!(
        !stderr.contains("[perflens]"),
        "no report without `enabled`:\n{stderr}"
    );
}
