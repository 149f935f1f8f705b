//! `perflens diff`: two reports compared function by function, the
//! rows sorted by impact, `--fail-on` rules checked, and no change
//! within the reports' resolution ever flagged.

use perflens_report::Report;
use perflens_report::diff::{Metric, RowDiff, Threshold, diff, parse_fail_on, write_markdown};

fn fixture(name: &str) -> Report {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    Report::from_json_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `full_report.json`: `run`, `fib` and `serve`, with allocations and
/// CPU samples (at 1000 Hz: one sample is 1 ms).
fn full() -> Report {
    fixture("full_report.json")
}

fn row<'a>(r: &'a mut Report, name: &str) -> &'a mut perflens_report::FunctionRow {
    r.functions.iter_mut().find(|f| f.name == name).unwrap()
}

fn rules(spec: &str) -> Vec<Threshold> {
    parse_fail_on(spec).unwrap()
}

#[test]
fn identical_reports_change_nothing_and_regress_nowhere() {
    let base = full();
    let d = diff(
        &base,
        &base.clone(),
        &rules("p99>+1%,calls<-1%,alloc_bytes>+0%"),
    );
    assert!(!d.regressed());
    assert_eq!(
        d.metrics.len(),
        7,
        "timed, allocations and CPU: every column"
    );
    // No impact anywhere: by name.
    let names: Vec<&str> = d.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["fib", "run", "serve"]);
    for r in &d.rows {
        let RowDiff::Both(changes) = &r.diff else {
            panic!("{r:?}")
        };
        assert!(changes.iter().all(|c| c.percent == 0.0 && !c.resolved));
        assert_eq!(r.impact, 0.0);
    }
}

#[test]
fn a_p99_rise_past_the_rule_regresses_and_one_within_a_bucket_does_not() {
    let base = full();
    let mut new = base.clone();
    // fib's p99: 10,092,544 ns; +20% is many buckets away.
    row(&mut new, "fib").p99_ns = 12_111_052;
    // serve's p50: +3%, one bucket (1/32 of the value) at most apart.
    row(&mut new, "serve").p50_ns = 5_467_668;
    let fail_on = rules("p99>+10%,p50>+1%");
    let d = diff(&base, &new, &fail_on);
    assert!(d.regressed());
    let fib = d.rows.iter().find(|r| r.name == "fib").unwrap();
    assert_eq!(fib.regressions.len(), 1);
    let (rule, change) = fib.regressions[0];
    assert_eq!((rule.metric, rule.percent), (Metric::P99, 10.0));
    assert!((change - 20.0).abs() < 0.01, "{change}");
    let serve = d.rows.iter().find(|r| r.name == "serve").unwrap();
    assert!(
        serve.regressions.is_empty(),
        "3% is within a bucket: {serve:?}"
    );
    let RowDiff::Both(changes) = &serve.diff else {
        panic!()
    };
    let p50 = changes.iter().find(|c| c.metric == Metric::P50).unwrap();
    assert!(!p50.resolved && p50.percent > 2.9);
    // Two buckets away is a real change: flagged.
    row(&mut new, "serve").p50_ns = 5_308_416 + 2 * 5_308_416 / 32 + 1;
    let d = diff(&base, &new, &fail_on);
    let serve = d.rows.iter().find(|r| r.name == "serve").unwrap();
    assert_eq!(serve.regressions.len(), 1, "{serve:?}");
}

#[test]
fn exact_figures_are_flagged_at_any_size_past_the_rule_and_falls_too() {
    let base = full();
    let mut new = base.clone();
    // run allocates 1000 bytes: +6% and +4%.
    row(&mut new, "run").alloc.as_mut().unwrap().bytes = 1060;
    row(&mut new, "serve").alloc.as_mut().unwrap().bytes = 1830 * 104 / 100;
    // fib is called half as often.
    row(&mut new, "fib").calls = 3;
    let d = diff(&base, &new, &rules("alloc_bytes>+5%,calls<-20%"));
    let broke = |name: &str| -> Vec<Metric> {
        let r = d.rows.iter().find(|r| r.name == name).unwrap();
        r.regressions.iter().map(|(t, _)| t.metric).collect()
    };
    assert_eq!(broke("run"), [Metric::AllocBytes]);
    assert_eq!(broke("serve"), [] as [Metric; 0], "+4% is under +5%");
    assert_eq!(broke("fib"), [Metric::Calls], "-50% is past -20%");
}

