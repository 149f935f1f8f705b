//! Await sites (`CallsiteKind::Await`) in a snapshot: no function row,
//! transparent in hot paths, the frame tree and thread call counts, never
//! the end of a hot path; a function whose only children ran below a site
//! is not a leaf either (it ends a hot path only by time spent itself).

mod common;

use common::SnapBuilder;
use perflens_core::snapshot::{CallsiteKind, Mode};
use perflens_report::{FrameTree, Report, ReportOptions};

const SITE: &str = "src/app.rs:12:9";

/// `handler_self`: the handler's own time (0: all of its polls were in
/// the query below its await).
fn snapshot(handler_self: u64) -> perflens_core::RawSnapshot {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.callsite("app::handler", CallsiteKind::Async);
    b.callsite(SITE, CallsiteKind::Await);
    b.node(t, &["app::handler"], 4, 40_000, handler_self);
    // 4 awaits, 3 of which suspended (their waits in the histogram).
    b.sampled_node(t, &["app::handler", SITE], 4, 3, 30_000, 0);
    b.node(t, &["app::handler", SITE, "app::query"], 4, 20_000, 15_000);
    b.node(
        t,
        &["app::handler", SITE, "app::query", "app::parse"],
        4,
        5_000,
        5_000,
    );
    b.build()
}

#[test]
fn await_paths_are_transparent() {
    let snap = snapshot(4_000);
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    let names: Vec<&str> = report.functions.iter().map(|f| f.name.as_str()).collect();
    assert!(!names.contains(&SITE), "{names:?}");
    assert_eq!(names.len(), 3, "{names:?}");
    // Every frame spent time itself: three paths, by Self, none through
    // or at the site.
    let frames: Vec<Vec<&str>> = (report.paths.iter())
        .map(|p| p.frames.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        frames,
        [
            vec!["app::handler", "app::query"],
            vec!["app::handler", "app::query", "app::parse"],
            vec!["app::handler"],
        ]
    );
    let p = &report.paths[1];
    assert_eq!((p.calls, p.total_ns), (4, 5_000));
    let calls: Vec<u64> = p.segments.iter().map(|s| s.calls).collect();
    assert_eq!(calls, [4, 4, 4]);
    // Awaits are not calls of the thread.
    assert_eq!(report.threads[0].calls, 12);
    let handler = report.function("app::handler").unwrap();
    assert_eq!((handler.calls, handler.total_ns), (4, 40_000));

    let tree = FrameTree::from_snapshot(&snap);
    let mut rendered = Vec::new();
    for n in &tree.nodes {
        let mut chain = vec![tree.names[n.name as usize].clone()];
        let mut p = n.parent;
        while let Some(i) = p {
            chain.push(tree.names[tree.nodes[i as usize].name as usize].clone());
            p = tree.nodes[i as usize].parent;
        }
        chain.reverse();
        rendered.push(chain.join(";"));
    }
    assert_eq!(
        rendered,
        [
            "app::handler",
            "app::handler;app::query",
            "app::handler;app::query;app::parse"
        ]
    );
}

/// A handler whose polls were all in the query below its await site: not
/// a leaf (its child ran, below the site) and no time of its own, so no
/// path ends at it.
#[test]
fn a_function_whose_children_ran_below_a_site_is_not_a_leaf() {
    let report = Report::from_snapshot(&snapshot(0), &ReportOptions::default());
    let frames: Vec<Vec<&str>> = (report.paths.iter())
        .map(|p| p.frames.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        frames,
        [
            vec!["app::handler", "app::query"],
            vec!["app::handler", "app::query", "app::parse"],
        ]
    );
}
