//! Measured calls made by thread-local destructors, under CPU sampling
//! and allocation counting: the thread's block is still recording while
//! destructors run, whether the thread-local was first used before or
//! after the thread's first measured call (destructors run in reverse
//! order of registration, so the one registered first runs after the
//! profiler's own exit hook).
#![cfg(all(feature = "alloc", feature = "cpu"))]

use perflens::Session;
use std::hint::black_box;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

const THREADS: u64 = 20;

struct CallsOnDrop(fn(u64) -> u64);

impl Drop for CallsOnDrop {
    fn drop(&mut self) {
        black_box((self.0)(3));
    }
}

thread_local! {
    static EARLY: CallsOnDrop = const { CallsOnDrop(in_early_destructor) };
    static LATE: CallsOnDrop = const { CallsOnDrop(in_late_destructor) };
}

#[perflens::measure]
fn in_early_destructor(n: u64) -> u64 {
    black_box(vec![n; 8]).len() as u64
}

#[perflens::measure]
fn in_late_destructor(n: u64) -> u64 {
    black_box(vec![n; 8]).len() as u64
}

#[perflens::measure]
fn body() {}

#[test]
fn measured_calls_in_tls_destructors_are_counted() {
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    for _ in 0..THREADS {
        std::thread::spawn(|| {
            EARLY.with(|_| {});
            body();
            LATE.with(|_| {});
        })
        .join()
        .unwrap();
    }
    let report = session.finish();
    let row = |f: &str| report.function(&name(f));
    assert_eq!(row("body").map(|r| r.calls), Some(THREADS));
    let late = row("in_late_destructor").expect("calls in the late destructor");
    assert_eq!(late.calls, THREADS);
    assert_eq!(late.alloc.map(|a| a.bytes), Some(THREADS * 64));
    let early = row("in_early_destructor").expect("calls in the early destructor");
    assert_eq!(early.calls, THREADS);
    assert_eq!(early.alloc.map(|a| a.bytes), Some(THREADS * 64));
}