#[test]
fn time_within_a_tick_per_call_and_cpu_within_a_sample_are_not_flagged() {
    let base = full();
    let mut new = base.clone();
    // fib: 6 calls, so up to 6 ns of its 20 ms is the clock's tick.
    row(&mut new, "fib").self_ns += 6;
    // serve: CPU +0.9 ms at 1000 Hz (one sample is 1 ms): +18%, but
    // less than a sample.
    row(&mut new, "serve").cpu.as_mut().unwrap().ns += 900_000;
    let d = diff(&base, &new, &rules("self>+0%,cpu>+10%"));
    assert!(!d.regressed(), "{:?}", d.rows);
    row(&mut new, "fib").self_ns += 1;
    row(&mut new, "serve").cpu.as_mut().unwrap().ns += 200_000;
    let d = diff(&base, &new, &rules("self>+0%,cpu>+10%"));
    let flagged: Vec<&str> = (d.rows.iter())
        .filter(|r| !r.regressions.is_empty())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(flagged.len(), 2, "{flagged:?}");
}

#[test]
fn rows_in_one_report_are_added_or_removed_and_rows_sort_by_impact() {
    let base = full();
    let mut new = base.clone();
    new.functions.retain(|f| f.name != "serve");
    let mut added = new.functions[0].clone();
    added.name = "cache::lookup".into();
    added.self_ns = 1_000;
    added.total_ns = 1_000;
    added.alloc.as_mut().unwrap().bytes = 0;
    added.cpu.as_mut().unwrap().ns = 0;
    new.functions.push(added);
    // fib's self time +10% of the whole (the sum of self times, 29 ms):
    // 2.9 ms more.
    row(&mut new, "fib").self_ns += 2_900_000;
    let d = diff(&base, &new, &[]);
    let order: Vec<(&str, &str)> = d
        .rows
        .iter()
        .map(|r| {
            let kind = match r.diff {
                RowDiff::Both(_) => "both",
                RowDiff::Added(_) => "added",
                RowDiff::Removed(_) => "removed",
            };
            (r.name.as_str(), kind)
        })
        .collect();
    // serve's removal takes 1,830 of the 3,330 bytes allocated (55%),
    // fib moved 2.9 ms of the 29 ms of self time (10%), the new
    // `cache::lookup` took 1 µs of it, run did not move.
    assert_eq!(
        order,
        [
            ("serve", "removed"),
            ("fib", "both"),
            ("cache::lookup", "added"),
            ("run", "both")
        ]
    );
    assert!((d.rows[0].impact - 1830.0 / 3330.0).abs() < 1e-9);
    assert!((d.rows[1].impact - 0.1).abs() < 1e-9);
}

