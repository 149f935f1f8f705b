//! Measured calls are counted and timed at any nesting depth: the shadow
//! stack is as deep as the thread's own stack, and recursion folds into
//! the node where the function is outermost (or expands, one node per
//! depth, with `Recursion::Expand`).
#![cfg(feature = "enabled")]

use perflens::{RawSnapshot, Recursion, Report, Session};
use std::collections::BTreeMap;

#[perflens::measure]
fn down(n: u32) -> u32 {
    if n <= 1 { 1 } else { 1 + down(n - 1) }
}

#[perflens::measure]
fn ping(n: u32) {
    if n > 0 {
        pong(n - 1);
    }
}

#[perflens::measure]
fn pong(n: u32) {
    if n > 0 {
        ping(n - 1);
    }
}

// a -> b -> a -> b -> c -> b: `c` is new below a nested `b`, so it gets a
// path of its own; the `b` it calls is nested (a `b` is on the stack),
// although no `b` is on the path of `c`'s node.
#[perflens::measure]
fn a(n: i32) {
    b(n);
}

#[perflens::measure]
fn b(n: i32) {
    match n {
        1.. => a(n - 1),
        0 => c(),
        _ => {}
    }
}

#[perflens::measure]
fn c() {
    b(-1);
}

#[perflens::measure]
fn leaf() {}

#[perflens::measure]
fn fib(n: u64) -> u64 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

#[perflens::measure]
fn with_leaf(n: u32) {
    if n > 0 {
        with_leaf(n - 1);
    } else {
        leaf();
    }
}

fn short(raw: &RawSnapshot, path: u32) -> Vec<String> {
    raw.frames(path)
        .iter()
        .map(|&c| {
            let name = &raw.callsites[c as usize].name;
            name.rsplit("::").next().unwrap().to_string()
        })
        .collect()
}

/// `(frames, nested) -> (calls, max_depth)` over every thread.
fn nodes(raw: &RawSnapshot) -> BTreeMap<(Vec<String>, bool), (u64, u32)> {
    let mut out = BTreeMap::new();
    for n in raw.threads.iter().flat_map(|t| &t.nodes) {
        if n.path <= 1 {
            continue;
        }
        let e = out.entry((short(raw, n.path), n.nested)).or_insert((0, 0));
        e.0 += n.calls;
        e.1 = e.1.max(n.max_depth);
    }
    out
}

fn key(frames: &[&str], nested: bool) -> (Vec<String>, bool) {
    (frames.iter().map(|s| s.to_string()).collect(), nested)
}

/// Sessions are process-wide: the tests of this file take turns.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

/// Every row and every path keeps self <= total (and busy <= total).
fn assert_bounds(report: &Report) {
    for r in &report.functions {
        assert!(r.self_ns <= r.total_ns, "{}: {r:?}", r.name);
    }
    for p in &report.paths {
        for s in &p.segments {
            assert!(s.self_ns <= s.total_ns, "{}: {s:?}", s.name);
        }
    }
}

