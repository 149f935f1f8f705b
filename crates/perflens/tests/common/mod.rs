//! Shared by the tests: paths of the crate's examples, and in `stress`
//! what the stress tests (alloc and CPU sampling on) inspect.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// This test binary, run again for test `test` alone (`--exact`, output
/// shown), without the `PERFLENS_*` variables of this process: the child
/// sets the ones it is about.
#[allow(dead_code)]
pub fn rerun_self(test: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args(["--exact", test, "--nocapture"]);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PERFLENS_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// Path of example `name`, built first from the current sources.
///
/// `cargo test --test X` builds no examples, and a plain `cargo test`
/// builds them with the features of that run, so a binary already in
/// `target/` may be stale or built with other features. This runs `cargo
/// build --example name` with this test's own profile, target directory
/// and `perflens` features, and returns the executable cargo reports. A
/// build failure fails the test with cargo's output. Each example is
/// built once per test process.
///
/// With every feature on, the build resolves features as the README's
/// test command does (`--workspace --all-features`): other members of the
/// workspace turn on more features of shared dependencies (`libc`,
/// `serde`), and a `-p perflens` build would compile those dependencies
/// a second time. So under that command the build is a no-op.
#[allow(dead_code)] // the stress tests run no example
pub fn example(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, exe)) = built.iter().find(|(n, _)| n == name) {
        return exe.clone();
    }
    let exe = build_example(name);
    built.push((name.to_string(), exe.clone()));
    exe
}

/// Package and feature arguments that build the examples with the
/// `perflens` features this test binary was compiled with.
fn selection() -> Vec<String> {
    let on: Vec<&str> = [
        ("enabled", cfg!(feature = "enabled")),
        ("alloc", cfg!(feature = "alloc")),
        ("cpu", cfg!(feature = "cpu")),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    if on.len() == 3 {
        return vec!["--workspace".into(), "--all-features".into()];
    }
    [
        "-p",
        "perflens",
        "--no-default-features",
        "--features",
        &on.join(","),
    ]
    .map(String::from)
    .to_vec()
}

fn build_example(name: &str) -> PathBuf {
    // <target dir>/<profile dir>/deps/<this test>
    let this = std::env::current_exe().unwrap();
    let profile_dir = this.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let profile = match profile_dir.file_name().unwrap().to_str().unwrap() {
        "debug" => "dev",
        other => other,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut cmd = Command::new(&cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(selection())
        .args(["--example", name, "--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .args(["--message-format", "json-render-diagnostics", "--quiet"]);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run {cargo:?} to build examples/{name}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "`cargo build --example {name}` failed ({}), so there is nothing to test:\n{stderr}",
        out.status
    );
    // The build's last compiler-artifact message for the example names
    // its executable.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .next_back()
        .unwrap_or_else(|| panic!("cargo built examples/{name} but named no executable:\n{stderr}"))
}

#[cfg(feature = "enabled")]
pub mod capabilities;
pub mod stress;
pub mod trace;

/// Whether the tests run under qemu-user (`scripts/test --aarch64` sets
/// `TEST_UNDER_QEMU`). A test whose subject qemu-user does not emulate
/// calls this with why, which it prints, and checks what it can instead.
#[allow(dead_code)]
pub fn under_qemu(why: &str) -> bool {
    let qemu = std::env::var_os("TEST_UNDER_QEMU").is_some();
    if qemu {
        eprintln!("under qemu-user, not checked: {why}");
    }
    qemu
}

/// The crates `cargo tree` lists (normal and build edges; each name once,
/// sorted) with `args` added, e.g. `--manifest-path` or `--package`. It
/// runs with a target directory of its own: the outer `cargo test` holds
/// the lock on ours.
#[allow(dead_code)]
pub fn tree_crates<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/off-build"),
        )
        .env_remove("RUSTFLAGS")
        .args([
            "tree",
            "--edges",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args(args)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut crates: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    crates.sort_unstable();
    crates.dedup();
    crates
}

/// `go tool pprof -top -unit=B -sample_index=<index> <profile>` (a file or
/// a URL): its output, the command having succeeded. Go is Debian's
/// golang-go, which the README's test command installs.
#[allow(dead_code)]
pub fn go_pprof_top(sample_index: &str, profile: &str) -> String {
    let tmp = std::env::temp_dir().join(format!(
        "perflens-pprof-{}-{sample_index}",
        std::process::id()
    ));
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new("go")
        .args(["tool", "pprof", "-top", "-unit=B"])
        .arg(format!("-sample_index={sample_index}"))
        .arg(profile)
        .env("PPROF_TMPDIR", &tmp)
        .output()
        .expect("go runs (Debian's golang-go; the README's test command installs it)");
    std::fs::remove_dir_all(&tmp).ok();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
