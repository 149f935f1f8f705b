//! `perflens::alloc::count` (issue 27, point 3): the exact allocations
//! and frees of a closure on the current thread, without a session, in
//! `cargo test`'s parallel threads (the tests of this file run at once),
//! nested, across a panic, and beside a session that records.
#![cfg(feature = "alloc")]

use perflens::Session;
use perflens::alloc::{AllocCount, count};
use std::hint::black_box;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn counted(allocated_bytes: u64, allocations: u64, freed_bytes: u64, frees: u64) -> AllocCount {
    AllocCount {
        allocated_bytes,
        allocations,
        freed_bytes,
        frees,
    }
}

#[perflens::measure]
fn parse(s: &str) -> usize {
    s.split(',').filter(|f| !f.is_empty()).count()
}

#[test]
fn code_that_allocates_nothing_counts_nothing() {
    let (n, c) = count(|| parse(black_box("a,b,,c")));
    assert_eq!(n, 3);
    assert_eq!(c, AllocCount::default());
    assert_eq!(c.net_bytes(), 0);
}

#[test]
fn each_allocation_and_free_is_counted_exactly() {
    let (v, c) = count(|| {
        let kept = black_box(vec![7u8; 100]);
        let dropped = black_box(Box::new([0u64; 4]));
        drop(dropped);
        kept
    });
    assert_eq!(c, counted(100 + 32, 2, 32, 1));
    assert_eq!(c.net_bytes(), 100);
    // Dropping what `count` returned is outside the scope.
    let ((), c) = count(|| drop(v));
    assert_eq!(c, counted(0, 0, 100, 1));
    assert_eq!(c.net_bytes(), -100);
}

#[test]
fn threads_in_parallel_each_count_their_own() {
    let handles: Vec<_> = (1..=8u64)
        .map(|t| {
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                for round in 0..200u64 {
                    let ((), c) = count(|| {
                        for _ in 0..t {
                            black_box(vec![0u8; (16 * t + round) as usize]);
                        }
                    });
                    seen.push(c);
                }
                (t, seen)
            })
        })
        .collect();
    for h in handles {
        let (t, seen) = h.join().unwrap();
        for (round, c) in seen.into_iter().enumerate() {
            let bytes = t * (16 * t + round as u64);
            assert_eq!(c, counted(bytes, t, bytes, t), "thread {t}, round {round}");
        }
    }
}

#[test]
fn an_outer_scope_includes_the_inner_one() {
    let ((_held, inner), outer) = count(|| {
        let _a = black_box(vec![1u8; 10]);
        count(|| black_box(vec![2u8; 20]))
    });
    assert_eq!(inner, counted(20, 1, 0, 0));
    // The outer scope: its own 10 (freed at its end) and the inner 20,
    // still held (returned).
    assert_eq!(outer, counted(30, 2, 10, 1));
}

#[test]
fn a_panic_inside_leaves_the_thread_counting_as_before() {
    let caught = std::panic::catch_unwind(|| {
        count(|| {
            let _held = black_box(vec![0u8; 64]);
            panic!("inside count");
        })
    });
    assert!(caught.is_err());
    // The scope's counters are gone; the next scope counts exactly.
    let (_, c) = count(|| black_box(vec![0u8; 48]));
    assert_eq!(c, counted(48, 1, 0, 0));
}

/// One test only starts a session (one per process): the others count
/// beside it, in their threads, unaffected.
#[test]
fn a_session_recording_the_thread_gets_what_the_scope_counted() {
    let s = Session::builder().ignore_env().start().unwrap();
    let (n, c) = count(|| {
        black_box(vec![0u8; 256]);
        parse(black_box("x,y"))
    });
    assert_eq!(n, 2);
    assert_eq!(c, counted(256, 1, 256, 1));
    let report = s.finish();
    // The session saw the scope's allocation on this thread (it makes
    // no other while the session records): its figures are the scope's.
    let tid = perflens_sys::thread::tid();
    let me = (report.threads.iter())
        .find(|t| t.tid == tid)
        .expect("this thread in the report");
    let figures = (me.alloc_bytes, me.alloc_count, me.free_bytes, me.free_count);
    assert_eq!(figures, (Some(256), Some(1), Some(256), Some(1)), "{me:?}");
}
