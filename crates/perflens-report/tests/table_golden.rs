//! The terminal tables, pinned by golden files in `tests/golden/`.
//!
//! After an intended change to the layout, rewrite the files with
//! `PERFLENS_BLESS=1 cargo test -p perflens-report --test table_golden`
//! and review the diff.

mod common;

use std::path::PathBuf;

use common::{SnapBuilder, alloc_fixture, cpu_fixture, cpu_unavailable, fixture};
use perflens_core::snapshot::{CallsiteKind, Mode, RawSnapshot};
use perflens_report::{Report, ReportOptions, write_table};

fn table(snap: &RawSnapshot, options: &ReportOptions) -> String {
    let mut out = Vec::new();
    write_table(&Report::from_snapshot(snap, options), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn check_golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("PERFLENS_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run with PERFLENS_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{} differs from the output; if the change is intended, rerun with \
         PERFLENS_BLESS=1.\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}

#[test]
fn timed_session_with_async_rows_and_overflow() {
    let options = ReportOptions {
        percentiles: vec![50.0, 95.0, 99.0, 99.9],
        ..Default::default()
    };
    check_golden("timed.txt", &table(&fixture(), &options));
}

#[test]
fn sampled_session_marks_estimates() {
    let mut b = SnapBuilder::new(Mode::Sampled { every: 16 });
    b.snap.elapsed_ns = 15_610_000_000;
    let t = b.thread("main");
    // 4,000 of 64,000 calls timed: 125 µs each, 94 µs of it in the query.
    b.sampled_node(t, &["app::serve"], 64_000, 4_000, 500_000_000, 124_000_000);
    b.sampled_node(
        t,
        &["app::serve", "app::db::query"],
        64_000,
        4_000,
        376_000_000,
        376_000_000,
    );
    check_golden("sampled.txt", &table(&b.build(), &ReportOptions::default()));
}

#[test]
fn count_session_shows_dashes_for_time() {
    let mut b = SnapBuilder::new(Mode::Count);
    b.callsite("app::fetch", CallsiteKind::Async);
    let t = b.thread("main");
    b.node(t, &["app::main"], 1, 0, 0);
    b.node(t, &["app::main", "app::step"], 1_234_567, 0, 0);
    b.node(t, &["app::main", "app::fetch"], 12, 0, 0).polls = 40;
    check_golden("count.txt", &table(&b.build(), &ReportOptions::default()));
}

/// Issue 24's server in small: `app::parent` spends 2 ms of its own per
/// call (a socket write) and then calls a 20 µs `app::child`; beside it a
/// 100 µs leaf, and `app::main` around both with 5 µs of glue. The path
/// ending at `parent`, an interior node, leads the hot paths with its own
/// Calls, Self and Total; the glue ends a path too, ranked last.
#[test]
fn a_parent_that_spends_the_time_itself_leads_the_hot_paths() {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 30_000_000;
    let t = b.thread("main");
    b.node(t, &["app::main"], 1, 21_205_000, 5_000);
    b.node(t, &["app::main", "app::parent"], 10, 20_200_000, 20_000_000);
    b.node(
        t,
        &["app::main", "app::parent", "app::child"],
        10,
        200_000,
        200_000,
    );
    b.node(t, &["app::main", "app::leaf"], 10, 1_000_000, 1_000_000);
    let text = table(&b.build(), &ReportOptions::default());
    check_golden("interior.txt", &text);
    let at = text.find("\nHot path ").unwrap();
    let rows: Vec<&str> = (text[at..].lines().skip(3))
        .filter(|l| !l.starts_with(' ') && l.contains("app::"))
        .collect();
    let ranked: Vec<&str> = (rows.iter())
        .map(|l| l.split("  ").next().unwrap())
        .collect();
    assert_eq!(
        ranked,
        [
            "app::main -> app::parent",
            "app::main -> app::leaf",
            "app::main -> app::parent -> app::child",
            "app::main",
        ],
        "{text}"
    );
    // The row is the last frame's: parent's 10 calls, 20 ms of Self and
    // 20.2 ms of Total (its child included).
    let first: Vec<&str> = (rows[0].split("  ").map(str::trim))
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        first,
        ["app::main -> app::parent", "10", "20.00 ms", "20.20 ms"],
        "{text}"
    );
}

#[test]
fn allocation_section_follows_the_timing_tables() {
    // Bytes x1000, so the cells show B, KiB and MiB.
    check_golden(
        "alloc.txt",
        &table(&alloc_fixture(1000), &ReportOptions::default()),
    );
}

/// The CPU fixture's report with its samples (or `cpu` instead).
fn cpu_table(options: &ReportOptions, cpu: Option<&perflens_report::CpuInput>) -> String {
    let (snap, input) = cpu_fixture();
    let mut report = Report::from_snapshot(&snap, options);
    report.add_cpu(&snap, cpu.unwrap_or(&input));
    let mut out = Vec::new();
    write_table(&report, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn cpu_section_follows_the_timing_tables() {
    check_golden("cpu.txt", &cpu_table(&ReportOptions::default(), None));
}

#[test]
fn unavailable_cpu_sampling_is_one_line() {
    let unavailable = cpu_unavailable("perf_event_open failed: Permission denied (os error 13)");
    let text = cpu_table(&ReportOptions::default(), Some(&unavailable));
    check_golden("cpu_unavailable.txt", &text);
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("CPU"))
            .collect::<Vec<_>>(),
        ["CPU sampling unavailable: perf_event_open failed: Permission denied (os error 13)"]
    );
}

/// The section of `text` starting at `heading`, and its table rows: the
/// lines after the first `skip` up to the next blank line.
fn section_rows<'a>(text: &'a str, heading: &str, skip: usize) -> (&'a str, Vec<&'a str>) {
    let at = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in:\n{text}"));
    let section = &text[at..];
    let rows = section
        .lines()
        .skip(skip)
        .take_while(|l| !l.is_empty())
        .collect();
    (section, rows)
}

#[test]
fn cpu_table_honours_the_limit_and_sorts_by_self_then_inclusive() {
    let options = ReportOptions {
        limit: Some(2),
        ..Default::default()
    };
    let text = cpu_table(&options, None);
    let (section, rows) = section_rows(&text, "\nCPU sampling:", 4);
    assert_eq!(rows.len(), 3, "{section}");
    assert!(rows[0].starts_with("c  "), "by self time: {section}");
    assert!(rows[1].starts_with("b  "), "{section}");
    assert!(
        rows[2].starts_with("… 3 more functions; the JSON report"),
        "{section}"
    );
    // Equal self time: the larger inclusive time first, then the name.
    let (snap, mut input) = cpu_fixture();
    for entry in &mut input.by_path {
        entry.1 = 1;
        entry.2 = 1_000;
    }
    let mut report = Report::from_snapshot(&snap, &ReportOptions::default());
    report.add_cpu(&snap, &input);
    let mut out = Vec::new();
    write_table(&report, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let (section, rows) = section_rows(&text, "\nCPU sampling:", 4);
    let names: Vec<&str> = rows.iter().map(|l| l.split(' ').next().unwrap()).collect();
    // Self: a 1, b 1, c 2, r 3, idle 0; inclusive: a 5, b 3, c 3, r 3.
    assert_eq!(names, ["r", "c", "a", "b", "idle"], "{section}");
}

#[test]
fn allocation_tables_honour_the_limit() {
    let options = ReportOptions {
        limit: Some(2),
        ..Default::default()
    };
    let text = table(&alloc_fixture(1), &options);
    let (section, rows) = section_rows(&text, "\nAllocations", 3);
    assert_eq!(rows.len(), 3, "{section}");
    assert!(
        rows[0].starts_with("run  "),
        "by inclusive bytes: {section}"
    );
    assert!(rows[1].starts_with("parse  "), "{section}");
    assert!(
        rows[2].starts_with("… 2 more functions; the JSON report"),
        "{section}"
    );
    // Six paths allocated bytes themselves (run and parse are interior):
    // two are shown.
    assert!(
        section.contains("… 4 more paths that allocated;"),
        "{section}"
    );
    assert!(section.contains("… 1 more threads;"), "{section}");
    let all_threads = section
        .lines()
        .find(|l| l.starts_with("all threads"))
        .unwrap();
    let cells: Vec<&str> = all_threads.split("  ").filter(|c| !c.is_empty()).collect();
    assert_eq!(
        cells.iter().map(|c| c.trim()).collect::<Vec<_>>(),
        [
            "all threads",
            "8.10 KiB",
            "59",
            "4.29 KiB",
            "16",
            "3.81 KiB",
            "5.86 KiB",
            "115 B"
        ],
        "totals cover the hidden thread too"
    );
}

#[test]
fn limit_caps_rows_and_says_how_many_are_hidden() {
    let options = ReportOptions {
        limit: Some(1),
        ..Default::default()
    };
    let text = table(&fixture(), &options);
    assert!(
        text.contains("… 3 more functions; the JSON report"),
        "{text}"
    );
    assert!(
        !text.contains("more async functions"),
        "the fixture has one async function: {text}"
    );
    assert!(text.contains("… 6 more paths;"), "{text}");
    let all = table(
        &fixture(),
        &ReportOptions {
            limit: None,
            ..Default::default()
        },
    );
    assert!(!all.contains("more functions"), "{all}");
}

#[test]
fn overflow_warning_names_counts_and_variables() {
    let text = table(&fixture(), &ReportOptions::default());
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("[perflens] warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "[perflens] warning: 7 calls found a thread's node table full and were counted \
             under [overflow]; raise PERFLENS_NODES.",
            "[perflens] warning: 3 calls were deeper than the shadow stack and were not \
             recorded; raise PERFLENS_STACK_DEPTH.",
        ]
    );

    let mut snap = fixture();
    (
        snap.overflow_paths,
        snap.threads[2].overflow_calls,
        snap.threads[2].dropped_frames,
    ) = (1, 0, 0);
    let text = table(&snap, &ReportOptions::default());
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("[perflens] warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "[perflens] warning: 1 call found the path table full and was counted under [overflow]; \
          raise PERFLENS_PATHS."
        ]
    );
}

#[test]
fn empty_session_says_so() {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.thread("main");
    let text = table(&b.build(), &ReportOptions::default());
    assert_eq!(
        text,
        "[perflens] 1.00 s | timed | tsc | 1 thread\n[perflens] no instrumented calls were recorded.\n"
    );
}

#[test]
fn async_session_lists_its_waits() {
    let snap = common::waits_fixture(Mode::Timed);
    check_golden("waits.txt", &table(&snap, &ReportOptions::default()));
}
