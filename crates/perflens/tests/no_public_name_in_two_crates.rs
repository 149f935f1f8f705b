//! A public type name says what it is, so no two crates of the workspace
//! define the same one (docs/design/layers.md 2.8): the sampler's profile
//! is a `CpuProfile`, not a second `Report`; the facade's `perflens::Error`
//! is the only plain `Error`. `scripts/module-graph --names` lists every
//! `pub struct|enum|trait|type|union` name that two library crates define
//! (re-exports are not definitions) and fails on one that
//! `scripts/names.baseline` does not allow; that list only shrinks.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn no_public_name_in_two_crates() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .current_dir(&root)
        .args(["scripts/module-graph", "--names", "scripts/names.baseline"])
        .output()
        .expect("python3 runs scripts/module-graph (the README's test command installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("no public type name in two crates"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
