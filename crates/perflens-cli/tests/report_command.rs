//! `perflens report FILE.json` prints what the program printed, from the
//! JSON report it saved; bad input gets one line and exit code 2.

use perflens_core::{Callsite, Guard, RecordingOptions, start};
use perflens_report::{Report, ReportOptions};
use std::path::PathBuf;
use std::process::{Command, Output};

static OUTER: Callsite = Callsite::new("app::outer", || "");
static INNER: Callsite = Callsite::new("app::inner", || "");
static BETA: Callsite = Callsite::new("app::beta", || "");

/// A real session's report, as a program saves it with `PERFLENS_JSON`
/// (one session per process: made once, for every test).
fn saved_report() -> (Report, String) {
    static SAVED: std::sync::OnceLock<(Report, String)> = std::sync::OnceLock::new();
    SAVED.get_or_init(record).clone()
}

fn record() -> (Report, String) {
    let rec = start(&RecordingOptions::default()).expect("one session");
    for _ in 0..3 {
        let _o = Guard::enter(&OUTER);
        for _ in 0..4 {
            let _i = Guard::enter(&INNER);
            std::hint::black_box(0);
        }
    }
    for _ in 0..7 {
        let _b = Guard::enter(&BETA);
    }
    let snap = rec.finish();
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    let mut json = Vec::new();
    perflens_report::write_json(&report, &mut json).unwrap();
    let json = String::from_utf8(json).unwrap();
    // What a reader gets back (the display limit is not in the JSON).
    (Report::from_json_str(&json).unwrap(), json)
}

