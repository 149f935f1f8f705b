//! CPU samples, checked against hand-computed values: exclusive and
//! inclusive per function and per hot path, recursion counted once,
//! functions never sampled, session totals, the unavailable case, and the
//! JSON round trip and schema.

mod common;

use common::schema::{documented_example, errors_after, remove_key, report_schema, validate};
use common::{MS, SnapBuilder, cpu_fixture, cpu_unavailable, fixture, json, table};
use perflens_core::snapshot::{CallsiteKind, Mode, PathInfo};
use perflens_report::{
    CpuFigures, CpuInput, CpuSummary, CpuThreadRow, KernelTime, Report, ReportOptions, write_json,
    write_table,
};
use serde_json::Value;

fn report() -> Report {
    let (snap, cpu) = cpu_fixture();
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(&snap, &cpu);
    r
}

/// `(cpu_samples, cpu_ns, cpu_incl_ns)` of a row or path's CPU figures,
/// each `None` when it has none.
fn cpu_fields(cpu: Option<CpuFigures>) -> [Option<u64>; 3] {
    cpu.map_or([None; 3], |c| some([c.samples, c.ns, c.incl_ns]))
}

/// The three CPU fields of a function.
fn function_cpu(r: &Report, name: &str) -> [Option<u64>; 3] {
    cpu_fields(r.function(name).unwrap().cpu)
}

/// The same three fields of the hot path with these frames.
fn path_cpu(r: &Report, frames: &[&str]) -> [Option<u64>; 3] {
    cpu_fields(r.path(frames).unwrap().cpu)
}

fn some(v: [u64; 3]) -> [Option<u64>; 3] {
    v.map(Some)
}

#[test]
fn nested_paths_have_exclusive_and_inclusive_figures() {
    let r = report();
    // a's subtree is every sample under a: 10 + 20 + 30.25 + 2 + 5.
    assert_eq!(function_cpu(&r, "a"), some([10, 10 * MS, 67_250_000]));
    // b: 20 + c below it (30.25) + pending below c (2).
    assert_eq!(function_cpu(&r, "b"), some([20, 20 * MS, 52_250_000]));
    // c is a leaf on two paths: a > b > c (30 samples, 30.25 ms, 32.25
    // with pending) and a > c (5, 5 ms); both are outermost.
    assert_eq!(function_cpu(&r, "c"), some([35, 35_250_000, 37_250_000]));
    assert!(
        r.function("pending").is_none(),
        "no completed call, no row; its samples are in a, b and c"
    );
}

#[test]
fn recursion_is_counted_once_in_inclusive_figures() {
    let r = report();
    // r > r > r: exclusive 1 + 2 + 4 samples; inclusive is the outermost
    // frame's subtree, 7 ms, not 7 + 6 + 4 = 17 ms.
    assert_eq!(function_cpu(&r, "r"), some([7, 7 * MS, 7 * MS]));
    assert_eq!(path_cpu(&r, &["r", "r", "r"]), some([4, 4 * MS, 4 * MS]));
}

#[test]
fn a_function_never_sampled_has_a_row_of_zeros() {
    let r = report();
    assert_eq!(function_cpu(&r, "idle"), [Some(0); 3]);
    assert_eq!(r.function("idle").unwrap().calls, 5);
    assert_eq!(path_cpu(&r, &["idle"]), [Some(0); 3]);
    assert_eq!(r.functions.len(), 5, "a, b, c, r, idle");
    assert!(r.functions.iter().all(|f| f.cpu.is_some()));
    assert_eq!(
        r.function("idle").unwrap().cpu_percent_of(84_250_000),
        Some(0.0)
    );
}

#[test]
fn hot_paths_have_the_last_frame_exclusive_and_the_subtree_inclusive() {
    let r = report();
    assert_eq!(
        r.paths.len(),
        8,
        "a>b>c, a>c, a>b, a, idle, r>r>r, r>r, r: every frame spent time itself"
    );
    // pending has no completed call, so a > b > c stays the leaf and its
    // inclusive time has pending's 2 ms.
    assert_eq!(
        path_cpu(&r, &["a", "b", "c"]),
        some([30, 30_250_000, 32_250_000])
    );
    assert_eq!(path_cpu(&r, &["a", "c"]), some([5, 5 * MS, 5 * MS]));
    // A path ending at an interior frame: that frame's own samples, and
    // its whole subtree's (its completed callees included) as inclusive.
    assert_eq!(path_cpu(&r, &["a", "b"]), some([20, 20 * MS, 52_250_000]));
    assert_eq!(path_cpu(&r, &["a"]), some([10, 10 * MS, 67_250_000]));
    // In a recursion, each depth's own samples; inclusive from that depth.
    assert_eq!(path_cpu(&r, &["r", "r"]), some([2, 2 * MS, 6 * MS]));
    assert_eq!(path_cpu(&r, &["r"]), some([1, MS, 7 * MS]));
    let p = r.path(&["a", "b", "c"]).unwrap();
    assert_eq!(
        p.cpu_percent_of(r.cpu.as_ref().unwrap().cpu_ns),
        Some(32_250_000.0 * 100.0 / 84_250_000.0)
    );
}

