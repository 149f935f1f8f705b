//! For random programs of nested sync calls (recursion included), panics
//! caught at any level, and futures that complete, are dropped unpolled,
//! are dropped after a poll, or panic in a poll, run on two threads in
//! every timing mode and both recursion settings:
//!
//! - counts are exact: calls, cancellations and polls of every function
//!   equal what the program did (an interpreter counts it independently);
//! - no call is dropped or overflows;
//! - timed: for every path, in clock-exact sums, self <= total for sync
//!   code, and self <= busy <= wall for futures (cancelled ones
//!   included); an await site's measured time inside (`a0`'s and `a1`'s
//!   `.await`s are sites) is within the awaiting future's busy time;
//! - every report row and hot-path segment keeps self <= total, and an
//!   async row's busy <= total.
#![cfg(feature = "enabled")]

mod common;
use common::stress::YieldOnce;
use perflens::{Mode, RawSnapshot, Recursion, Report, Session};
use proptest::prelude::*;
use std::collections::HashMap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Waker};

#[derive(Clone, Debug)]
enum Op {
    /// A busy loop of `n * 64` iterations.
    Spin(u8),
    /// Inside a future: return `Pending` once. Elsewhere: nothing.
    Yield,
    /// Sync function `k` runs the ops.
    Call(u8, Vec<Op>),
    /// Sync function `k` runs the ops, then panics; caught right here.
    Panic(u8, Vec<Op>),
    /// Async function `k` runs the ops, and its future meets a fate.
    Async(u8, Vec<Op>, Fate),
}

#[derive(Clone, Copy, Debug)]
enum Fate {
    /// Polled until ready.
    Complete,
    /// Created and dropped without a poll.
    DropUnpolled,
    /// Polled once, then dropped (cancelled unless that poll finished it).
    DropAfterPoll,
    /// Runs the ops, then panics in its poll; caught around the executor.
    PanicInPoll,
}

/// What the program did, counted by the interpreter itself.
#[derive(Clone, Debug, Default, PartialEq)]
struct Counts {
    /// By row name: (calls, cancelled, polls).
    rows: HashMap<String, (u64, u64, u64)>,
}

