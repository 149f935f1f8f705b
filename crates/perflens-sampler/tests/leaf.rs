//! The interrupted (leaf) frame is kept and symbolized: a busy
//! `#[inline(never)]` leaf is the innermost frame of most samples.
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
use std::time::Duration;

#[test]
fn busy_leaf_is_the_innermost_frame() {
    let _s = serial();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
        .expect("start");
    let me = tid();
    busy_for(Duration::from_millis(400));
    let report = guard.stop().build().expect("report");
    let mut total = 0;
    let mut leaf = 0;
    let mut with_line = 0;
    let mut with_caller = 0;
    for (f, v) in report.data.iter().filter(|(f, _)| f.thread_id == me) {
        total += v.samples;
        let inner = &f.frames[0][0];
        if inner.name.ends_with("leaf_spin") {
            leaf += v.samples;
            if inner
                .filename
                .as_deref()
                .is_some_and(|p| p.ends_with("mod.rs"))
                && inner.lineno.is_some()
            {
                with_line += v.samples;
            }
            let names: Vec<&str> = f.frames.iter().flatten().map(|s| s.name.as_str()).collect();
            if names.iter().any(|n| n.ends_with("busy_for"))
                && names
                    .iter()
                    .any(|n| n.contains("busy_leaf_is_the_innermost_frame"))
            {
                with_caller += v.samples;
            }
        }
    }
    eprintln!(
        "{total} samples, leaf_spin innermost in {leaf}, with file:line {with_line}, full stack {with_caller}"
    );
    for l in report.folded_lines().iter().take(3) {
        eprintln!("{l}");
    }
    assert!(leaf as f64 >= 0.9 * total as f64, "{leaf} of {total}");
    assert!(with_line as f64 >= 0.9 * leaf as f64);
    assert!(with_caller as f64 >= 0.9 * leaf as f64, "callers unwound");
}
