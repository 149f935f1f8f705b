//! `SessionBuilder::ignore_env` means no `PERFLENS_*` variable applies,
//! the CPU sampler's included: before, `PERFLENS_CPU_HZ` and
//! `PERFLENS_CPU_SOURCE` still changed an `ignore_env` session.
// CPU sampling (it asserts the perf_event source): Linux only.
#![cfg(target_os = "linux")]
#![cfg(feature = "cpu")]

mod common;
use common::stress::{run_child_test, spin_cpu, text};
use perflens::Session;

#[test]
#[ignore = "child helper"]
fn child_samples_with_ignore_env() {
    if std::env::var_os("PERFLENS_IGNORE_ENV_CHILD").is_none() {
        return;
    }
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    spin_cpu(50);
    let report = session.finish();
    let cpu = report.cpu.unwrap();
    println!("RESULT {} Hz, {}", cpu.frequency_hz, cpu.source);
}

#[test]
fn ignore_env_covers_cpu_sampling() {
    let out = run_child_test(
        "child_samples_with_ignore_env",
        &[
            ("PERFLENS_IGNORE_ENV_CHILD", "1"),
            ("PERFLENS_CPU_HZ", "10"),
            ("PERFLENS_CPU_SOURCE", "timer"),
        ],
    );
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    // The defaults: 1000 Hz, and the perf_event source this machine has
    // (in the portable build, which has no source, 1000 Hz and why not).
    let expected = if perflens_sys::CAPABILITIES.cpu_sampling {
        "RESULT 1000 Hz, perf_event"
    } else {
        "RESULT 1000 Hz, unavailable: CPU sampling is not supported here"
    };
    assert!(text.contains(expected), "{text}");
}