impl Counts {
    fn add(&mut self, name: &str, calls: u64, cancelled: u64, polls: u64) {
        let e = self.rows.entry(name.to_string()).or_default();
        e.0 += calls;
        e.1 += cancelled;
        e.2 += polls;
    }
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

fn spin(n: u8) {
    for i in 0..u64::from(n) * 64 {
        std::hint::black_box(i);
    }
}

fn run(ops: &[Op], counts: &mut Counts) {
    for op in ops {
        match op {
            Op::Spin(n) => spin(*n),
            Op::Yield => {}
            Op::Call(k, body) => sync_fn(*k, body, false, counts),
            Op::Panic(k, body) => {
                let r = catch_unwind(AssertUnwindSafe(|| sync_fn(*k, body, true, counts)));
                assert!(r.is_err());
            }
            Op::Async(k, body, fate) => run_future(*k, body, *fate, counts),
        }
    }
}

fn sync_fn(k: u8, body: &[Op], panic: bool, counts: &mut Counts) {
    match k {
        0 => s0(body, panic, counts),
        1 => s1(body, panic, counts),
        _ => s2(body, panic, counts),
    }
}

#[perflens::measure]
fn s0(body: &[Op], panic: bool, counts: &mut Counts) {
    counts.add(&name("s0"), 1, 0, 0);
    run(body, counts);
    if panic {
        panic!("s0");
    }
}

#[perflens::measure]
fn s1(body: &[Op], panic: bool, counts: &mut Counts) {
    counts.add(&name("s1"), 1, 0, 0);
    run(body, counts);
    if panic {
        panic!("s1");
    }
}

#[perflens::measure]
fn s2(body: &[Op], panic: bool, counts: &mut Counts) {
    counts.add(&name("s2"), 1, 0, 0);
    run(body, counts);
    if panic {
        panic!("s2");
    }
}

/// The body of the async functions: sync ops run in the poll, `Yield`
/// suspends. The counts live outside the future (the executor's caller
/// owns them), reached through a raw pointer that outlives every poll.
async fn body(ops: Vec<Op>, panic: bool, counts: *mut Counts) {
    for op in &ops {
        match op {
            Op::Yield => YieldOnce(false).await,
            // SAFETY: `counts` points to the caller's `Counts`, alive for
            // the whole life of this future (see `run_future`), and no
            // other reference to it is used while a poll runs.
            other => run(std::slice::from_ref(other), unsafe { &mut *counts }),
        }
    }
    if panic {
        panic!("async");
    }
}

#[perflens::measure]
async fn a0(ops: Vec<Op>, panic: bool, counts: *mut Counts) {
    body(ops, panic, counts).await
}

#[perflens::measure]
async fn a1(ops: Vec<Op>, panic: bool, counts: *mut Counts) {
    body(ops, panic, counts).await
}

fn run_future(k: u8, ops: &[Op], fate: Fate, counts: &mut Counts) {
    let row = name(if k == 0 { "a0" } else { "a1" });
    let panic = matches!(fate, Fate::PanicInPoll);
    let ptr: *mut Counts = counts;
    let fut: Pin<Box<dyn Future<Output = ()>>> = if k == 0 {
        Box::pin(a0(ops.to_vec(), panic, ptr))
    } else {
        Box::pin(a1(ops.to_vec(), panic, ptr))
    };
    let mut fut = Some(fut);
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0;
    let limit = match fate {
        Fate::DropUnpolled => 0,
        Fate::DropAfterPoll => 1,
        _ => u64::MAX,
    };
    let done = catch_unwind(AssertUnwindSafe(|| {
        while polls < limit {
            polls += 1;
            if fut.as_mut().unwrap().as_mut().poll(&mut cx).is_ready() {
                return true;
            }
        }
        false
    }));
    // A future whose poll panicked is dropped here, after the unwind.
    drop(fut.take());
    match done {
        Ok(true) => counts.add(&row, 1, 0, polls),
        _ => counts.add(&row, 0, 1, polls),
    }
}

fn op() -> impl Strategy<Value = Op> {
    let leaf = prop_oneof![(0u8..4).prop_map(Op::Spin), Just(Op::Yield)];
    leaf.prop_recursive(5, 40, 4, |inner| {
        let body = prop::collection::vec(inner, 0..4);
        let fate = prop_oneof![
            Just(Fate::Complete),
            Just(Fate::DropUnpolled),
            Just(Fate::DropAfterPoll),
            Just(Fate::PanicInPoll),
        ];
        prop_oneof![
            4 => (0u8..3, body.clone()).prop_map(|(k, b)| Op::Call(k, b)),
            1 => (0u8..3, body.clone()).prop_map(|(k, b)| Op::Panic(k, b)),
            2 => (0u8..2, body, fate).prop_map(|(k, b, f)| Op::Async(k, b, f)),
        ]
    })
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Timed),
        Just(Mode::Count),
        (1u32..4).prop_map(|every| Mode::Sampled { every }),
    ]
}

