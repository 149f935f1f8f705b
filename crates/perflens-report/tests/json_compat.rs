//! The JSON report's bytes, pinned: reports written by this version, and
//! files written before, read back and are written again byte for byte.
//!
//! `tests/fixtures/full_report.json` has every section (allocations, CPU
//! samples, an async function, a recursion); `plain_report.json` has
//! neither allocations nor CPU samples. Both were written before the
//! allocation and CPU figures of rows and paths became shared structs,
//! so they also pin that change. Rewrite them only for an intended
//! format change, with `PERFLENS_BLESS=1`, and review the diff.

mod common;

use std::path::PathBuf;

use common::{fixture, full_fixture, json};
use perflens_report::{AllocFigures, CpuFigures, Report, ReportError, ReportOptions};
use serde_json::Value;

fn full_report() -> Report {
    let (snap, cpu) = full_fixture();
    let mut report = Report::from_snapshot(&snap, &ReportOptions::default());
    report.add_cpu(&snap, &cpu);
    report
}

fn plain_report() -> Report {
    Report::from_snapshot(&fixture(), &ReportOptions::default())
}

/// The fixture file `name`, or, with `PERFLENS_BLESS=1`, `actual` written
/// to it.
fn pinned(name: &str, actual: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if std::env::var_os("PERFLENS_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
    }
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every key of every object in `doc`, at any depth.
fn keys(doc: &Value, out: &mut Vec<String>) {
    match doc {
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

/// The report's JSON, checked to be the pinned file `name`, and every key
/// in it.
fn written_as_pinned(report: &Report, name: &str) -> (String, Vec<String>) {
    let text = json(report);
    assert_eq!(text, pinned(name, &text));
    let mut out = Vec::new();
    keys(&serde_json::from_str(&text).unwrap(), &mut out);
    (text, out)
}

/// Whether each function row and hot path has allocation figures and CPU
/// figures.
fn groups(r: &Report) -> Vec<(bool, bool)> {
    let rows = (r.functions.iter()).map(|f| (f.alloc.is_some(), f.cpu.is_some()));
    let paths = (r.paths.iter()).map(|p| (p.alloc.is_some(), p.cpu.is_some()));
    rows.chain(paths).collect()
}

#[test]
fn a_report_with_every_section_is_written_as_before() {
    let (text, keys) = written_as_pinned(&full_report(), "full_report.json");
    for key in [
        "alloc_bytes",
        "alloc_count",
        "free_bytes",
        "alloc_incl_bytes",
        "alloc_incl_count",
        "alloc_avg_bytes",
        "alloc_p95_bytes",
        "cpu_samples",
        "cpu_ns",
        "cpu_incl_ns",
        "alloc_paths",
        "busy_ns",
        "cancelled",
        "max_depth",
        "kernel_unattributed_ns",
    ] {
        assert!(keys.iter().any(|k| k == key), "no {key} in\n{text}");
    }
}

#[test]
fn a_written_report_with_every_section_reads_back_and_writes_the_same_bytes() {
    let text = pinned("full_report.json", &json(&full_report()));
    let back = Report::from_json_str(&text).unwrap();
    assert_eq!(back, full_report());
    assert_eq!(json(&back), text);
    assert!(groups(&back).iter().all(|&g| g == (true, true)));
    let alloc_paths = back.alloc_paths.as_deref().unwrap();
    assert!(!alloc_paths.is_empty());
    assert!(
        alloc_paths
            .iter()
            .all(|p| p.alloc.is_some() && p.cpu.is_none())
    );
    let serve = back.function("serve").unwrap();
    let want = AllocFigures {
        bytes: 1830,
        count: 7,
        free_bytes: 100,
        incl_bytes: 1830,
        incl_count: 7,
        avg_bytes: 610,
        p95_bytes: 616,
    };
    assert_eq!(serve.alloc, Some(want));
    let want = CpuFigures {
        samples: 5,
        ns: 5_000_000,
        incl_ns: 5_000_000,
    };
    assert_eq!(serve.cpu, Some(want));
}

/// The full fixture file as a JSON value, changed by `edit`, read back.
fn read_edited(edit: impl FnOnce(&mut Value)) -> Result<Report, ReportError> {
    let text = pinned("full_report.json", &json(&full_report()));
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    edit(&mut doc);
    Report::from_json_str(&doc.to_string())
}

#[test]
fn a_group_of_fields_left_out_reads_as_none_and_stays_out() {
    const CPU: [&str; 3] = ["cpu_samples", "cpu_ns", "cpu_incl_ns"];
    let back = read_edited(|doc| {
        let row = doc["functions"][0].as_object_mut().unwrap();
        CPU.iter().for_each(|k| _ = row.remove(*k));
    })
    .unwrap();
    let (row, full) = (&back.functions[0], full_report());
    assert_eq!((row.cpu, row.alloc), (None, full.functions[0].alloc));
    assert_eq!(back.functions[1..], full.functions[1..]);
    let written: Value = serde_json::from_str(&json(&back)).unwrap();
    let keys: Vec<&String> = written["functions"][0]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert!(keys.iter().all(|k| !CPU.contains(&k.as_str())), "{keys:?}");
    assert!(keys.iter().any(|k| *k == "alloc_p95_bytes"), "{keys:?}");
}

#[test]
fn a_group_of_fields_in_part_is_an_invalid_report() {
    for (at, key) in [
        ("/functions/1", "alloc_p95_bytes"),
        ("/paths/0", "free_bytes"),
        ("/functions/2", "cpu_incl_ns"),
        ("/paths/1", "cpu_samples"),
    ] {
        let err = read_edited(|doc| {
            doc.pointer_mut(at)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove(key);
        })
        .unwrap_err();
        match err {
            ReportError::InvalidReport { message } => {
                assert!(message.contains(key), "{at} {key}: {message}");
            }
            other => panic!("{at} {key}: {other:?}"),
        }
    }
}

#[test]
fn a_report_without_allocations_or_cpu_is_written_and_read_as_before() {
    let report = plain_report();
    let (text, keys) = written_as_pinned(&report, "plain_report.json");
    for key in ["alloc", "alloc_paths", "cpu"] {
        assert!(!keys.iter().any(|k| k == key), "{key} in\n{text}");
    }
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("alloc_") || k.starts_with("cpu_") || k == "free_bytes"),
        "{text}"
    );
    let back = Report::from_json_str(&text).unwrap();
    assert_eq!(back, report);
    assert_eq!(json(&back), text);
    assert!(groups(&back).iter().all(|&g| g == (false, false)));
}

/// `hot_paths: false` leaves the path lists empty and everything else as
/// it was.
#[test]
fn a_report_without_hot_paths_differs_only_in_its_paths() {
    let (snap, cpu) = full_fixture();
    let mut with = Report::from_snapshot(&snap, &ReportOptions::default());
    let mut without = Report::from_snapshot(
        &snap,
        &ReportOptions {
            hot_paths: false,
            ..ReportOptions::default()
        },
    );
    with.add_cpu(&snap, &cpu);
    without.add_cpu(&snap, &cpu);
    assert!(!with.paths.is_empty());
    assert!(without.paths.is_empty());
    assert_eq!(
        without.alloc_paths.as_ref().map(Vec::len),
        with.alloc_paths.as_ref().map(|_| 0)
    );
    let strip = |mut r: Report| {
        r.paths.clear();
        r.alloc_paths = r.alloc_paths.map(|_| Vec::new());
        r
    };
    assert_eq!(strip(with), without);
}
