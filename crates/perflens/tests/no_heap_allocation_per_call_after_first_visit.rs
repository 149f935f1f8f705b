//! After a path's first visit, measured calls (sync and async) allocate
//! nothing: proved with a counting global allocator.
#![cfg(feature = "enabled")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to `System`, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[perflens::measure]
fn outer(i: u64) -> u64 {
    inner(i) + inner(i + 1)
}

#[perflens::measure]
fn inner(i: u64) -> u64 {
    std::hint::black_box(i)
}

#[perflens::measure]
async fn fut(i: u64) -> u64 {
    inner(i)
}

fn run_async(i: u64) -> u64 {
    let mut f = std::pin::pin!(fut(i));
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!(),
    }
}

#[test]
fn no_heap_allocation_per_call_after_first_visit() {
    let session = perflens::Session::builder().ignore_env().start().unwrap();
    // First visits register callsites and paths (these may allocate).
    outer(0);
    run_async(0);
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut acc = 0;
    for i in 0..100_000 {
        acc += outer(i);
        acc += run_async(i);
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    std::hint::black_box(acc);
    assert_eq!(after - before, 0, "measured calls allocated");
    let report = session.finish();
    assert_eq!(
        report
            .function(&format!("{}::inner", module_path!()))
            .unwrap()
            .calls,
        300_003
    );
}
