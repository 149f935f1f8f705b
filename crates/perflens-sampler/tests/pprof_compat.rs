//! pprof-rs's users switch by one line of Cargo.toml: the fixture crate
//! `tests/pprof-compat` depends on `pprof = { package = "perflens-sampler",
//! ... }` and holds usage shapes of pprof-rs 0.15 seen in public projects
//! (each example names its project). This test builds it (prost-codec, then
//! protobuf-codec), runs every example and reads what each wrote the way
//! its users do: flamegraph SVGs as XML, profiles with `go tool pprof`.
// Not in the portable or the POSIX build: the examples sample.
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pprof-compat")
}

/// A copy of the fixture to build, under its target directory: its
/// sources, its `Cargo.lock` (the versions it was checked with), and its
/// manifest with the dependency's path made absolute. Cargo may then
/// add to the copy's lock what a new dependency of perflens-sampler
/// needs, without touching the tree. Files are rewritten only when they
/// changed, so that an unchanged fixture is not rebuilt.
fn fixture_copy() -> PathBuf {
    let copy = target_dir().join("fixture");
    let put = |path: PathBuf, bytes: Vec<u8>| {
        if std::fs::read(&path).ok().as_ref() != Some(&bytes) {
            std::fs::write(&path, bytes).unwrap();
        }
    };
    for dir in ["src", "examples"] {
        std::fs::create_dir_all(copy.join(dir)).unwrap();
        let names: Vec<_> = (std::fs::read_dir(fixture().join(dir)).unwrap())
            .map(|e| e.unwrap().file_name())
            .collect();
        for e in std::fs::read_dir(copy.join(dir)).unwrap() {
            let e = e.unwrap();
            if !names.contains(&e.file_name()) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        for name in names {
            let bytes = std::fs::read(fixture().join(dir).join(&name)).unwrap();
            put(copy.join(dir).join(name), bytes);
        }
    }
    let lock = copy.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(fixture().join("Cargo.lock"), &lock).unwrap();
    }
    let manifest = std::fs::read_to_string(fixture().join("Cargo.toml")).unwrap();
    let switch = r#"pprof = { package = "perflens-sampler", path = "../..", "#;
    assert_eq!(manifest.matches(switch).count(), 1, "the one-line switch");
    let sampler = Path::new(env!("CARGO_MANIFEST_DIR"));
    let here = format!(r#"pprof = {{ package = "perflens-sampler", path = {sampler:?}, "#);
    put(
        copy.join("Cargo.toml"),
        manifest.replace(switch, &here).into_bytes(),
    );
    copy
}

/// The fixture's own target directory inside the workspace's, so that
/// its dependencies are built once and kept.
fn target_dir() -> PathBuf {
    let workspace_target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    workspace_target.join("pprof-compat")
}

fn ok(what: &str, out: Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{text}",
        out.status
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cargo_build(dir: &Path, args: &[&str]) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(dir)
        .args(["build", "--quiet"])
        .args(args)
        .arg("--target-dir")
        .arg(target_dir())
        // The outer test's settings are not the fixture's.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo");
    ok(&format!("cargo build {args:?} in tests/pprof-compat"), out);
}

/// Runs an example with its output directory as its argument (or, given
/// `args`, with those: criterion reads its own); its stdout.
fn run(example: &str, out: &Path, envs: &[(&str, &Path)], args: &[&str]) -> String {
    let bin = target_dir().join("debug/examples").join(example);
    let mut cmd = Command::new(&bin);
    cmd.current_dir(out);
    if args.is_empty() {
        cmd.arg(out.join(example));
    } else {
        cmd.args(args);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    ok(example, cmd.output().expect("run the example"))
}

/// `go tool pprof` with `args` on `file`: its output.
fn go_pprof(args: &[&str], file: &Path) -> String {
    let tmp = target_dir().join("go-home");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", &tmp)
        .env("HOME", &tmp)
        .output()
        .expect("run go tool pprof");
    ok(&format!("go tool pprof {args:?} {}", file.display()), out)
}

/// The samples a profile holds, as `go tool pprof` counts them, after
/// checking that its hottest code is the fixture's `count_primes`.
fn go_samples(file: &Path) -> u64 {
    let top = go_pprof(&["-top", "-sample_index=samples"], file);
    assert!(
        top.contains("pprof_compat::count_primes"),
        "{}:\n{top}",
        file.display()
    );
    let total = (top.lines())
        .find_map(|l| l.split(" of ").nth(1)?.strip_suffix(" total")?.parse().ok())
        .unwrap_or_else(|| panic!("no total in:\n{top}"));
    assert!(total > 0, "{top}");
    total
}

/// Parses `file` as XML to its end; the SVG's text.
fn svg(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut root = None;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(e)) if root.is_none() => {
                root = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("{} is not XML: {e}", file.display()),
        }
    }
    assert_eq!(root.as_deref(), Some("svg"), "{}", file.display());
    assert!(
        text.contains("pprof_compat::count_primes"),
        "{}: no frame of the work",
        file.display()
    );
    text
}

