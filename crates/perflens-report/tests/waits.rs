//! The Waits section (`Report::waits`) of hand-made snapshots: sites
//! grouped by callsite over paths and threads, the zeros of awaits that
//! never suspended in the percentiles, measured children, the
//! uninstrumented flag, the threshold, the order, never scaled in sampled
//! mode, count mode, the JSON and its schema, hostile snapshots.

mod common;

use common::schema::{errors_after, remove_key, report_schema, validate};
use common::{SITE_A, SITE_B, SITE_C, SITE_D, SnapBuilder, fixture, json, table, waits_fixture};
use perflens_core::histogram::Histogram;
use perflens_core::snapshot::{AwaitSiteInfo, CallsiteKind, Mode, PathInfo, RawSnapshot};
use perflens_report::{Report, ReportOptions, WaitRow};
use serde_json::Value;

const MS: u64 = 1_000_000;

fn callsite(snap: &RawSnapshot, name: &str) -> u32 {
    snap.callsites.iter().position(|c| c.name == name).unwrap() as u32
}

/// Where site A is, as the program's table says.
fn sites(snap: &RawSnapshot) -> Vec<AwaitSiteInfo> {
    vec![AwaitSiteInfo {
        callsite: callsite(snap, SITE_A),
        file: "src/app.rs".into(),
        line: 12,
        column: 9,
        expr: "db.get(key)".into(),
    }]
}

fn report(snap: &RawSnapshot, options: &ReportOptions) -> Report {
    Report::from_snapshot_with_sites(snap, &sites(snap), options)
}

/// The value a histogram of `values` reports as quantile `q`.
fn quantile_of(values: &[u64], q: f64) -> u64 {
    let mut h = Histogram::new();
    for &v in values {
        h.record(v);
    }
    h.quantile(q).unwrap()
}

#[test]
fn sites_are_grouped_by_callsite_with_their_waits_and_children() {
    let snap = waits_fixture(Mode::Timed);
    let r = report(&snap, &ReportOptions::default());
    let order: Vec<&str> = r.waits.iter().map(|w| w.site.as_str()).collect();
    // By wait descending; C waited 0.5 ms, under the 1 ms default.
    assert_eq!(
        order,
        ["app::handler:12", "app::handler:14:9", "app::handler:14:30"]
    );
    assert_eq!(r.wait_min_ns, Some(MS));

    let a = &r.waits[0];
    // Both threads' nodes, the completed and the cancelled awaits.
    let expected_a = WaitRow {
        site: "app::handler:12".into(),
        function: "app::handler".into(),
        file: "src/app.rs".into(),
        line: 12,
        column: 9,
        expr: "db.get(key)".into(),
        count: 7,
        suspended: 6,
        wait_ns: 39 * MS,
        p50_ns: quantile_of(&[2 * MS], 0.5),
        p99_ns: quantile_of(&[10 * MS], 0.5),
        measured_ns: 0,
        measured_children: vec![],
        uninstrumented: true,
        cancelled: 1,
        cancelled_wait_ns: 5 * MS,
    };
    assert_eq!(a, &expected_a);

    // B: not in the table of sites, so read from its callsite name; its
    // children right below it that ran, by total time; not `idle` (never
    // ran) nor `decode` (below `query`).
    let b = &r.waits[1];
    assert_eq!(
        (b.file.as_str(), b.line, b.column, b.expr.as_str()),
        ("src/app.rs", 14, 9, "")
    );
    assert_eq!((b.count, b.suspended, b.wait_ns), (4, 1, 3 * MS));
    assert_eq!(b.measured_children, ["app::query", "app::parse"]);
    assert_eq!((b.measured_ns, b.uninstrumented), (8 * MS, false));
    // Three awaits never suspended: zeros, so the median is 0.
    assert_eq!((b.p50_ns, b.p99_ns), (0, quantile_of(&[3 * MS], 0.5)));

    let d = &r.waits[2];
    assert_eq!((d.count, d.wait_ns, d.uninstrumented), (1, 2 * MS, true));
    assert_eq!((d.line, d.column), (14, 30));
}

