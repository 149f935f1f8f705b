//! A thread has one name in every output: the report's threads (table and
//! JSON) and the CPU profile's stacks (folded, flamegraph and pprof, which
//! share one name per stack). Before, the main thread was `main` in the
//! report and the program's name (its OS name) in the profile.
//!
//! Its own `main` (harness = false), so that the measured work runs on the
//! process's main thread: the test runs itself as the child.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

#[perflens::measure]
fn spin(ms: u64) {
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        std::hint::black_box(0u64);
    }
}

fn child() {
    let guard = perflens::__private::MainGuard::start(Default::default());
    let worker = std::thread::Builder::new()
        .name("flow-worker".into())
        .spawn(|| spin(100))
        .unwrap();
    spin(100);
    worker.join().unwrap();
    drop(guard);
}

fn main() {
    if std::env::var_os("PERFLENS_NAMES_CHILD").is_some() {
        return child();
    }
    let dir = std::env::temp_dir().join(format!("perflens-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (folded, json) = (dir.join("cpu.folded"), dir.join("report.json"));
    let out = Command::new(std::env::current_exe().unwrap())
        .env("PERFLENS_NAMES_CHILD", "1")
        .env("PERFLENS_FOLDED", &folded)
        .env("PERFLENS_JSON", &json)
        .env("PERFLENS_FORMAT", "none")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = perflens::Report::from_json_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let in_report: BTreeSet<String> = report
        .threads
        .iter()
        .filter_map(|t| t.name.clone())
        .collect();
    let expected: BTreeSet<String> = ["flow-worker", "main"].map(String::from).into();
    if !perflens_sys::CAPABILITIES.cpu_sampling {
        // The portable build: no CPU profile to name the threads in (the
        // report says why, and no folded file is written); the report
        // names them as std does.
        let cpu = report.cpu.as_ref().expect("a CPU section saying why");
        assert!(cpu.source.starts_with("unavailable:"), "{}", cpu.source);
        assert!(!folded.exists());
        assert_eq!(in_report, expected);
        let _ = std::fs::remove_dir_all(&dir);
        println!("a_thread_has_one_name_everywhere: ok (no CPU profile in this build)");
        return;
    }
    let folded = std::fs::read_to_string(&folded).unwrap();
    // The threads that ran the measured spins, as the profile names them.
    let in_profile: BTreeSet<String> = (folded.lines())
        .filter(|l| l.contains("::spin"))
        .map(|l| l.split(';').next().unwrap().to_string())
        .collect();
    assert_eq!(in_profile, expected, "{folded}");
    assert_eq!(in_report, expected);
    let _ = std::fs::remove_dir_all(&dir);
    println!("a_thread_has_one_name_everywhere: ok");
}
