//! A program written for hotpath 0.30.3 (`examples/from_hotpath.rs`:
//! hotpath's README shape, `hotpath::` replaced by `perflens::`) builds,
//! runs, and reports what it did, under the options it gave hotpath:
//! `percentiles = [99]` (one percentile column), `format = "json-pretty"`
//! (perflens's JSON, which is pretty), `limit = 0` (every row) and
//! `output_path` (the report goes to that file, not to stderr).
//! `PERFLENS_FORMAT` and `PERFLENS_OUTPUT` override the last two, as
//! `HOTPATH_OUTPUT_FORMAT` and `HOTPATH_OUTPUT_PATH` do in hotpath.
#![cfg(feature = "enabled")]

mod common;
use common::capabilities::{CPU_UNAVAILABLE_LINE, NO_STOP_SIGNALS_LINE};
use common::{example, rerun_self};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh, empty directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perflens-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The lines of `stderr` that are not the notices a build without stop
/// signals or CPU sampling prints first.
fn own_lines(stderr: &str) -> Vec<&str> {
    let caps = perflens_sys::CAPABILITIES;
    let notice = |l: &str| {
        (!caps.stop_signals && l.starts_with(NO_STOP_SIGNALS_LINE))
            || (!caps.cpu_sampling && l.starts_with(CPU_UNAVAILABLE_LINE))
    };
    stderr.lines().filter(|l| !notice(l)).collect()
}

/// Runs `examples/from_hotpath` in `dir` with `env` (and no other
/// `PERFLENS_*` variable); returns its stderr after checking that it
/// exited 0 and printed its own line on stdout.
fn run_example(dir: &Path, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(example("from_hotpath"));
    cmd.current_dir(dir);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PERFLENS_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run examples/from_hotpath");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    // 10 iterations: fetch(i) = 2i, step adds query(i) = i + 1.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "fetched 90, worker did 55\n"
    );
    stderr
}

/// The function rows a table's `Function` section prints, and the line
/// after them.
fn function_rows(table: &str) -> (Vec<&str>, Option<&str>) {
    let mut lines = table.lines().skip_while(|l| !l.starts_with("Function"));
    lines
        .next()
        .unwrap_or_else(|| panic!("no function table:\n{table}"));
    assert!(lines.next().unwrap().starts_with("-----"), "{table}");
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        if line.is_empty() || line.starts_with("Async rows:") || line.contains(" more") {
            return (rows, Some(line));
        }
        rows.push(line);
    }
    (rows, None)
}

