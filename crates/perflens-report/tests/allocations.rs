//! Allocation figures, checked against hand-computed values: exclusive and
//! inclusive per function and per hot path, recursion counted once,
//! threads and session totals, JSON round trip without clamping.

mod common;

use common::schema::{documented_example, errors_after, remove_key, report_schema, validate};
use common::{SnapBuilder, alloc_fixture, fixture, json, set_alloc};
use perflens_core::snapshot::{AllocSummary, Mode, NodeSnapshot, PathInfo};
use perflens_report::{AllocFigures, AllocTotals, Report, ReportOptions, write_json, write_table};
use serde_json::Value;

fn report(unit: u64) -> Report {
    Report::from_snapshot(&alloc_fixture(unit), &ReportOptions::default())
}

/// `(alloc_bytes, alloc_count, free_bytes, alloc_incl_bytes,
/// alloc_incl_count, alloc_avg_bytes, alloc_p95_bytes)` of a row or path's
/// allocation figures, each `None` when it has none.
fn alloc_fields(alloc: Option<AllocFigures>) -> [Option<u64>; 7] {
    alloc.map_or([None; 7], |a| {
        [
            a.bytes,
            a.count,
            a.free_bytes,
            a.incl_bytes,
            a.incl_count,
            a.avg_bytes,
            a.p95_bytes,
        ]
        .map(Some)
    })
}

/// The seven allocation fields of a function.
fn function_alloc(r: &Report, name: &str) -> [Option<u64>; 7] {
    alloc_fields(r.function(name).unwrap().alloc)
}

/// The same seven fields of the hot path with these frames.
fn path_alloc(r: &Report, frames: &[&str]) -> [Option<u64>; 7] {
    alloc_fields(r.path(frames).unwrap().alloc)
}

#[test]
fn functions_have_exclusive_and_inclusive_figures() {
    let r = report(1);
    // run: 1000 + 500 exclusive; its subtree is everything measured:
    // 1500 + parse 6610 + idle 0 + fib 64. Per call 5644 and 2530: mean
    // 4087, p95 5644 read as its bucket's midpoint (5632..5760 -> 5696).
    assert_eq!(
        function_alloc(&r, "run").map(Option::unwrap),
        [1500, 15, 300, 8174, 54, 4087, 5696]
    );
    // parse: 6000 + fib subtree 610; per call 4000, 580, 2030: mean 2203,
    // p95 4000 (bucket 3968..4032 -> 4000).
    assert_eq!(
        function_alloc(&r, "parse").map(Option::unwrap),
        [6000, 22, 1000, 6610, 38, 2203, 4000]
    );
}

#[test]
fn recursion_is_counted_once_in_inclusive_figures() {
    let r = report(1);
    // fib's outermost paths are run > parse > fib (610 B, 16 allocations,
    // its whole recursion included) and run > fib (64 B, 1): 674 B, which
    // is also its exclusive total since everything below fib is fib.
    // Summing every fib path would give 610 + 280 + 80 + 64 = 1034.
    let [bytes, count, freed, incl, incl_count, avg, p95] =
        function_alloc(&r, "fib").map(Option::unwrap);
    assert_eq!(
        (bytes, count, freed),
        (330 + 200 + 80 + 64, 4 + 4 + 8 + 1, 40)
    );
    assert_eq!((incl, incl_count), (674, 17));
    // The per-call distribution has every frame's own inclusive bytes:
    // 290 x2, 30, 70 x4, 10 x8, 64: mean 1034 / 16 = 64.6, p95 is the
    // 16th value, 290, read as its bucket's midpoint (288..296 -> 292).
    assert_eq!((avg, p95), (65, 292));
}

