//! Hot paths: the merged tree's root-to-leaf chains.

mod common;

use common::SnapBuilder;
use perflens_core::snapshot::{Mode, RawSnapshot};
use perflens_report::{Report, ReportOptions, Segment};

/// `parse -> {add, delete, replace -> {delete, add}}` on two threads.
fn pipeline(mode: Mode) -> (RawSnapshot, u64) {
    let mut b = SnapBuilder::new(mode);
    let (t0, t1) = (b.thread("main"), b.thread("worker"));
    b.node(t0, &["parse"], 1, 10_000, 1_000);
    b.node(t0, &["parse", "add"], 10, 2_000, 2_000);
    b.node(t0, &["parse", "delete"], 5, 500, 500);
    b.node(t0, &["parse", "replace"], 3, 6_000, 600);
    b.node(t0, &["parse", "replace", "delete"], 3, 2_400, 2_400);
    b.node(t0, &["parse", "replace", "add"], 3, 3_000, 3_000);
    // A node that has not completed a call yet: `add` stays a leaf.
    b.node(t0, &["parse", "add", "validate"], 0, 0, 0);
    b.node(t1, &["parse"], 1, 4_000, 500);
    b.node(t1, &["parse", "add"], 2, 1_000, 1_000);
    let leaf = b.path(&["parse", "replace", "add"]) as usize;
    let id = b.snap.paths[leaf].id;
    (b.build(), id)
}

fn frames(r: &Report) -> Vec<Vec<&str>> {
    r.paths
        .iter()
        .map(|p| p.frames.iter().map(String::as_str).collect())
        .collect()
}

fn seg(name: &str, calls: u64, total: u64, self_: u64, p50: u64, p99: u64) -> Segment {
    let (name, total_ns, self_ns, self_p50_ns, self_p99_ns) = (name.into(), total, self_, p50, p99);
    Segment {
        name,
        calls,
        total_ns,
        self_ns,
        self_p50_ns,
        self_p99_ns,
        max_depth: None,
        alloc_bytes: None,
        alloc_incl_bytes: None,
    }
}

#[test]
fn pipeline_has_exactly_four_hot_paths() {
    let (snap, id) = pipeline(Mode::Timed);
    let r = Report::from_snapshot(&snap, &ReportOptions::default());
    assert_eq!(
        frames(&r),
        [
            vec!["parse", "add"],            // 3000 ns, 12 calls
            vec!["parse", "replace", "add"], // 3000 ns, 3 calls
            vec!["parse", "replace", "delete"],
            vec!["parse", "delete"],
        ],
        "by leaf total, then calls"
    );
    let counts: Vec<(u64, u64, u64)> = r
        .paths
        .iter()
        .map(|p| (p.calls, p.total_ns, p.self_ns))
        .collect();
    assert_eq!(
        counts,
        [
            (12, 3_000, 3_000),
            (3, 3_000, 3_000),
            (3, 2_400, 2_400),
            (5, 500, 500)
        ]
    );

    let replace_add = r.path(&["parse", "replace", "add"]).unwrap();
    assert_eq!(replace_add.id, id);
    // parse's self times were 1000 (main) and 500 (worker) per call;
    // replace's 200 ns reads back as its bucket midpoint (200..204 -> 202).
    assert_eq!(
        replace_add.segments,
        [
            seg("parse", 2, 14_000, 1_500, 500, 1_000),
            seg("replace", 3, 6_000, 600, 202, 202),
            seg("add", 3, 3_000, 3_000, 1_000, 1_000),
        ]
    );
    // add merged over both threads: 10 calls of 200 ns (-> 202) and 2 of
    // 500 ns.
    let add = &r.path(&["parse", "add"]).unwrap().segments[1];
    assert_eq!(
        (add.calls, add.self_p50_ns, add.self_p99_ns),
        (12, 202, 500)
    );
}

#[test]
fn count_mode_sorts_hot_paths_by_calls() {
    let (snap, _) = pipeline(Mode::Count);
    let r = Report::from_snapshot(&snap, &ReportOptions::default());
    assert_eq!(
        frames(&r),
        [
            vec!["parse", "add"],
            vec!["parse", "delete"],
            vec!["parse", "replace", "add"],
            vec!["parse", "replace", "delete"],
        ]
    );
    assert!(
        r.paths
            .iter()
            .all(|p| p.total_ns == 0 && p.segments.iter().all(|s| s.self_p99_ns == 0))
    );
}

#[test]
fn recursive_chains_keep_every_frame() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["fib"], 1, 300, 100);
    b.node(t, &["fib", "fib"], 2, 200, 120);
    b.node(t, &["fib", "fib", "fib"], 4, 80, 80);
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    assert_eq!(frames(&r), [vec!["fib", "fib", "fib"]]);
    let calls: Vec<u64> = r.paths[0].segments.iter().map(|s| s.calls).collect();
    assert_eq!(calls, [1, 2, 4]);
}
