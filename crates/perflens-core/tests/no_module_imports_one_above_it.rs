//! perflens-core is built in layers (docs/architecture.md): the thread's
//! hot state at the bottom, then clock, memory and blocks, the
//! registries, the recorders, the thread lifecycle, and publication and
//! the session on top. `scripts/core-layers` lists every module in that
//! order; this test fails when a module imports one listed after it (a
//! circle always does) or a module is added without a place in a layer.
//! The import graph is `scripts/module-graph`'s, the same script `.ci/run`
//! checks every crate's circles with.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn no_module_imports_one_above_it() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .current_dir(&root)
        .args([
            "scripts/module-graph",
            "--layers",
            "scripts/core-layers",
            "crates/perflens-core/src",
        ])
        .output()
        .expect("python3 runs scripts/module-graph (the README's test command installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("no module imports one above it"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
