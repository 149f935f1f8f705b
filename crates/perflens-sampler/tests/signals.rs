//! How samples reach their thread: perf events signal with SIGTRAP through
//! the kernel's sigtrap delivery by default, with a real-time signal when
//! one is configured, a debugger is attached or the program handles
//! SIGTRAP itself; a SIGTRAP that is not ours keeps its usual effect.
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
use perflens_sampler::{CpuSource, ProfilerGuardBuilder};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Samples at 1000 Hz for 300 ms of CPU; returns (signal, samples, expected).
/// The tests check that the signal brings the samples; how many of the
/// periods arrive on a loaded machine is `delivery.rs`'s subject, and
/// 90% leaves room for the periods a busy kernel skips.
fn sample(builder: ProfilerGuardBuilder) -> (i32, u64, f64) {
    let guard = builder.frequency(1000).build().expect("start");
    let me = tid();
    busy_for(Duration::from_millis(300));
    let report = guard.stop().build().expect("report");
    let t = thread(&report, me);
    assert_eq!(t.source, CpuSource::PerfEvent);
    let expected = t.cpu_ns as f64 * 1000.0 / 1e9;
    (t.signal, t.samples, expected)
}

/// Runs the child helper `name` (an ignored test of this binary) in a
/// child process with `env`.
fn child(name: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--ignored",
        "--exact",
        name,
        "--nocapture",
        "--test-threads=1",
    ])
    .env("PERFLENS_SAMPLER_CHILD", "1")
    .env_remove("PERFLENS_CPU_SIGNAL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Child helpers are ignored tests that the parent tests run with
/// `--ignored --exact`; run any other way they do nothing.
fn in_child() -> bool {
    std::env::var_os("PERFLENS_SAMPLER_CHILD").is_some()
}

#[test]
fn perf_events_deliver_sigtrap_by_default() {
    let _s = serial();
    let (sig, got, expected) = sample(ProfilerGuardBuilder::default());
    assert_eq!(sig, libc::SIGTRAP);
    assert!(got as f64 >= 0.90 * expected, "{got} of {expected:.1}");
}

#[test]
fn a_configured_signal_is_used_instead() {
    let _s = serial();
    let rt = libc::SIGRTMIN() + 5;
    let (sig, got, expected) = sample(ProfilerGuardBuilder::default().signal(rt));
    assert_eq!(sig, rt);
    assert!(got as f64 >= 0.90 * expected, "{got} of {expected:.1}");
}

#[test]
#[ignore = "child helper"]
fn child_env_signal() {
    if !in_child() {
        return;
    }
    let (sig, got, _) = sample(ProfilerGuardBuilder::default());
    println!(
        "signal: {sig} (SIGRTMIN {}), samples {got}",
        libc::SIGRTMIN()
    );
}

#[test]
fn the_environment_chooses_the_signal() {
    // Children burn CPU: not while another test counts samples.
    let _s = serial();
    let out = child("child_env_signal", &[("PERFLENS_CPU_SIGNAL", "SIGRTMIN+6")]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let want = format!("signal: {} (SIGRTMIN", libc::SIGRTMIN() + 6);
    assert!(t.contains(&want), "{t}");

    let out = child("child_env_signal", &[("PERFLENS_CPU_SIGNAL", "SIGFOO")]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("SIGFOO"), "{t}");
    assert!(t.contains("expected a signal number or SIGRTMIN+n"), "{t}");
}

/// Starts a session, then raises SIGTRAP as a breakpoint would.
#[test]
#[ignore = "child helper"]
fn child_raise_sigtrap() {
    if !in_child() {
        return;
    }
    if std::env::var_os("PERFLENS_TEST_IGNORE_SIGTRAP").is_some() {
        // SAFETY: setting SIGTRAP to SIG_IGN before any session.
        unsafe { libc::signal(libc::SIGTRAP, libc::SIG_IGN) };
    }
    let guard = ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    busy_for(Duration::from_millis(50));
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(libc::SIGTRAP) };
    busy_for(Duration::from_millis(50));
    let report = guard.stop().build().expect("report");
    println!("survived, signal {}", thread(&report, tid()).signal);
}

#[test]
fn a_foreign_sigtrap_keeps_its_default_action() {
    // Children burn CPU: not while another test counts samples.
    let _s = serial();
    let out = child("child_raise_sigtrap", &[]);
    let t = text(&out);
    assert_eq!(out.status.signal(), Some(libc::SIGTRAP), "{t}");
    assert!(!t.contains("survived"), "{t}");
}

#[test]
fn an_ignored_sigtrap_stays_ignored() {
    // Children burn CPU: not while another test counts samples.
    let _s = serial();
    let out = child(
        "child_raise_sigtrap",
        &[("PERFLENS_TEST_IGNORE_SIGTRAP", "1")],
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains(&format!("survived, signal {}", libc::SIGTRAP)),
        "{t}"
    );
}

static USER_TRAPS: AtomicU64 = AtomicU64::new(0);

extern "C" fn user_trap(_: libc::c_int) {
    USER_TRAPS.fetch_add(1, Ordering::Relaxed);
}

/// The program has its own SIGTRAP handler: it keeps it, and sampling
/// uses the real-time signal.
#[test]
#[ignore = "child helper"]
fn child_user_handler() {
    if !in_child() {
        return;
    }
    // SAFETY: installing a plain handler that only bumps an atomic.
    unsafe { libc::signal(libc::SIGTRAP, user_trap as *const () as libc::sighandler_t) };
    let (sig, got, expected) = sample(ProfilerGuardBuilder::default());
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(libc::SIGTRAP) };
    println!(
        "signal {sig}, samples {got} of {expected:.0}, user traps {}",
        USER_TRAPS.load(Ordering::Relaxed)
    );
}

#[test]
fn a_program_handling_sigtrap_keeps_it() {
    // Children burn CPU: not while another test counts samples.
    let _s = serial();
    let out = child("child_user_handler", &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let want = format!("signal {}, samples", libc::SIGRTMIN() + 4);
    assert!(t.contains(&want), "{t}");
    assert!(t.contains("user traps 1"), "{t}");
}
