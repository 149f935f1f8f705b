//! A library loaded during the session (dlopen) gets unwind info: samples
//! inside it unwind through it to the Rust caller.
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
use std::hint::black_box;
use std::time::Duration;

#[inline(never)]
fn busy_in_libm(cos: extern "C" fn(f64) -> f64, cpu: Duration) -> f64 {
    let end = thread_cpu() + cpu;
    let mut acc = 0.0;
    while thread_cpu() < end {
        for i in 0..20_000 {
            acc += cos(black_box(i as f64 * 1e-3));
        }
    }
    acc
}

#[test]
fn dlopened_library_is_unwound_through() {
    let _s = serial();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    // SAFETY: loading a system library and looking up `cos`, whose C
    // signature is `double cos(double)`.
    let cos: extern "C" fn(f64) -> f64 = unsafe {
        let h = libc::dlopen(c"libm.so.6".as_ptr(), libc::RTLD_NOW);
        assert!(!h.is_null(), "libm.so.6 not found");
        let f = libc::dlsym(h, c"cos".as_ptr());
        assert!(!f.is_null());
        std::mem::transmute::<*mut libc::c_void, extern "C" fn(f64) -> f64>(f)
    };
    // The watcher notices new modules on its next pass (10 ms).
    std::thread::sleep(Duration::from_millis(50));
    let me = tid();
    black_box(busy_in_libm(cos, Duration::from_millis(300)));
    let report = guard.stop().build().expect("report");
    let mut in_libm = 0;
    let mut unwound = 0;
    for (f, v) in report.data.iter().filter(|(f, _)| f.thread_id == me) {
        let leaf = &f.frames[0][0].name;
        if leaf.contains("cos") || leaf.contains("libm") {
            in_libm += v.samples;
            if f.frames
                .iter()
                .flatten()
                .any(|s| s.name.ends_with("busy_in_libm"))
            {
                unwound += v.samples;
            }
        }
    }
    eprintln!("{in_libm} samples in libm, {unwound} unwound to the caller");
    assert!(in_libm >= 30, "{in_libm} samples in libm");
    assert!(unwound as f64 >= 0.9 * in_libm as f64);
}
