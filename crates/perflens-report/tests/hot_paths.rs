//! Hot paths: the merged tree's chains from the root to every node that
//! ran and is a leaf or spent time itself, by that node's Self.

mod common;

use common::SnapBuilder;
use perflens_core::snapshot::{CallsiteKind, Mode, RawSnapshot};
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
fn pipeline_has_a_hot_path_per_calling_context() {
    let (snap, id) = pipeline(Mode::Timed);
    let r = Report::from_snapshot(&snap, &ReportOptions::default());
    // Every context that ran spent time itself, so each ends a path,
    // interior ones (`parse`, `replace`) included; `validate` completed no
    // call, so it ends none and `add` stays a leaf.
    assert_eq!(
        frames(&r),
        [
            vec!["parse", "add"],            // 3000 ns of Self, 12 calls
            vec!["parse", "replace", "add"], // 3000 ns, 3 calls
            vec!["parse", "replace", "delete"],
            vec!["parse"],
            vec!["parse", "replace"],
            vec!["parse", "delete"],
        ],
        "by the last frame's Self, then calls"
    );
    // The last frame's figures.
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
            (2, 14_000, 1_500),
            (3, 6_000, 600),
            (5, 500, 500)
        ]
    );
    let ranked: Vec<&[String]> = (r.paths_by_time_spent().into_iter())
        .map(|p| p.frames.as_slice())
        .collect();
    let built: Vec<&[String]> = r.paths.iter().map(|p| p.frames.as_slice()).collect();
    assert_eq!(ranked, built, "the table's order is the report's");

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
    // No time is known: every context that ran ends a path, by calls,
    // then frames.
    assert_eq!(
        frames(&r),
        [
            vec!["parse", "add"],
            vec!["parse", "delete"],
            vec!["parse", "replace"],
            vec!["parse", "replace", "add"],
            vec!["parse", "replace", "delete"],
            vec!["parse"],
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
    // Each depth spent time itself: a path ends at each, by its Self.
    assert_eq!(
        frames(&r),
        [vec!["fib", "fib"], vec!["fib"], vec!["fib", "fib", "fib"]]
    );
    let calls: Vec<u64> = r.paths[2].segments.iter().map(|s| s.calls).collect();
    assert_eq!(calls, [1, 2, 4]);
}

/// A `select!` loop: `Handler::run` (a future) creates `Shutdown::recv`
/// on each of its 10,000 iterations and drops it when the frame arrives
/// first. `recv` never completes: it lives 36 s in all, polled once per
/// iteration (100 ns each), while `Frame::parse` works 1,000 calls of
/// 50 µs.
fn select_loop() -> RawSnapshot {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 40_000_000_000;
    b.callsite("srv::Handler::run", CallsiteKind::Async);
    b.callsite("srv::Shutdown::recv", CallsiteKind::Async);
    let t = b.thread("tokio-rt-worker");
    let run = b.node(t, &["srv::Handler::run"], 1, 39_000_000_000, 20_000_000);
    (run.busy_ns, run.polls) = (71_000_000, 10_001);
    let recv = b.node(
        t,
        &["srv::Handler::run", "srv::Shutdown::recv"],
        0,
        0,
        1_000_000,
    );
    (recv.cancelled, recv.cancelled_ns) = (10_000, 36_000_000_000);
    (recv.busy_ns, recv.polls) = (1_000_000, 10_000);
    b.node(
        t,
        &["srv::Handler::run", "mini::Frame::parse"],
        1_000,
        50_000_000,
        50_000_000,
    );
    b.build()
}

#[test]
fn a_future_cancelled_every_loop_does_not_lead_the_hot_paths() {
    let r = Report::from_snapshot(&select_loop(), &ReportOptions::default());
    let recv = r.function("srv::Shutdown::recv").unwrap();
    assert_eq!((recv.calls, recv.total_ns), (0, 36_000_000_000));
    // By wall time the waiting future would be the hottest leaf; by time
    // spent in it, it comes after the parser and after the loop's own
    // polls (an interior frame that spent 20 ms itself).
    let ranked: Vec<(Vec<&str>, u64)> = (r.paths_by_time_spent().into_iter())
        .map(|p| (p.frames.iter().map(String::as_str).collect(), p.self_ns))
        .collect();
    assert_eq!(
        ranked,
        [
            (vec!["srv::Handler::run", "mini::Frame::parse"], 50_000_000),
            (vec!["srv::Handler::run"], 20_000_000),
            (vec!["srv::Handler::run", "srv::Shutdown::recv"], 1_000_000),
        ]
    );
    assert_eq!(frames(&r)[0], ["srv::Handler::run", "mini::Frame::parse"]);
    let text = common::table(&r);
    let at = text.find("\nHot path ").unwrap();
    let rows: Vec<&str> = text[at..].lines().skip(3).collect();
    assert_eq!(
        rows[0],
        "srv::Handler::run -> mini::Frame::parse   1,000  50.00 ms  50.00 ms"
    );
    assert_eq!(
        rows[5],
        "srv::Handler::run -> srv::Shutdown::recv      0   1.00 ms   36.00 s"
    );
    // Its segment has no completed call: no per-call self time either.
    assert_eq!(
        rows[7],
        "  srv::Shutdown::recv                         0   1.00 ms   36.00 s         -         -"
    );
}

#[test]
fn a_row_without_completed_calls_has_no_percentiles() {
    let r = Report::from_snapshot(&select_loop(), &ReportOptions::default());
    let text = common::table(&r);
    let row = |table: &str, name: &str| -> Vec<String> {
        let at = text.find(table).unwrap();
        let line = (text[at..].lines()).find(|l| l.starts_with(name)).unwrap();
        line.split("  ")
            .filter(|c| !c.is_empty())
            .map(|c| c.trim().to_string())
            .collect()
    };
    assert_eq!(
        row("\nFunction ", "srv::Shutdown::recv"),
        [
            "srv::Shutdown::recv",
            "0",
            "-",
            "-",
            "-",
            "-",
            "36.00 s",
            "1.00 ms",
            "0.0%"
        ]
    );
    assert_eq!(
        row("\nAsync ", "srv::Shutdown::recv"),
        [
            "srv::Shutdown::recv",
            "0",
            "1.00 ms",
            "36.00 s",
            "10,000",
            "10,000",
            "-",
            "-",
            "-"
        ]
    );
    // A completed row keeps its figures.
    assert_eq!(
        row("\nFunction ", "mini::Frame::parse")[2..5],
        ["50.00 µs", "49.66 µs", "49.66 µs"]
    );
    // The JSON claims no percentile for it either.
    let doc: serde_json::Value = serde_json::from_str(&common::json(&r)).unwrap();
    let recv = (doc["functions"].as_array().unwrap().iter())
        .find(|f| f["name"] == "srv::Shutdown::recv")
        .unwrap();
    assert_eq!(recv["timed_calls"], 0);
    assert_eq!(recv["percentiles"], serde_json::json!({}));
    let parse = (doc["functions"].as_array().unwrap().iter())
        .find(|f| f["name"] == "mini::Frame::parse")
        .unwrap();
    assert_eq!(parse["percentiles"].as_object().unwrap().len(), 3);
}

#[test]
fn same_method_names_on_different_types_stay_apart_in_a_shortened_path() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    let frames = [
        "server::connection::Handler::run_connection_loop",
        "protocol::commands::A::apply",
        "storage::engine::B::apply",
        "storage::engine::B::notify_subscribers",
    ];
    for depth in 1..=frames.len() {
        b.node(t, &frames[..depth], 1, 1_000, 250);
    }
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    let text = common::table(&r);
    let at = text.find("\nHot path ").unwrap();
    // The whole chain (each frame spent the same time itself, and a
    // shorter chain sorts first).
    let last = (text[at..].lines().skip(3))
        .filter(|l| !l.starts_with(' '))
        .nth(3)
        .unwrap();
    // `Type::method` for every frame does not fit in 72 columns; the
    // frames that are unique by their last part lose the type, the two
    // `apply`s keep it.
    assert!(
        last.starts_with("run_connection_loop -> A::apply -> B::apply -> notify_subscribers  "),
        "{text}"
    );
}
