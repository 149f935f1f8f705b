//! Flat function rows built from hand-made snapshots with known numbers.

mod common;

use common::{SnapBuilder, hist};
use perflens_core::snapshot::{CallsiteKind, Mode, NodeSnapshot, PathInfo};
use perflens_report::{FunctionKind, Report, ReportMode, ReportOptions};

fn report(b: SnapBuilder) -> Report {
    Report::from_snapshot(&b.build(), &ReportOptions::default())
}

#[test]
fn recursion_counts_only_outermost_frames_in_total() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["main"], 1, 1_000, 100);
    b.node(t, &["main", "fib"], 1, 900, 200);
    b.node(t, &["main", "fib", "fib"], 2, 600, 300);
    b.node(t, &["main", "fib", "fib", "fib"], 4, 300, 300);
    // Indirect recursion: fib -> helper -> fib.
    b.node(t, &["main", "fib", "helper"], 1, 100, 50);
    b.node(t, &["main", "fib", "helper", "fib"], 1, 50, 50);
    // A second outermost fib, under another top-level function.
    b.node(t, &["other"], 1, 500, 100);
    b.node(t, &["other", "fib"], 1, 400, 400);
    let r = report(b);

    let fib = r.function("fib").unwrap();
    assert_eq!(fib.calls, 1 + 2 + 4 + 1 + 1);
    assert_eq!(fib.total_ns, 900 + 400, "outermost frames only");
    assert_eq!(
        fib.self_ns,
        200 + 300 + 300 + 50 + 400,
        "self sums every frame"
    );
    // Mean of every frame's own inclusive time: (900+600+300+50+400)/9.
    assert_eq!(fib.avg_ns, 250);
    // Per-call values 50, 75 x4, 300 x2, 400, 900: median is 75, and the
    // top value reads back as its bucket midpoint (896..912 -> 904).
    assert_eq!((fib.p50_ns, fib.p95_ns, fib.p99_ns), (75, 904, 904));
    let helper = r.function("helper").unwrap();
    assert_eq!(
        (helper.calls, helper.total_ns, helper.self_ns),
        (1, 100, 50)
    );
    let names: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["fib", "main", "other", "helper"],
        "by total descending"
    );
}

#[test]
fn threads_merge_by_path_and_percentiles_merge_histograms() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let (t0, t1) = (b.thread("a"), b.thread("b"));
    b.node(t0, &["work"], 3, 30, 30);
    b.node(t1, &["work"], 1, 50, 20);
    b.node(t1, &["idle"], 2, 4, 4);
    let snap = b.build();
    let options = ReportOptions {
        percentiles: vec![99.9, 50.0],
        ..Default::default()
    };
    let r = Report::from_snapshot(&snap, &options);

    let work = r.function("work").unwrap();
    assert_eq!(
        (work.calls, work.timed_calls, work.total_ns, work.self_ns),
        (4, 4, 80, 50)
    );
    assert_eq!(work.avg_ns, 20);
    // Values 10, 10, 10, 50.
    assert_eq!((work.p50_ns, work.p95_ns, work.p99_ns), (10, 50, 50));
    assert_eq!(r.percentiles, [50.0, 99.9], "sorted");
    let labels: Vec<(&str, u64)> = work.percentiles.iter().collect();
    assert_eq!(labels, [("p50", 10), ("p99.9", 50)]);
    assert!(!work.sampled);
    assert_eq!(work.kind, FunctionKind::Sync);
    assert_eq!(
        (work.busy_ns, work.wait_ns, work.polls, work.cancelled),
        (None, None, None, None)
    );

    assert_eq!(r.threads.len(), 2);
    assert_eq!(
        (r.threads[1].index, r.threads[1].tid, r.threads[1].nodes),
        (1, 1001, 2)
    );
    assert_eq!((r.threads[0].calls, r.threads[1].calls), (3, 3));
    assert_eq!(r.threads[1].name.as_deref(), Some("b"));
}

#[test]
fn callsites_with_the_same_name_share_one_row() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["a", "log"], 2, 20, 20);
    b.callsite("log", CallsiteKind::Async); // a second `log` callsite, async
    b.node(t, &["b", "log"], 3, 60, 60);
    b.node(t, &["a"], 1, 100, 80);
    b.node(t, &["b"], 1, 100, 40);
    let r = report(b);
    assert_eq!(r.functions.iter().filter(|f| f.name == "log").count(), 1);
    let log = r.function("log").unwrap();
    assert_eq!(
        (log.calls, log.total_ns, log.kind),
        (5, 80, FunctionKind::Async)
    );
}