/// Runs `f` on a thread with a 512 MiB stack (address space only).
fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn a_recursion_50000_deep_is_counted_and_timed_exactly() {
    let _serial = serial();
    let session = Session::builder().ignore_env().start().unwrap();
    assert_eq!(on_big_stack(|| down(50_000)), 50_000);
    let raw = session.raw_snapshot();
    let report = Report::from_snapshot(&raw, session.options());
    drop(session.finish());

    assert_eq!(report.dropped.dropped_frames, 0);
    // Two nodes: the outermost call and the nested ones.
    let expected = BTreeMap::from([
        (key(&["down"], false), (1, 0)),
        (key(&["down"], true), (49_999, 50_000)),
    ]);
    assert_eq!(nodes(&raw), expected);
    let row = report.function(&name("down")).unwrap();
    assert_eq!(row.calls, 50_000);
    assert_eq!(row.timed_calls, 50_000);
    assert_eq!(row.max_depth, Some(50_000));
    // Inclusive time is the outermost frame's; every frame's self time
    // adds up to it (within the 1 ns of converting two nodes apart).
    let outer = raw
        .threads
        .iter()
        .flat_map(|t| &t.nodes)
        .find(|n| n.path > 1 && !n.nested)
        .unwrap();
    assert_eq!(row.total_ns, outer.total_ns);
    assert!(row.total_ns > 0);
    assert!(row.self_ns <= row.total_ns);
    assert!(row.total_ns - row.self_ns <= 1, "{row:?}");
    // The mean is that of every call's inclusive time, nested ones
    // included, like the percentiles: here about half the outermost's.
    let all: u64 = (raw.threads.iter().flat_map(|t| &t.nodes))
        .filter(|n| n.path > 1)
        .map(|n| n.total_ns)
        .sum();
    assert!(row.avg_ns.abs_diff(all / 50_000) <= 1, "{row:?}");
    assert!(
        row.avg_ns > row.total_ns / 4 && row.avg_ns < row.total_ns,
        "{row:?}"
    );
    assert_bounds(&report);
    let path = report.path(&[&name("down")]).unwrap();
    assert_eq!(path.calls, 50_000);
    assert_eq!(path.segments[0].max_depth, Some(50_000));
}

#[test]
fn cycles_fold_into_the_outermost_frames_of_each_function() {
    let _serial = serial();
    let session = Session::builder().ignore_env().start().unwrap();
    on_big_stack(|| ping(10_001));
    a(1);
    with_leaf(3);
    let raw = session.raw_snapshot();
    let report = Report::from_snapshot(&raw, session.options());
    drop(session.finish());

    let expected = BTreeMap::from([
        // ping(10001) -> pong(10000) -> ... -> ping(1) -> pong(0): 5001
        // calls of ping, 5001 of pong, each 5001 frames deep at most.
        (key(&["ping"], false), (1, 0)),
        (key(&["ping"], true), (5_000, 5_001)),
        (key(&["ping", "pong"], false), (1, 0)),
        (key(&["ping", "pong"], true), (5_000, 5_001)),
        // a(1) -> b(1) -> a(0) -> b(0) -> c -> b(-1).
        (key(&["a"], false), (1, 0)),
        (key(&["a"], true), (1, 2)),
        (key(&["a", "b"], false), (1, 0)),
        (key(&["a", "b"], true), (2, 3)),
        (key(&["a", "b", "c"], false), (1, 0)),
        // with_leaf(3) -> ... -> with_leaf(0) -> leaf: leaf is not nested.
        (key(&["with_leaf"], false), (1, 0)),
        (key(&["with_leaf"], true), (3, 4)),
        (key(&["with_leaf", "leaf"], false), (1, 0)),
    ]);
    assert_eq!(nodes(&raw), expected);
    assert_eq!(report.dropped.dropped_frames, 0);
    let row = |f: &str| report.function(&name(f)).unwrap();
    assert_eq!(
        (row("ping").calls, row("ping").max_depth),
        (5_001, Some(5_001))
    );
    assert_eq!(
        (row("pong").calls, row("pong").max_depth),
        (5_001, Some(5_001))
    );
    assert_eq!((row("b").calls, row("b").max_depth), (3, Some(3)));
    assert_eq!((row("c").calls, row("c").max_depth), (1, None));
    assert_eq!((row("leaf").calls, row("leaf").max_depth), (1, None));
    // Inclusive time counts the outermost frames only: pong's is within
    // ping's, and b's (outermost, under a) within a's.
    assert!(row("pong").total_ns <= row("ping").total_ns);
    assert!(row("b").total_ns <= row("a").total_ns);
    assert!(row("c").total_ns <= row("b").total_ns);
    assert_bounds(&report);
    // A hot path ends at every context that ran (each spent time
    // itself), each once: recursions folded, leaves and interior frames.
    let mut hot: Vec<Vec<String>> = (report.paths.iter())
        .map(|p| {
            p.frames
                .iter()
                .map(|f| f.rsplit("::").next().unwrap().into())
                .collect()
        })
        .collect();
    hot.sort();
    let hot: Vec<Vec<&str>> = (hot.iter())
        .map(|p| p.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        hot,
        [
            vec!["a"],
            vec!["a", "b"],
            vec!["a", "b", "c"],
            vec!["ping"],
            vec!["ping", "pong"],
            vec!["with_leaf"],
            vec!["with_leaf", "leaf"]
        ]
    );
}