fn lines_of(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines().map(str::to_string).collect()
}

#[test]
fn pprof_rs_programs_build_and_run_on_perflens_sampler() {
    let go = Command::new("go").arg("version").output();
    assert!(
        go.as_ref().is_ok_and(|o| o.status.success()),
        "`go` is required for this test (go tool pprof reads the profiles); \
         install it with `apt-get install -y golang-go` (scripts/test does): {go:?}"
    );
    let dir = fixture_copy();
    cargo_build(&dir, &["--examples"]);
    cargo_build(
        &dir,
        &[
            "--features",
            "protobuf",
            "--example",
            "tikv_status_server_protobuf",
            "--example",
            "aptos_cpu_profile_protobuf",
            "--example",
            "pprof_rs_protobuf_codec",
        ],
    );
    // This run's own outputs (another run of the suite may share the
    // target directory), removed when every check passed.
    let out = target_dir().join(format!("out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let at = |example: &str, file: &str| out.join(example).join(file);

    // orhun/git-cliff: a flamegraph from the guard kept in an Option.
    run("git_cliff_flamegraph", &out, &[], &[]);
    svg(&at("git_cliff_flamegraph", "flamegraph.svg"));

    // reiase/probing: a guard in a static Mutex, at 10 kHz, read from
    // another thread.
    run("probing_static_guard", &out, &[], &[]);
    svg(&at("probing_static_guard", "flamegraph.svg"));

    // 56quarters/mtop: two reports of one guard; the later holds more.
    run("mtop_profiler_struct", &out, &[], &[]);
    let first = go_samples(&at("mtop_profiler_struct", "first.pb"));
    let second = go_samples(&at("mtop_profiler_struct", "second.pb"));
    assert!(
        second > first,
        "the guard kept sampling: {first} then {second}"
    );

    // tikv/pprof-rs's prost example: the profile, and `{:?}` lines.
    let printed = run("pprof_rs_prost", &out, &[], &[]);
    go_samples(&at("pprof_rs_prost", "profile.pb"));
    let line = (printed.lines())
        .find(|l| l.contains("pprof_compat::count_primes"))
        .unwrap_or_else(|| panic!("no stack of the work in:\n{printed}"));
    assert!(
        line.starts_with("report: FRAME: ") || line.starts_with("FRAME: "),
        "{line}"
    );
    let (stack, count) = line.rsplit_once(' ').unwrap();
    assert!(
        stack.contains(" -> FRAME: ") && stack.contains(" -> THREAD: main"),
        "{line}"
    );
    assert!(count.parse::<isize>().unwrap() > 0, "{line}");

    // getsentry/sentry-rust: addresses, thread names as bytes, timing.
    run("sentry_unresolved", &out, &[], &[]);
    let lines = lines_of(&at("sentry_unresolved", "unresolved.txt"));
    let (summary, stacks) = lines.split_last().unwrap();
    assert!(
        stacks
            .iter()
            .any(|l| l.starts_with("thread=sentry-worker ")),
        "{lines:?}"
    );
    for l in stacks {
        let frames: usize = l
            .split(" frames=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            frames >= 1 && l.contains(" first=0x") && l.ends_with(" nanos=0"),
            "{l}"
        );
    }
    let samples: isize = summary.rsplit_once("samples=").unwrap().1.parse().unwrap();
    assert!(
        samples > 0 && summary.contains(" duration_nanos="),
        "{summary}"
    );

    // ScuffleCloud/scuffle: a gzipped capture from a cloned builder.
    run("scuffle_capture", &out, &[], &[]);
    let capture = at("scuffle_capture", "capture.pprof");
    assert_eq!(
        &std::fs::read(&capture).unwrap()[..2],
        &[0x1f, 0x8b],
        "gzip"
    );
    go_samples(&capture);

    // bytebeamio/rumqtt: the guard passed by value to a helper.
    run("rumqtt_profile_fn", &out, &[], &[]);
    go_samples(&at("rumqtt_profile_fn", "rumqtt.pb"));

    // tikv/tikv: post-processed thread names in its own folded writer.
    run("tikv_fold", &out, &[], &[]);
    let folded = lines_of(&at("tikv_fold", "folded.txt"));
    let workers: Vec<&String> = folded
        .iter()
        .filter(|l| l.contains("count_primes"))
        .collect();
    assert!(!workers.is_empty(), "{folded:?}");
    for l in &workers {
        assert!(
            l.starts_with("grpc-server;"),
            "renamed by the post processor: {l}"
        );
        assert!(
            l.rsplit_once(' ').unwrap().1.parse::<isize>().unwrap() > 0,
            "{l}"
        );
    }
    assert!(
        !folded.iter().any(|l| l.starts_with("grpc-server-")),
        "{folded:?}"
    );

    // pyroscope-io/pyroscope-rs: two periods, each from a new guard.
    run("pyroscope_backend", &out, &[], &[]);
    for period in ["period1.folded", "period2.folded"] {
        let lines = lines_of(&at("pyroscope_backend", period));
        assert!(
            lines.iter().any(|l| l.contains("count_primes")),
            "{period}: {lines:?}"
        );
    }

    // dfinity/ic: `Result<Report, pprof::Error>`, a renamed thread.
    run("ic_collect", &out, &[], &[]);
    let ic = at("ic_collect", "ic.pb");
    go_samples(&ic);
    let tags = go_pprof(&["-tags"], &ic);
    assert!(
        tags.contains("ic-worker") && !tags.contains("ic-worker-7"),
        "{tags}"
    );

    // criterion 0.5 with PProfProfiler: the files criterion's users find.
    let home = out.join("criterion");
    let envs = [("CRITERION_HOME", home.as_path())];
    run(
        "criterion_pprof",
        &out,
        &envs,
        &["--bench", "--profile-time", "1"],
    );
    svg(&home.join("primes/profile/flamegraph.svg"));
    let titled = svg(&home.join("primes_options/profile/flamegraph.svg"));
    assert!(titled.contains("primes, options from the bench") && titled.contains("width=\"2500\""));
    go_samples(&home.join("primes_proto/profile/profile.pb"));

    // protobuf-codec: tikv/tikv's status server, aptos-core, pprof-rs.
    run("tikv_status_server_protobuf", &out, &[], &[]);
    let tikv = at("tikv_status_server_protobuf", "tikv.pb");
    go_samples(&tikv);
    let tags = go_pprof(&["-tags"], &tikv);
    assert!(
        tags.contains("sched-worker") && !tags.contains("sched-worker-2"),
        "{tags}"
    );
    svg(&at("tikv_status_server_protobuf", "tikv.svg"));

    run("aptos_cpu_profile_protobuf", &out, &[], &[]);
    let aptos = at("aptos_cpu_profile_protobuf", "aptos.pb");
    go_samples(&aptos);
    let traces = go_pprof(&["-traces"], &aptos);
    assert!(traces.contains("count_primes"), "{traces}");
    assert!(
        !traces.contains("std::sys::"),
        "the post processor ran on every stack:\n{traces}"
    );

    let printed = run("pprof_rs_protobuf_codec", &out, &[], &[]);
    go_samples(&at("pprof_rs_protobuf_codec", "profile.pb"));
    assert!(printed.contains(" -> THREAD: main "), "{printed}");
    std::fs::remove_dir_all(&out).unwrap();
}
