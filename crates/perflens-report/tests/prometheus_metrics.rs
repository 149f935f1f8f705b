//! `/metrics`: the Prometheus text format of a report, with exact values
//! for a snapshot of known calls, that Prometheus's own `promtool check
//! metrics` accepts (Debian's `prometheus`, which `.ci/run` installs;
//! without it this test fails).

mod common;

use common::{SnapBuilder, hist};
use perflens_core::snapshot::Mode;
use perflens_report::{Report, ReportOptions, write_prometheus};
use std::io::Write;
use std::process::{Command, Stdio};

/// `app::handler`: 3 calls of 2, 4 and 300 µs (clock ticks are ns here);
/// it calls `app::"query"` (a label with a quote and a backslash) twice,
/// 1 µs each.
fn snapshot() -> perflens_core::RawSnapshot {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    let h = b.node(t, &["app::handler"], 3, 306_000, 304_000);
    h.hist_total = hist(&[2_000, 4_000, 300_000]);
    let q = b.node(t, &["app::handler", "app::\"query\\"], 2, 2_000, 2_000);
    q.hist_total = hist(&[1_000, 1_000]);
    b.build()
}

fn metrics(path_labels: bool) -> String {
    let snap = snapshot();
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    let mut out = Vec::new();
    write_prometheus(&snap, &report, path_labels, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn calls_durations_and_self_time_per_function() {
    let text = metrics(false);
    let has = |line: &str| assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    has("# TYPE perflens_calls_total counter");
    has("perflens_calls_total{function=\"app::handler\"} 3");
    has("perflens_calls_total{function=\"app::\\\"query\\\\\"} 2");
    has("# TYPE perflens_duration_seconds histogram");
    // 2 and 4 µs are above 1 µs and at most 5 µs; 300 µs at most 500 µs.
    has("perflens_duration_seconds_bucket{function=\"app::handler\",le=\"0.000001\"} 0");
    has("perflens_duration_seconds_bucket{function=\"app::handler\",le=\"0.0000025\"} 1");
    has("perflens_duration_seconds_bucket{function=\"app::handler\",le=\"0.000005\"} 2");
    has("perflens_duration_seconds_bucket{function=\"app::handler\",le=\"0.00025\"} 2");
    has("perflens_duration_seconds_bucket{function=\"app::handler\",le=\"0.0005\"} 3");
    has("perflens_duration_seconds_bucket{function=\"app::handler\",le=\"+Inf\"} 3");
    has("perflens_duration_seconds_sum{function=\"app::handler\"} 0.000306");
    has("perflens_duration_seconds_count{function=\"app::handler\"} 3");
    has("perflens_duration_seconds_bucket{function=\"app::\\\"query\\\\\",le=\"0.000001\"} 2");
    has("perflens_self_seconds_total{function=\"app::handler\"} 0.000304");
    // No allocations, CPU, channels or locks in this report: no family.
    for absent in [
        "perflens_alloc",
        "perflens_cpu",
        "perflens_channel",
        "perflens_lock",
        "perflens_path",
    ] {
        assert!(!text.contains(absent), "{absent} in\n{text}");
    }
    // Per-path labels only when asked for.
    let with_paths = metrics(true);
    assert!(
        with_paths
            .lines()
            .any(|l| l == "perflens_path_calls_total{path=\"app::handler;app::\\\"query\\\\\"} 2"),
        "{with_paths}"
    );
}

#[test]
fn promtool_accepts_the_output() {
    for path_labels in [false, true] {
        promtool_check(&metrics(path_labels));
    }
}

/// [`snapshot`] with a heap profile: `app::handler` holds 3 MiB (one
/// sample of 1 MiB scaled), and 4 KiB was allocated outside any function.
fn heap_metrics() -> String {
    let mut snap = snapshot();
    let handler = (snap.paths.iter())
        .position(|p| snap.callsites[p.callsite as usize].name == "app::handler")
        .unwrap() as u32;
    let path = |path, inuse_bytes| perflens_core::HeapPathSnapshot {
        path,
        samples: 1,
        sampled_bytes: 1 << 20,
        inuse_objects: 3.0,
        inuse_bytes,
    };
    snap.heap = Some(perflens_core::HeapSnapshot {
        rate_bytes: 512 << 10,
        capacity: 1024,
        sampled: 5,
        dropped: 0,
        freed: 3,
        paths: vec![path(handler, 3.0 * 1048576.0), path(0, 4096.0)],
        ..Default::default()
    });
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    let mut out = Vec::new();
    write_prometheus(&snap, &report, false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn bytes_in_use_per_function_are_a_gauge_that_promtool_accepts() {
    let text = heap_metrics();
    assert!(
        text.contains("# TYPE perflens_heap_inuse_bytes gauge"),
        "{text}"
    );
    assert!(
        text.contains("perflens_heap_inuse_bytes{function=\"app::handler\"} 3145728"),
        "{text}"
    );
    // A function that holds nothing holds 0; what no function allocated
    // has a series of its own.
    assert!(
        text.contains("perflens_heap_inuse_bytes{function=\"app::\\\"query\\\\\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("perflens_heap_inuse_bytes{function=\"(outside measured functions)\"} 4096"),
        "{text}"
    );
    assert!(!metrics(false).contains("perflens_heap_inuse_bytes"));
    promtool_check(&text);
}

/// `promtool check metrics` accepts `text`.
fn promtool_check(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (Debian's `prometheus`; .ci/run installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
