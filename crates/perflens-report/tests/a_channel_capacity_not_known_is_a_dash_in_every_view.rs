//! A channel's capacity is a number, `unbounded`, or not known (none of
//! the site's channels was made in the session: `capacity_known` false),
//! and each view tells the three apart: the terminal table and the HTML
//! report (opened in headless Chromium, as `html_opens_in_chromium.rs`
//! does) show `-` for a capacity not known, never `unbounded`; a report
//! written before `capacity_known` existed reads its `null` as unbounded,
//! as it was written.

mod common;

use perflens_report::{ChannelRow, Report, ReportOptions, write_html, write_table};
use std::process::Command;

/// The fixture's report with three channel rows: bounded, unbounded,
/// and one whose capacity is not known.
fn report() -> Report {
    let base = ChannelRow {
        name: "bounded".into(),
        created: 1,
        senders: 1,
        receivers: 1,
        sent: 5,
        received: 3,
        queued: 2,
        max_queued: 2,
        capacity: Some(8),
        capacity_known: true,
        ..ChannelRow::default()
    };
    let mut report = Report::from_snapshot(&common::fixture(), &ReportOptions::default());
    report.channels = vec![
        base.clone(),
        ChannelRow {
            name: "unbounded".into(),
            capacity: None,
            ..base.clone()
        },
        ChannelRow {
            name: "made before".into(),
            created: 0,
            capacity: None,
            capacity_known: false,
            ..base
        },
    ];
    report
}

#[test]
fn the_terminal_table_shows_a_capacity_not_known_as_a_dash() {
    let mut out = Vec::new();
    write_table(&report(), &mut out).unwrap();
    let table = String::from_utf8(out).unwrap();
    let header = (table.lines())
        .find(|l| l.starts_with("Channel "))
        .unwrap_or_else(|| panic!("no Channels table:\n{table}"));
    let end = header.find("Capacity").unwrap() + "Capacity".len();
    let start = header[..end - "Capacity".len()].trim_end().len();
    let cell = |name: &str| {
        let line = (table.lines())
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{table}"));
        line[start..end].trim().to_string()
    };
    assert_eq!(cell("bounded"), "8", "{table}");
    assert_eq!(cell("unbounded"), "unbounded", "{table}");
    assert_eq!(cell("made before"), "-", "{table}");
}

#[test]
fn a_report_without_capacity_known_reads_its_null_as_unbounded() {
    let mut doc: serde_json::Value = {
        let mut out = Vec::new();
        perflens_report::write_json(&report(), &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    };
    for c in doc["channels"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("capacity_known");
    }
    let old = Report::from_json_str(&doc.to_string()).unwrap();
    for c in &old.channels {
        assert!(c.capacity_known, "{c:?}");
    }
}

/// Run last in the page: the Channels table's header and cells, as JSON.
const PROBE: &str = r##"<script>
window.addEventListener("load", () => {
  const out = {
    header: [...document.querySelectorAll("#channels th")].map((c) => c.textContent),
    rows: [...document.querySelectorAll("#channels tbody tr")].map((r) => [...r.cells].map((c) => c.textContent)),
  };
  const th = [...document.querySelectorAll("#channels th")].find((t) => t.textContent === "Capacity");
  th.click();
  out.by_capacity = [...document.querySelectorAll("#channels tbody tr")].map((r) => r.cells[0].textContent);
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"##;

#[test]
fn the_html_report_shows_a_capacity_not_known_as_a_dash() {
    let mut page = Vec::new();
    write_html(&report(), "perflens: test", None, &mut page).unwrap();
    let page = String::from_utf8(page)
        .unwrap()
        .replacen("</body>", &format!("{PROBE}</body>"), 1);
    let dir = std::env::temp_dir().join(format!("perflens-html-capacity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("report.html");
    std::fs::write(&file, page).unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-extensions",
            "--disable-component-update",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs (Debian's `chromium`; .ci/run installs it)");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8(out.stdout).unwrap();
    let probe = dom
        .split("<pre id=\"probe\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("no probe output in the DOM:\n{dom}"))
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"");
    let probe: serde_json::Value = serde_json::from_str(&probe).unwrap();
    let header: Vec<&str> = (probe["header"].as_array().unwrap().iter())
        .map(|h| h.as_str().unwrap())
        .collect();
    let col = header.iter().position(|&h| h == "Capacity").unwrap();
    let cell = |name: &str| {
        (probe["rows"].as_array().unwrap().iter())
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("no row {name}: {probe}"))[col]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(cell("bounded"), "8");
    assert_eq!(cell("unbounded"), "unbounded");
    assert_eq!(cell("made before"), "-");
    // Sorted by capacity, largest first: unbounded, 8, not known.
    assert_eq!(
        probe["by_capacity"],
        serde_json::json!(["unbounded", "bounded", "made before"])
    );
}
