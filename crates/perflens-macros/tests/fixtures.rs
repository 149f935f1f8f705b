//! Compiles the fixture crates under `tests/fixtures` against the real
//! `perflens` facade: an edition 2021 crate with instrumentation on (the
//! trybuild tests of `perflens` cover edition 2024), the same program with
//! instrumentation off, and with allocation profiling on. All deny
//! warnings.

use std::path::{Path, PathBuf};
use std::process::Command;

fn check_fixture(name: &str) {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture: PathBuf = manifest_dir.join("tests/fixtures").join(name);
    let workspace = manifest_dir.join("../..");
    // Start from the workspace's lock file, so that nothing is downloaded.
    let lock = fixture.join("Cargo.lock");
    if !lock.exists() {
        if let Ok(workspace_lock) = std::fs::read(workspace.join("Cargo.lock")) {
            std::fs::write(&lock, workspace_lock).expect("write the fixture's Cargo.lock");
        }
    }
    let output = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--manifest-path"])
        .arg(fixture.join("Cargo.toml"))
        .env(
            "CARGO_TARGET_DIR",
            workspace.join("target/perflens-fixtures"),
        )
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "the fixture {name} does not compile:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn expansions_compile_in_edition_2021() {
    check_fixture("edition2021");
}

#[test]
fn disabled_expansions_compile_without_warnings() {
    check_fixture("disabled");
}

#[test]
fn alloc_expansions_compile_without_warnings() {
    check_fixture("alloc");
}