#[test]
fn totals_include_outside_overflow_and_unfinished_functions() {
    let r = report();
    assert_eq!(
        r.cpu,
        Some(CpuSummary {
            frequency_hz: 1000,
            source: "perf_event".into(),
            samples: 84,
            cpu_ns: 84_250_000,
            outside_samples: 7,
            outside_cpu_ns: 7 * MS,
            dropped: 3,
            threads: vec![
                CpuThreadRow {
                    tid: 1000,
                    name: Some("main".into()),
                    samples: 70,
                    cpu_ns: 70_250_000,
                    dropped: 1,
                },
                CpuThreadRow {
                    tid: 1001,
                    name: None,
                    samples: 14,
                    cpu_ns: 14 * MS,
                    dropped: 2,
                },
            ],
            kernel: None,
            kernel_unattributed_ns: None,
        })
    );
    let cpu = r.cpu.as_ref().unwrap();
    assert!(cpu.is_available() && cpu.unavailable_reason().is_none());
    assert_eq!(cpu.outside_percent(), Some(7e6 * 100.0 / 84.25e6));
    // Everything inside measured functions is a's and r's inclusive time;
    // the rest is outside (7 ms) or overflowed (3 ms).
    let inside = function_cpu(&r, "a")[2].unwrap() + function_cpu(&r, "r")[2].unwrap();
    assert_eq!(inside, cpu.cpu_ns - 7 * MS - 3 * MS);
    let a = r.function("a").unwrap().cpu_percent_of(cpu.cpu_ns).unwrap();
    assert_eq!(format!("{a:.3}"), "79.822");
}

#[test]
fn root_path_entries_are_outside_and_bad_indices_count_in_totals_only() {
    let (snap, mut cpu) = cpu_fixture();
    let a = cpu.by_path[0].0;
    cpu.by_path
        .extend([(0, 2, 2 * MS), (u32::MAX, 5, 5 * MS), (a, 1, MS)]);
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(&snap, &cpu);
    let totals = r.cpu.as_ref().unwrap();
    assert_eq!(
        (totals.samples, totals.cpu_ns),
        (84 + 8, 84_250_000 + 8 * MS)
    );
    assert_eq!((totals.outside_samples, totals.outside_cpu_ns), (9, 9 * MS));
    // A path listed twice is summed.
    assert_eq!(function_cpu(&r, "a"), some([11, 11 * MS, 68_250_000]));
}

#[test]
fn unavailable_sampling_keeps_the_reason_and_no_figures() {
    let (snap, _) = cpu_fixture();
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    let plain = r.clone();
    r.add_cpu(
        &snap,
        &cpu_unavailable("perf_event_open: permission denied"),
    );
    let cpu = r.cpu.as_ref().unwrap();
    assert!(!cpu.is_available());
    assert_eq!(
        cpu.unavailable_reason(),
        Some("perf_event_open: permission denied")
    );
    assert_eq!((cpu.samples, cpu.cpu_ns, cpu.threads.len()), (0, 0, 0));
    assert_eq!(cpu.frequency_hz, 1000);
    assert!(r.functions.iter().all(|f| f.cpu.is_none()));
    assert!(r.paths.iter().all(|p| p.cpu.is_none()));
    assert_eq!(
        Report {
            cpu: None,
            ..r.clone()
        },
        plain
    );

    let text = json(&r);
    let doc: Value = serde_json::from_str(&text).unwrap();
    let rows = doc["functions"].as_array().unwrap().iter();
    let objects: Vec<&Value> = rows.chain(doc["paths"].as_array().unwrap()).collect();
    assert_eq!(objects.len(), 5 + 8);
    for o in objects {
        assert!(
            o.as_object().unwrap().keys().all(|k| !k.starts_with("cpu")),
            "{o}"
        );
    }
    assert_eq!(
        doc["cpu"]["source"],
        "unavailable: perf_event_open: permission denied"
    );
    assert_eq!(validate(&report_schema(), &doc, true), Vec::<String>::new());
    assert_eq!(Report::from_json_str(&text).unwrap(), r);

    let bare = CpuSummary {
        source: "unavailable".into(),
        ..Default::default()
    };
    assert_eq!(bare.unavailable_reason(), Some(""));
}

