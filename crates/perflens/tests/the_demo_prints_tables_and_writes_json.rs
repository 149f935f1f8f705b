//! The README's demo (`examples/overview.rs`, built by the test) runs
//! under `#[perflens::main]`, prints the tables and writes a JSON report
//! through `PERFLENS_JSON` that reads back with exact call counts.
#![cfg(feature = "enabled")]

mod common;
use common::example;
use std::process::Command;

#[test]
fn the_demo_prints_tables_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("perflens-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("report.json");
    let out = Command::new(example("overview"))
        .env("PERFLENS_EXAMPLE_ITERS", "3")
        .env("PERFLENS_JSON", &json)
        .env_remove("PERFLENS_FORMAT")
        .env_remove("PERFLENS_MODE")
        .output()
        .expect("run examples/overview");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for needle in [
        "Function",
        "Calls",
        "p50",
        "p95",
        "p99",
        "Total",
        "Self",
        "% Total",
        "Hot path",
        "overview::sync_work",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    assert!(stderr.contains("JSON report written to"), "{stderr}");

    let text = std::fs::read_to_string(&json).unwrap();
    let report = perflens::Report::from_json_str(&text).expect("the JSON report reads back");
    assert_eq!(report.schema, "perflens.report/1");
    let calls = |f: &str| report.function(&format!("overview::{f}")).map(|r| r.calls);
    assert_eq!(calls("main"), Some(1));
    assert_eq!(calls("iteration"), Some(3));
    assert_eq!(calls("sync_work"), Some(3));
    assert_eq!(calls("sync_alloc"), Some(3));
    assert_eq!(calls("async_sleep"), Some(3));
    let sleep = report.function("overview::async_sleep").unwrap();
    assert!(
        sleep.wait_ns.unwrap() > sleep.busy_ns.unwrap(),
        "a sleep mostly waits"
    );
    // A percentile is its bucket's midpoint, within 1/64 of the value.
    assert!(
        sleep.p50_ns >= 10_000_000 - 10_000_000 / 32,
        "10 ms sleep: p50 {}",
        sleep.p50_ns
    );
    let leaf = report
        .path(&[
            "overview::main",
            "overview::iteration",
            "overview::sync_work",
        ])
        .unwrap();
    assert_eq!(leaf.calls, 3);
    assert_eq!(leaf.segments.len(), 3);
    #[cfg(feature = "alloc")]
    {
        // `#[perflens::main]` installed the counting allocator: each of
        // the 3 sync_alloc calls allocated 1000 buffers of 1 KiB.
        assert!(stderr.contains("Allocations"), "{stderr}");
        let alloc = report.function("overview::sync_alloc").unwrap();
        assert_eq!(alloc.alloc.map(|a| a.bytes), Some(3 * 1000 * 1024));
        assert_eq!(alloc.alloc.map(|a| a.count), Some(3 * 1000));
        assert_eq!(alloc.alloc.map(|a| a.free_bytes), Some(3 * 1000 * 1024));
        assert_eq!(alloc.alloc.map(|a| a.avg_bytes), Some(1000 * 1024));
        let total = report.alloc.as_ref().unwrap().total_bytes;
        let share = alloc.alloc_percent_of(total).unwrap();
        assert!(share > 90.0, "sync_alloc has {share:.1}% of the bytes");
        let work = report.function("overview::sync_work").unwrap();
        assert_eq!(
            (
                work.alloc.map(|a| a.bytes),
                work.alloc.map(|a| a.incl_bytes)
            ),
            (Some(0), Some(0))
        );
    }
    // Threads the profiler runs for itself (the CPU sampler's watcher)
    // are not the program's: they are not in the report.
    for t in &report.threads {
        assert!(
            !t.name.as_deref().unwrap_or("").starts_with("perflens"),
            "{t:?}"
        );
    }
    // Re-serialising gives the same report.
    let mut again = Vec::new();
    perflens::write_json(&report, &mut again).unwrap();
    assert_eq!(
        perflens::Report::from_json_str(std::str::from_utf8(&again).unwrap()).unwrap(),
        report
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `PERFLENS_HTML` writes the offline page at the end of the session:
/// the report inside it is the one `PERFLENS_JSON` wrote, and with
/// `PERFLENS_TRACE=x.json` the trace is in it too, for its timeline.
#[test]
fn perflens_html_writes_the_page_with_the_report_and_its_trace() {
    let dir = std::env::temp_dir().join(format!("perflens-demo-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, html, trace) = (
        dir.join("report.json"),
        dir.join("report.html"),
        dir.join("trace.json"),
    );
    let out = Command::new(example("overview"))
        .env("PERFLENS_EXAMPLE_ITERS", "3")
        .env("PERFLENS_JSON", &json)
        .env("PERFLENS_HTML", &html)
        .env("PERFLENS_TRACE", &trace)
        .env("PERFLENS_FORMAT", "none")
        .env_remove("PERFLENS_MODE")
        .output()
        .expect("run examples/overview");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("HTML report written to"), "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    let inside = |id: &str| {
        let start = format!("<script type=\"application/json\" id=\"{id}\">");
        let from = page.find(&start).unwrap() + start.len();
        let len = page[from..].find("</script>").unwrap();
        page[from..from + len].to_string()
    };
    let embedded = perflens::Report::from_json_str(&inside("perflens-report")).unwrap();
    let saved = perflens::Report::from_json_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(embedded, saved, "the page holds the session's report");
    let embedded: serde_json::Value = serde_json::from_str(&inside("perflens-trace")).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(embedded, saved, "and its trace");
    // Nothing outside the file: no external script, style or image.
    for external in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!page.contains(external), "{external}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