#[test]
fn a_function_that_allocates_nothing_has_a_row_of_zeros() {
    let r = report(1);
    assert_eq!(function_alloc(&r, "idle"), [Some(0); 7]);
    assert_eq!(r.function("idle").unwrap().calls, 3);
    assert_eq!(r.functions.len(), 4, "run, parse, fib, idle");
    assert!(r.functions.iter().all(|f| f.alloc.is_some()));
    assert_eq!(
        r.function("idle").unwrap().alloc_percent_of(8296),
        Some(0.0)
    );
}

#[test]
fn hot_paths_have_the_leaf_figures_and_segments_the_subtree() {
    let r = report(1);
    let deep = ["run", "parse", "fib", "fib", "fib"];
    assert_eq!(
        path_alloc(&r, &deep).map(Option::unwrap),
        [80, 8, 40, 80, 8, 10, 10]
    );
    // 64 B in one call: 64 is the first value with a 2-byte bucket
    // (64..66), so p95 reads as 65.
    assert_eq!(
        path_alloc(&r, &["run", "fib"]).map(Option::unwrap),
        [64, 1, 0, 64, 1, 64, 65]
    );
    assert_eq!(path_alloc(&r, &["run", "idle"]), [Some(0); 7]);
    let segments: Vec<(&str, Option<u64>, Option<u64>)> = (r.path(&deep).unwrap().segments)
        .iter()
        .map(|s| (s.name.as_str(), s.alloc_bytes, s.alloc_incl_bytes))
        .collect();
    assert_eq!(
        segments,
        [
            ("run", Some(1500), Some(8174)),
            ("parse", Some(6000), Some(6610)),
            ("fib", Some(330), Some(610)),
            ("fib", Some(200), Some(280)),
            ("fib", Some(80), Some(80)),
        ]
    );
    assert_eq!(
        r.path(&deep).unwrap().alloc_percent_of(8296),
        Some(80.0 * 100.0 / 8296.0)
    );
}

#[test]
fn a_running_callee_counts_in_its_callers_inclusive_bytes() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    set_alloc(b.node(t, &["outer"], 1, 100, 50), (10, 1, 0, 0), &[10]);
    // Started, allocated, not completed: no calls, so `outer` stays a leaf
    // and `inner` gets no row, but its bytes are `outer`'s inclusive bytes.
    set_alloc(b.node(t, &["outer", "inner"], 0, 0, 0), (90, 3, 0, 0), &[]);
    b.snap.alloc = Some(AllocSummary::default());
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    assert!(r.function("inner").is_none());
    let outer = r.function("outer").unwrap();
    assert_eq!(
        (
            outer.alloc.map(|a| a.bytes),
            outer.alloc.map(|a| a.incl_bytes),
            outer.alloc.map(|a| a.incl_count)
        ),
        (Some(10), Some(100), Some(4))
    );
    // Per call: the one completed call allocated 10 (its histogram
    // entry); the running call's 90 are inclusive bytes, not a call's.
    let path = r.path(&["outer"]).unwrap();
    assert_eq!(
        (
            path.alloc.map(|a| a.bytes),
            path.alloc.map(|a| a.incl_bytes),
            path.alloc.map(|a| a.avg_bytes),
            path.alloc.map(|a| a.p95_bytes)
        ),
        (Some(10), Some(100), Some(10), Some(10))
    );
    assert_eq!(r.alloc.unwrap().total_bytes, 100);
}