#[test]
fn the_markdown_table_shows_new_figures_with_their_change() {
    let base = full();
    let mut new = base.clone();
    row(&mut new, "fib").p99_ns = 12_111_052;
    row(&mut new, "run").alloc.as_mut().unwrap().bytes = 1060;
    new.functions.retain(|f| f.name != "serve");
    let fail_on = rules("p99>+10%");
    let text = write_markdown(
        &diff(&base, &new, &fail_on),
        "base.json",
        "new.json",
        &fail_on,
        0,
    );
    assert_eq!(
        text,
        "\
**perflens diff** `base.json` → `new.json`: 3 functions, 0 added, 1 removed

--fail-on `p99>+10%`: **1 function regressed**

| Function | Calls | Total | Self | p50 | p99 | Alloc bytes | CPU | Status |
|---|---:|---:|---:|---:|---:|---:|---:|---|
| `serve` | 3 | 16.00 ms | 5.00 ms | 5.31 ms | 5.31 ms | 1.79 KiB | 5.00 ms | removed (base figures) |
| `run` | 1 (0%) | 40.00 ms (0%) | 4.00 ms (0%) | 40.37 ms (0%) | 40.37 ms (0%) | 1.04 KiB (+6.0%) | 4.00 ms (0%) |  |
| `fib` | 6 (0%) | 20.00 ms (0%) | 20.00 ms (0%) | 3.51 ms (0%) | 12.11 ms (**+20.0%**) | 500 B (0%) | 19.50 ms (0%) | regressed: p99 +20.0% |

New figures, with the change against the base; ≈: within what the reports can tell apart (a percentile's histogram bucket, a tick per call, a CPU sample), never flagged. By impact: the largest change of total, self, allocated bytes or CPU as a share of the whole report's.
"
    );
}

#[test]
fn fail_on_rules_parse_or_say_what_is_wrong() {
    assert_eq!(
        parse_fail_on("p99>+10%, alloc_bytes>5% ,calls<-20%,cpu_ns>+2.5%").unwrap(),
        [
            Threshold {
                metric: Metric::P99,
                percent: 10.0
            },
            Threshold {
                metric: Metric::AllocBytes,
                percent: 5.0
            },
            Threshold {
                metric: Metric::Calls,
                percent: -20.0
            },
            Threshold {
                metric: Metric::Cpu,
                percent: 2.5
            },
        ]
    );
    for (bad, says) in [
        ("p99>10", "needs a %"),
        ("latency>+1%", "unknown metric `latency`"),
        ("p99=+1%", "expected METRIC>+N%"),
        ("p99>+ten%", "not a percentage"),
        ("p99>+inf%", "not a percentage"),
        ("", "no rule given"),
        ("calls<0%", "a fall needs a size"),
    ] {
        let e = parse_fail_on(bad).unwrap_err();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn a_count_mode_report_compares_calls_only() {
    let base = fixture("plain_report.json");
    let mut new = base.clone();
    new.mode = perflens_report::ReportMode::Count;
    new.functions[1].calls *= 2;
    let d = diff(&base, &new, &rules("p99>+1%,calls>+50%"));
    assert_eq!(d.metrics, [Metric::Calls], "no time in count mode");
    let flagged: Vec<&str> = (d.rows.iter())
        .filter(|r| !r.regressions.is_empty())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(flagged, ["app::parse"]);
}

/// `full()` with a heap profile: `fib` holds `fib` bytes on `fib_samples`
/// samples, `run` 1 MiB on 100.
fn with_heap(fib: u64, fib_samples: u64) -> Report {
    let mut r = full();
    let path = |frames: &[&str], bytes: u64, samples: u64| perflens_report::HeapPath {
        frames: frames.iter().map(|f| f.to_string()).collect(),
        inuse_bytes: bytes,
        inuse_objects: samples * 10,
        alloc_bytes: bytes * 2,
        alloc_objects: samples * 20,
        samples,
    };
    r.heap = Some(perflens_report::HeapProfile {
        rate_bytes: 512 << 10,
        inuse_bytes: fib + (1 << 20),
        inuse_objects: (fib_samples + 100) * 10,
        inuse_samples: fib_samples + 100,
        sampled: 1000,
        dropped: 0,
        capacity: 65536,
        inuse_paths: vec![
            path(&["run"], 1 << 20, 100),
            path(&["run", "fib"], fib, fib_samples),
        ],
        ..Default::default()
    });
    r
}

#[test]
fn bytes_in_use_are_compared_beyond_their_sampling_spread() {
    // 10 MiB on 100 samples each: one standard deviation is about 1 MiB
    // per side, so the difference's is 1.4 MiB, and 2.8 MiB is resolved.
    let base = with_heap(10 << 20, 100);
    let fail_on = rules("inuse_bytes>+10%");
    // +20% (2 MiB): within the spread, shown but never flagged.
    let d = diff(&base, &with_heap(12 << 20, 100), &fail_on);
    assert!(d.metrics.contains(&Metric::InuseBytes));
    assert!(!d.regressed(), "{d:?}");
    let fib = d.rows.iter().find(|r| r.name == "fib").unwrap();
    let RowDiff::Both(changes) = &fib.diff else {
        panic!()
    };
    let inuse = changes
        .iter()
        .find(|c| c.metric == Metric::InuseBytes)
        .unwrap();
    assert!(!inuse.resolved && (inuse.percent - 20.0).abs() < 0.01);
    // +50% (5 MiB): beyond it, flagged.
    let d = diff(&base, &with_heap(15 << 20, 100), &fail_on);
    assert!(d.regressed());
    let fib = d.rows.iter().find(|r| r.name == "fib").unwrap();
    assert_eq!(fib.regressions[0].0.metric, Metric::InuseBytes);
    // A function that holds nothing holds 0 bytes; the column is there
    // only when both reports sampled the heap.
    let serve = d.rows.iter().find(|r| r.name == "serve").unwrap();
    let RowDiff::Both(changes) = &serve.diff else {
        panic!()
    };
    assert!(
        changes
            .iter()
            .any(|c| c.metric == Metric::InuseBytes && c.base == 0 && c.new == 0)
    );
    let d = diff(&full(), &with_heap(15 << 20, 100), &fail_on);
    assert!(!d.metrics.contains(&Metric::InuseBytes) && !d.regressed());
    let d = diff(&base, &with_heap(15 << 20, 100), &fail_on);
    let md = write_markdown(&d, "a.json", "b.json", &fail_on, 20);
    assert!(md.contains("| In use |"), "{md}");
    assert!(md.contains("15.00 MiB (**+50.0%**)"), "{md}");
}
