//! The pprof output: total CPU matches the threads' CPU time, and
//! `go tool pprof` reads it (labels included).
// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

fn context_hook() -> u64 {
    42
}

/// Parses a pprof duration like `612.50ms`, `1.2s`, `830us`.
fn parse_duration(s: &str) -> Option<f64> {
    let s = s.trim().trim_end_matches(',');
    let units = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("mins", 60.0),
        ("hrs", 3600.0),
    ];
    for (u, f) in units {
        if let Some(num) = s.strip_suffix(u) {
            if let Ok(v) = num.parse::<f64>() {
                return Some(v * f);
            }
        }
    }
    None
}

#[test]
fn pprof_total_matches_thread_cpu_and_go_pprof_reads_it() {
    let _s = serial();
    let go = Command::new("go").arg("version").output();
    assert!(
        go.as_ref().is_ok_and(|o| o.status.success()),
        "`go` is required for this test (go tool pprof reads the output); \
         install it with `apt-get install -y golang-go`: {go:?}"
    );

    perflens_sampler::set_context_hook(context_hook);
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    let other = std::thread::spawn(|| busy_for(Duration::from_millis(300)));
    busy_for(Duration::from_millis(400));
    other.join().unwrap();
    let report = guard
        .stop()
        .context_names(|c| (c == 42).then(|| "main/busy".to_string()))
        .build()
        .expect("report");
    perflens_sampler::clear_context_hook();

    let truth_ns: u64 = report.threads.iter().map(|t| t.cpu_ns).sum();
    let pprof_ns = report.total_cpu_ns();
    let err = (pprof_ns as f64 - truth_ns as f64).abs() / truth_ns as f64;
    eprintln!(
        "pprof cpu {:.1} ms, thread cpu {:.1} ms, error {:.2}%",
        pprof_ns as f64 / 1e6,
        truth_ns as f64 / 1e6,
        err * 100.0
    );
    assert!(
        err < 0.03,
        "pprof total {pprof_ns} vs thread CPU {truth_ns}"
    );

    let dir = std::env::temp_dir().join(format!("perflens-sampler-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cpu.pb.gz");
    report
        .write_pprof(std::fs::File::create(&path).unwrap())
        .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new("go")
            .args(["tool", "pprof"])
            .args(args)
            .arg(&path)
            .env("PPROF_TMPDIR", &dir)
            .env("HOME", &dir)
            .output()
            .expect("run go tool pprof");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "go tool pprof {args:?} failed: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let top = run(&["-top", "-nodecount=15"]);
    eprintln!("{top}");
    // "Showing nodes accounting for X, Y% of Z total"
    let total = top
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("% of ")?;
            parse_duration(rest.strip_suffix(" total")?)
        })
        .expect("total in go tool pprof -top output");
    let go_err = (total - truth_ns as f64 / 1e9).abs() / (truth_ns as f64 / 1e9);
    assert!(
        go_err < 0.03,
        "go pprof total {total} s vs thread CPU {truth_ns} ns"
    );
    assert!(top.contains("leaf_spin"), "leaf function in -top:\n{top}");

    let tags = run(&["-tags"]);
    eprintln!("{tags}");
    assert!(tags.contains("perflens_path"), "{tags}");
    assert!(tags.contains("main/busy"), "{tags}");
    assert!(tags.contains("thread"), "{tags}");
    let samples = run(&["-top", "-sample_index=samples", "-nodecount=3"]);
    assert!(samples.contains("Type: samples"), "{samples}");
    std::fs::remove_dir_all(&dir).ok();
}
