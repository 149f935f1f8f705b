//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One profiling session per process at a time: tests in one binary take
/// this lock.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Pure user-mode work without calls (also in debug builds); never
/// inlined so it shows up as the leaf.
#[inline(never)]
pub fn leaf_spin(iters: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ iters;
    let mut i = 0;
    while i < iters {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        i += 1;
    }
    x
}

/// Burns `cpu` of this thread's CPU time in `leaf_spin`.
#[inline(never)]
pub fn busy_for(cpu: Duration) -> u64 {
    let end = thread_cpu() + cpu;
    let mut acc = 0u64;
    while thread_cpu() < end {
        acc ^= black_box(leaf_spin(black_box(200_000)));
    }
    black_box(acc)
}

pub fn tid() -> u64 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// Finds the thread report of `tid`.
pub fn thread(report: &perflens_sampler::CpuProfile, tid: u64) -> &perflens_sampler::ThreadProfile {
    report
        .threads
        .iter()
        .find(|t| t.tid == tid)
        .unwrap_or_else(|| panic!("thread {tid} not in report: {:?}", report.threads))
}

/// Samples of thread `tid` in the report's stacks.
pub fn samples_of(report: &perflens_sampler::CpuProfile, tid: u64) -> u64 {
    report
        .data
        .iter()
        .filter(|(f, _)| f.thread_id == tid)
        .map(|(_, v)| v.samples)
        .sum()
}

/// Samples of thread `tid` whose stack has a frame named `...leaf` and a
/// frame for which `outer` holds (an unwind that reached that far).
pub fn samples_through(
    report: &perflens_sampler::CpuProfile,
    tid: u64,
    leaf: &str,
    outer: impl Fn(&str) -> bool,
) -> u64 {
    report
        .data
        .iter()
        .filter(|(f, _)| {
            let mut names = f.frames.iter().flatten().map(|s| s.name.as_str());
            f.thread_id == tid && names.clone().any(|n| n.ends_with(leaf)) && names.any(&outer)
        })
        .map(|(_, v)| v.samples)
        .sum()
}

/// Installs `handler` for `sig`, to run on the thread's alternate signal
/// stack (`SA_ONSTACK`).
#[allow(dead_code)]
pub fn install_on_altstack(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction with a plain handler, an empty mask and
    // SA_ONSTACK; the handler is a function that lives for the process.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}
