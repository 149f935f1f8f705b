//! The heap sampler's part of the allocator hook allocates nothing: with
//! every allocation sampled (rate 1), each allocation goes through the
//! sampling path (the table insert, the filter count) and each free
//! through the lookup, and an allocator wrapped around the counting one
//! sees no allocation begin inside another.
#![cfg(feature = "heap")]

use perflens_core::{CountingAlloc, HeapOptions, RecordingOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static INNER: CountingAlloc = CountingAlloc::new(System);
/// Allocator calls that began inside another one on the same thread.
static NESTED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

struct Outer;

fn enter() {
    DEPTH.with(|d| {
        if d.get() > 0 {
            NESTED.fetch_add(1, Ordering::Relaxed);
        }
        d.set(d.get() + 1);
    });
}

fn leave() {
    DEPTH.with(|d| d.set(d.get() - 1));
}

// SAFETY: forwards to the counting allocator unchanged; the depth is a
// const thread-local without a destructor (no allocation).
unsafe impl GlobalAlloc for Outer {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        enter();
        // SAFETY: forwarded unchanged.
        let p = unsafe { INNER.alloc(l) };
        leave();
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        enter();
        // SAFETY: forwarded unchanged.
        let p = unsafe { INNER.alloc_zeroed(l) };
        leave();
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        enter();
        // SAFETY: forwarded unchanged.
        let q = unsafe { INNER.realloc(p, l, n) };
        leave();
        q
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        enter();
        // SAFETY: forwarded unchanged.
        unsafe { INNER.dealloc(p, l) };
        leave();
    }
}

#[global_allocator]
static GLOBAL: Outer = Outer;

static WORK: perflens_core::Callsite = perflens_core::Callsite::new("work", || "");

fn work(round: usize) -> usize {
    let _g = perflens_core::Guard::enter(&WORK);
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for i in 0..1000 {
        let mut v = vec![i as u8; 16 + (i * 37 + round) % 3000];
        v.extend_from_slice(&[1, 2, 3]); // a realloc of a sampled block
        if i % 3 == 0 {
            kept.push(v);
        }
    }
    kept.len()
}

#[test]
fn sampling_every_allocation_allocates_nothing_inside_the_hook() {
    let options = RecordingOptions {
        heap: Some(HeapOptions {
            rate: 1,
            ..HeapOptions::default()
        }),
        ..RecordingOptions::default()
    };
    let rec = perflens_core::start(&options).unwrap();
    // Attaching the thread, and the first visit of a path, allocate for
    // the profiler (inside the hook's slow path): done once, before.
    work(0);
    let before = rec.snapshot().heap.unwrap();
    NESTED.store(0, Ordering::Relaxed);
    let mut n = 0;
    for round in 1..=20 {
        n += work(round);
    }
    let nested = NESTED.load(Ordering::Relaxed);
    let after = rec.snapshot().heap.unwrap();
    drop(rec.finish());
    assert_eq!(nested, 0, "allocations began inside the allocator hook");
    // Every allocation of the 20 rounds was sampled (2 per block: the
    // block and its realloc, plus the kept list's growth), and each freed
    // one found in the table.
    assert!(
        after.sampled - before.sampled >= 20 * 2000,
        "{before:?} {after:?}"
    );
    assert!(
        after.freed - before.freed >= 20 * 1000,
        "{before:?} {after:?}"
    );
    assert_eq!(after.dropped, 0);
    assert!(n > 0);
}