#[test]
fn the_percentiles_count_the_awaits_that_never_suspended_as_zeros() {
    let snap = waits_fixture(Mode::Timed);
    let a = &report(&snap, &ReportOptions::default()).waits[0];
    // 6 completed awaits: 3 x 10 ms, 2 x 2 ms, and one that never
    // suspended. Without the zero the median would be 10 ms.
    let waits = [0, 2 * MS, 2 * MS, 10 * MS, 10 * MS, 10 * MS];
    assert_eq!(a.p50_ns, quantile_of(&waits, 0.5));
    assert_eq!(a.p50_ns, quantile_of(&[2 * MS], 0.5));
    assert_eq!(a.p99_ns, quantile_of(&waits, 0.99));
    // C: 9 of 10 never suspended.
    let all = ReportOptions {
        wait_min_ns: 0,
        ..Default::default()
    };
    let r = report(&snap, &all);
    let c = r.waits.iter().find(|w| w.line == 20).unwrap();
    assert_eq!((c.count, c.p50_ns), (10, 0));
    assert_eq!(c.p99_ns, quantile_of(&[MS / 2], 0.5));
}

#[test]
fn the_threshold_leaves_out_short_waits_and_zero_lists_every_site() {
    let snap = waits_fixture(Mode::Timed);
    let at = |min: u64| -> Vec<u32> {
        let options = ReportOptions {
            wait_min_ns: min,
            ..Default::default()
        };
        let r = report(&snap, &options);
        assert_eq!(r.wait_min_ns, Some(min));
        r.waits.iter().map(|w| w.line * 100 + w.column).collect()
    };
    assert_eq!(at(0), [1209, 1409, 1430, 2005]);
    assert_eq!(at(MS / 2), [1209, 1409, 1430, 2005]);
    assert_eq!(at(MS / 2 + 1), [1209, 1409, 1430]);
    assert_eq!(at(3 * MS), [1209, 1409]);
    assert_eq!(at(39 * MS), [1209]);
    assert_eq!(at(39 * MS + 1), Vec::<u32>::new());
    // None left: no row, the threshold still said.
    let options = ReportOptions {
        wait_min_ns: u64::MAX,
        ..Default::default()
    };
    let r = report(&snap, &options);
    assert!(r.waits.is_empty());
    let doc: Value = serde_json::from_str(&json(&r)).unwrap();
    assert!(doc.get("waits").is_none());
    assert_eq!(doc["wait_min_ns"], u64::MAX);
}

#[test]
fn equal_waits_are_ordered_by_file_and_line() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.callsite("app::f", CallsiteKind::Async);
    for site in ["src/b.rs:3:1", "src/a.rs:9:1", "src/a.rs:4:1"] {
        b.callsite(site, CallsiteKind::Await);
    }
    b.node(t, &["app::f"], 1, 10 * MS, MS);
    for site in ["src/b.rs:3:1", "src/a.rs:9:1", "src/a.rs:4:1"] {
        b.node(t, &["app::f", site], 1, 2 * MS, 0);
    }
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    let places: Vec<(&str, u32)> = r.waits.iter().map(|w| (w.file.as_str(), w.line)).collect();
    assert_eq!(places, [("src/a.rs", 4), ("src/a.rs", 9), ("src/b.rs", 3)]);
    let names: Vec<&str> = r.waits.iter().map(|w| w.site.as_str()).collect();
    assert_eq!(names, ["app::f:4", "app::f:9", "app::f:3"]);
}

#[test]
fn sampled_mode_never_scales_a_wait() {
    // `handler` timed 2 of its 10 calls; every wait at the site is timed
    // (2 suspended, 8 never did).
    let mut b = SnapBuilder::new(Mode::Sampled { every: 5 });
    let t = b.thread("main");
    b.callsite("app::handler", CallsiteKind::Async);
    b.callsite(SITE_A, CallsiteKind::Await);
    b.sampled_node(t, &["app::handler"], 10, 2, 40 * MS, 4 * MS)
        .polls = 12;
    let s = b.sampled_node(t, &["app::handler", SITE_A], 10, 2, 20 * MS, 0);
    s.polls = 2;
    let snap = b.build();
    let r = report(&snap, &ReportOptions::default());
    let handler = r.function("app::handler").unwrap();
    assert_eq!((handler.total_ns, handler.sampled), (200 * MS, true));
    let a = &r.waits[0];
    assert_eq!((a.count, a.wait_ns), (10, 20 * MS));
    assert_eq!((a.p50_ns, a.p99_ns), (0, quantile_of(&[10 * MS], 0.5)));
    // The site is no frame of the hot paths.
    assert_eq!(r.paths.len(), 1);
    assert_eq!(r.paths[0].frames, ["app::handler"]);
}

