//! The heap sampler's part of the allocator hook allocates nothing: with
//! every allocation sampled (rate 1), each allocation goes through the
//! sampling path (the table insert, the filter count) and each free
//! through the lookup, and an allocator wrapped around the counting one
//! sees no allocation begin inside another.
#![cfg(feature = "heap")]

use perflens_core::testing::NestingCheck;
use perflens_core::{HeapOptions, RecordingOptions};

#[global_allocator]
static GLOBAL: NestingCheck = NestingCheck::new();

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
    GLOBAL.reset();
    let mut n = 0;
    for round in 1..=20 {
        n += work(round);
    }
    let nested = GLOBAL.nested();
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