#[test]
fn adding_cpu_again_replaces_what_was_there() {
    let (snap, cpu) = cpu_fixture();
    let once = report();
    let mut r = once.clone();
    r.add_cpu(&snap, &cpu);
    assert_eq!(r, once, "idempotent");
    r.add_cpu(&snap, &cpu_unavailable("stopped"));
    assert!(r.functions.iter().all(|f| f.cpu.is_none()));
    r.add_cpu(&snap, &cpu);
    assert_eq!(r, once);
}

#[test]
fn without_cpu_samples_there_are_no_cpu_fields() {
    let (snap, _) = cpu_fixture();
    let r = Report::from_snapshot(&snap, &ReportOptions::default());
    assert_eq!(r.cpu, None);
    assert!(
        r.functions
            .iter()
            .all(|f| function_cpu(&r, &f.name) == [None; 3])
    );
    let text = json(&r);
    assert!(!text.contains("cpu"), "{text}");
    assert!(!table(&r).contains("CPU"));
}

#[test]
fn cpu_fields_round_trip_and_conform_to_the_schema() {
    let r = report();
    let text = json(&r);
    let back = Report::from_json_str(&text).unwrap();
    assert_eq!(back, r);
    assert_eq!(json(&back), text);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(validate(&report_schema(), &doc, true), Vec::<String>::new());
    let c = doc["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "c")
        .unwrap();
    assert_eq!(
        (&c["cpu_samples"], &c["cpu_ns"], &c["cpu_incl_ns"]),
        (&35.into(), &35_250_000.into(), &37_250_000.into())
    );
    assert_eq!(
        doc["cpu"],
        serde_json::json!({
            "frequency_hz": 1000, "source": "perf_event",
            "samples": 84, "cpu_ns": 84_250_000u64,
            "outside_samples": 7, "outside_cpu_ns": 7_000_000,
            "dropped": 3,
            "threads": [
                { "tid": 1000, "name": "main", "samples": 70, "cpu_ns": 70_250_000, "dropped": 1 },
                { "tid": 1001, "name": null, "samples": 14, "cpu_ns": 14_000_000, "dropped": 2 }
            ]
        })
    );
    // Large values are written exactly.
    let mut big = r.clone();
    big.cpu.as_mut().unwrap().cpu_ns = u64::MAX;
    big.functions[0].cpu.as_mut().unwrap().incl_ns = (1 << 60) + 1;
    assert_eq!(Report::from_json_str(&json(&big)).unwrap(), big);
    // Reports with CPU and allocations together conform too.
    let plain = Report::from_snapshot(&fixture(), &ReportOptions::default());
    assert_eq!(Report::from_json_str(&json(&plain)).unwrap(), plain);
}

#[test]
fn the_schema_requires_cpu_fields_together() {
    let schema = report_schema();
    let good: Value = serde_json::from_str(&json(&report())).unwrap();
    let broken = |edit: &dyn Fn(&mut Value)| errors_after(&schema, &good, edit);
    let remove = remove_key;
    assert_eq!(broken(&remove("/functions/0", "cpu_incl_ns")).len(), 1);
    assert_eq!(broken(&remove("/paths/0", "cpu_ns")).len(), 1);
    assert_eq!(broken(&remove("/cpu", "outside_cpu_ns")).len(), 1);
    assert_eq!(broken(&remove("/cpu/threads/0", "dropped")).len(), 1);
    assert_eq!(broken(&|d| d["cpu"]["samples"] = (-1).into()).len(), 1);
    assert_eq!(broken(&|d| d["cpu"]["source"] = 3.into()).len(), 1);
    assert_eq!(
        broken(&|d| d["paths"][0]["cpu_incl_ns"] = 1.5.into()).len(),
        1
    );
}

#[test]
fn same_named_callsites_keep_their_own_hot_paths() {
    // Two callsites named `x` under `a` make two paths with the same id
    // and frames, and two hot paths; each gets its own samples.
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    b.node(t, &["a"], 1, 10 * MS, MS);
    b.node(t, &["a", "x"], 1, 5 * MS, 5 * MS);
    let first = b.path(&["a", "x"]);
    b.callsite("x", CallsiteKind::Sync);
    b.node(t, &["a", "x"], 2, 4 * MS, 4 * MS);
    let second = b.path(&["a", "x"]);
    assert_ne!(first, second);
    let snap = b.build();
    assert_eq!(
        snap.paths[first as usize].id,
        snap.paths[second as usize].id
    );
    let cpu = CpuInput {
        frequency_hz: 100,
        source: "timer".into(),
        by_path: vec![(first, 11, 11 * MS), (second, 22, 22 * MS)],
        ..Default::default()
    };
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(&snap, &cpu);
    let x: Vec<(usize, u64, Option<u64>)> = (r.paths.iter())
        .map(|p| (p.frames.len(), p.calls, p.cpu.map(|c| c.samples)))
        .collect();
    // `a` spent 1 ms itself: a path of its own, with none of x's samples.
    assert_eq!(x, [(2, 1, Some(11)), (2, 2, Some(22)), (1, 1, Some(0))]);
    assert_eq!(function_cpu(&r, "x"), some([33, 33 * MS, 33 * MS]));
    assert_eq!(function_cpu(&r, "a"), some([0, 0, 33 * MS]));
}

#[test]
fn sampled_timing_does_not_scale_cpu_samples() {
    let mut b = SnapBuilder::new(Mode::Sampled { every: 16 });
    let t = b.thread("main");
    b.sampled_node(t, &["s"], 1600, 100, 1_000, 1_000);
    let path = b.path(&["s"]);
    let snap = b.build();
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(
        &snap,
        &CpuInput {
            frequency_hz: 1000,
            source: "perf_event".into(),
            by_path: vec![(path, 3, 3 * MS)],
            ..Default::default()
        },
    );
    assert_eq!(function_cpu(&r, "s"), some([3, 3 * MS, 3 * MS]));
}

#[test]
fn malformed_snapshots_and_inputs_do_not_panic() {
    let mut b = SnapBuilder::new(Mode::Count);
    let t = b.thread("main");
    b.node(t, &["ok"], 1, 0, 0);
    let ok = b.path(&["ok"]);
    let n = b.snap.paths.len() as u32;
    // Two paths that are each other's parent, and a parent out of range.
    for (parent, id) in [(n + 1, 5), (n, 6), (9_999, 7)] {
        b.snap.paths.push(PathInfo {
            parent,
            callsite: 2,
            id,
        });
    }
    let snap = b.build();
    let by_path = [ok, n, n + 1, n + 2, 12_345]
        .map(|p| (p, u64::MAX / 2, u64::MAX / 2))
        .into();
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(
        &snap,
        &CpuInput {
            frequency_hz: 1,
            source: "timer".into(),
            by_path,
            outside_samples: u64::MAX,
            outside_cpu_ns: 1,
            ..Default::default()
        },
    );
    let cpu = r.cpu.as_ref().unwrap();
    assert_eq!(cpu.samples, u64::MAX, "saturated, not wrapped");
    assert_eq!(
        r.path(&["ok"]).unwrap().cpu.map(|c| c.samples),
        Some(u64::MAX / 2)
    );
    let mut sink = Vec::new();
    write_table(&r, &mut sink).unwrap();
    write_json(&r, &mut sink).unwrap();
    // A report from another snapshot: unknown rows and paths get 0.
    let mut other = Report::from_snapshot(&fixture(), &ReportOptions::default());
    other.add_cpu(&snap, &CpuInput::default());
    assert!(
        other
            .functions
            .iter()
            .all(|f| f.cpu.map(|c| c.ns) == Some(0))
    );
    assert!(
        other
            .paths
            .iter()
            .all(|p| p.cpu.map(|c| c.incl_ns) == Some(0))
    );
}

#[test]
fn an_empty_session_still_shows_the_cpu_line() {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.thread("main");
    let snap = b.build();
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(
        &snap,
        &CpuInput {
            frequency_hz: 99,
            source: "timer".into(),
            outside_samples: 4,
            outside_cpu_ns: 40 * MS,
            ..Default::default()
        },
    );
    assert_eq!(
        table(&r),
        "\
[perflens] 1.00 s | timed | tsc | 1 thread
[perflens] no instrumented calls were recorded.

CPU sampling: 4 samples, 40.00 ms CPU at 99 Hz (timer); 100.0% outside instrumented functions; 0 dropped.
"
    );
    r.add_cpu(&snap, &cpu_unavailable(""));
    assert!(table(&r).ends_with("\n\nCPU sampling unavailable.\n"));
}

#[test]
fn the_documented_cpu_example_reads_back_and_conforms() {
    let example = &documented_example(3);
    let value: Value = serde_json::from_str(example).unwrap();
    assert_eq!(
        validate(&report_schema(), &value, true),
        Vec::<String>::new()
    );
    let r = Report::from_json_str(example).unwrap();
    let cpu = r.cpu.as_ref().unwrap();
    let main = r.function("app::main").unwrap();
    let parse = r.function("app::parse").unwrap();
    assert_eq!(
        main.cpu.unwrap().incl_ns,
        main.cpu.unwrap().ns + parse.cpu.unwrap().incl_ns
    );
    assert_eq!(cpu.cpu_ns, main.cpu.unwrap().incl_ns + cpu.outside_cpu_ns);
    // Exactly what the report builder writes for the input it describes.
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 1_000_500_000;
    b.snap.path_capacity = 65_536;
    let t = b.thread("main");
    let th = &mut b.snap.threads[t];
    (th.tid, th.node_capacity) = (4242, 4096);
    b.node(t, &["app::main"], 1, 1_000_000_000, 200_000_000);
    b.node(t, &["app::main", "app::parse"], 4, 800_000_000, 800_000_000);
    let (main, parse) = (b.path(&["app::main"]), b.path(&["app::main", "app::parse"]));
    let snap = b.build();
    let mut built = Report::from_snapshot(&snap, &ReportOptions::default());
    built.add_cpu(
        &snap,
        &CpuInput {
            frequency_hz: 1000,
            source: "perf_event".into(),
            by_path: vec![(main, 150, 150 * MS), (parse, 790, 790 * MS)],
            outside_samples: 20,
            outside_cpu_ns: 20 * MS,
            threads: vec![perflens_report::CpuThreadInput {
                tid: 4242,
                name: Some("main".into()),
                samples: 960,
                cpu_ns: 960 * MS,
                dropped: 0,
            }],
            dropped: 0,
            kernel: Some(KernelTime::Attributed),
            kernel_unattributed_ns: 0,
        },
    );
    assert_eq!(built, r);
}

#[test]
fn kernel_time_not_attributed_is_a_line_of_its_own_in_table_and_json() {
    let (snap, mut cpu) = cpu_fixture();
    cpu.kernel = Some(KernelTime::NotAttributed);
    cpu.kernel_unattributed_ns = 42 * MS;
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.add_cpu(&snap, &cpu);
    let before: Vec<_> = (r.functions.iter()).map(|f| f.cpu.map(|c| c.ns)).collect();
    let c = r.cpu.as_ref().unwrap();
    assert_eq!(c.kernel, Some(KernelTime::NotAttributed));
    assert_eq!(c.kernel_unattributed_ns, Some(42 * MS));
    // Not in the sampled total, not in any row.
    assert_eq!(c.cpu_ns, 84_250_000);
    let (_, plain) = cpu_fixture();
    let mut r0 = Report::from_snapshot(&snap, &ReportOptions::default());
    r0.add_cpu(&snap, &plain);
    let rows0: Vec<_> = (r0.functions.iter()).map(|f| f.cpu.map(|c| c.ns)).collect();
    assert_eq!(before, rows0);

    let mut table = Vec::new();
    write_table(&r, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("Kernel time: not attributed (kernel excluded from the samples)"),
        "{table}"
    );
    assert!(table.contains("Kernel time, not attributed: 42"), "{table}");

    let mut json = Vec::new();
    write_json(&r, &mut json).unwrap();
    let text = String::from_utf8(json).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["cpu"]["kernel"], "not_attributed");
    assert_eq!(doc["cpu"]["kernel_unattributed_ns"], 42 * MS);
    assert_eq!(validate(&report_schema(), &doc, true), Vec::<String>::new());
    assert_eq!(Report::from_json_str(&text).unwrap(), r);

    // Attributed: one line saying so, no kernel total.
    cpu.kernel = Some(KernelTime::Attributed);
    r.add_cpu(&snap, &cpu);
    assert_eq!(r.cpu.as_ref().unwrap().kernel_unattributed_ns, None);
    let mut table = Vec::new();
    write_table(&r, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains(
            "Kernel time: attributed to the calling function (perf_event, kernel included)."
        ),
        "{table}"
    );
    assert!(!table.contains("not attributed"), "{table}");
}