#[test]
fn count_mode_lists_every_site_by_count() {
    let snap = waits_fixture(Mode::Count);
    let r = report(&snap, &ReportOptions::default());
    let lines: Vec<(u32, u64)> = r.waits.iter().map(|w| (w.line, w.count)).collect();
    assert_eq!(lines, [(20, 10), (12, 7), (14, 4), (14, 1)]);
    assert!(r.waits.iter().all(|w| w.wait_ns == 0 && w.p99_ns == 0));
    assert_eq!(r.wait_min_ns, None);
    let b = r
        .waits
        .iter()
        .find(|w| w.column == 9 && w.line == 14)
        .unwrap();
    assert_eq!(b.measured_children, ["app::query", "app::parse"]);
    assert!(!b.uninstrumented);
    let text = table(&r);
    assert!(
        text.contains("Await sites: no clock: wait times not measured; sites by count;"),
        "{text}"
    );
}

#[test]
fn a_recursion_counts_its_wait_once() {
    // `f` awaits itself at the site, expanded (a path per depth) and
    // folded (a nested node): the inner waits lie inside the outer one.
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.callsite("app::f", CallsiteKind::Async);
    b.callsite(SITE_A, CallsiteKind::Await);
    b.node(t, &["app::f"], 1, 30 * MS, MS);
    b.node(t, &["app::f", SITE_A], 1, 20 * MS, 0).busy_ns = 25 * MS;
    b.node(t, &["app::f", SITE_A, "app::f"], 1, 25 * MS, MS);
    b.node(t, &["app::f", SITE_A, "app::f", SITE_A], 1, 15 * MS, 0);
    let nested = b.node(t, &["app::f", SITE_A], 1, 9 * MS, 0);
    nested.nested = true;
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    let a = &r.waits[0];
    assert_eq!((a.count, a.wait_ns, a.measured_ns), (3, 20 * MS, 25 * MS));
    assert_eq!(a.measured_children, ["app::f"]);
    assert_eq!(a.function, "app::f");
}

#[test]
fn sync_reports_have_no_waits_in_their_json() {
    let r = Report::from_snapshot(&fixture(), &ReportOptions::default());
    assert!(r.waits.is_empty());
    assert_eq!(r.wait_min_ns, None);
    let doc: Value = serde_json::from_str(&json(&r)).unwrap();
    assert!(doc.get("waits").is_none() && doc.get("wait_min_ns").is_none());
}

#[test]
fn waits_round_trip_through_json_and_conform_to_the_schema() {
    let schema = report_schema();
    for mode in [Mode::Timed, Mode::Count, Mode::Sampled { every: 4 }] {
        let snap = waits_fixture(mode);
        let r = report(&snap, &ReportOptions::default());
        assert!(!r.waits.is_empty());
        let text = json(&r);
        let back = Report::from_json_str(&text).unwrap();
        assert_eq!(back, r);
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(validate(&schema, &doc, true), Vec::<String>::new());
    }
    let doc: Value = serde_json::from_str(&json(&report(
        &waits_fixture(Mode::Timed),
        &Default::default(),
    )))
    .unwrap();
    let w = &doc["waits"][0];
    assert_eq!(w["site"], "app::handler:12");
    assert_eq!(w["expr"], "db.get(key)");
    assert_eq!(w["wait_ns"], 39 * MS);
    assert_eq!(w["measured_children"], serde_json::json!([]));
    assert_eq!(doc["wait_min_ns"], MS);
    // The schema requires what the issue names, with their types.
    for key in [
        "site",
        "file",
        "line",
        "expr",
        "count",
        "wait_ns",
        "p50_ns",
        "p99_ns",
        "measured_children",
    ] {
        let errors = errors_after(&schema, &doc, &remove_key("/waits/0", key));
        assert_eq!(errors.len(), 1, "{key}: {errors:?}");
    }
    let errors = errors_after(&schema, &doc, &|d| d["waits"][0]["wait_ns"] = (-1).into());
    assert_eq!(errors.len(), 1);
    let errors = errors_after(&schema, &doc, &|d| {
        d["waits"][0]["measured_children"] = serde_json::json!([1])
    });
    assert_eq!(errors.len(), 1);
    let errors = errors_after(&schema, &doc, &|d| d["wait_min_ns"] = "1ms".into());
    assert_eq!(errors.len(), 1);
}

