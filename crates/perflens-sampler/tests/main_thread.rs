//! The main thread, armed from another thread (stack bounds from the
//! `/proc/self/maps` snapshot, not pthread_getattr_np), is fully unwound.
//! `harness = false`: `main` here runs on the process's main thread.
mod common;

// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
fn main() {
    use common::*;
    use std::time::Duration;
    let guard = std::thread::spawn(|| {
        perflens_sampler::ProfilerGuardBuilder::default()
            .frequency(1000)
            .build()
            .expect("start")
    })
    .join()
    .unwrap();
    let me = tid();
    // SAFETY: no preconditions.
    assert_eq!(
        me,
        unsafe { libc::getpid() } as u64,
        "runs on the main thread"
    );
    busy_for(Duration::from_millis(300));
    let report = guard.stop().build().expect("report");
    let t = thread(&report, me);
    let full = samples_through(&report, me, "busy_for", |n| n == "main_thread::main");
    eprintln!("main thread: {t:?}, {full} samples unwound to main");
    assert_eq!(t.truncated, 0);
    assert!(t.samples >= 250, "{} samples", t.samples);
    assert!(full as f64 >= 0.95 * t.samples as f64);
    println!("main_thread: ok");
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
)))]
fn main() {}
