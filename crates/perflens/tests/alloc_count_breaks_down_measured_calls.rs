//! `perflens::alloc::count_by_function` and the assertion helpers (issue
//! 27, point 3): the measured functions called inside a counted closure,
//! each with its exact calls and allocations, in parallel test threads
//! (the tests of this file run at once, and none starts a session: a
//! session would record these threads instead), and the helpers'
//! failures naming what allocated.
#![cfg(feature = "alloc")]

use perflens::alloc::{
    assert_allocates_nothing, assert_allocations_at_most, assert_allocations_per_call_at_most,
    count_by_function,
};
use std::hint::black_box;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

/// One allocation of `n` bytes, kept by the caller.
#[perflens::measure]
fn leaf(n: usize) -> Vec<u8> {
    vec![1; n]
}

/// `k` leaves of 10 bytes, and its own vector of them (capacity `k`).
#[perflens::measure]
fn middle(k: usize) -> usize {
    let mut v = Vec::with_capacity(k);
    for _ in 0..k {
        v.push(leaf(10));
    }
    black_box(&v).len()
}

/// Recursion: each level allocates 8 bytes; counted once (outermost).
#[perflens::measure]
fn recurse(depth: u32) -> u64 {
    let b = black_box(Box::new(u64::from(depth)));
    if depth == 0 {
        *b
    } else {
        *b + recurse(depth - 1)
    }
}

#[test]
fn measured_calls_inside_are_broken_down_exactly_in_parallel_threads() {
    let handles: Vec<_> = (1..=8usize)
        .map(|t| {
            std::thread::spawn(move || {
                for _ in 0..100 {
                    let (n, total, functions) = count_by_function(|| {
                        let a = middle(t);
                        let b = recurse(3);
                        black_box(leaf(5));
                        a as u64 + b
                    });
                    assert_eq!(n, t as u64 + 6);
                    // middle: t leaves and its vector; recurse: 4 boxes;
                    // the last leaf.
                    let vec_bytes = (t * std::mem::size_of::<Vec<u8>>()) as u64;
                    assert_eq!(total.allocations, t as u64 + 1 + 4 + 1);
                    assert_eq!(total.allocated_bytes, 10 * t as u64 + vec_bytes + 32 + 5);
                    assert_eq!(total.frees, total.allocations, "all freed inside");
                    let row = |name: &str| {
                        let f = functions
                            .iter()
                            .find(|f| f.name.ends_with(name))
                            .unwrap_or_else(|| panic!("{name} in {functions:?}"));
                        (f.calls, f.count.allocations, f.count.allocated_bytes)
                    };
                    // Inclusive: middle's leaves are its too.
                    assert_eq!(
                        row("::middle"),
                        (1, t as u64 + 1, 10 * t as u64 + vec_bytes)
                    );
                    assert_eq!(
                        row("::leaf"),
                        (t as u64 + 1, t as u64 + 1, 10 * t as u64 + 5)
                    );
                    // Four calls, the outermost counting all four boxes.
                    assert_eq!(row("::recurse"), (4, 4, 32));
                    assert_eq!(functions.len(), 3);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// The message of the panic `f` raises.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let err = std::panic::catch_unwind(f).expect_err("it panics");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap()
}

#[test]
fn the_assertions_pass_and_their_failures_name_what_allocated() {
    assert_eq!(assert_allocates_nothing(|| black_box(2) + 2), 4);
    let msg = panic_message(|| {
        assert_allocates_nothing(|| middle(2));
    });
    assert!(
        msg.starts_with("expected at most 0 allocations, got 3 allocations"),
        "{msg}"
    );
    assert!(msg.contains("::middle: 1 calls, 3 allocations"), "{msg}");
    assert!(
        msg.contains("::leaf: 2 calls, 2 allocations (20 bytes)"),
        "{msg}"
    );
    assert_eq!(assert_allocations_at_most(3, || middle(2)), 2);
    assert!(
        panic_message(|| {
            assert_allocations_at_most(2, || middle(2));
        })
        .starts_with("expected at most 2 allocations, got 3")
    );
}

#[test]
fn a_per_call_bound_holds_or_says_how_many_per_call() {
    // middle(4) makes 5 allocations a call, leaf 1.
    assert_allocations_per_call_at_most("leaf", 1, || middle(4));
    assert_allocations_per_call_at_most("middle", 5, || (middle(4), middle(4)));
    let msg = panic_message(|| {
        assert_allocations_per_call_at_most("middle", 2, || middle(4));
    });
    assert!(
        msg.contains("at most 2 allocations per call of")
            && msg.contains("got 5.00 (5 in 1 calls)"),
        "{msg}"
    );
    let msg = panic_message(|| {
        assert_allocations_per_call_at_most("nowhere", 2, || middle(1));
    });
    assert!(msg.starts_with("nowhere was not called"), "{msg}");
}
