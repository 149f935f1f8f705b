//! Exact call counts and tree shape for nested, recursive and branching
//! call graphs.
#![cfg(feature = "enabled")]

use perflens::{RawSnapshot, Session};
use std::collections::BTreeMap;

#[perflens::measure]
fn parse(op: u8) {
    match op {
        0 => add(),
        1 => delete(),
        _ => replace(),
    }
}

#[perflens::measure]
fn add() {}

#[perflens::measure]
fn delete() {}

#[perflens::measure]
fn replace() {
    delete();
    add();
}

#[perflens::measure]
fn fib(n: u64) -> u64 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

#[perflens::measure]
fn outer() {
    inner();
    inner();
    std::thread::sleep(std::time::Duration::from_millis(2));
}

#[perflens::measure]
fn inner() {
    std::thread::sleep(std::time::Duration::from_millis(1));
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

/// Every path of the merged tree with its calls, keyed by frame names
/// (the last segment only, for readability).
fn tree(raw: &RawSnapshot) -> BTreeMap<Vec<String>, u64> {
    let mut out = BTreeMap::new();
    for t in &raw.threads {
        for n in &t.nodes {
            let frames: Vec<String> = raw
                .frames(n.path)
                .iter()
                .map(|&c| {
                    raw.callsites[c as usize]
                        .name
                        .rsplit("::")
                        .next()
                        .unwrap()
                        .to_string()
                })
                .collect();
            *out.entry(frames).or_insert(0) += n.calls;
        }
    }
    out
}

fn path(frames: &[&str]) -> Vec<String> {
    frames.iter().map(|s| s.to_string()).collect()
}

#[test]
fn call_tree_shape_is_exact() {
    let session = Session::builder().ignore_env().start().unwrap();
    for _ in 0..10 {
        parse(0);
    }
    for _ in 0..20 {
        parse(1);
    }
    for _ in 0..30 {
        parse(2);
    }
    assert_eq!(fib(10), 55);
    outer();
    // One snapshot for both views, so they share one clock calibration.
    let raw = session.raw_snapshot();
    let report = perflens::Report::from_snapshot(&raw, session.options());
    drop(session.finish());

    // The whole tree, exactly.
    let mut expected = BTreeMap::new();
    expected.insert(path(&["parse"]), 60);
    expected.insert(path(&["parse", "add"]), 10);
    expected.insert(path(&["parse", "delete"]), 20);
    expected.insert(path(&["parse", "replace"]), 30);
    expected.insert(path(&["parse", "replace", "delete"]), 30);
    expected.insert(path(&["parse", "replace", "add"]), 30);
    // fib(10) folds into one path: its outermost call and 176 nested ones
    // (tests/recursion_is_counted_at_any_depth.rs has the expanded tree).
    expected.insert(path(&["fib"]), 177);
    expected.insert(path(&["outer"]), 1);
    expected.insert(path(&["outer", "inner"]), 2);
    assert_eq!(tree(&raw), expected);

    // Flat rows.
    let calls = |f: &str| {
        report
            .function(&name(f))
            .unwrap_or_else(|| panic!("no row {f}"))
            .calls
    };
    assert_eq!(calls("parse"), 60);
    assert_eq!(calls("add"), 40);
    assert_eq!(calls("delete"), 50);
    assert_eq!(calls("replace"), 30);
    assert_eq!(calls("fib"), 177);

    // Hot paths: a path ends at every context of the pipeline, the four
    // leaves and the two interior frames (each spent time itself), plus
    // fib's and outer's chains, with exact counts.
    let hp = |frames: &[&str]| {
        let names: Vec<String> = frames.iter().map(|f| name(f)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report.path(&names).map(|p| p.calls)
    };
    assert_eq!(hp(&["parse", "add"]), Some(10));
    assert_eq!(hp(&["parse", "delete"]), Some(20));
    assert_eq!(hp(&["parse", "replace", "delete"]), Some(30));
    assert_eq!(hp(&["parse", "replace", "add"]), Some(30));
    assert_eq!(hp(&["parse", "replace"]), Some(30), "interior");
    assert_eq!(hp(&["parse"]), Some(60), "interior");
    let pipeline = report
        .paths
        .iter()
        .filter(|p| p.frames[0] == name("parse"))
        .count();
    assert_eq!(pipeline, 6);

    // Recursion: fib's inclusive total is its outermost frame only.
    let fib_root = raw
        .threads
        .iter()
        .flat_map(|t| &t.nodes)
        .find(|n| {
            !n.nested
                && raw.frames(n.path).len() == 1
                && raw.callsites[raw.frames(n.path)[0] as usize].name == name("fib")
        })
        .unwrap();
    assert_eq!(
        report.function(&name("fib")).unwrap().total_ns,
        fib_root.total_ns
    );

    // Self time: outer's exclusive time is its total minus inner's.
    let outer_row = report.function(&name("outer")).unwrap();
    let inner_row = report.function(&name("inner")).unwrap();
    assert!(
        inner_row.total_ns >= 2_000_000,
        "two 1 ms sleeps: {}",
        inner_row.total_ns
    );
    // Exact in clock ticks; each sum is rounded to ns on its own.
    let diff = outer_row
        .self_ns
        .abs_diff(outer_row.total_ns - inner_row.total_ns);
    assert!(
        diff <= outer_row.total_ns / 10_000,
        "self {} vs total-child {}",
        outer_row.self_ns,
        outer_row.total_ns - inner_row.total_ns
    );
    assert!(
        outer_row.self_ns >= 2_000_000,
        "outer sleeps 2 ms itself: {}",
        outer_row.self_ns
    );
    assert!(outer_row.total_ns >= 4_000_000);
}
