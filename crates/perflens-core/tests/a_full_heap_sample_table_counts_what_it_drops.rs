//! The heap sampler's memory is bounded: its table holds a fixed number
//! of samples, and a sample that finds it full is dropped and counted
//! (the report says how many), while those it holds stay exact.
#![cfg(feature = "heap")]

use perflens_core::{CountingAlloc, HeapOptions, RecordingOptions};
use std::alloc::System;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new(System);

#[test]
fn samples_past_the_capacity_are_dropped_and_counted() {
    let options = RecordingOptions {
        heap: Some(HeapOptions {
            rate: 1,
            capacity: 64,
            ..HeapOptions::default()
        }),
        ..RecordingOptions::default()
    };
    let rec = perflens_core::start(&options).unwrap();
    let mut held: Vec<Box<[u8; 100]>> = Vec::with_capacity(200);
    let before = rec.snapshot().heap.unwrap();
    // The snapshot's own allocations are not sampled (profiler work).
    for _ in 0..200 {
        held.push(Box::new([7; 100]));
    }
    let full = rec.snapshot().heap.unwrap();
    assert_eq!(full.capacity, 64);
    let kept: u64 = full.paths.iter().map(|p| p.samples).sum();
    assert_eq!(kept, 64, "{full:?}");
    // The 200 boxes were all sampled; what did not fit was dropped.
    assert_eq!(full.sampled - before.sampled, 200);
    assert_eq!(full.dropped, full.sampled - kept);
    // Freed, they leave room again.
    drop(held);
    let mut again: Vec<Box<[u8; 100]>> = Vec::with_capacity(10);
    for _ in 0..10 {
        again.push(Box::new([1; 100]));
    }
    let after = rec.snapshot().heap.unwrap();
    let kept: u64 = after.paths.iter().map(|p| p.samples).sum();
    let bytes: u64 = after.paths.iter().map(|p| p.sampled_bytes).sum();
    // The ten boxes and their vector.
    assert_eq!((kept, bytes), (11, 10 * 100 + 10 * 8), "{after:?}");
    assert_eq!(after.dropped, full.dropped);
    drop(rec.finish());
}