#[test]
fn hotpaths_main_options_write_the_json_report_to_output_path() {
    let dir = scratch("hotpath-json");
    let stderr = run_example(&dir, &[]);
    let path = dir.join("target/from_hotpath/report.json");
    // The report went to the file, not to stderr: one line says where.
    assert_eq!(
        own_lines(&stderr),
        [format!("[perflens] report written to {}", path.display())],
        "{stderr}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("{\n  \"schema\": \"perflens.report/1\",\n"),
        "pretty JSON, as hotpath's json-pretty: {}",
        &text[..text.len().min(200)]
    );
    let report = perflens::Report::from_json_str(&text).expect("the JSON report");
    assert_eq!(report.percentiles, [99.0]);

    let mut rows: Vec<(&str, u64)> = (report.functions.iter())
        .map(|f| (f.name.as_str(), f.calls))
        .collect();
    rows.sort_unstable();
    assert_eq!(
        rows,
        [
            ("custom_block", 10),
            ("db_query", 20),
            ("from_hotpath::Worker::step", 10),
            ("from_hotpath::async_function", 10),
            ("from_hotpath::fetch", 10),
            ("from_hotpath::main", 1),
            ("from_hotpath::sync_function", 10),
        ],
        "Worker::done is #[perflens::skip]: no row"
    );
    for f in &report.functions {
        let labels: Vec<&str> = f.percentiles.0.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["p99"], "{}", f.name);
        assert_eq!(f.timed_calls, f.calls, "{}", f.name);
    }
    // The async fns are futures: `future = true` on fetch is what every
    // measured async fn gets. yield_now is pending once: 2 polls a call.
    let fetch = report.function("from_hotpath::fetch").unwrap();
    assert_eq!(fetch.kind, perflens::FunctionKind::Async);
    assert_eq!((fetch.polls, fetch.cancelled), (Some(20), Some(0)));
    for name in ["from_hotpath::main", "from_hotpath::async_function"] {
        let row = report.function(name).unwrap();
        assert_eq!(row.kind, perflens::FunctionKind::Async, "{name}");
        assert_eq!(row.cancelled, Some(0), "{name}");
    }
    let sync = report.function("from_hotpath::sync_function").unwrap();
    assert_eq!(sync.kind, perflens::FunctionKind::Sync);
    // `label = "db_query"`, called from a measured method and a block.
    let mut paths: Vec<(String, u64)> = (report.paths.iter())
        .filter(|p| p.frames.last().is_some_and(|f| f == "db_query"))
        .map(|p| (p.frames.join(" -> "), p.calls))
        .collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            (
                "from_hotpath::main -> custom_block -> db_query".to_string(),
                10
            ),
            (
                "from_hotpath::main -> from_hotpath::Worker::step -> db_query".to_string(),
                10
            ),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_environment_overrides_format_and_output_path() {
    let dir = scratch("hotpath-table");
    let stderr = run_example(
        &dir,
        &[
            ("PERFLENS_FORMAT", "table"),
            ("PERFLENS_OUTPUT", "tables/report.txt"),
        ],
    );
    let path = dir.join("tables/report.txt");
    assert_eq!(
        own_lines(&stderr),
        [format!("[perflens] report written to {}", path.display())],
        "{stderr}"
    );
    assert!(
        !dir.join("target").exists(),
        "PERFLENS_OUTPUT replaces output_path"
    );
    let table = std::fs::read_to_string(&path).unwrap();
    assert!(table.starts_with("[perflens] "), "{table}");
    let header = table.lines().find(|l| l.starts_with("Function")).unwrap();
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "Function", "Calls", "Avg", "p99", "Total", "Self", "%", "Total"
        ]
    );
    let (rows, after) = function_rows(&table);
    assert_eq!(rows.len(), 7, "every row (limit = 0):\n{table}");
    assert!(!after.unwrap_or("").contains("more"), "{table}");
    let calls = |name: &str| -> Vec<&str> {
        let row = rows
            .iter()
            .find(|r| r.starts_with(&format!("{name} ")))
            .unwrap();
        row.split_whitespace().take(2).collect()
    };
    assert_eq!(calls("from_hotpath::main"), ["from_hotpath::main", "1"]);
    assert_eq!(calls("db_query"), ["db_query", "20"]);

    // `none` prints nothing, anywhere.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let stderr = run_example(&dir, &[("PERFLENS_FORMAT", "none")]);
    assert!(own_lines(&stderr).is_empty(), "{stderr}");
    assert!(!dir.join("target").exists());
    // hotpath's name of the format is taken from the environment too.
    let stderr = run_example(&dir, &[("PERFLENS_FORMAT", "json-pretty")]);
    assert_eq!(own_lines(&stderr).len(), 1, "{stderr}");
    let json = std::fs::read_to_string(dir.join("target/from_hotpath/report.json")).unwrap();
    assert!(perflens::Report::from_json_str(&json).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 25 measured functions, and one that calls them all.
macro_rules! stages {
    ($($name:ident)*) => {
        $(
            #[perflens::measure]
            fn $name() {
                std::hint::black_box(());
            }
        )*
        fn all_stages() {
            $( $name(); )*
        }
    };
}
stages!(s01 s02 s03 s04 s05 s06 s07 s08 s09 s10 s11 s12 s13 s14 s15 s16 s17 s18 s19 s20 s21 s22 s23 s24 s25);

/// Run as the child of `limit_zero_prints_every_row`, in its directory.
#[perflens::main(limit = 0, format = "table", output_path = "every_row.txt")]
fn every_row_child() {
    all_stages();
}

#[test]
fn limit_zero_prints_every_row() {
    if std::env::var_os("PERFLENS_HOTPATH_LIMIT_CHILD").is_some() {
        every_row_child();
        return;
    }
    let dir = scratch("hotpath-limit");
    // `limit = 0`: all 26 rows. PERFLENS_LIMIT=20 (the default limit)
    // shows what 0 changed: 20 rows, then the 6 more; PERFLENS_LIMIT=0
    // means every row too (as HOTPATH_LIMIT=0).
    let cases = [
        (None, 26, None),
        (Some("20"), 20, Some("6 more")),
        (Some("0"), 26, None),
    ];
    for (limit, rows, more) in cases {
        let mut cmd = rerun_self("limit_zero_prints_every_row");
        cmd.current_dir(&dir)
            .env("PERFLENS_HOTPATH_LIMIT_CHILD", "1");
        if let Some(limit) = limit {
            cmd.env("PERFLENS_LIMIT", limit);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let table = std::fs::read_to_string(dir.join("every_row.txt")).unwrap();
        let (printed, after) = function_rows(&table);
        assert_eq!(printed.len(), rows, "{table}");
        // The child's own row first (its total holds the others').
        assert!(printed[0].contains("::every_row_child "), "{table}");
        let stage_rows = printed.iter().filter(|r| r.contains("::s")).count();
        assert_eq!(stage_rows, rows - 1, "{table}");
        match more {
            None => assert!(!after.unwrap_or("").contains("more"), "{table}"),
            Some(more) => assert!(after.unwrap().contains(more), "{table}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