#[test]
fn the_table_lists_the_sites_with_what_ran_inside() {
    let snap = waits_fixture(Mode::Timed);
    let text = table(&report(&snap, &ReportOptions::default()));
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Await "))
        .take(7)
        .collect();
    let rule = "-".repeat(163);
    // A's 7 awaits: 6 completed (34 ms in all, the percentiles' 6 waits),
    // 1 cancelled after 5 ms.
    let expected = [
        "Await               Expr         Count      Wait      p50       p99  Cancelled  Cancelled wait  Measured inside",
        &rule,
        "app::handler:12     db.get(key)      6  34.00 ms  2.02 ms  10.09 ms          1         5.00 ms  uninstrumented: measure the awaited function (#[perflens::measure])",
        "app::handler:14:9                    4   3.00 ms     0 ns   2.98 ms          0               -  query, parse",
        "app::handler:14:30                   1   2.00 ms  2.02 ms   2.02 ms          0               -  uninstrumented: measure the awaited function (#[perflens::measure])",
        "Await sites: waits ≥ 1.00 ms in total (PERFLENS_WAIT_MIN), by total wait; awaits inside macros and nested async blocks are not sites.",
        "Count, Wait, p50, p99: the completed awaits; Cancelled: those dropped while suspended (a select! branch that lost) and what they had waited.",
    ];
    assert_eq!(section, expected, "{text}");
    // After the async table, before the hot paths.
    let at = |s: &str| text.find(s).unwrap();
    assert!(at("Async ") < at("Await ") && at("Await ") < at("Hot path"));
    // The row limit applies.
    let mut r = report(&snap, &ReportOptions::default());
    r.limit = Some(1);
    let text = table(&r);
    assert!(text.contains("… 2 more await sites;"), "{text}");
}

#[test]
fn hostile_snapshots_do_not_panic() {
    let mut snap = waits_fixture(Mode::Timed);
    let a = callsite(&snap, SITE_A);
    // A site path whose parent is itself, one whose callsite is out of
    // range, a node whose path is out of range, a name that is no place.
    snap.paths.push(PathInfo {
        parent: snap.paths.len() as u32,
        callsite: a,
        id: 7,
    });
    snap.paths.push(PathInfo {
        parent: 2,
        callsite: 9_999,
        id: 8,
    });
    let cyclic = snap.paths.len() as u32 - 2;
    let mut node = snap.threads[0].nodes[0].clone();
    node.path = cyclic;
    snap.threads[0].nodes.push(node.clone());
    node.path = 1_000_000;
    snap.threads[0].nodes.push(node);
    let b = callsite(&snap, SITE_B) as usize;
    snap.callsites[b].name = "no place".into();
    let bad_sites = [AwaitSiteInfo {
        callsite: 1_000,
        file: String::new(),
        line: 0,
        column: 0,
        expr: String::new(),
    }];
    let r = Report::from_snapshot_with_sites(&snap, &bad_sites, &ReportOptions::default());
    let b = r.waits.iter().find(|w| w.file == "no place").unwrap();
    assert_eq!((b.line, b.column, b.wait_ns), (0, 0, 3 * MS));
    for mode in [Mode::Count, Mode::Sampled { every: 3 }] {
        snap.mode = mode;
        let _ = table(&Report::from_snapshot(&snap, &ReportOptions::default()));
    }
    let _ = (SITE_C, SITE_D);
}

#[test]
fn waits_need_neither_the_function_rows_nor_the_hot_paths() {
    // As `perflens top` builds its reports: the rows are the same.
    let snap = waits_fixture(Mode::Timed);
    let full = report(&snap, &ReportOptions::default());
    let bare = ReportOptions {
        functions: false,
        hot_paths: false,
        ..Default::default()
    };
    let r = report(&snap, &bare);
    assert!(r.functions.is_empty() && r.paths.is_empty());
    assert_eq!(r.waits, full.waits);
    assert_eq!(r.waits[1].measured_children, ["app::query", "app::parse"]);
}

