//! The options of `#[perflens::main]` change what a program prints:
//! `examples/main_options.rs` asks for percentiles 50 and 99.9, two rows
//! per table and JSON output; `PERFLENS_FORMAT` overrides the format.
#![cfg(feature = "enabled")]

mod common;
use common::example;
use std::process::{Command, Output};

fn run(format: Option<&str>) -> String {
    let mut cmd = Command::new(example("main_options"));
    for var in [
        "PERFLENS_FORMAT",
        "PERFLENS_PERCENTILES",
        "PERFLENS_LIMIT",
        "PERFLENS_MODE",
        "PERFLENS_JSON",
    ] {
        cmd.env_remove(var);
    }
    if let Some(f) = format {
        cmd.env("PERFLENS_FORMAT", f);
    }
    let out: Output = cmd.output().expect("run examples/main_options");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let caps = perflens_sys::CAPABILITIES;
    if caps.stop_signals && caps.cpu_sampling {
        return stderr;
    }
    // A build without a mechanism says first, once, what it lacks: the
    // portable build that a stop signal writes no report (and, with
    // `cpu`, why it samples nothing), the POSIX build why it samples
    // nothing; the program's output follows.
    use common::capabilities::{CPU_UNAVAILABLE_LINE, NO_STOP_SIGNALS_LINE};
    let notice = |l: &str| {
        (!caps.stop_signals && l.starts_with(NO_STOP_SIGNALS_LINE))
            || (!caps.cpu_sampling && l.starts_with(CPU_UNAVAILABLE_LINE))
    };
    let notices: Vec<&str> = stderr.lines().take_while(|l| notice(l)).collect();
    assert_eq!(
        notices.iter().any(|l| l.starts_with(NO_STOP_SIGNALS_LINE)),
        !caps.stop_signals,
        "{stderr}"
    );
    (stderr.lines().skip(notices.len()))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn main_options_change_the_output() {
    // format = "json": the whole report on stderr, every row whatever
    // the limit, with the configured percentiles.
    let json = run(None);
    let report = perflens::Report::from_json_str(&json).expect("stderr is the JSON report");
    assert_eq!(report.percentiles, [50.0, 99.9]);
    let mut names: Vec<&str> = report.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "main_options::fast",
            "main_options::main",
            "main_options::medium",
            "main_options::slow"
        ]
    );
    // main -> slow, medium, fast, and main itself (its own time): every
    // path, whatever the limit.
    assert_eq!(report.paths.len(), 4, "every path, whatever the limit");
    let slow = report.function("main_options::slow").unwrap();
    assert_eq!(slow.calls, 5);
    let labels: Vec<&str> = slow.percentiles.0.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["p50", "p99.9"]);
    assert!(slow.percentiles.get("p99.9").unwrap() >= 3_000_000);

    // The table: p50 and p99.9 columns (no p95), two function rows.
    let table = run(Some("table"));
    let header = table
        .lines()
        .find(|l| l.starts_with("Function"))
        .unwrap_or_else(|| panic!("no function table:\n{table}"));
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "Function", "Calls", "Avg", "p50", "p99.9", "Total", "Self", "%", "Total"
        ]
    );
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("Function"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 3, "two rows and the 'more' line:\n{table}");
    assert!(rows[0].starts_with("main_options::main"), "{table}");
    assert!(rows[1].starts_with("main_options::slow"), "{table}");
    assert!(rows[2].contains("2 more"), "{table}");
}