#[test]
fn expand_keeps_one_node_per_depth() {
    let _serial = serial();
    let session = Session::builder()
        .ignore_env()
        .recursion(Recursion::Expand)
        .start()
        .unwrap();
    a(1);
    with_leaf(2);
    assert_eq!(fib(10), 55);
    let raw = session.raw_snapshot();
    let report = Report::from_snapshot(&raw, session.options());
    drop(session.finish());

    let mut expected = BTreeMap::from([
        (key(&["a"], false), (1, 0)),
        (key(&["a", "b"], false), (1, 0)),
        (key(&["a", "b", "a"], false), (1, 0)),
        (key(&["a", "b", "a", "b"], false), (1, 0)),
        (key(&["a", "b", "a", "b", "c"], false), (1, 0)),
        (key(&["a", "b", "a", "b", "c", "b"], false), (1, 0)),
        (key(&["with_leaf"], false), (1, 0)),
        (key(&["with_leaf", "with_leaf"], false), (1, 0)),
        (key(&["with_leaf", "with_leaf", "with_leaf"], false), (1, 0)),
        (
            key(&["with_leaf", "with_leaf", "with_leaf", "leaf"], false),
            (1, 0),
        ),
    ]);
    // fib(10): the calls per depth are fixed by the recursion.
    let per_depth = [1u64, 2, 4, 8, 16, 32, 52, 44, 16, 2];
    for (d, &calls) in per_depth.iter().enumerate() {
        expected.insert((vec!["fib".to_string(); d + 1], false), (calls, 0));
    }
    let row = |f: &str| report.function(&name(f)).unwrap();
    assert_eq!(nodes(&raw), expected);
    assert_eq!((row("fib").calls, row("fib").max_depth), (177, Some(10)));
    assert_eq!((row("b").calls, row("b").max_depth), (3, Some(3)));
    assert_eq!(
        (row("with_leaf").calls, row("with_leaf").max_depth),
        (3, Some(3))
    );
    assert_bounds(&report);
}

#[test]
fn a_fixed_stack_depth_still_counts_what_it_drops() {
    let _serial = serial();
    let session = Session::builder()
        .ignore_env()
        .stack_depth(100)
        .start()
        .unwrap();
    assert_eq!(down(300), 300);
    let report = session.finish();
    // Frame 0 is the root: 99 calls fit, 201 are counted as dropped.
    assert_eq!(report.function(&name("down")).unwrap().calls, 99);
    assert_eq!(report.dropped.dropped_frames, 201);
}

#[test]
fn a_later_session_gets_its_own_capacities() {
    let _serial = serial();
    // The first session gives this thread a block with a small tree...
    let first = Session::builder()
        .ignore_env()
        .node_capacity(2)
        .start()
        .unwrap();
    ping(4);
    let r = first.finish();
    assert_eq!(r.dropped.overflow_calls, 3);
    // ...the next one, asking for more, must not reuse it as it is.
    let second = Session::builder()
        .ignore_env()
        .node_capacity(64)
        .start()
        .unwrap();
    ping(4);
    let r = second.finish();
    assert_eq!(r.dropped.overflow_calls, 0);
    assert_eq!(r.function(&name("ping")).unwrap().calls, 3);
    assert_eq!(r.function(&name("pong")).unwrap().calls, 2);
}