/// An await site shaped as issue 24 saw one on a server: a `recv()` in a
/// `select!` branch that lost almost every loop. 65 awaits completed
/// without suspending; 199,800 were dropped while suspended, after
/// 58.8 s of waiting in all.
fn select_loop_snapshot() -> RawSnapshot {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.callsite("app::handler", CallsiteKind::Async);
    b.callsite(SITE_A, CallsiteKind::Await);
    b.callsite(SITE_B, CallsiteKind::Await);
    b.node(t, &["app::handler"], 1, 60_000 * MS, 100 * MS);
    // Never suspended: no histogram entry (see `perflens_core::awaits`).
    let a = b.sampled_node(t, &["app::handler", SITE_A], 65, 0, 0, 0);
    a.polls = 199_800;
    (a.cancelled, a.timed_cancelled, a.cancelled_ns) = (199_800, 199_800, 58_800 * MS);
    // B: only cancelled awaits, 3 of them, 2 ms in all.
    let s = b.sampled_node(t, &["app::handler", SITE_B], 0, 0, 0, 0);
    s.polls = 3;
    (s.cancelled, s.timed_cancelled, s.cancelled_ns) = (3, 3, 2 * MS);
    b.build()
}

#[test]
fn cancelled_awaits_are_counted_apart_from_the_completed_ones() {
    let snap = select_loop_snapshot();
    let r = report(&snap, &ReportOptions::default());
    let a = &r.waits[0];
    // The JSON's fields: both sets in `count` and `wait_ns`, the
    // cancelled ones also apart; the percentiles of the completed ones.
    assert_eq!(
        (a.count, a.wait_ns, a.cancelled, a.cancelled_wait_ns),
        (65 + 199_800, 58_800 * MS, 199_800, 58_800 * MS)
    );
    assert_eq!((a.completed(), a.completed_wait_ns()), (65, 0));
    assert_eq!((a.p50_ns, a.p99_ns), (0, 0));
    // B waited 2 ms, all of it cancelled: listed (the threshold is on
    // the total wait), with no completed await to describe.
    let b = &r.waits[1];
    assert_eq!(
        (
            b.count,
            b.completed(),
            b.cancelled,
            b.wait_ns,
            b.cancelled_wait_ns
        ),
        (3, 0, 3, 2 * MS, 2 * MS)
    );
    assert_eq!((b.p50_ns, b.p99_ns, b.completed_wait_ns()), (0, 0, 0));

    // The table: no row reads "58.8 s of waiting, each wait 0 ns".
    let text = table(&r);
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Await "))
        .take(4)
        .collect();
    let expected = [
        "Await            Expr         Count  Wait   p50   p99  Cancelled  Cancelled wait  Measured inside",
        &"-".repeat(149),
        "app::handler:12  db.get(key)     65  0 ns  0 ns  0 ns    199,800         58.80 s  uninstrumented: measure the awaited function (#[perflens::measure])",
        "app::handler:14                   0     -     -     -          3         2.00 ms  uninstrumented: measure the awaited function (#[perflens::measure])",
    ];
    assert_eq!(section, expected, "{text}");

    // JSON: the new field round-trips, conforms to the schema, and a
    // report written before it reads as no cancelled wait.
    let text = json(&r);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["waits"][0]["cancelled_wait_ns"], 58_800 * MS);
    assert_eq!(validate(&report_schema(), &doc, true), Vec::<String>::new());
    assert_eq!(Report::from_json_str(&text).unwrap(), r);
    let mut old = doc.clone();
    old["waits"][0]
        .as_object_mut()
        .unwrap()
        .remove("cancelled_wait_ns");
    let back = Report::from_json_str(&old.to_string()).unwrap();
    assert_eq!(back.waits[0].cancelled_wait_ns, 0);
    assert_eq!(back.waits[0].completed_wait_ns(), 58_800 * MS);
}

#[test]
fn in_count_mode_the_cancelled_awaits_are_counted_without_a_time() {
    let snap = waits_fixture(Mode::Count);
    let r = report(&snap, &ReportOptions::default());
    let a = r.waits.iter().find(|w| w.line == 12).unwrap();
    assert_eq!(
        (a.count, a.completed(), a.cancelled, a.cancelled_wait_ns),
        (7, 6, 1, 0)
    );
    let text = table(&r);
    let row = text
        .lines()
        .find(|l| l.starts_with("app::handler:12 "))
        .unwrap();
    let cells: Vec<&str> = row.split("  ").filter(|c| !c.is_empty()).collect();
    // Site, expr, Count, Wait, p50, p99, Cancelled, Cancelled wait.
    assert_eq!(
        cells[..8].iter().map(|c| c.trim()).collect::<Vec<_>>(),
        [
            "app::handler:12",
            "db.get(key)",
            "6",
            "-",
            "-",
            "-",
            "1",
            "-"
        ],
        "{text}"
    );
}
