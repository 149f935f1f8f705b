//! No setting is silently ignored (issue 24): at session start, a
//! `PERFLENS_*` variable whose feature is not compiled in prints one line
//! naming the variable and the feature, and an unknown one (a typo) one
//! line naming it and the closest known name.
//!
//! The child is the program in `tests/enabled-only-build`, built with
//! `enabled` alone: the workspace's tests run with every feature, and a
//! variable of a missing feature needs a build without it. The crate lives
//! outside the workspace, built into a target directory of its own (the
//! outer `cargo test` may hold the lock on the workspace's), from the
//! workspace's lock file, offline: about 15 s the first time, a second
//! after.
#![cfg(feature = "enabled")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The fixture's binaries (`perflens-enabled-only-build`, a
/// `#[perflens::main]` program, `two_sessions`, two sessions one after
/// the other, and `ignore_env`, a session built with `ignore_env()`),
/// built once per test process.
fn fixture_bin(name: &str) -> PathBuf {
    static TARGET: OnceLock<PathBuf> = OnceLock::new();
    let target = TARGET.get_or_init(|| {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let fixture = here.join("tests/enabled-only-build");
        let target = here.join("../../target/enabled-only-build");
        // Start from the workspace's lock file, so that nothing is
        // resolved anew or downloaded.
        std::fs::copy(here.join("../../Cargo.lock"), fixture.join("Cargo.lock"))
            .expect("copy the workspace's Cargo.lock to the fixture");
        let out = Command::new(env!("CARGO"))
            .args(["build", "--offline", "--quiet", "--bins", "--manifest-path"])
            .arg(fixture.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "building tests/enabled-only-build failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("debug")
    });
    target.join(name)
}

/// Runs the fixture's `bin` with `vars` and no other `PERFLENS_*`
/// variable.
fn run(bin: &str, vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(fixture_bin(bin));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PERFLENS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(vars.iter().copied());
    let out = cmd.output().expect("run the fixture");
    assert!(
        out.status.success(),
        "{bin} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The stderr lines that mention `word`.
fn lines_naming<'a>(stderr: &'a str, word: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.contains(word)).collect()
}

#[test]
fn a_typo_is_named_with_the_closest_known_variable() {
    let out = run(
        "perflens-enabled-only-build",
        &[("PERFLENS_JSNO", "x"), ("PERFLENS_FORMAT", "none")],
    );
    let err = stderr(&out);
    // With no report printed, the warning is all there is on stderr.
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "[perflens] PERFLENS_JSNO is not a perflens setting: ignored. \
             Did you mean PERFLENS_JSON?"
        ],
        "{err}"
    );
}

#[test]
fn a_name_close_to_nothing_is_named_without_a_suggestion() {
    let out = run(
        "perflens-enabled-only-build",
        &[("PERFLENS_VERBOSE", "1"), ("PERFLENS_FORMAT", "none")],
    );
    let err = stderr(&out);
    let lines = lines_naming(&err, "PERFLENS_VERBOSE");
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("[perflens] PERFLENS_VERBOSE is not a perflens setting")
            && !lines[0].contains("Did you mean"),
        "{err}"
    );
}

#[test]
fn a_variable_of_a_feature_not_compiled_names_the_feature() {
    let out = run(
        "perflens-enabled-only-build",
        &[("PERFLENS_HTTP", "127.0.0.1:0")],
    );
    let err = stderr(&out);
    let lines = lines_naming(&err, "PERFLENS_HTTP");
    assert_eq!(
        lines,
        [
            "[perflens] PERFLENS_HTTP is set but ignored: this build of perflens does not \
             have the `http` feature (turn it on in the features of the perflens dependency)."
        ],
        "{err}"
    );
    // The warning comes before the report, at session start.
    let warning = err.find("PERFLENS_HTTP").unwrap();
    let report = err.find("work").expect("the report names `work`");
    assert!(warning < report, "{err}");

    // The CPU variables name `cpu`, each on its line.
    let out = run(
        "perflens-enabled-only-build",
        &[
            ("PERFLENS_CPU_HZ", "100"),
            ("PERFLENS_PPROF", "cpu.pb.gz"),
            ("PERFLENS_FORMAT", "none"),
        ],
    );
    let err = stderr(&out);
    let mut lines: Vec<&str> = err.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines.len(), 2, "{err}");
    for (line, name) in lines.iter().zip(["PERFLENS_CPU_HZ", "PERFLENS_PPROF"]) {
        assert!(
            line.starts_with(&format!("[perflens] {name} is set but ignored"))
                && line.contains("the `cpu` feature"),
            "{err}"
        );
    }
}

#[test]
fn known_variables_of_compiled_features_say_nothing_and_apply() {
    let dir = std::env::temp_dir().join(format!("perflens-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("report.json");
    let out = run(
        "perflens-enabled-only-build",
        &[
            ("PERFLENS_JSON", json.to_str().unwrap()),
            ("PERFLENS_MODE", "count"),
            ("PERFLENS_FORMAT", "none"),
            ("PERFLENS_BENCH_ROUNDS", "3"),
        ],
    );
    let err = stderr(&out);
    assert!(!err.contains("ignored"), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("PERFLENS_JSON was written"))
            .expect("the report is JSON");
    assert_eq!(report["mode"], "count", "PERFLENS_MODE=count applied");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_warnings_are_printed_once_however_many_sessions_start() {
    let out = run(
        "two_sessions",
        &[("PERFLENS_JSNO", "x"), ("PERFLENS_HTTP", "1")],
    );
    let err = stderr(&out);
    assert_eq!(lines_naming(&err, "PERFLENS_JSNO").len(), 1, "{err}");
    assert_eq!(lines_naming(&err, "PERFLENS_HTTP").len(), 1, "{err}");
    assert!(err.contains("two sessions ran"), "{err}");
}

#[test]
fn a_session_that_ignores_the_environment_warns_about_nothing() {
    let out = run(
        "ignore_env",
        &[("PERFLENS_JSNO", "x"), ("PERFLENS_HTTP", "127.0.0.1:0")],
    );
    let err = stderr(&out);
    assert_eq!(err, "", "{err}");
}
