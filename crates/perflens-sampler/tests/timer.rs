//! The timer fallback (`timer_create` on the thread CPU clock) produces
//! samples weighted by the thread's CPU time since the one before.
// Not in the portable build: sampling is its subject, and that build has
// no source (`SamplerError::Unsupported`, asserted by the unit tests).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable)
))]
mod common;
use common::*;
use perflens_sampler::{CpuSource, ProfilerGuardBuilder, SourcePreference};
use std::time::Duration;

fn check_timer_profile(report: &perflens_sampler::CpuProfile, me: u64) {
    let t = thread(report, me);
    eprintln!(
        "{t:?}: sampled {:.1} ms of {:.1} ms",
        t.sampled_cpu_ns as f64 / 1e6,
        t.cpu_ns as f64 / 1e6
    );
    assert_eq!(t.source, CpuSource::Timer);
    assert!(t.samples > 0);
    // Every sample weighs the thread's CPU time since the one before.
    for (f, v) in &report.data {
        assert!(v.cpu_ns > 0 && v.samples > 0, "{f:?}: {v:?}");
    }
    // The weights add up to the thread's CPU time from its arming to its
    // last sample: short by what ran after that one, never more, loaded
    // or not (the timer's overrun counts came 8% short on a loaded
    // machine). What ran after it is a tick or two (the kernel's tick is
    // 4 ms here), or, on a machine so loaded that the kernel delivered
    // only 4 expirations in 200 ms of CPU, about one of the gaps it left
    // between the others: at most two of their mean.
    let tail = t.cpu_ns as i64 - t.sampled_cpu_ns as i64;
    let gap = t.sampled_cpu_ns as i64 / t.samples as i64;
    assert!(
        (0..=20_000_000 + 2 * gap).contains(&tail),
        "timer weights {} ns vs thread CPU {} ns, {} samples",
        t.sampled_cpu_ns,
        t.cpu_ns,
        t.samples
    );
}

#[test]
fn forced_timer_fallback_weights_samples() {
    let _s = serial();
    let guard = ProfilerGuardBuilder::default()
        .frequency(1000)
        .source(SourcePreference::Timer)
        .build()
        .expect("start");
    let me = tid();
    busy_for(Duration::from_millis(500));
    let report = guard.stop().build().expect("report");
    check_timer_profile(&report, me);
}

/// Child half of `env_forces_timer`: only does something when run by it.
#[test]
#[ignore = "child helper"]
fn child_env_timer() {
    if std::env::var("PERFLENS_SAMPLER_CHILD").is_err() {
        return;
    }
    let guard = ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    let me = tid();
    busy_for(Duration::from_millis(200));
    let report = guard.stop().build().expect("report");
    check_timer_profile(&report, me);
}

#[test]
fn env_forces_timer() {
    let _s = serial();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_env_timer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PERFLENS_CPU_SOURCE", "timer")
        .env("PERFLENS_SAMPLER_CHILD", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
    assert!(text.contains("source: Timer"), "{text}");
}
