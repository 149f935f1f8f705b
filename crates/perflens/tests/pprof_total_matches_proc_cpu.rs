//! End to end through `#[perflens::main]`: `examples/cpu_threads` burns
//! CPU on two threads with sampling on and `PERFLENS_PPROF`,
//! `PERFLENS_FOLDED` and `PERFLENS_JSON` set. The pprof file's total, as
//! `go tool pprof` reads it, the folded stacks' and the JSON report's CPU
//! totals are within 3% of the CPU time the kernel accounted to the
//! threads, read from `/proc/thread-self/sched` by the program itself.
// CPU sampling checked against /proc/thread-self/sched: Linux only.
#![cfg(target_os = "linux")]
#![cfg(feature = "cpu")]

mod common;
use common::example;
use std::process::Command;

fn within_3_percent(got: f64, truth: f64, what: &str) {
    let err = (got - truth).abs() / truth;
    eprintln!(
        "{what}: {:.1} ms vs /proc {:.1} ms ({:.2}%)",
        got / 1e6,
        truth / 1e6,
        err * 100.0
    );
    assert!(err < 0.03, "{what}: {got} ns vs /proc {truth} ns");
}

#[test]
fn pprof_and_json_cpu_totals_match_proc() {
    let go = Command::new("go").arg("version").output();
    assert!(
        go.as_ref().is_ok_and(|o| o.status.success()),
        "`go` is required for this test (go tool pprof reads the output); \
         install it with `apt-get install -y golang-go`: {go:?}"
    );
    let sched = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
    assert!(
        sched.contains("se.sum_exec_runtime"),
        "this kernel does not expose /proc/thread-self/sched (CONFIG_SCHED_DEBUG), \
         the ground truth of this test"
    );

    let dir = std::env::temp_dir().join(format!("perflens-cpu-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (pprof, folded, json) = (
        dir.join("cpu.pb.gz"),
        dir.join("cpu.folded"),
        dir.join("report.json"),
    );
    let out = Command::new(example("cpu_threads"))
        // About 0.5 s of CPU in a dev build, and in a release one.
        .env(
            "PERFLENS_EXAMPLE_ITERS",
            if cfg!(debug_assertions) {
                "60000000"
            } else {
                "200000000"
            },
        )
        .env("PERFLENS_PPROF", &pprof)
        .env("PERFLENS_FOLDED", &folded)
        .env("PERFLENS_JSON", &json)
        .env("PERFLENS_CPU_HZ", "1000")
        .env_remove("PERFLENS_FORMAT")
        .env_remove("PERFLENS_CPU_SOURCE")
        .output()
        .expect("run examples/cpu_threads");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let truth: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("threads' cpu_ns (/proc): "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no /proc CPU line in:\n{stdout}"));
    assert!(truth > 0.3e9, "the workload ran only {truth} ns");
    if !perflens_sys::CAPABILITIES.cpu_sampling {
        // The portable build: the program said why it samples nothing,
        // wrote no profile, and its JSON report's CPU section says why.
        assert!(
            stderr.contains(common::capabilities::CPU_UNAVAILABLE_LINE),
            "{stderr}"
        );
        assert!(!pprof.exists() && !folded.exists(), "{stderr}");
        let report = perflens::Report::from_json_str(&std::fs::read_to_string(&json).unwrap());
        assert!(!common::capabilities::cpu_sampled(&report.unwrap()));
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // go tool pprof's total, in milliseconds.
    let top = Command::new("go")
        .args(["tool", "pprof", "-top", "-unit=ms", "-nodecount=5"])
        .arg(&pprof)
        .env("PPROF_TMPDIR", &dir)
        .env("HOME", &dir)
        .output()
        .expect("run go tool pprof");
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(
        top.status.success(),
        "{}",
        String::from_utf8_lossy(&top.stderr)
    );
    let total_ms: f64 = text
        .lines()
        .find_map(|l| l.split_once("% of ")?.1.strip_suffix("ms total"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in go tool pprof -top output:\n{text}"));
    within_3_percent(total_ms * 1e6, truth, "go tool pprof total");

    let report = perflens::Report::from_json_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cpu = report
        .cpu
        .as_ref()
        .expect("a CPU section in the JSON report");
    within_3_percent(cpu.cpu_ns as f64, truth, "JSON cpu_ns");
    // Every sample lands in a measured function, nearly all in `burn`.
    let burn = report.function("cpu_threads::burn").unwrap();
    within_3_percent(burn.cpu.unwrap().ns as f64, truth, "burn's exclusive CPU");
    let worker = report.function("cpu_threads::worker").unwrap();
    assert!(worker.cpu.unwrap().incl_ns >= burn.cpu.unwrap().ns);

    // The folded stacks carry the same weight (one line per stack, its
    // CPU microseconds last).
    let folded = std::fs::read_to_string(&folded).unwrap();
    let us: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    within_3_percent(us as f64 * 1e3, truth, "folded stacks");
}