fn temp(name: &str, contents: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("perflens-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, contents).unwrap();
    p
}

fn perflens(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perflens"))
        .args(args)
        .output()
        .unwrap()
}

/// The names in the function table of a printed report, in order.
fn function_rows(text: &str) -> Vec<&str> {
    (text.lines())
        .skip_while(|l| !l.starts_with("Function"))
        .skip(2)
        .take_while(|l| l.starts_with("app::"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn report_prints_the_programs_tables_and_json() {
    let (report, json) = saved_report();
    let file = temp("report.json", json.as_bytes());
    let f = file.to_str().unwrap();

    let out = perflens(&["report", f]);
    assert!(out.status.success(), "{out:?}");
    let mut expected = Vec::new();
    perflens_report::write_table(&report, &mut expected).unwrap();
    assert_eq!(stdout(&out), String::from_utf8(expected).unwrap());
    assert!(stdout(&out).contains("app::inner"));

    let out = perflens(&["report", f, "--format", "json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(Report::from_json_str(&stdout(&out)).unwrap(), report);

    // --sort and --limit: the function table's rows by name, one row.
    let out = perflens(&["report", f, "--sort", "name", "--limit", "1"]);
    let text = stdout(&out);
    assert_eq!(function_rows(&text), ["app::beta"], "{text}");
    let out = perflens(&["report", f, "--sort", "calls", "--limit", "0"]);
    let text = stdout(&out);
    assert_eq!(
        function_rows(&text),
        ["app::inner", "app::beta", "app::outer"],
        "{text}"
    );
    let _ = std::fs::remove_file(&file);
}

/// Exit code 2 and exactly one line on stderr, naming the problem.
fn refused(args: &[&str], says: &str) {
    let out = perflens(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_gets_one_line_and_exit_code_2() {
    let (_, json) = saved_report();
    let truncated = temp("truncated.json", &json.as_bytes()[..json.len() / 2]);
    let not_a_report = temp("other.json", br#"{"name": "not a report"}"#);
    let binary = temp("binary.json", &[0xff, 0x00, 0x13, 0x37]);
    let empty = temp("empty.json", b"");
    for (file, says) in [
        (&truncated, "truncated.json"),
        (&not_a_report, "not a perflens report"),
        (&binary, "binary.json"),
        (&empty, "empty.json"),
    ] {
        refused(&["report", file.to_str().unwrap()], says);
        let _ = std::fs::remove_file(file);
    }
    refused(&["report", "/nonexistent/perflens.json"], "cannot open");
    refused(&["report", "/tmp"], "is a directory");
}

#[test]
fn a_wrong_command_line_gets_the_usage_and_exit_code_2() {
    for args in [
        &[][..],
        &["frobnicate"][..],
        &["report"][..],
        &["report", "x.json", "--format", "yaml"][..],
        &["report", "x.json", "--sort", "colour"][..],
        &["report", "x.json", "--limit"][..],
        &["report", "x.json", "--wait-min", "soon"][..],
        &["report", "x.json", "--wait-min", "-1ms"][..],
        &["snapshot", "--wait-min", "1 h"][..],
    ] {
        let out = perflens(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("perflens report FILE.json"));
    }
}

/// A Waits row of `wait_ns` at `line`.
fn wait_row(line: u32, wait_ns: u64) -> perflens_report::WaitRow {
    perflens_report::WaitRow {
        site: format!("app::outer:{line}"),
        function: "app::outer".into(),
        file: "src/app.rs".into(),
        line,
        column: 9,
        expr: "sleep(d)".into(),
        count: 2,
        suspended: 2,
        wait_ns,
        p50_ns: wait_ns / 2,
        p99_ns: wait_ns / 2,
        measured_ns: 0,
        measured_children: Vec::new(),
        uninstrumented: true,
        cancelled: 0,
        cancelled_wait_ns: 0,
    }
}

#[test]
fn wait_min_keeps_the_sites_that_waited_that_long() {
    let (mut report, _) = saved_report();
    let ms = 1_000_000;
    report.waits = vec![
        wait_row(10, 5 * ms),
        wait_row(11, 2 * ms),
        wait_row(12, ms / 2),
    ];
    report.wait_min_ns = Some(0);
    let mut json = Vec::new();
    perflens_report::write_json(&report, &mut json).unwrap();
    let file = temp("waits.json", &json);
    let f = file.to_str().unwrap();
    let lines = |args: &[&str]| -> (Vec<u32>, Option<u64>) {
        let out = perflens(&[&["report", f, "--format", "json"][..], args].concat());
        assert!(out.status.success(), "{out:?}");
        let r = Report::from_json_str(&stdout(&out)).unwrap();
        (r.waits.iter().map(|w| w.line).collect(), r.wait_min_ns)
    };
    assert_eq!(lines(&[]), (vec![10, 11, 12], Some(0)));
    assert_eq!(lines(&["--wait-min", "1ms"]), (vec![10, 11], Some(ms)));
    assert_eq!(lines(&["--wait-min", "2"]), (vec![10, 11], Some(2 * ms)));
    assert_eq!(
        lines(&["--wait-min", "2001us"]),
        (vec![10], Some(2_001_000))
    );
    assert_eq!(lines(&["--wait-min", "0"]), (vec![10, 11, 12], Some(0)));
    // The table shows the section.
    let out = perflens(&["report", f, "--wait-min", "1ms"]);
    let text = stdout(&out);
    let rows: Vec<&str> = (text.lines())
        .skip_while(|l| !l.starts_with("Await "))
        .skip(2)
        .take_while(|l| l.starts_with("app::"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(
        text.contains("waits ≥ 1.00 ms in total (PERFLENS_WAIT_MIN)"),
        "{text}"
    );
    let _ = std::fs::remove_file(&file);
}

/// `perflens html REPORT.json -o FILE.html` writes the offline page with
/// the report in it; a missing `-o`, a file that is not a report or a
/// trace that is not JSON get one line and exit code 2, and no page.
#[test]
fn html_writes_the_page_and_bad_input_gets_exit_2() {
    let (report, json) = saved_report();
    let file = temp("html-report.json", json.as_bytes());
    let page = std::env::temp_dir().join(format!("perflens-cli-{}-page.html", std::process::id()));
    let o = perflens(&["html", file.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&page).unwrap();
    let start = "<script type=\"application/json\" id=\"perflens-report\">";
    let from = text.find(start).unwrap() + start.len();
    let to = from + text[from..].find("</script>").unwrap();
    assert_eq!(Report::from_json_str(&text[from..to]).unwrap(), report);
    assert!(
        text.contains("<title>perflens: "),
        "titled by the report's file"
    );
    std::fs::remove_file(&page).unwrap();

    let not_json = temp("html-trace.txt", b"not json");
    let cases: [(&[&str], &str); 4] = [
        (
            &["html", file.to_str().unwrap()],
            "-o FILE.html is required",
        ),
        (&["html", "-o", page.to_str().unwrap()], "which JSON report"),
        (
            &[
                "html",
                not_json.to_str().unwrap(),
                "-o",
                page.to_str().unwrap(),
            ],
            "html-trace.txt",
        ),
        (
            &[
                "html",
                file.to_str().unwrap(),
                "--trace",
                not_json.to_str().unwrap(),
                "-o",
                page.to_str().unwrap(),
            ],
            "the trace is not JSON",
        ),
    ];
    for (args, says) in cases {
        let o = perflens(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.lines().next().unwrap().contains(says),
            "{args:?}: {err}"
        );
        assert!(!page.exists(), "{args:?} wrote a page");
    }
}
