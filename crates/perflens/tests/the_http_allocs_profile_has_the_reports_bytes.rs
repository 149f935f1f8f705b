//! `/debug/pprof/allocs`: `go tool pprof` reads, over HTTP, the bytes
//! allocated per call path, adding up to the report's bytes, the path
//! that allocated them named by its measured functions.
#![cfg(all(feature = "http", feature = "alloc"))]

use perflens::Session;
mod common;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

#[perflens::measure]
fn fill(n: usize) -> usize {
    let v: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 1000]).collect();
    std::hint::black_box(v.len())
}

#[perflens::measure]
fn outer() -> usize {
    fill(100)
}

#[test]
fn go_tool_pprof_reads_the_allocation_profile_with_the_reports_bytes() {
    let s = Session::builder()
        .ignore_env()
        .http("127.0.0.1:0")
        .start()
        .unwrap();
    let addr = s.http_addr().unwrap();
    outer();
    let text = common::go_pprof_top("alloc_space", &format!("http://{addr}/debug/pprof/allocs"));
    let report = s.finish();
    // "Showing nodes accounting for X B, 100% of Y B total"
    let total: f64 = text
        .split(" of ")
        .nth(1)
        .and_then(|t| t.split("B total").next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in:\n{text}"));
    let bytes = report.alloc.as_ref().unwrap().total_bytes as f64;
    assert!(
        (total - bytes).abs() <= 0.05 * bytes,
        "profile {total} B, report {bytes} B:\n{text}"
    );
    // fill's own 100 buffers of 1000 bytes and its vector of them, on
    // the path outer > fill.
    let fill_line = (text.lines())
        .find(|l| l.trim_end().ends_with("::fill"))
        .unwrap_or_else(|| panic!("no fill row:\n{text}"));
    let flat: f64 = fill_line
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches('B')
        .parse()
        .unwrap();
    let want = report
        .function(&fill_row(&report))
        .unwrap()
        .alloc
        .unwrap()
        .bytes as f64;
    assert_eq!(flat, want, "{fill_line}");
    assert!(want >= 100_000.0);
}

/// The row name of `fill` (its module path is the test's).
fn fill_row(report: &perflens::Report) -> String {
    (report.functions.iter())
        .find(|f| f.name.ends_with("::fill"))
        .unwrap()
        .name
        .clone()
}
