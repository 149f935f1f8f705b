//! The offline HTML report, opened in headless Chromium (Debian's
//! `chromium`, which `.ci/run` installs; without it these tests fail):
//! the DOM has the rows, a scripted click sorts them and typing filters
//! them, the tree and the flamegraph are drawn, no request of any kind
//! leaves the page, and a report of 10,000 nodes makes a file under 5 MB
//! that is ready in under 2 s.

mod common;

use common::SnapBuilder;
use perflens_core::snapshot::Mode;
use perflens_report::{Report, ReportOptions, write_html};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> Report {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    Report::from_json_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("perflens-html-{}-{name}", std::process::id()))
}

/// Run first in the page (before its own script): records every request
/// the Content-Security-Policy blocked.
const WATCH: &str = r#"<script>
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.blockedURI || e.violatedDirective));
</script>"#;

/// Run last: what the test checks, written into the DOM as JSON.
const PROBE: &str = r##"<script>
window.addEventListener("load", () => {
  const names = () => [...document.querySelectorAll("#functions tbody tr")].map((r) => r.cells[0].textContent);
  // Laid out: the time to a page one can read (layout forced here).
  document.body.getBoundingClientRect();
  const out = { ready: document.body.dataset.ready, ready_ms: window.perflensReadyMs, laid_out_ms: performance.now() };
  out.rows = names();
  const th = [...document.querySelectorAll("#functions th")].find((t) => t.textContent === "Calls");
  th.click();
  out.by_calls = names();
  out.calls_header = th.className;
  th.click();
  out.by_calls_up = names();
  const input = document.querySelector("#functions input.filter");
  input.value = "fi";
  input.dispatchEvent(new Event("input"));
  out.filtered = names();
  out.count_line = document.querySelector("#functions .count").textContent;
  out.tree_rows = document.querySelectorAll("#paths tbody tr").length;
  const first = document.querySelector("#paths tbody tr td.name");
  if (first) first.click();
  out.tree_rows_closed = document.querySelectorAll("#paths tbody tr").length;
  out.flame_boxes = document.querySelectorAll("#flame .flame div").length;
  out.waits_rows = [...document.querySelectorAll("#waits tbody tr")].map((r) => r.cells[0].textContent);
  out.waits_header = [...document.querySelectorAll("#waits th")].map((c) => c.textContent);
  out.waits_cells = [...document.querySelectorAll("#waits tbody tr")].map((r) => [...r.cells].map((c) => c.textContent));
  out.lanes = window.perflensTimeline ? window.perflensTimeline.lanes.map((l) => l.name + ":" + l.slices.length + ":" + l.depth) : null;
  out.arrows = window.perflensTimeline ? window.perflensTimeline.arrows.length : null;
  out.resources = performance.getEntriesByType("resource").map((e) => e.name);
  out.violations = window.__violations;
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"##;

/// Writes `report`'s page, with the watch and the probe (and `extra`, in
/// the body) added, opens it in headless Chromium, and returns what the
/// probe found, and the URLs the browser's own network log saw.
fn open(report: &Report, name: &str, extra: &str) -> (Value, Vec<String>) {
    open_traced(report, None, name, extra)
}

/// As [`open`], with a Chrome JSON trace.
fn open_traced(
    report: &Report,
    trace: Option<&str>,
    name: &str,
    extra: &str,
) -> (Value, Vec<String>) {
    let mut page = Vec::new();
    write_html(report, "perflens: test", trace, &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    let page = page
        .replacen("<head>", &format!("<head>{WATCH}"), 1)
        .replacen("</body>", &format!("{extra}{PROBE}</body>"), 1);
    let file = temp(name);
    std::fs::write(&file, page).unwrap();
    let netlog = temp(&format!("{name}.netlog.json"));
    let dom = chromium(&file, &netlog);
    let probe = dom
        .split("<pre id=\"probe\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("no probe output in the DOM:\n{dom}"));
    let probe = probe
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"");
    let urls = netlog_urls(&netlog);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&netlog);
    let _ = std::fs::remove_dir_all(format!("{}.profile", netlog.display()));
    (serde_json::from_str(&probe).unwrap(), urls)
}

/// Chromium's own background requests, off: they would fill the network
/// log with the browser's traffic (time, dictionaries, accounts), not
/// the page's.
const QUIET: &[&str] = &[
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-spell-checking",
    "--no-pings",
    "--disable-features=Translate,OptimizationHints,MediaRouter,NetworkTimeServiceQuerying,AutofillServerCommunication,CertificateTransparencyComponentUpdater,SpareRendererForSitePerProcess",
];

/// `chromium --dump-dom` of a file, with a network log.
fn chromium(file: &Path, netlog: &Path) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--window-size=1280,800",
        ])
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(QUIET)
        .arg(format!("--user-data-dir={}.profile", netlog.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs (Debian's `chromium`; .ci/run installs it)");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The URLs the page requested, from Chromium's network log: the jobs
/// whose initiator is an origin (the page's is `null`, a file's), not
/// the browser's own background requests (`not an origin`: time,
/// dictionaries, accounts), which no flag turns all off.
fn netlog_urls(netlog: &Path) -> Vec<String> {
    let mut text = std::fs::read_to_string(netlog).expect("chromium wrote its network log");
    // The browser may exit before closing the event list.
    if !text.trim_end().ends_with('}') {
        text = format!("{}]}}", text.trim_end().trim_end_matches(','));
    }
    let log: Value = serde_json::from_str(&text).expect("a network log");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .unwrap();
    (log["events"].as_array().unwrap().iter())
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .map(|e| &e["params"])
        .filter(|p| p["initiator"].as_str() != Some("not an origin"))
        .filter_map(|p| p["url"].as_str().map(str::to_string))
        .collect()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn rows_sort_on_a_click_filter_as_typed_and_nothing_leaves_the_page() {
    // run, fib and serve: 1, 6 and 3 calls; 40, 20 and 16 ms in total.
    let (probe, urls) = open(&fixture("full_report.json"), "full.html", "");
    assert_eq!(probe["ready"], "1");
    assert_eq!(
        strings(&probe["rows"]),
        ["run", "fib", "serve"],
        "by total at first"
    );
    assert_eq!(
        strings(&probe["by_calls"]),
        ["fib", "serve", "run"],
        "a click on Calls: most first"
    );
    assert_eq!(probe["calls_header"], "num sorted desc");
    assert_eq!(
        strings(&probe["by_calls_up"]),
        ["run", "serve", "fib"],
        "again: fewest first"
    );
    assert_eq!(strings(&probe["filtered"]), ["fib"]);
    assert_eq!(probe["count_line"], "1 of 3 rows");
    // The tree opens its heaviest chain (run > fib, serve...) and closes
    // on a click.
    let (open_rows, closed_rows) = (
        probe["tree_rows"].as_u64().unwrap(),
        probe["tree_rows_closed"].as_u64().unwrap(),
    );
    assert!(
        open_rows > closed_rows && closed_rows >= 1,
        "{open_rows} then {closed_rows}"
    );
    assert!(
        probe["flame_boxes"].as_u64().unwrap() >= 3,
        "the flamegraph has run, fib, serve"
    );
    assert_eq!(
        strings(&probe["resources"]),
        [] as [&str; 0],
        "no resource was fetched"
    );
    assert_eq!(
        strings(&probe["violations"]),
        [] as [&str; 0],
        "no request was attempted"
    );
    let remote: Vec<&String> = (urls.iter())
        .filter(|u| !u.starts_with("file:") && !u.starts_with("data:"))
        .collect();
    assert!(remote.is_empty(), "the page requested {remote:?}");
}

/// The Waits section lists the report's await sites, and the timeline
/// draws the trace's tracks, nested slices and arrows.
#[test]
fn waits_and_the_timeline_with_its_arrows_are_shown() {
    let mut report = fixture("full_report.json");
    let wait = |site: &str, wait_ns, cancelled, cancelled_wait_ns| perflens_report::WaitRow {
        site: site.into(),
        function: "serve".into(),
        file: "src/main.rs".into(),
        line: 42,
        column: 9,
        expr: "db.query()".into(),
        count: 3,
        suspended: 3,
        wait_ns,
        p50_ns: wait_ns / 3,
        p99_ns: wait_ns / 2,
        measured_ns: 0,
        measured_children: Vec::new(),
        uninstrumented: true,
        cancelled,
        cancelled_wait_ns,
    };
    // Of the first site's 3 awaits, one was cancelled after 4 ms.
    report.waits = vec![
        wait("serve:42", 9_000_000, 1, 4_000_000),
        wait("serve:57", 2_000_000, 0, 0),
    ];
    // Two threads; on the first, `a` holds `b`; an arrow from `a` to the
    // poll `f` on the second.
    let trace = r#"{"displayTimeUnit":"ns","traceEvents":[
{"ph":"M","name":"process_name","pid":7,"args":{"name":"demo"}},
{"ph":"M","name":"thread_name","pid":7,"tid":1,"args":{"name":"main"}},
{"ph":"M","name":"thread_name","pid":7,"tid":2,"args":{"name":"worker"}},
{"ph":"X","cat":"sync","name":"a","pid":7,"tid":1,"ts":1.000,"dur":8.000},
{"ph":"X","cat":"sync","name":"b","pid":7,"tid":1,"ts":2.000,"dur":1.000},
{"ph":"X","cat":"poll","name":"f","pid":7,"tid":2,"ts":5.000,"dur":2.000},
{"ph":"s","cat":"flow","name":"waited on","id":1,"pid":7,"tid":1,"ts":2.500},
{"ph":"f","bp":"e","cat":"flow","name":"waited on","id":1,"pid":7,"tid":2,"ts":5.500}
]}"#;
    let (probe, urls) = open_traced(&report, Some(trace), "traced.html", "");
    assert_eq!(
        strings(&probe["waits_rows"]),
        ["serve:42", "serve:57"],
        "by wait"
    );
    // The completed awaits and the cancelled ones apart: 2 completed
    // waited 5 ms, 1 cancelled 4 ms.
    let header = strings(&probe["waits_header"]);
    let cells = |row: usize| -> Vec<(String, String)> {
        let cells = probe["waits_cells"][row].as_array().unwrap();
        (header.iter().map(|h| h.to_string()))
            .zip(cells.iter().map(|c| c.as_str().unwrap().to_string()))
            .collect()
    };
    let first = cells(0);
    let cell = |name: &str| first.iter().find(|(h, _)| h == name).unwrap().1.clone();
    assert_eq!(
        ["Completed", "Waited", "Cancelled", "Cancelled wait"].map(cell),
        ["2", "5.00 ms", "1", "4.00 ms"],
        "{first:?}"
    );
    assert_eq!(
        strings(&probe["lanes"]),
        ["main:2:2", "worker:1:1"],
        "name:slices:depth"
    );
    assert_eq!(probe["arrows"], 1);
    assert!(urls.is_empty(), "{urls:?}");
    // A trace that is not JSON, or not a Chrome trace, is refused.
    for bad in ["not json", r#"{"a":1}"#] {
        let mut page = Vec::new();
        let e = write_html(&report, "t", Some(bad), &mut page).unwrap_err();
        assert!(page.is_empty() && e.to_string().contains("trace"), "{e}");
    }
}

/// The checks above can fail: a page that does try to fetch something
/// is caught by both the policy's report and the network log's absence
/// of the request (the policy blocks it before it is made).
#[test]
fn a_page_that_tries_a_request_is_caught() {
    let (probe, urls) = open(
        &fixture("full_report.json"),
        "leaky.html",
        r#"<img src="http://127.0.0.1:9/pixel.png"><script>fetch("http://127.0.0.1:9/x").catch(() => {});</script>"#,
    );
    let violations = strings(&probe["violations"]);
    assert!(
        violations.iter().any(|v| v.contains("127.0.0.1")),
        "{violations:?}"
    );
    assert!(
        !urls.iter().any(|u| u.contains("127.0.0.1:9")),
        "blocked before any request was made: {urls:?}"
    );
}

/// And the network log does see a page's request when nothing blocks
/// it: the same page with its policy taken out requests the image.
#[test]
fn without_its_policy_the_same_request_is_made_and_logged() {
    let mut page = Vec::new();
    write_html(&fixture("full_report.json"), "t", None, &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    let start = page
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = start + page[start..].find('>').unwrap() + 1;
    let page = format!(
        "{}{}",
        &page[..start],
        &page[end..].replacen(
            "</body>",
            r#"<img src="http://127.0.0.1:9/pixel.png"></body>"#,
            1
        )
    );
    let file = temp("open.html");
    std::fs::write(&file, page).unwrap();
    let netlog = temp("open.netlog.json");
    chromium(&file, &netlog);
    let urls = netlog_urls(&netlog);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&netlog);
    let _ = std::fs::remove_dir_all(format!("{}.profile", netlog.display()));
    assert!(
        urls.iter().any(|u| u == "http://127.0.0.1:9/pixel.png"),
        "{urls:?}"
    );
}

/// 10,000 calling contexts (100 top-level functions, 99 callees each,
/// from 600 names): under 5 MB, ready in Chromium in under 2 s.
#[test]
fn ten_thousand_nodes_make_a_small_file_that_opens_quickly() {
    let mut b = SnapBuilder::new(Mode::Timed);
    let t = b.thread("main");
    let mut nodes = 0;
    for top in 0..100u64 {
        let name = format!("app::service_{top}::handle_request");
        b.node(t, &[&name], 1_000 + top, 50_000_000, 1_000_000);
        nodes += 1;
        for child in 0..99u64 {
            let callee = format!("app::layer_{}::step_{}", child % 6, (top * 7 + child) % 100);
            b.node(
                t,
                &[&name, &callee],
                10 + child,
                400_000 + child * 1_000,
                300_000,
            );
            nodes += 1;
        }
    }
    assert_eq!(nodes, 10_000);
    let report = Report::from_snapshot(&b.build(), &ReportOptions::default());
    // A path per node (each spent time itself): the 9,900 callees, each
    // with its caller's figures in its segments, and the 100 callers.
    assert_eq!(report.paths.len(), 10_000);
    let mut page = Vec::new();
    write_html(&report, "big", None, &mut page).unwrap();
    assert!(page.len() < 5_000_000, "{} bytes", page.len());
    let (probe, _) = open(&report, "big.html", "");
    assert_eq!(probe["ready"], "1");
    let ms = probe["laid_out_ms"].as_f64().unwrap();
    assert!(ms < 2_000.0, "laid out after {ms} ms");
    assert!(probe["ready_ms"].as_f64().unwrap() <= ms);
    assert_eq!(
        probe["rows"].as_array().unwrap().len(),
        report.functions.len()
    );
    eprintln!(
        "10,000 nodes: {} bytes, {} functions, laid out {ms:.0} ms after navigation",
        page.len(),
        report.functions.len()
    );
}