/// Checks every path's clock-exact sums on the raw snapshot. Each node
/// is converted to ns on its own, so a sum of `k` nodes may round up to
/// `k` ns past the bound.
fn check_paths(raw: &RawSnapshot) -> Result<(), TestCaseError> {
    #[derive(Default)]
    struct Sums {
        nodes: u64,
        total: u64,
        self_: u64,
        busy: u64,
        wall: u64,
        is_async: bool,
    }
    // Await sites' counters mean other things (waits, not calls' time).
    let is_await = |path: u32| {
        let cs = raw.paths[path as usize].callsite as usize;
        raw.callsites[cs].kind == perflens_core::CallsiteKind::Await
    };
    let mut by_path: HashMap<u32, Sums> = HashMap::new();
    for n in raw.threads.iter().flat_map(|t| &t.nodes) {
        if n.path <= 1 {
            continue;
        }
        let s = by_path.entry(n.path).or_default();
        s.nodes += 1;
        s.self_ += n.self_ns;
        s.is_async |= n.polls > 0 || n.cancelled > 0;
        // A nested node's inclusive time is inside the outermost's.
        if !n.nested {
            s.total += n.total_ns;
            s.busy += n.busy_ns;
            s.wall += n.total_ns + n.cancelled_ns;
        }
    }
    for (path, s) in &by_path {
        let slack = s.nodes;
        if is_await(*path) {
            let parent = raw.paths[*path as usize].parent;
            let p_busy = by_path.get(&parent).map_or(0, |p| p.busy);
            prop_assert!(
                s.busy <= p_busy + slack,
                "await path {path}: measured inside {} > the awaiting future's busy {p_busy}",
                s.busy
            );
        } else if s.is_async {
            prop_assert!(
                s.self_ <= s.busy + slack,
                "path {path}: self {} > busy {}",
                s.self_,
                s.busy
            );
            prop_assert!(
                s.busy <= s.wall + slack,
                "path {path}: busy {} > wall {}",
                s.busy,
                s.wall
            );
        } else {
            prop_assert!(
                s.self_ <= s.total + slack,
                "path {path}: self {} > total {}",
                s.self_,
                s.total
            );
        }
    }
    Ok(())
}

fn check_report(report: &Report) -> Result<(), TestCaseError> {
    for r in &report.functions {
        prop_assert!(r.self_ns <= r.total_ns, "{r:?}");
        if let Some(busy) = r.busy_ns {
            prop_assert!(busy <= r.total_ns, "{r:?}");
            prop_assert!(r.self_ns <= busy, "{r:?}");
        }
    }
    for p in &report.paths {
        prop_assert!(p.self_ns <= p.total_ns, "{p:?}");
        for s in &p.segments {
            prop_assert!(s.self_ns <= s.total_ns, "{s:?}");
        }
    }
    Ok(())
}

fn check(program: &[Op], mode: Mode, recursion: Recursion) -> Result<(), TestCaseError> {
    // A short warm-up (0 to 2 calls per context), so that these small
    // programs still have sampled estimates, after timed first calls.
    let warmup = match mode {
        Mode::Sampled { every } => every - 1,
        _ => 0,
    };
    let session = Session::builder()
        .ignore_env()
        .mode(mode)
        .sample_warmup(warmup)
        .recursion(recursion)
        .start()
        .unwrap();
    let mut expected = Counts::default();
    run(program, &mut expected);
    let other = {
        let program = program.to_vec();
        std::thread::spawn(move || {
            let mut c = Counts::default();
            run(&program, &mut c);
            c
        })
        .join()
        .unwrap()
    };
    for (row, (calls, cancelled, polls)) in other.rows {
        expected.add(&row, calls, cancelled, polls);
    }
    let raw = session.raw_snapshot();
    let report = Report::from_snapshot(&raw, session.options());
    drop(session.finish());

    prop_assert_eq!(report.dropped.dropped_frames, 0);
    prop_assert_eq!(report.dropped.overflow_calls, 0);
    let mut got = Counts::default();
    for r in &report.functions {
        got.add(
            &r.name,
            r.calls,
            r.cancelled.unwrap_or(0),
            r.polls.unwrap_or(0),
        );
    }
    // Functions that never ran have no row.
    expected.rows.retain(|_, c| *c != (0, 0, 0));
    prop_assert_eq!(got, expected);
    // Sampled mode times a different subset of each node's calls (a
    // nested call may be timed inside an untimed outermost one), so its
    // raw sums are not comparable across nodes; its scaled estimates are
    // checked in the report below.
    if mode == Mode::Timed {
        check_paths(&raw)?;
    }
    check_report(&report)
}

#[test]
fn invariants_hold_for_random_call_trees() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (
        prop::collection::vec(op(), 1..5),
        mode(),
        prop_oneof![Just(Recursion::Fold), Just(Recursion::Expand)],
    );
    let result = runner.run(&strategy, |(program, mode, recursion)| {
        check(&program, mode, recursion)
    });
    std::panic::set_hook(hook);
    result.unwrap();
}