#[test]
fn ticks_are_converted_to_nanoseconds() {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.ns_per_tick = 0.25; // a 4 GHz TSC
    let t = b.thread("main");
    let node = b.node(t, &["work"], 2, 2_000, 2_000);
    node.hist_total = hist(&[4_000, 4_000]); // 1000 ns each, in ticks
    let r = report(b);
    assert_eq!(r.function("work").unwrap().p50_ns, 1_000);
    assert_eq!(r.clock, "tsc");
}

#[test]
fn sampled_mode_scales_each_node_by_its_calls_over_timed_calls() {
    let mut b = SnapBuilder::new(Mode::Sampled { every: 10 });
    let (t0, t1) = (b.thread("a"), b.thread("b"));
    b.sampled_node(t0, &["work"], 1_000, 100, 5_000, 3_000); // x10
    b.sampled_node(t1, &["work"], 10, 10, 1_000, 1_000); // all timed: x1
    b.sampled_node(t1, &["never_timed"], 5, 0, 0, 0);
    let r = report(b);
    assert_eq!((r.mode, r.sample_every), (ReportMode::Sampled, 10));

    let work = r.function("work").unwrap();
    assert_eq!((work.calls, work.timed_calls), (1_010, 110));
    assert_eq!(work.total_ns, 50_000 + 1_000);
    assert_eq!(work.self_ns, 30_000 + 1_000);
    // The mean comes from the timed calls themselves: 6000 / 110.
    assert_eq!(work.avg_ns, 55);
    assert!(work.sampled);
    assert_eq!(r.paths[0].total_ns, 51_000, "hot paths are scaled too");
    let never = r.function("never_timed").unwrap();
    assert_eq!(
        (never.calls, never.total_ns, never.p50_ns, never.sampled),
        (5, 0, 0, true)
    );
}

#[test]
fn count_mode_reports_calls_and_zero_durations() {
    let mut b = SnapBuilder::new(Mode::Count);
    let t = b.thread("main");
    b.node(t, &["few"], 3, 0, 0);
    // Stray timing data is ignored: count mode measured nothing.
    b.node(t, &["many"], 30, 999, 999).polls = 4;
    let r = report(b);
    assert_eq!((r.mode, r.sample_every), (ReportMode::Count, 0));
    assert!(!r.has_timing());
    let names: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["many", "few"], "by calls when nothing is timed");
    let many = &r.functions[0];
    assert_eq!(
        (many.calls, many.timed_calls, many.total_ns, many.self_ns),
        (30, 0, 0, 0)
    );
    assert_eq!(
        (many.avg_ns, many.p50_ns, many.p95_ns, many.p99_ns),
        (0, 0, 0, 0)
    );
    assert_eq!(many.percentiles.get("p99"), Some(0));
    assert!(!many.sampled);
}

#[test]
fn async_rows_report_busy_wait_polls_and_cancellations() {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.callsite("fetch", CallsiteKind::Async);
    b.callsite("spin", CallsiteKind::Async);
    let t = b.thread("main");
    let fetch = b.node(t, &["fetch"], 2, 1_000, 250);
    (fetch.busy_ns, fetch.polls, fetch.cancelled) = (300, 4, 1);
    // Busy above wall (clock skew across workers) saturates wait at 0.
    let spin = b.node(t, &["spin"], 1, 100, 100);
    (spin.busy_ns, spin.polls) = (120, 1);
    let r = report(b);
    let fetch = r.function("fetch").unwrap();
    assert_eq!(fetch.kind, FunctionKind::Async);
    assert_eq!((fetch.busy_ns, fetch.wait_ns), (Some(300), Some(700)));
    assert_eq!((fetch.polls, fetch.cancelled), (Some(4), Some(1)));
    assert_eq!(r.function("spin").unwrap().wait_ns, Some(0));
}

