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

/// Pure user-mode work; never inlined so it shows up as the leaf.
#[inline(never)]
pub fn leaf_spin(iters: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for i in 0..iters {
        x = x.rotate_left(7) ^ i.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    black_box(x)
}

/// Burns `cpu` of this thread's CPU time in `leaf_spin`.
#[inline(never)]
pub fn busy_for(cpu: Duration) -> u64 {
    let end = thread_cpu() + cpu;
    let mut acc = 0u64;
    while thread_cpu() < end {
        acc = acc.wrapping_add(leaf_spin(200_000));
    }
    black_box(acc)
}

pub fn tid() -> u64 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() as u64 }
}
