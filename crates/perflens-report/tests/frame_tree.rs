//! The frame tree: the hot paths' segments as one tree, made straight
//! from a snapshot or from a report's paths.

mod common;

use std::collections::BTreeMap;

use common::{SnapBuilder, hist};
use perflens_core::snapshot::{AllocSummary, CallsiteKind, Mode, PathInfo, RawSnapshot};
use perflens_report::{FrameNode, FrameTree, Report, ReportOptions};

/// Every node by its chain of names, with its figures (the parent and
/// name indices left out: they depend on the order nodes were made).
fn by_chain(t: &FrameTree) -> BTreeMap<Vec<String>, FrameNode> {
    let chain = |mut i: usize| {
        let mut out = Vec::new();
        loop {
            let n = &t.nodes[i];
            out.push(t.name(n).to_string());
            match n.parent {
                Some(p) => {
                    assert!((p as usize) < i, "a parent comes before its children");
                    i = p as usize;
                }
                None => break,
            }
        }
        out.reverse();
        out
    };
    (0..t.nodes.len())
        .map(|i| {
            let n = FrameNode {
                parent: None,
                name: 0,
                ..t.nodes[i]
            };
            (chain(i), n)
        })
        .collect()
}

fn chain(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// `parse -> {add, delete, replace -> {delete, add}}` on two threads,
/// with exclusive-time histograms of several values.
fn pipeline() -> RawSnapshot {
    let mut b = SnapBuilder::new(Mode::Timed);
    let (t0, t1) = (b.thread("main"), b.thread("worker"));
    b.node(t0, &["parse"], 1, 10_000, 1_000);
    b.node(t0, &["parse", "add"], 10, 2_000, 2_000).hist_self =
        hist(&[100, 100, 100, 100, 100, 100, 100, 100, 100, 1_100]);
    b.node(t0, &["parse", "delete"], 5, 500, 500);
    b.node(t0, &["parse", "replace"], 3, 6_000, 600);
    b.node(t0, &["parse", "replace", "delete"], 3, 2_400, 2_400);
    b.node(t0, &["parse", "replace", "add"], 3, 3_000, 3_000);
    // Has not completed a call: not in the tree.
    b.node(t0, &["parse", "add", "validate"], 0, 0, 0);
    b.node(t1, &["parse"], 1, 4_000, 500);
    b.node(t1, &["parse", "add"], 2, 1_000, 1_000).hist_self = hist(&[40, 960]);
    b.build()
}

#[test]
fn the_tree_of_a_snapshot_is_the_tree_of_its_reports_paths() {
    let snap = pipeline();
    let direct = FrameTree::from_snapshot(&snap);
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    let from_paths = FrameTree::from_report(&report);
    assert_eq!(direct.nodes.len(), 6);
    assert_eq!(by_chain(&direct), by_chain(&from_paths));
    let nodes = by_chain(&direct);
    // Merged across the two threads.
    let parse = nodes[&chain(&["parse"])];
    assert_eq!(
        (parse.calls, parse.total_ns, parse.self_ns),
        (2, 14_000, 1_500)
    );
    let add = nodes[&chain(&["parse", "add"])];
    assert_eq!((add.calls, add.total_ns, add.self_ns), (12, 3_000, 3_000));
    // Twelve exclusive durations: 40, nine of 100, 960, 1100 (each read
    // as its bucket's midpoint).
    assert_eq!((add.self_p50_ns, add.self_p99_ns), (Some(101), Some(1_104)));
    assert!(!nodes.contains_key(&chain(&["parse", "add", "validate"])));
    assert_eq!(add.alloc_bytes, None);
}

#[test]
fn allocations_are_the_segments_own_and_inclusive_bytes() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["serve"], 2, 1_000, 400).alloc_bytes = 100;
    b.node(t, &["serve", "parse"], 2, 600, 600).alloc_bytes = 30;
    b.snap.alloc = Some(AllocSummary::default());
    let snap = b.build();
    let direct = FrameTree::from_snapshot(&snap);
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    assert_eq!(
        by_chain(&direct),
        by_chain(&FrameTree::from_report(&report))
    );
    let nodes = by_chain(&direct);
    let serve = nodes[&chain(&["serve"])];
    assert_eq!(
        (serve.alloc_bytes, serve.alloc_incl_bytes),
        (Some(100), Some(130))
    );
    let parse = nodes[&chain(&["serve", "parse"])];
    assert_eq!(
        (parse.alloc_bytes, parse.alloc_incl_bytes),
        (Some(30), Some(30))
    );
}

#[test]
fn contexts_with_one_chain_of_names_are_summed() {
    // Two callsites named `step` under `run` (two `measure_block!`s of
    // one name): two calling contexts, one chain of names.
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["run"], 1, 1_000, 100);
    let run = b.path(&["run"]);
    for (calls, ns) in [(2, 200), (3, 600)] {
        let cs = b.callsite("step", CallsiteKind::Sync);
        b.snap.paths.push(PathInfo {
            parent: run,
            callsite: cs,
            id: 7 + u64::from(cs),
        });
        let path = b.snap.paths.len() as u32 - 1;
        let node = b.node(t, &["run"], 0, 0, 0);
        *node = perflens_core::snapshot::NodeSnapshot {
            path,
            calls,
            timed_calls: calls,
            total_ns: ns,
            self_ns: ns,
            hist_total: hist(&vec![ns / calls; calls as usize]),
            hist_self: hist(&vec![ns / calls; calls as usize]),
            ..Default::default()
        };
    }
    let snap = b.build();
    let tree = FrameTree::from_snapshot(&snap);
    let nodes = by_chain(&tree);
    assert_eq!(nodes.len(), 2);
    let step = nodes[&chain(&["run", "step"])];
    assert_eq!((step.calls, step.total_ns, step.self_ns), (5, 800, 800));
    // Two calls of 100, three of 200 (read as [200, 204)'s midpoint).
    assert_eq!((step.self_p50_ns, step.self_p99_ns), (Some(202), Some(202)));
    // The report has two paths to `step` (and one to `run`, which spent
    // time itself); the tree made from them has the first's.
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    assert_eq!(report.paths.len(), 3);
    assert_eq!(report.paths[0].frames, ["run", "step"]);
    let first = by_chain(&FrameTree::from_report(&report))[&chain(&["run", "step"])];
    assert_eq!(first.calls, report.paths[0].calls);
}

#[test]
fn count_mode_has_no_percentiles_and_a_malformed_snapshot_is_left_out() {
    let mut snap = pipeline();
    snap.mode = Mode::Count;
    let tree = FrameTree::from_snapshot(&snap);
    assert!(
        tree.nodes
            .iter()
            .all(|n| n.self_p50_ns == Some(0) && n.self_p99_ns == Some(0))
    );
    // A cycle and indices out of range: neither hangs nor panics, and
    // what they touch is left out.
    let mut snap = pipeline();
    let replace_add = 7;
    assert_eq!(snap.paths[replace_add].parent, 5);
    snap.paths[replace_add].parent = replace_add as u32;
    snap.threads[1].nodes[0].path = 12_345;
    let nodes = by_chain(&FrameTree::from_snapshot(&snap));
    assert_eq!(nodes.len(), 5);
    assert!(!nodes.contains_key(&chain(&["parse", "replace", "add"])));
    assert_eq!(nodes[&chain(&["parse"])].calls, 1);
    // `parse`'s callsite out of range: nothing has a whole chain.
    snap.paths[2].callsite = 9_999;
    assert_eq!(FrameTree::from_snapshot(&snap).nodes.len(), 0);
}