#[test]
fn threads_and_session_totals_include_the_root_and_overflow() {
    let r = report(1);
    let threads: Vec<[Option<i64>; 7]> = (r.threads.iter())
        .map(|t| {
            let u = |v: Option<u64>| v.map(|v| v as i64);
            [
                u(t.alloc_bytes),
                u(t.alloc_count),
                u(t.free_bytes),
                u(t.free_count),
                t.live_bytes,
                u(t.peak_live_bytes),
                u(t.unattributed_alloc_bytes),
            ]
        })
        .collect();
    let some = |v: [i64; 7]| v.map(Some);
    assert_eq!(
        threads,
        [
            some([5744, 48, 1290, 12, 4454, 5000, 100]),
            // Freed more than it allocated: negative live bytes.
            some([2547, 10, 3100, 4, -553, 2000, 10]),
            some([5, 1, 0, 0, 5, 5, 5]),
        ]
    );
    assert_eq!(
        r.alloc,
        Some(AllocTotals {
            total_bytes: 8296,
            total_count: 59,
            free_bytes: 4390,
            live_bytes: 3906,
            peak_live_bytes: 6000,
            peak_resolution_bytes: 4096,
        })
    );
    // Everything inside measured functions is run's inclusive figure; the
    // rest is outside (115 B) or overflowed (7 B).
    assert_eq!(
        r.function("run").unwrap().alloc.map(|a| a.incl_bytes),
        Some(8296 - 115 - 7)
    );
    let run = r.function("run").unwrap().alloc_percent_of(8296).unwrap();
    assert_eq!(format!("{run:.3}"), "98.529");
}