#[test]
fn cancelled_futures_count_in_time_but_not_in_calls_or_latency() {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.callsite("fetch", CallsiteKind::Async);
    b.callsite("abandoned", CallsiteKind::Async);
    let t = b.thread("main");
    // Two completed futures of 500 ns wall each, and one dropped after
    // living 800 ns; 300 ns of polls in all, 50 of them the dropped one's.
    let fetch = b.node(t, &["fetch"], 2, 1_000, 250);
    (fetch.busy_ns, fetch.polls) = (300, 5);
    (fetch.cancelled, fetch.timed_cancelled, fetch.cancelled_ns) = (1, 1, 800);
    // Only ever dropped.
    let gone = b.node(t, &["abandoned"], 0, 0, 0);
    (gone.busy_ns, gone.self_ns, gone.polls) = (100, 100, 2);
    (gone.cancelled, gone.timed_cancelled, gone.cancelled_ns) = (2, 2, 600);
    let r = report(b);

    let fetch = r.function("fetch").unwrap();
    assert_eq!((fetch.calls, fetch.cancelled), (2, Some(1)));
    assert_eq!((fetch.total_ns, fetch.self_ns), (1_800, 250));
    assert_eq!((fetch.busy_ns, fetch.wait_ns), (Some(300), Some(1_500)));
    // Latency is the completed futures' only.
    assert_eq!((fetch.avg_ns, fetch.p50_ns), (500, 500));

    let gone = r.function("abandoned").unwrap();
    assert_eq!(
        (gone.calls, gone.cancelled, gone.polls),
        (0, Some(2), Some(2))
    );
    assert_eq!((gone.total_ns, gone.self_ns), (600, 100));
    assert_eq!((gone.busy_ns, gone.wait_ns), (Some(100), Some(500)));
    assert_eq!((gone.avg_ns, gone.p50_ns), (0, 0));
    let path = r.path(&["abandoned"]).expect("a path that only ran");
    assert_eq!((path.calls, path.total_ns), (0, 600));

    // Sampled: every future counts towards the ratio. 8 completed (2 of
    // them timed) and 2 dropped (none timed): times scale by 10 / 2.
    let mut b = SnapBuilder::new(Mode::Sampled { every: 5 });
    b.callsite("fetch", CallsiteKind::Async);
    let t = b.thread("main");
    let fetch = b.sampled_node(t, &["fetch"], 8, 2, 1_000, 200);
    (fetch.busy_ns, fetch.cancelled) = (400, 2);
    let fetch = report(b).functions.remove(0);
    assert_eq!((fetch.total_ns, fetch.self_ns), (5_000, 1_000));
    assert_eq!((fetch.busy_ns, fetch.avg_ns), (Some(2_000), 500));
    assert!(fetch.sampled);
}

#[test]
fn overflow_is_counted_but_never_a_row_or_a_path() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["work"], 1, 10, 10);
    let th = &mut b.snap.threads[t];
    th.nodes.push(NodeSnapshot {
        path: 1,
        calls: 7,
        total_ns: 70,
        ..Default::default()
    });
    (th.overflow_calls, th.dropped_frames) = (7, 2);
    b.snap.overflow_paths = 3;
    let r = report(b);
    let names: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["work"]);
    assert_eq!(r.paths.len(), 1);
    let d = r.dropped;
    assert_eq!(
        (d.overflow_calls, d.overflow_paths, d.dropped_frames),
        (7, 3, 2)
    );
    assert_eq!(
        r.threads[0].calls, 8,
        "thread calls include the overflow node"
    );
}

#[test]
fn malformed_snapshots_do_not_panic() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["ok"], 1, 10, 10);
    // A node on a path that does not exist, a path whose callsite does not
    // exist, and two paths that are each other's parent.
    b.snap.threads[t].nodes.push(NodeSnapshot {
        path: 999,
        calls: 1,
        ..Default::default()
    });
    let n = b.snap.paths.len() as u32;
    b.snap.paths.push(PathInfo {
        parent: 0,
        callsite: 77,
        id: 5,
    });
    b.snap.paths.push(PathInfo {
        parent: n + 2,
        callsite: 2,
        id: 6,
    });
    b.snap.paths.push(PathInfo {
        parent: n + 1,
        callsite: 2,
        id: 7,
    });
    for p in [n, n + 1, n + 2] {
        b.snap.threads[t].nodes.push(NodeSnapshot {
            path: p,
            calls: 1,
            ..Default::default()
        });
    }
    let r = report(b);
    assert_eq!(r.paths.len(), 1, "only the well-formed path");
    assert_eq!(
        r.function("ok").unwrap().calls,
        3,
        "cycle nodes still count as calls of `ok`"
    );
    let mut sink = Vec::new();
    perflens_report::write_table(&r, &mut sink).unwrap();
    perflens_report::write_json(&r, &mut sink).unwrap();
}