#[test]
fn without_the_counting_allocator_there_are_no_alloc_fields() {
    let mut snap = alloc_fixture(1);
    snap.alloc = None;
    let r = Report::from_snapshot(&snap, &ReportOptions::default());
    assert_eq!(r.alloc, None);
    assert!(
        r.functions
            .iter()
            .all(|f| function_alloc(&r, &f.name) == [None; 7])
    );
    assert!(
        r.paths
            .iter()
            .all(|p| p.alloc.is_none() && p.segments.iter().all(|s| s.alloc_bytes.is_none()))
    );
    assert!(
        r.threads
            .iter()
            .all(|t| t.alloc_bytes.is_none() && t.live_bytes.is_none())
    );
    let text = json(&r);
    for key in ["alloc", "free_", "live_bytes", "unattributed"] {
        assert!(!text.contains(key), "{key} in {text}");
    }
    let mut table = Vec::new();
    write_table(&r, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(!table.contains("Allocations"), "{table}");
}

#[test]
fn alloc_fields_round_trip_and_conform_to_the_schema() {
    let r = report(1);
    let text = json(&r);
    let back = Report::from_json_str(&text).unwrap();
    assert_eq!(back, r);
    assert_eq!(json(&back), text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(validate(&report_schema(), &doc, true), Vec::<String>::new());
    let fib = doc["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "fib")
        .unwrap();
    assert_eq!(fib["alloc_incl_bytes"], 674);
    assert_eq!(fib["alloc_p95_bytes"], 292);
    assert_eq!(doc["threads"][1]["live_bytes"], -553);
    assert_eq!(doc["threads"][0]["unattributed_alloc_bytes"], 100);
    assert_eq!(
        doc["alloc"],
        serde_json::json!({
            "total_bytes": 8296, "total_count": 59, "free_bytes": 4390,
            "live_bytes": 3906, "peak_live_bytes": 6000, "peak_resolution_bytes": 4096
        })
    );
    // Existing reports (without allocations) still read back and conform.
    let plain = Report::from_snapshot(&fixture(), &ReportOptions::default());
    assert_eq!(Report::from_json_str(&json(&plain)).unwrap(), plain);
}

#[test]
fn the_schema_requires_alloc_fields_together() {
    let schema = report_schema();
    let good: Value = serde_json::from_str(&json(&report(1))).unwrap();
    let broken = |edit: &dyn Fn(&mut Value)| errors_after(&schema, &good, edit);
    let remove = remove_key;
    assert_eq!(broken(&remove("/functions/0", "alloc_p95_bytes")).len(), 1);
    assert_eq!(broken(&remove("/paths/0", "free_bytes")).len(), 1);
    assert_eq!(
        broken(&remove("/paths/0/segments/0", "alloc_incl_bytes")).len(),
        1
    );
    assert_eq!(broken(&remove("/threads/1", "peak_live_bytes")).len(), 1);
    assert_eq!(broken(&remove("/alloc", "peak_resolution_bytes")).len(), 1);
    assert_eq!(
        broken(&|d| d["threads"][0]["alloc_bytes"] = (-1).into()).len(),
        1
    );
    assert_eq!(broken(&|d| d["alloc"]["live_bytes"] = (-5).into()).len(), 0);
    assert_eq!(
        broken(&|d| d["functions"][0]["alloc_bytes"] = 1.5.into()).len(),
        1
    );
}

#[test]
fn values_above_4_gib_and_u32_max_counts_are_not_clamped() {
    // Bytes multiplied by 2^43 (every byte figure above 4 GiB), plus one
    // byte on worker's `run`, so the totals are odd numbers above 2^53
    // that a trip through a double would round.
    let unit = 1u64 << 43;
    let mut snap = alloc_fixture(unit);
    snap.threads[1].nodes[1].alloc_bytes += 1;
    let big_count = u64::from(u32::MAX) + 7;
    snap.threads[0].nodes[1].alloc_count = big_count;
    snap.threads[0].nodes[1].free_count = big_count;
    snap.threads[1].live_bytes = -(3 << 40);
    let r = Report::from_snapshot(&snap, &ReportOptions::default());
    let run = r.function("run").unwrap();
    assert_eq!(run.alloc.map(|a| a.bytes), Some(1500 * unit + 1));
    assert_eq!(run.alloc.map(|a| a.count), Some(big_count + 5));
    assert_eq!(run.alloc.map(|a| a.incl_bytes), Some(8174 * unit + 1));
    assert_eq!(
        run.alloc.map(|a| a.incl_count),
        Some(big_count + 5 + 38 + 1)
    );
    assert_eq!(r.threads[0].free_count, Some(big_count + 1 + 5 + 4));
    let total = 8296 * unit + 1;
    assert_eq!(r.alloc.unwrap().total_bytes, total);
    assert!(total > 1 << 53 && total as f64 as u64 != total);

    let text = json(&r);
    assert!(text.contains(&format!("\"total_bytes\": {total}")));
    assert!(text.contains(&format!("\"alloc_incl_bytes\": {}", 8174 * unit + 1)));
    assert!(text.contains(&format!("\"free_count\": {}", big_count + 10)));
    assert!(text.contains(&format!("\"live_bytes\": {}", -(3i64 << 40))));
    let back = Report::from_json_str(&text).unwrap();
    assert_eq!(back, r);
    assert_eq!(back.alloc.unwrap().total_bytes, total);
    assert_eq!(
        back.function("run").unwrap().alloc.map(|a| a.count),
        Some(big_count + 5)
    );

    // The extremes of both types survive as well.
    let mut extreme = back.clone();
    extreme.alloc.as_mut().unwrap().total_bytes = u64::MAX;
    extreme.alloc.as_mut().unwrap().live_bytes = i64::MIN;
    extreme.functions[0].alloc.as_mut().unwrap().incl_count = u64::MAX - 1;
    let back = Report::from_json_str(&json(&extreme)).unwrap();
    assert_eq!(back, extreme);
}

#[test]
fn malformed_alloc_snapshots_do_not_panic() {
    let mut b = SnapBuilder::new(Mode::Count);
    let t = b.thread("main");
    set_alloc(b.node(t, &["ok"], 1, 0, 0), (8, 1, 0, 0), &[8]);
    let n = b.snap.paths.len() as u32;
    // Two paths that are each other's parent, and a parent out of range,
    // all allocating; and a node on a path that does not exist.
    for (parent, id) in [(n + 1, 5), (n, 6), (9_999, 7)] {
        b.snap.paths.push(PathInfo {
            parent,
            callsite: 2,
            id,
        });
    }
    for path in [n, n + 1, n + 2, 12_345] {
        b.snap.threads[t].nodes.push(NodeSnapshot {
            path,
            calls: 1,
            alloc_bytes: u64::MAX / 2,
            alloc_count: 1,
            ..Default::default()
        });
    }
    b.snap.alloc = Some(AllocSummary::default());
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    assert_eq!(
        r.alloc.unwrap().total_bytes,
        u64::MAX,
        "saturated, not wrapped"
    );
    assert_eq!(
        r.path(&["ok"]).unwrap().alloc.map(|a| a.incl_bytes),
        Some(8)
    );
    let mut sink = Vec::new();
    write_table(&r, &mut sink).unwrap();
    write_json(&r, &mut sink).unwrap();
}

#[test]
fn an_empty_session_still_shows_the_threads_allocations() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    set_alloc(b.root(t), (3 << 20, 12, 1 << 20, 4), &[]);
    (
        b.snap.threads[t].live_bytes,
        b.snap.threads[t].peak_live_bytes,
    ) = (2 << 20, 3 << 20);
    b.snap.alloc = Some(AllocSummary {
        live_bytes: 2 << 20,
        peak_live_bytes: 3 << 20,
        peak_resolution_bytes: 0,
    });
    let r = Report::from_snapshot(&b.build(), &ReportOptions::default());
    let mut out = Vec::new();
    write_table(&r, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "\
[perflens] 1.00 s | timed | tsc | 1 thread
[perflens] no instrumented calls were recorded.

Thread       Allocated  Allocs     Freed  Frees      Live  Peak live  Outside measured functions
------------------------------------------------------------------------------------------------
main          3.00 MiB      12  1.00 MiB      4  2.00 MiB   3.00 MiB                    3.00 MiB
all threads   3.00 MiB      12  1.00 MiB      4  2.00 MiB   3.00 MiB                    3.00 MiB
"
    );
}

#[test]
fn the_documented_allocation_example_reads_back_and_conforms() {
    let example = &documented_example(2);
    let value: Value = serde_json::from_str(example).unwrap();
    assert_eq!(
        validate(&report_schema(), &value, true),
        Vec::<String>::new()
    );
    let r = Report::from_json_str(example).unwrap();
    let totals = r.alloc.unwrap();
    let thread = &r.threads[0];
    assert_eq!(thread.alloc_bytes, Some(totals.total_bytes));
    let main = r.function("app::main").unwrap();
    let parse = r.function("app::parse").unwrap();
    assert_eq!(
        main.alloc.unwrap().incl_bytes,
        main.alloc.unwrap().bytes + parse.alloc.unwrap().incl_bytes
    );
    assert_eq!(
        totals.total_bytes,
        main.alloc.unwrap().incl_bytes + thread.unattributed_alloc_bytes.unwrap()
    );
    assert_eq!(
        parse.alloc.unwrap().avg_bytes * parse.calls,
        parse.alloc.unwrap().bytes
    );
    // Exactly what the report builder writes for the snapshot it describes.
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 1_000_500_000;
    b.snap.path_capacity = 65_536;
    let t = b.thread("main");
    let th = &mut b.snap.threads[t];
    (th.tid, th.node_capacity, th.live_bytes, th.peak_live_bytes) = (4242, 4096, 2560, 20480);
    set_alloc(b.root(t), (2048, 3, 0, 0), &[]);
    let main = b.node(t, &["app::main"], 1, 1_000_000_000, 200_000_000);
    set_alloc(main, (1024, 2, 512, 1), &[66_560]);
    let parse = b.node(t, &["app::main", "app::parse"], 4, 800_000_000, 800_000_000);
    set_alloc(parse, (65_536, 8, 65_536, 8), &[16_384; 4]);
    b.snap.alloc = Some(AllocSummary {
        live_bytes: 2560,
        peak_live_bytes: 20480,
        peak_resolution_bytes: 4096,
    });
    assert_eq!(
        Report::from_snapshot(&b.build(), &ReportOptions::default()),
        r
    );
}

/// The mini-redis shape: `Frame::parse` allocates most of the bytes
/// itself (777,000 of 1,000,000) and calls a measured helper that
/// allocates a little; the leaves allocate the rest.
fn parser_session() -> Report {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    set_alloc(b.root(t), (3_000, 3, 0, 0), &[]);
    let run = b.node(t, &["srv::Handler::run"], 1, 9_000_000, 1_000_000);
    set_alloc(run, (20_000, 20, 0, 0), &[1_000_000 - 3_000]);
    let parse = b.node(
        t,
        &["srv::Handler::run", "mini::Frame::parse"],
        100,
        5_000_000,
        4_000_000,
    );
    set_alloc(parse, (777_000, 700, 700_000, 600), &[7_780; 100]);
    let check = &[
        "srv::Handler::run",
        "mini::Frame::parse",
        "mini::Frame::check",
    ];
    let check = b.node(t, check, 100, 1_000_000, 1_000_000);
    set_alloc(check, (1_000, 100, 0, 0), &[10; 100]);
    let apply = b.node(
        t,
        &["srv::Handler::run", "cmd::Set::apply"],
        50,
        2_000_000,
        2_000_000,
    );
    set_alloc(apply, (150_000, 50, 0, 0), &[3_000; 50]);
    let write = b.node(
        t,
        &["srv::Handler::run", "conn::write_frame"],
        100,
        1_000_000,
        1_000_000,
    );
    set_alloc(write, (49_000, 100, 0, 0), &[490; 100]);
    b.snap.alloc = Some(AllocSummary::default());
    Report::from_snapshot(&b.build(), &ReportOptions::default())
}

#[test]
fn the_top_allocation_path_ends_where_the_bytes_were_allocated() {
    let r = parser_session();
    assert_eq!(r.alloc.unwrap().total_bytes, 1_000_000);
    let ranked: Vec<(Vec<&str>, Option<u64>, Option<u64>)> = (r.alloc_paths.as_ref().unwrap())
        .iter()
        .map(|p| {
            let frames = p.frames.iter().map(String::as_str).collect();
            (
                frames,
                p.alloc.map(|a| a.bytes),
                p.alloc.map(|a| a.incl_bytes),
            )
        })
        .collect();
    let run = "srv::Handler::run";
    assert_eq!(
        ranked,
        [
            (
                vec![run, "mini::Frame::parse"],
                Some(777_000),
                Some(778_000)
            ),
            (vec![run, "cmd::Set::apply"], Some(150_000), Some(150_000)),
            (vec![run, "conn::write_frame"], Some(49_000), Some(49_000)),
            (vec![run], Some(20_000), Some(997_000)),
            (
                vec![run, "mini::Frame::parse", "mini::Frame::check"],
                Some(1_000),
                Some(1_000)
            ),
        ]
    );
    // The parser spent the most time itself too (4 ms of Self): it leads
    // the hot paths, as the same object.
    assert_eq!(
        r.paths.first(),
        r.alloc_paths.as_ref().unwrap().first(),
        "{:?}",
        r.paths
    );
    let text = json(&r);
    let back = Report::from_json_str(&text).unwrap();
    assert_eq!(back, r);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(validate(&report_schema(), &doc, true), Vec::<String>::new());
    assert_eq!(doc["alloc_paths"][0]["alloc_bytes"], 777_000);

    let mut table = Vec::new();
    write_table(&r, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    let at = table.find("\nAllocation path").unwrap();
    let rows: Vec<&str> = table[at..].lines().skip(3).take(4).collect();
    assert_eq!(
        rows,
        [
            "srv::Handler::run -> mini::Frame::parse         100    7.60 KiB    7.56 KiB    758.79 KiB   77.7%    759.77 KiB",
            "  srv::Handler::run                               1                             19.53 KiB            973.63 KiB",
            "  mini::Frame::parse                            100                            758.79 KiB            759.77 KiB",
            "srv::Handler::run -> cmd::Set::apply             50    2.93 KiB    2.91 KiB    146.48 KiB   15.0%    146.48 KiB",
        ],
        "{table}"
    );
}
