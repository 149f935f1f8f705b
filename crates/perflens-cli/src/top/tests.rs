//! Unit tests of `perflens top` without a terminal: rates between two
//! reports built by hand, sorting, filtering, the tree's expansion, the
//! threads, the source, and what an error or the target's end leaves.

use super::parse_interval;
use super::source::{Capture, JsonFile, Needs, Source, Target};
use super::state::{App, Key, Row, Values};
use super::table::TableId;
use perflens_report::Report;
use std::time::Duration;

/// A function row's JSON: `(name, calls, total_ns, self_ns)`, sync.
fn func(name: &str, calls: u64, total: u64, self_ns: u64) -> String {
    format!(
        r#"{{"name": "{name}", "kind": "sync", "calls": {calls}, "timed_calls": {calls},
            "total_ns": {total}, "self_ns": {self_ns}, "avg_ns": {avg}, "p50_ns": 1000,
            "p95_ns": 2000, "p99_ns": 3000, "percentiles": {{}}, "sampled": false}}"#,
        avg = total.checked_div(calls).unwrap_or(0)
    )
}

/// An async function row's JSON.
fn future(name: &str, calls: u64, busy: u64, wait: u64, polls: u64, cancelled: u64) -> String {
    format!(
        r#"{{"name": "{name}", "kind": "async", "calls": {calls}, "timed_calls": {calls},
            "total_ns": {total}, "self_ns": {busy}, "avg_ns": 0, "p50_ns": 5000,
            "p95_ns": 6000, "p99_ns": 7000, "percentiles": {{}}, "sampled": false,
            "busy_ns": {busy}, "wait_ns": {wait}, "polls": {polls}, "cancelled": {cancelled}}}"#,
        total = busy + wait
    )
}

/// A hot path's JSON: each frame `(name, calls, self_ns)`; total = self.
fn path(id: u64, frames: &[(&str, u64, u64)]) -> String {
    let names: Vec<String> = frames.iter().map(|f| format!("\"{}\"", f.0)).collect();
    let segments: Vec<String> = frames
        .iter()
        .map(|(n, calls, s)| {
            format!(
                r#"{{"name": "{n}", "calls": {calls}, "total_ns": {s}, "self_ns": {s},
                    "self_p50_ns": 10, "self_p99_ns": 20}}"#
            )
        })
        .collect();
    let (_, calls, s) = frames[frames.len() - 1];
    format!(
        r#"{{"id": "{id:016x}", "frames": [{}], "calls": {calls}, "total_ns": {s},
            "self_ns": {s}, "segments": [{}]}}"#,
        names.join(","),
        segments.join(",")
    )
}

/// A thread row's JSON.
fn thread(index: u32, tid: u64, name: &str, exited: bool, calls: u64, alloc: u64) -> String {
    format!(
        r#"{{"index": {index}, "tid": {tid}, "name": "{name}", "exited": {exited},
            "nodes": 1, "node_capacity": 100, "calls": {calls}, "overflow_calls": 0,
            "dropped_frames": 0, "alloc_bytes": {alloc}, "alloc_count": 1, "free_bytes": 0,
            "free_count": 0, "live_bytes": -5, "peak_live_bytes": 7,
            "unattributed_alloc_bytes": 0}}"#
    )
}

/// A report: its parts as JSON lists (without brackets).
fn report(elapsed: u64, finished: bool, functions: &[String], paths: &[String]) -> Report {
    report_with(elapsed, finished, functions, paths, &[], "")
}

fn report_with(
    elapsed: u64,
    finished: bool,
    functions: &[String],
    paths: &[String],
    threads: &[String],
    extra: &str,
) -> Report {
    let json = format!(
        r#"{{"schema": "perflens.report/1", "mode": "timed", "sample_every": 1,
            "clock": "tsc", "elapsed_ns": {elapsed}, "finished": {finished},
            "percentiles": [50.0, 95.0, 99.0], "functions": [{}], "paths": [{}],
            "threads": [{}], "dropped": {{"overflow_calls": 0, "overflow_paths": 0,
            "dropped_frames": 0}}, "path_capacity": 1024 {extra}}}"#,
        functions.join(","),
        paths.join(","),
        threads.join(",")
    );
    Report::from_json_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn frame(report: Report) -> Capture {
    let running = !report.finished;
    Capture {
        report,
        holds: Needs::ALL,
        tree: None,
        target: Target {
            pid: Some(42),
            program: "app".into(),
            running,
            warning: None,
        },
    }
}

fn app() -> App {
    App::new(Duration::from_millis(500), "test".into())
}

fn keys(app: &mut App, keys: &[Key]) {
    for &k in keys {
        app.key(k);
    }
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.key(Key::Char(c));
    }
}

/// Separates the frames of a tree row's label (see [`order`]).
const SEP: char = '\u{1f}';

/// The rows in order, each as a label that says which it is: a
/// function's name, a tree node's chain of frames (joined with
/// [`SEP`]), a thread's index.
fn order(app: &App) -> Vec<String> {
    let mut chain: Vec<&str> = Vec::new();
    (app.table().rows.iter())
        .map(|r| {
            if r.tree {
                chain.truncate(r.depth);
                chain.push(r.name());
                chain.join(&SEP.to_string())
            } else if app.table_id() == TableId::Threads {
                let index = r.name().trim_start_matches('#');
                index.split(' ').next().unwrap_or_default().to_string()
            } else {
                r.name().to_string()
            }
        })
        .collect()
}

fn row<'a>(app: &'a App, key: &str) -> &'a Row {
    let i = (order(app).iter())
        .position(|k| k == key)
        .unwrap_or_else(|| panic!("no row {key}: {:?}", order(app)));
    &app.table().rows[i]
}

fn cells(app: &App, key: &str) -> Vec<String> {
    app.table().cells(row(app, key))
}

/// Two successive reports, half a second apart.
fn two_reports() -> (Report, Report) {
    let a = report(
        1_000_000_000,
        false,
        &[
            func("app::parse", 10, 2_000_000, 1_500_000),
            func("app::render", 4, 8_000_000, 8_000_000),
        ],
        &[],
    );
    let b = report(
        1_500_000_000,
        false,
        &[
            func("app::parse", 30, 12_000_000, 9_500_000),
            func("app::render", 4, 8_000_000, 8_000_000),
            func("app::late", 5, 1_000, 1_000),
        ],
        &[],
    );
    (a, b)
}

#[test]
fn rates_are_the_difference_of_two_reports_per_second() {
    let (a, b) = two_reports();
    let mut app = app();
    assert_eq!(app.values(), Values::Rate);
    app.update(Ok(frame(a)));
    // One report: no rate yet; gauges are there.
    assert!(!app.has_rates());
    assert_eq!(
        cells(&app, "app::parse"),
        [
            "app::parse",
            "-",
            "200.00 µs",
            "1.00 µs",
            "2.00 µs",
            "3.00 µs",
            "-",
            "-",
            "-"
        ]
    );
    app.update(Ok(frame(b)));
    assert!(app.has_rates());
    assert_eq!(
        app.table().headers,
        [
            "Function",
            "Calls/s",
            "Avg",
            "p50",
            "p95",
            "p99",
            "Total/s▼",
            "Self/s",
            "% Total"
        ]
    );
    // parse: 20 calls, 10 ms total, 8 ms self in 0.5 s; 10 ms of 0.5 s
    // is 2.0% of the interval.
    assert_eq!(
        cells(&app, "app::parse"),
        [
            "app::parse",
            "40",
            "400.00 µs",
            "1.00 µs",
            "2.00 µs",
            "3.00 µs",
            "20.00 ms",
            "16.00 ms",
            "2.0%"
        ]
    );
    // render did nothing in the interval.
    assert_eq!(cells(&app, "app::render")[1], "0");
    assert_eq!(cells(&app, "app::render")[6], "0 ns");
    assert_eq!(cells(&app, "app::render")[8], "0.0%");
    // late appeared in the interval: all its calls are new.
    assert_eq!(cells(&app, "app::late")[1], "10");
    assert_eq!(cells(&app, "app::late")[6], "2.00 µs");
    // By Total/s, largest first.
    assert_eq!(order(&app), ["app::parse", "app::late", "app::render"]);

    // The same picture again (the file was not rewritten): same rates.
    let (_, b) = two_reports();
    app.update(Ok(frame(b)));
    assert_eq!(cells(&app, "app::parse")[1], "40");

    // `r`: the totals.
    app.key(Key::Char('r'));
    assert_eq!(app.values(), Values::Total);
    assert_eq!(
        app.table().headers,
        [
            "Function", "Calls", "Avg", "p50", "p95", "p99", "Total▼", "Self", "% Total"
        ]
    );
    // 12 ms of 1.5 s is 0.8%.
    assert_eq!(
        cells(&app, "app::parse"),
        [
            "app::parse",
            "30",
            "400.00 µs",
            "1.00 µs",
            "2.00 µs",
            "3.00 µs",
            "12.00 ms",
            "9.50 ms",
            "0.8%"
        ]
    );
    assert_eq!(order(&app), ["app::parse", "app::render", "app::late"]);
}

#[test]
fn a_new_session_starts_the_rates_over() {
    let (a, b) = two_reports();
    let mut app = app();
    app.update(Ok(frame(b)));
    // The clock went back: another run of the program.
    app.update(Ok(frame(a)));
    assert!(!app.has_rates());
    assert_eq!(cells(&app, "app::parse")[1], "-");
}

#[test]
fn any_column_sorts_either_way() {
    let (a, b) = two_reports();
    let mut app = app();
    app.update(Ok(frame(a)));
    app.update(Ok(frame(b)));
    app.key(Key::Char('r')); // totals: calls 30, 4, 5
    // `s`: the next column, Self (9.5 ms, 8 ms, 1 µs).
    app.key(Key::Char('s'));
    assert_eq!(app.table().headers[7], "Self▼");
    assert_eq!(order(&app), ["app::parse", "app::render", "app::late"]);
    // `S`: reversed.
    app.key(Key::Char('S'));
    assert_eq!(app.table().headers[7], "Self▲");
    assert_eq!(order(&app), ["app::late", "app::render", "app::parse"]);
    // `2`: Calls, largest first; again: smallest first.
    app.key(Key::Char('2'));
    assert_eq!(order(&app), ["app::parse", "app::late", "app::render"]);
    app.key(Key::Char('2'));
    assert_eq!(order(&app), ["app::render", "app::late", "app::parse"]);
    // `1`: the name, A to Z.
    app.key(Key::Char('1'));
    assert_eq!(app.table().headers[0], "Function▼");
    assert_eq!(order(&app), ["app::late", "app::parse", "app::render"]);
    // `s` from the last column wraps to the first.
    keys(&mut app, &[Key::Char('9'), Key::Char('s')]);
    assert_eq!(app.table().headers[0], "Function▼");
}

#[test]
fn the_selection_follows_its_row_and_stays_in_bounds() {
    let (a, b) = two_reports();
    let mut app = app();
    app.update(Ok(frame(a)));
    app.key(Key::Char('r'));
    // parse (12 ms... no: a has parse 2 ms, render 8 ms): render first.
    assert_eq!(order(&app), ["app::render", "app::parse"]);
    app.key(Key::Down);
    assert_eq!(app.selected(), 1);
    // The next report puts parse first: the selection moves with it.
    app.update(Ok(frame(b)));
    assert_eq!(order(&app)[0], "app::parse");
    assert_eq!(app.selected(), 0);
    // On the first row, the selection stays at the top, on whatever
    // comes first now.
    let c = report(
        2_000_000_000,
        false,
        &[
            func("app::parse", 31, 12_000_100, 9_500_100),
            func("app::render", 9, 30_000_000, 30_000_000),
            func("app::late", 5, 1_000, 1_000),
        ],
        &[],
    );
    app.update(Ok(frame(c)));
    assert_eq!(order(&app)[0], "app::render");
    assert_eq!(app.selected(), 0);
    keys(&mut app, &[Key::End]);
    assert_eq!(app.selected(), 2);
    keys(&mut app, &[Key::Down, Key::PageDown]);
    assert_eq!(app.selected(), 2);
    keys(&mut app, &[Key::Home]);
    assert_eq!(app.selected(), 0);
    app.scroll(-3);
    assert_eq!(app.selected(), 0);
    app.scroll(3);
    assert_eq!(app.selected(), 2);
    // A view two rows high shows rows 1 and 2 to keep row 2 in sight.
    assert_eq!(app.scroll_to_fit(2), 1);
    keys(&mut app, &[Key::Up, Key::Up]);
    assert_eq!(app.scroll_to_fit(2), 0);
}

#[test]
fn the_filter_applies_on_enter_and_esc_clears_it() {
    let (a, b) = two_reports();
    let mut app = app();
    app.update(Ok(frame(a)));
    app.update(Ok(frame(b)));
    app.key(Key::Char('/'));
    type_text(&mut app, "PARX");
    app.key(Key::Backspace);
    assert_eq!(app.editing(), Some("PAR"));
    // Not applied while typed (and the letters are not commands).
    assert_eq!(app.values(), Values::Rate);
    assert_eq!(order(&app).len(), 3);
    app.key(Key::Enter);
    assert_eq!(app.filter(), "PAR");
    assert_eq!(order(&app), ["app::parse"]);
    // It stays across refreshes.
    let (_, b) = two_reports();
    app.update(Ok(frame(Report {
        elapsed_ns: 2_000_000_000,
        ..b
    })));
    assert_eq!(order(&app), ["app::parse"]);
    app.key(Key::Esc);
    assert_eq!(app.filter(), "");
    assert_eq!(order(&app).len(), 3);
    // Esc while typing drops the text and the filter.
    keys(&mut app, &[Key::Char('/'), Key::Char('z'), Key::Esc]);
    assert_eq!((app.editing(), app.filter()), (None, ""));
    assert_eq!(order(&app).len(), 3);
}

fn tree_report(elapsed: u64, scale: u64) -> Report {
    report(
        elapsed,
        false,
        &[],
        &[
            path(
                1,
                &[
                    ("app::main", 1, 100),
                    ("app::work", 10 * scale, 50 * scale),
                    ("app::parse", 20 * scale, 700 * scale),
                ],
            ),
            path(
                2,
                &[
                    ("app::main", 1, 100),
                    ("app::work", 10 * scale, 50 * scale),
                    ("app::render", 5 * scale, 300 * scale),
                ],
            ),
            path(3, &[("app::main", 1, 100), ("app::idle", 3, 900)]),
        ],
    )
}

fn key(frames: &[&str]) -> String {
    frames.join(&SEP.to_string())
}

#[test]
fn hot_paths_are_a_tree_that_expands_and_collapses() {
    let mut app = app();
    app.update(Ok(frame(tree_report(1_000_000_000, 1))));
    app.key(Key::Char('h'));
    app.key(Key::Char('r')); // totals
    let main = key(&["app::main"]);
    let work = key(&["app::main", "app::work"]);
    let parse = key(&["app::main", "app::work", "app::parse"]);
    let render = key(&["app::main", "app::work", "app::render"]);
    let idle = key(&["app::main", "app::idle"]);
    // Siblings by Self, largest first: idle (900) before work (50).
    assert_eq!(
        order(&app),
        [
            main.as_str(),
            idle.as_str(),
            work.as_str(),
            parse.as_str(),
            render.as_str()
        ]
    );
    let first: Vec<String> = (app.table().rows.iter())
        .map(|r| app.table().cell(r, 0))
        .collect();
    assert_eq!(
        first,
        [
            "▾ app::main",
            "    app::idle",
            "  ▾ app::work",
            "      app::parse",
            "      app::render"
        ]
    );
    assert_eq!(
        cells(&app, &parse),
        [
            "      app::parse",
            "20",
            "700 ns",
            "700 ns",
            "10 ns",
            "20 ns",
            "-"
        ]
    );
    // Left on work collapses it; Left again selects its parent.
    keys(&mut app, &[Key::Down, Key::Down]);
    assert_eq!(app.selected(), 2);
    app.key(Key::Left);
    assert_eq!(order(&app), [main.as_str(), idle.as_str(), work.as_str()]);
    assert_eq!(app.table().cell(row(&app, &work), 0), "  ▸ app::work");
    app.key(Key::Left);
    assert_eq!(app.selected(), 0);
    // Enter toggles main; Right expands it, with work still collapsed.
    app.key(Key::Enter);
    assert_eq!(order(&app), [main.as_str()]);
    app.key(Key::Right);
    assert_eq!(order(&app), [main.as_str(), idle.as_str(), work.as_str()]);
    keys(&mut app, &[Key::End, Key::Enter]);
    assert_eq!(
        order(&app),
        [
            main.as_str(),
            idle.as_str(),
            work.as_str(),
            parse.as_str(),
            render.as_str()
        ]
    );
    // Left on a leaf selects its parent.
    keys(&mut app, &[Key::End, Key::Left]);
    assert_eq!(app.selected(), 2);

    // A filter keeps the matches and their ancestors.
    app.key(Key::Char('/'));
    type_text(&mut app, "render");
    app.key(Key::Enter);
    assert_eq!(order(&app), [main.as_str(), work.as_str(), render.as_str()]);
    app.key(Key::Esc);

    // Rates by node: the next report doubles every count under work.
    app.key(Key::Char('r'));
    app.update(Ok(frame(tree_report(1_250_000_000, 2))));
    // parse: 20 more calls and 700 ns more in 0.25 s.
    assert_eq!(
        cells(&app, &parse)[1..4],
        ["80".to_string(), "2.80 µs".into(), "2.80 µs".into()]
    );
    assert_eq!(cells(&app, &idle)[1], "0");
}

#[test]
fn async_rows_show_busy_wait_polls_and_cancelled() {
    let a = report(
        1_000_000_000,
        false,
        &[
            func("app::sync", 1, 10, 10),
            future("app::fetch", 10, 1_000_000, 9_000_000, 20, 1),
        ],
        &[],
    );
    let b = report(
        2_000_000_000,
        false,
        &[
            func("app::sync", 1, 10, 10),
            future("app::fetch", 30, 3_000_000, 29_000_000, 60, 4),
        ],
        &[],
    );
    let mut app = app();
    app.update(Ok(frame(a)));
    app.update(Ok(frame(b)));
    app.key(Key::Char('a'));
    assert_eq!(order(&app), ["app::fetch"]);
    assert_eq!(
        app.table().headers,
        [
            "Function",
            "Calls/s",
            "Busy/s▼",
            "Wait/s",
            "Polls/s",
            "Cancelled/s",
            "Busy %",
            "wall p50",
            "wall p99"
        ]
    );
    assert_eq!(
        cells(&app, "app::fetch"),
        [
            "app::fetch",
            "20",
            "2.00 ms",
            "20.00 ms",
            "40",
            "3",
            "0.2%",
            "5.00 µs",
            "7.00 µs"
        ]
    );
    app.key(Key::Char('r'));
    assert_eq!(
        cells(&app, "app::fetch")[1..7],
        [
            "30".to_string(),
            "3.00 ms".into(),
            "29.00 ms".into(),
            "60".into(),
            "4".into(),
            "0.1%".into()
        ]
    );
    // Tab cycles the tabs; Functions shows both kinds.
    keys(&mut app, &[Key::Tab]);
    assert_eq!(app.tab(), super::state::Tab::Threads);
    keys(
        &mut app,
        &[Key::BackTab, Key::BackTab, Key::Tab, Key::Tab, Key::Tab],
    );
    assert_eq!(app.tab(), super::state::Tab::DataFlow);
    keys(&mut app, &[Key::Tab]);
    assert_eq!(app.tab(), super::state::Tab::Memory);
    keys(&mut app, &[Key::Tab]);
    assert_eq!(app.tab(), super::state::Tab::Functions);
    assert_eq!(order(&app).len(), 2);
}

const ALLOC: &str = r#", "alloc": {"total_bytes": 0, "total_count": 0, "free_bytes": 0,
    "live_bytes": 0, "peak_live_bytes": 0, "peak_resolution_bytes": 0}"#;

const CPU: &str = r#", "cpu": {"frequency_hz": 100, "source": "perf_event", "samples": 9,
    "cpu_ns": 90000000, "outside_samples": 0, "outside_cpu_ns": 0, "dropped": 0,
    "threads": [{"tid": 101, "name": "main", "samples": SAMPLES, "cpu_ns": CPU_NS, "dropped": 0}]}"#;

#[test]
fn threads_show_cpu_and_allocations_live_or_exited() {
    let threads = |calls: u64, alloc: u64, exited: bool| {
        vec![
            thread(0, 101, "main", false, calls, alloc),
            thread(2, 103, "w2", exited, 1, 0),
            thread(10, 110, "w10", false, 1, 0),
        ]
    };
    let cpu = |samples: u64| {
        ALLOC.to_string()
            + &CPU
                .replace("SAMPLES", &samples.to_string())
                .replace("CPU_NS", &(samples * 10_000_000).to_string())
    };
    // A running program's reports carry no CPU samples; its final one
    // does: the first with CPU gives no CPU rate (not all of it at once).
    let mut app = app();
    let before = report_with(500_000_000, false, &[], &[], &threads(50, 0, false), ALLOC);
    app.update(Ok(frame(before)));
    app.key(Key::Char('t'));
    assert!(
        app.note().unwrap().contains("no CPU samples"),
        "{:?}",
        app.note()
    );
    app.update(Ok(frame(report_with(
        1_000_000_000,
        false,
        &[],
        &[],
        &threads(100, 4096, false),
        &cpu(5),
    ))));
    assert_eq!(app.note(), None);
    assert_eq!(cells(&app, "0")[3..7], ["100", "-", "-", "-"]);
    let a = report_with(
        1_000_000_000,
        false,
        &[],
        &[],
        &threads(100, 4096, false),
        &cpu(5),
    );
    let b = report_with(
        2_000_000_000,
        false,
        &[],
        &[],
        &threads(300, 6144, true),
        &cpu(9),
    );
    let mut app = self::app();
    app.update(Ok(frame(a)));
    app.update(Ok(frame(b)));
    app.key(Key::Char('t'));
    // By index: #2 before #10.
    assert_eq!(order(&app), ["0", "2", "10"]);
    assert_eq!(
        cells(&app, "0"),
        [
            "#0 main", "101", "live", "200", "40.00 ms", "4.0%", "4", "2.00 KiB", "0", "-5 B",
            "7 B"
        ]
    );
    assert_eq!(cells(&app, "2")[..4], ["#2 w2", "103", "exited", "0"]);
    // A thread the sampler did not see: no CPU time.
    assert_eq!(cells(&app, "10")[4], "0 ns");
    app.key(Key::Char('r'));
    assert_eq!(
        cells(&app, "0")[3..9],
        [
            "300".to_string(),
            "90.00 ms".into(),
            "4.5%".into(),
            "9".into(),
            "6.00 KiB".into(),
            "1".into()
        ]
    );
}

#[test]
fn views_without_allocations_or_cpu_say_so() {
    let (a, _) = two_reports();
    let mut app = app();
    app.update(Ok(frame(a)));
    assert_eq!(app.note(), None);
    app.key(Key::Char('v'));
    assert_eq!(app.table().headers[2], "Alloc/s▼");
    assert_eq!(cells(&app, "app::parse")[2], "-");
    assert!(app.note().unwrap().contains("allocations were not counted"));
    app.key(Key::Char('v'));
    assert_eq!(app.table().headers[1], "CPU self/s▼");
    assert!(
        app.note()
            .unwrap()
            .contains("no CPU samples in this report")
    );
    app.key(Key::Char('v'));
    assert_eq!(app.table().headers[0], "Function");
}

#[test]
fn an_error_keeps_the_last_picture_and_the_end_stops_reading() {
    let (a, b) = two_reports();
    let mut app = app();
    // Before any picture: the error is what there is to show.
    app.update(Err("cannot open r.json: No such file".into()));
    assert_eq!(app.error(), Some("cannot open r.json: No such file"));
    assert!(app.report().is_none() && app.wants_read() && !app.target_ended());
    app.update(Ok(frame(a)));
    app.update(Ok(frame(b.clone())));
    let before = app.table().clone();
    app.update(Err("r.json: truncated".into()));
    assert_eq!(app.error(), Some("r.json: truncated"));
    assert_eq!(app.table(), &before);
    assert_eq!(app.report().unwrap().elapsed_ns, 1_500_000_000);
    assert!(app.wants_read());
    // p pauses the reads.
    app.key(Key::Char('p'));
    assert!(app.paused() && !app.wants_read());
    app.key(Key::Char('p'));
    // The last write: finished, the target has ended.
    app.update(Ok(frame(Report {
        elapsed_ns: 2_000_000_000,
        finished: true,
        ..b
    })));
    assert_eq!(app.error(), None);
    assert!(app.target_ended());
    let target = app.target().unwrap();
    assert!(!target.running);
    assert_eq!(target.label(), "app (pid 42)");
    assert!(!app.wants_read());
    assert_eq!(cells(&app, "app::parse")[1], "0");
}

#[test]
fn help_q_and_ctrl_c() {
    let mut app = app();
    app.key(Key::Char('?'));
    assert!(app.help());
    // Any key closes the help, and does nothing else.
    app.key(Key::Char('r'));
    assert!(!app.help());
    assert_eq!(app.values(), Values::Rate);
    app.key(Key::Char('q'));
    assert!(app.should_quit());
    let mut app = self::app();
    app.key(Key::CtrlC);
    assert!(app.should_quit());
    // While typing a filter, q is a letter.
    let mut app = self::app();
    keys(&mut app, &[Key::Char('/'), Key::Char('q')]);
    assert!(!app.should_quit());
    assert_eq!(app.editing(), Some("q"));
}

#[test]
fn the_json_file_source_reads_what_the_program_rewrites() {
    let dir = std::env::temp_dir().join(format!("perflens-top-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("r.json");
    let mut source = JsonFile::new(&file);
    assert_eq!(source.describe(), format!("JSON report {}", file.display()));
    let err = source.read().unwrap_err();
    assert!(err.starts_with("cannot open"), "{err}");

    let (a, _) = two_reports();
    let mut json = Vec::new();
    perflens_report::write_json(&a, &mut json).unwrap();
    std::fs::write(&file, &json).unwrap();
    let frame = source.read().unwrap();
    assert_eq!(frame.report.functions, a.functions);
    assert_eq!(
        frame.target,
        Target {
            pid: None,
            program: file.display().to_string(),
            running: true,
            warning: None,
        }
    );
    let finished = Report {
        finished: true,
        ..a
    };
    json.clear();
    perflens_report::write_json(&finished, &mut json).unwrap();
    std::fs::write(&file, &json).unwrap();
    assert!(!source.read().unwrap().target.running);

    std::fs::write(&file, &json[..json.len() / 2]).unwrap();
    let err = source.read().unwrap_err();
    assert!(err.starts_with(&file.display().to_string()), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn intervals_are_milliseconds_or_have_a_unit() {
    assert_eq!(parse_interval("500"), Some(Duration::from_millis(500)));
    assert_eq!(parse_interval("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_interval("2s"), Some(Duration::from_secs(2)));
    assert_eq!(parse_interval("0.5s"), Some(Duration::from_millis(500)));
    assert_eq!(parse_interval("0"), None);
    assert_eq!(parse_interval("5"), None);
    assert_eq!(parse_interval("soon"), None);
    assert_eq!(parse_interval("-1s"), None);
}

#[test]
fn the_target_ends_when_the_source_says_so_or_the_report_is_final() {
    let (a, _) = two_reports();
    let mut app = app();
    let mut f = frame(a.clone());
    app.update(Ok(f.clone()));
    assert!(!app.target_ended());
    // A source that knows the process (a pid) says it is gone.
    f.target.running = false;
    app.update(Ok(f));
    assert!(app.target_ended() && !app.wants_read());
    // A final report whose source still says running.
    let mut app = self::app();
    let mut f = frame(Report {
        finished: true,
        ..a
    });
    f.target.running = true;
    app.update(Ok(f));
    assert!(app.target_ended() && !app.wants_read());
}

#[test]
fn hot_path_rows_match_the_previous_report_by_their_frames() {
    // The previous report lists the paths in another order and lacks one:
    // every node's rate still comes from the same frames.
    let before = report(
        1_000_000_000,
        false,
        &[],
        &[
            path(2, &[("a", 1, 10), ("c", 4, 40)]),
            path(1, &[("a", 1, 10), ("b", 2, 20)]),
        ],
    );
    let after = report(
        2_000_000_000,
        false,
        &[],
        &[
            path(1, &[("a", 1, 10), ("b", 5, 50)]),
            path(2, &[("a", 1, 10), ("c", 6, 60)]),
            path(3, &[("d", 7, 70)]),
        ],
    );
    let mut app = app();
    app.key(Key::Char('h'));
    app.update(Ok(frame(before)));
    app.update(Ok(frame(after)));
    assert_eq!(cells(&app, &key(&["a", "b"]))[1..3], ["3", "30 ns"]);
    assert_eq!(cells(&app, &key(&["a", "c"]))[1..3], ["2", "20 ns"]);
    assert_eq!(cells(&app, &key(&["a"]))[1..3], ["0", "0 ns"]);
    assert_eq!(cells(&app, &key(&["d"]))[1..3], ["7", "70 ns"]);
    // Switching tabs and back makes the rows of both reports again.
    keys(&mut app, &[Key::Char('f'), Key::Char('h')]);
    assert_eq!(cells(&app, &key(&["a", "b"]))[1..3], ["3", "30 ns"]);
}

/// Each column's width is that of its widest text, header included.
fn assert_widths(app: &App) {
    let t = app.table();
    for (i, &w) in t.widths.iter().enumerate() {
        let widest = (t.rows.iter())
            .map(|r| app.table().cell(r, i).chars().count())
            .chain([t.headers[i].chars().count()])
            .max();
        assert_eq!(Some(w), widest, "column {i} of {:?}", t.headers);
    }
}

#[test]
fn columns_are_as_wide_as_their_widest_text() {
    let (a, b) = two_reports();
    let mut app = app();
    app.update(Ok(frame(a)));
    assert_widths(&app);
    app.update(Ok(frame(b)));
    for k in ['r', 'r', 'v', 'v', 'r', 'v'] {
        app.key(Key::Char(k));
        assert_widths(&app);
    }
    let mut app = self::app();
    app.key(Key::Char('h'));
    app.update(Ok(frame(tree_report(1_000_000_000, 1))));
    assert_widths(&app);
    app.update(Ok(frame(tree_report(1_250_000_000, 1_000_000))));
    assert_widths(&app);
    // Collapsed: the hidden rows do not count.
    app.key(Key::Enter);
    assert_eq!(app.table().rows.len(), 1);
    assert_widths(&app);
    app.key(Key::Char('r'));
    assert_widths(&app);
    let threads = [
        thread(0, 101, "main", false, 12_345_678, 1 << 40),
        thread(1, 102, "a-much-longer-name", true, 1, 0),
    ];
    let mut app = self::app();
    app.key(Key::Char('t'));
    app.update(Ok(frame(report_with(
        1_000_000_000,
        false,
        &[],
        &[],
        &threads,
        ALLOC,
    ))));
    assert_widths(&app);
    app.key(Key::Char('r'));
    assert_widths(&app);
}

#[test]
fn ties_are_ordered_by_name_digits_as_numbers() {
    let names = ["app::f10", "app::f09", "app::F1", "app::f9"];
    let funcs: Vec<String> = names.iter().map(|n| func(n, 3, 300, 100)).collect();
    let mut app = app();
    app.update(Ok(frame(report(1_000_000_000, false, &funcs, &[]))));
    app.key(Key::Char('r'));
    // Equal totals: by name; f09 and f9 tie there too and keep the
    // report's order.
    assert_eq!(order(&app), ["app::F1", "app::f09", "app::f9", "app::f10"]);
    app.key(Key::Char('S'));
    assert_eq!(order(&app), ["app::F1", "app::f09", "app::f9", "app::f10"]);
}

/// `app::main -> {app::parse, app::render}` on two threads, every count
/// times `scale`.
fn tree_snapshot(elapsed_ns: u64, scale: u64) -> perflens_format::snapshot::RawSnapshot {
    use perflens_format::histogram::Histogram;
    use perflens_format::snapshot::*;

    let site = |name: &str| CallsiteInfo {
        name: name.into(),
        kind: CallsiteKind::Sync,
    };
    let path = |parent, callsite| PathInfo {
        parent,
        callsite,
        id: u64::from(callsite),
    };
    let node = |path, calls: u64, total_ns: u64, self_ns: u64| {
        let hist = |sum: u64| {
            let mut h = Histogram::new();
            h.record_n(sum / calls, calls);
            h
        };
        NodeSnapshot {
            path,
            calls,
            timed_calls: calls,
            total_ns,
            self_ns,
            hist_total: hist(total_ns),
            hist_self: hist(self_ns),
            ..Default::default()
        }
    };
    RawSnapshot {
        mode: Mode::Timed,
        sample_warmup: 0,
        clock: ClockSource::Instant,
        ns_per_tick: 1.0,
        elapsed_ns,
        finished: false,
        callsites: vec![
            CallsiteInfo {
                name: "[root]".into(),
                kind: CallsiteKind::Internal,
            },
            CallsiteInfo {
                name: "[overflow]".into(),
                kind: CallsiteKind::Internal,
            },
            site("app::main"),
            site("app::parse"),
            site("app::render"),
        ],
        paths: vec![path(0, 0), path(0, 1), path(0, 2), path(2, 3), path(2, 4)],
        threads: vec![
            ThreadSnapshot {
                nodes: vec![
                    node(2, scale, 9_000 * scale, 1_000 * scale),
                    node(3, 10 * scale, 5_000 * scale, 5_000 * scale),
                ],
                ..Default::default()
            },
            ThreadSnapshot {
                index: 1,
                nodes: vec![node(4, 4 * scale, 3_000 * scale, 3_000 * scale)],
                ..Default::default()
            },
        ],
        path_capacity: 64,
        overflow_paths: 0,
        unrecorded_calls: 0,
        alloc: None,
        heap: None,
    }
}

/// A live source's Hot paths tab: the tree made straight from the
/// snapshot shows exactly what the tree made from the report's paths
/// shows, in rates as in totals.
#[test]
fn the_tree_from_a_snapshot_shows_what_the_paths_show() {
    use perflens_report::{FrameTree, ReportOptions};
    let snapshot = tree_snapshot;
    let frames = |elapsed_ns, scale| {
        let snap = snapshot(elapsed_ns, scale);
        let from_paths = frame(Report::from_snapshot(&snap, &ReportOptions::default()));
        let no_paths = ReportOptions {
            hot_paths: false,
            ..ReportOptions::default()
        };
        let mut direct = frame(Report::from_snapshot(&snap, &no_paths));
        assert!(direct.report.paths.is_empty());
        direct.tree = Some(FrameTree::from_snapshot(&snap));
        (from_paths, direct)
    };
    let (mut a, mut b) = (app(), app());
    for (elapsed_ns, scale) in [(1_000_000_000, 1), (1_500_000_000, 3)] {
        let (from_paths, direct) = frames(elapsed_ns, scale);
        a.update(Ok(from_paths));
        b.update(Ok(direct));
    }
    for app in [&mut a, &mut b] {
        app.key(Key::Char('h'));
    }
    let shown = |app: &App| -> Vec<Vec<String>> {
        app.table()
            .rows
            .iter()
            .map(|r| app.table().cells(r))
            .collect()
    };
    // Rates: main ran 2 more calls in the half second, parse 20.
    assert_eq!(shown(&a)[0][..2], ["▾ app::main", "4"]);
    assert_eq!(shown(&a)[1][..2], ["    app::parse", "40"]);
    assert_eq!(shown(&b), shown(&a));
    assert_eq!(order(&b), order(&a));
    for app in [&mut a, &mut b] {
        app.key(Key::Char('r'));
    }
    assert_eq!(shown(&b), shown(&a));
    assert_eq!(shown(&a).len(), 3);
}

/// The Hot paths tab ranks a frame by its own Self wherever it is in the
/// tree, as the report's hot paths do: `app::parse` spends 5 µs itself
/// and calls a measured `app::check` (20 ns); it ranks above the 3 µs
/// leaf `app::render`, with its own Self, both from a live snapshot's tree
/// and from a report's paths (where a path now ends at `parse` itself).
#[test]
fn an_interior_frame_ranks_by_its_own_self() {
    use perflens_format::snapshot::{CallsiteInfo, CallsiteKind, NodeSnapshot, PathInfo};
    use perflens_report::{FrameTree, ReportOptions};
    let mut snap = tree_snapshot(1_000_000_000, 1);
    snap.callsites.push(CallsiteInfo {
        name: "app::check".into(),
        kind: CallsiteKind::Sync,
    });
    snap.paths.push(PathInfo {
        parent: 3,
        callsite: 5,
        id: 5,
    });
    snap.threads[0].nodes.push(NodeSnapshot {
        path: 5,
        calls: 10,
        timed_calls: 10,
        total_ns: 20,
        self_ns: 20,
        ..Default::default()
    });
    let report = Report::from_snapshot(&snap, &ReportOptions::default());
    assert!(report.path(&["app::main", "app::parse"]).is_some());
    let no_paths = ReportOptions {
        hot_paths: false,
        ..ReportOptions::default()
    };
    let mut direct = frame(Report::from_snapshot(&snap, &no_paths));
    direct.tree = Some(FrameTree::from_snapshot(&snap));
    for f in [frame(report), direct] {
        let mut app = app();
        app.update(Ok(f));
        app.key(Key::Char('h'));
        app.key(Key::Char('r')); // totals
        let parse = key(&["app::main", "app::parse"]);
        assert_eq!(
            order(&app),
            [
                key(&["app::main"]),
                parse.clone(),
                key(&["app::main", "app::parse", "app::check"]),
                key(&["app::main", "app::render"]),
            ]
        );
        assert_eq!(
            cells(&app, &parse)[..3],
            ["  ▾ app::parse", "10", "5.00 µs"]
        );
    }
}

/// A picture read without what a table shows (its tab was not on
/// screen) gives that table no rows, and the next picture no rates
/// against it: never the whole count as if it were new.
#[test]
fn a_picture_without_the_table_gives_no_rates() {
    use perflens_report::{FrameTree, ReportOptions};
    let live = |elapsed_ns, scale, hot_paths: bool| {
        let snap = tree_snapshot(elapsed_ns, scale);
        let options = ReportOptions {
            hot_paths: false,
            functions: !hot_paths,
            ..ReportOptions::default()
        };
        let mut f = frame(Report::from_snapshot(&snap, &options));
        f.holds = Needs {
            hot_paths,
            all_histograms: true,
            functions: !hot_paths,
            flow: false,
        };
        f.tree = hot_paths.then(|| FrameTree::from_snapshot(&snap));
        f
    };
    let mut app = app();
    app.update(Ok(live(1_000_000_000, 1, false)));
    assert_eq!(order(&app).len(), 3);
    app.key(Key::Char('h'));
    assert!(app.needs().hot_paths && !app.needs().functions);
    // Until a picture holds the tree: no rows.
    assert_eq!(order(&app).len(), 0);
    app.update(Ok(live(1_500_000_000, 3, true)));
    let main = |app: &App| app.table().cells(row(app, "app::main"))[1].clone();
    assert_eq!(main(&app), "-");
    app.update(Ok(live(2_000_000_000, 5, true)));
    // main: 3 -> 5 calls in half a second.
    assert_eq!(main(&app), "4");
    // Back on the functions: no rates against the tree's pictures.
    app.key(Key::Char('f'));
    app.update(Ok(live(2_500_000_000, 7, false)));
    assert_eq!(app.table().cells(row(&app, "app::parse"))[1], "-");
}

/// The Self percentiles a live source reads for the rows on screen
/// only: asked for the rows shown, filled in place, shown at once.
#[test]
fn self_percentiles_are_filled_for_the_rows_on_screen() {
    use perflens_report::{FrameTree, ReportOptions};
    let snap = tree_snapshot(1_000_000_000, 1);
    let full = FrameTree::from_snapshot(&snap);
    let mut f = frame(Report::from_snapshot(&snap, &ReportOptions::default()));
    let mut tree = full.clone();
    for n in &mut tree.nodes {
        (n.self_p50_ns, n.self_p99_ns) = (None, None);
    }
    f.tree = Some(tree);
    let mut app = app();
    app.update(Ok(f));
    app.key(Key::Char('h'));
    app.key(Key::Char('r'));
    let parse = key(&["app::main", "app::parse"]);
    assert_eq!(cells(&app, &parse)[4..6], ["-", "-"]);
    let mut wanted = app.wanted_self_percentiles();
    wanted.sort();
    assert_eq!(wanted, [0, 1, 2]);
    let mut asked = Vec::new();
    app.fill_self_percentiles(|tree, nodes| {
        asked = nodes.to_vec();
        for &n in nodes {
            let i = n as usize;
            tree.nodes[i].self_p50_ns = full.nodes[i].self_p50_ns;
            tree.nodes[i].self_p99_ns = full.nodes[i].self_p99_ns;
        }
        Ok(())
    });
    assert_eq!(asked.len(), 3);
    // parse: ten calls of 500 ns (read as [496, 504)'s midpoint).
    assert_eq!(cells(&app, &parse)[4..6], ["500 ns", "500 ns"]);
    assert!(app.wanted_self_percentiles().is_empty());
    // Sorted by Self p99, the percentiles are still read apart (where
    // they order the rows: see the next test).
    app.key(Key::Char('6'));
    assert!(!app.needs().all_histograms);
}

/// A tree of 30 roots of 30 children each, with every figure but the
/// Self percentiles; `full` has those too (p99: a scrambled function of
/// the node, p50 half of it).
fn wide_tree() -> (perflens_report::FrameTree, perflens_report::FrameTree) {
    use perflens_report::{FrameNode, FrameTree};
    let mut full = FrameTree {
        names: Vec::new(),
        nodes: Vec::new(),
        node_of_path: Vec::new(),
    };
    for r in 0..30u32 {
        let root = full.nodes.len() as u32;
        for (parent, name) in [(None, format!("app::r{r:02}"))]
            .into_iter()
            .chain((0..30).map(|c| (Some(root), format!("app::r{r:02}::c{c:02}"))))
        {
            let i = full.nodes.len() as u64;
            let p99 = (i * 7_919) % 1_000 + 1;
            full.names.push(name);
            full.nodes.push(FrameNode {
                parent,
                name: full.names.len() as u32 - 1,
                calls: 1,
                total_ns: 1_000,
                self_ns: 1_000,
                self_p50_ns: Some(p99 / 2),
                self_p99_ns: Some(p99),
                ..FrameNode::default()
            });
        }
    }
    let mut lacking = full.clone();
    for n in &mut lacking.nodes {
        (n.self_p50_ns, n.self_p99_ns) = (None, None);
    }
    (full, lacking)
}

/// Sorted by Self p99 with the percentiles left out of the picture (a
/// live session's), the tree reads them only for the rows whose order
/// they decide down to a page below the screen: the roots, and the
/// children of the roots among those rows. Those rows are in the order
/// every percentile gives; a selection moved past them orders the rows
/// again.
#[test]
fn a_tree_sorted_by_self_p99_reads_the_percentiles_that_order_the_rows_seen() {
    let (full, lacking) = wide_tree();
    let report = Report::from_snapshot(
        &tree_snapshot(1_000_000_000, 1),
        &perflens_report::ReportOptions::default(),
    );
    let picture = |tree: &perflens_report::FrameTree| {
        let mut f = frame(report.clone());
        f.tree = Some(tree.clone());
        f
    };
    let sorted_by_p99 = |app: &mut App| {
        keys(
            app,
            &[Key::Char('h'), Key::Char('r'), Key::Char('6'), Key::Home],
        );
    };
    // What every percentile gives.
    let mut whole = app();
    whole.update(Ok(picture(&full)));
    sorted_by_p99(&mut whole);
    let exact = order(&whole);
    assert_eq!(exact.len(), 930);
    assert_eq!(whole.table().sorted_rows, 930);

    let mut app = app();
    app.update(Ok(picture(&lacking)));
    sorted_by_p99(&mut app);
    // Without a reader, the rows are ordered by what is known: none of
    // the percentiles, so from the first row on, not in their order.
    assert_eq!(app.table().sorted_rows, 0);
    assert_ne!(order(&app), exact);
    let asked_cell: std::cell::RefCell<Vec<u32>> = Default::default();
    let asked = || asked_cell.borrow().clone();
    let mut fill = |tree: &mut perflens_report::FrameTree, nodes: &[u32]| {
        for &n in nodes {
            asked_cell.borrow_mut().push(n);
            let i = n as usize;
            tree.nodes[i].self_p50_ns = full.nodes[i].self_p50_ns;
            tree.nodes[i].self_p99_ns = full.nodes[i].self_p99_ns;
        }
        Ok(())
    };
    app.scroll_to_fit(10);
    app.fill_self_percentiles(&mut fill);
    // Exact down to 100 rows (the screen, 10 rows, and at least 50 rows
    // below): the 30 roots, then the children of the first four roots
    // (rows 1-30, 32-61, 63-92, 94-123); the fifth root is row 124.
    assert_eq!(app.table().sorted_rows, 125);
    assert_eq!(order(&app)[..125], exact[..125]);
    assert_eq!(asked().len(), 30 + 4 * 30);
    // Each node read once.
    let mut once = asked();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), asked().len());
    // Shown as read.
    let top = &exact[0];
    let n = (full.nodes.iter())
        .position(|n| full.names[n.name as usize] == *top)
        .unwrap();
    assert_eq!(
        cells(&app, top)[5],
        perflens_report::format_duration(full.nodes[n].self_p99_ns.unwrap())
    );

    // The selection moved past the rows in their order: ordered again,
    // down to a page below it.
    app.scroll(400);
    app.scroll_to_fit(10);
    asked_cell.borrow_mut().clear();
    app.fill_self_percentiles(&mut fill);
    assert!(
        app.table().sorted_rows >= 400 + 50,
        "{}",
        app.table().sorted_rows
    );
    let sorted = app.table().sorted_rows;
    assert_eq!(order(&app)[..sorted], exact[..sorted]);
    // Only the children of the roots newly among those rows.
    assert!(!asked().is_empty() && asked().len() % 30 == 0);
    assert!(
        asked()
            .iter()
            .all(|&n| full.nodes[n as usize].parent.is_some())
    );

    // A new picture, ordered while it is taken in: only the percentiles
    // that order the rows before a page below the screen are read.
    asked_cell.borrow_mut().clear();
    app.update_with(Ok(picture(&lacking)), Some(&mut fill));
    assert!(app.table().sorted_rows >= app.selected() + 10);
    let sorted = app.table().sorted_rows;
    assert_eq!(order(&app)[..sorted], exact[..sorted]);
    // (The rows above the screen are ordered too: they place it.)
    assert!(
        asked().len() <= sorted + 30 && sorted < 930,
        "{}",
        asked().len()
    );
    // Nothing more to read before drawing.
    asked_cell.borrow_mut().clear();
    app.fill_self_percentiles(&mut fill);
    assert!(asked().is_empty(), "{:?}", asked());
}

/// A channel row's JSON: `(name, sent, received, queued, capacity)`;
/// two senders, one receiver, one channel made per 100 messages.
fn channel(name: &str, sent: u64, received: u64, queued: u64, capacity: Option<u64>) -> String {
    format!(
        r#"{{"name": "{name}", "created": {made}, "senders": 2, "receivers": 1,
            "sent": {sent}, "received": {received}, "dropped": 0, "queued": {queued},
            "max_queued": {max}, "capacity": {cap}, "send_wait_ns": {send_wait},
            "recv_wait_ns": 0, "latency_count": {received}, "latency_mean_ns": 1500,
            "latency_p50_ns": 1000, "latency_p99_ns": 9000, "latency_max_ns": 20000}}"#,
        made = sent / 100,
        max = queued + 1,
        cap = capacity.map_or("null".to_string(), |c| c.to_string()),
        send_wait = sent * 10,
    )
}

/// A lock row's JSON: `(name, acquisitions, contended, wait_ns)`; every
/// acquisition held 1 µs.
fn lock(name: &str, acquisitions: u64, contended: u64, wait_ns: u64) -> String {
    format!(
        r#"{{"name": "{name}", "acquisitions": {acquisitions}, "shared": 0,
            "contended": {contended}, "max_waiters": 3, "hold_count": {acquisitions},
            "hold_ns": {hold}, "hold_mean_ns": 1000, "hold_p50_ns": 1000,
            "hold_p99_ns": 2000, "hold_max_ns": 5000, "wait_count": {contended},
            "wait_ns": {wait_ns}, "wait_mean_ns": 0, "wait_p50_ns": 300,
            "wait_p99_ns": 700, "wait_max_ns": 900}}"#,
        hold = acquisitions * 1000,
    )
}

/// A report with these channel and lock rows (and one function).
fn flow_report(elapsed: u64, channels: &[String], locks: &[String]) -> Report {
    let mut extra = String::new();
    if !channels.is_empty() {
        extra.push_str(&format!(r#", "channels": [{}]"#, channels.join(",")));
    }
    if !locks.is_empty() {
        extra.push_str(&format!(r#", "locks": [{}]"#, locks.join(",")));
    }
    report_with(
        elapsed,
        false,
        &[func("app::main", 1, 1_000, 1_000)],
        &[],
        &[],
        &extra,
    )
}

/// Two successive reports, half a second apart: two channels and two
/// locks.
fn two_flow_reports() -> (Report, Report) {
    let a = flow_report(
        1_000_000_000,
        &[
            channel("jobs", 1_000, 990, 10, Some(16)),
            channel("results", 400, 400, 0, None),
        ],
        &[lock("totals", 500, 20, 40_000), lock("cache", 80, 0, 0)],
    );
    let b = flow_report(
        1_500_000_000,
        &[
            channel("jobs", 1_600, 1_584, 16, Some(16)),
            channel("results", 1_400, 1_399, 1, None),
            channel("late", 7, 0, 7, Some(8)),
        ],
        &[lock("totals", 800, 50, 100_000), lock("cache", 280, 1, 500)],
    );
    (a, b)
}

#[test]
fn data_flow_rows_are_the_channels_and_locks_with_rates_of_two_reports() {
    let (a, b) = two_flow_reports();
    let mut app = app();
    app.update(Ok(frame(a)));
    app.key(Key::Char('d'));
    assert_eq!(app.table_id(), TableId::Channels);
    assert!(app.needs().flow && !app.needs().functions && !app.needs().hot_paths);
    assert_eq!(
        app.table().headers,
        [
            "Channel",
            "Sent/s▼",
            "Received/s",
            "Queued",
            "Max queued",
            "Capacity",
            "Dropped/s",
            "Send wait/s",
            "Recv wait/s",
            "Latency p50",
            "Latency p99",
            "Senders",
            "Receivers",
            "Made/s",
        ]
    );
    // One report: no rate yet; the levels are there.
    assert_eq!(
        cells(&app, "jobs"),
        [
            "jobs", "-", "-", "10", "11", "16", "-", "-", "-", "1.00 µs", "9.00 µs", "2", "1", "-"
        ]
    );
    assert_eq!(cells(&app, "results")[5], "unbounded");
    assert_eq!(app.note().as_deref(), Some("v: the locks (2)"));

    app.update(Ok(frame(b)));
    // jobs: 600 sent, 594 received, 6,000 ns of send wait, 6 made in
    // half a second; results: 1,000 sent, 999 received; late: new, so
    // all of its 7 since the last report.
    assert_eq!(
        cells(&app, "jobs"),
        [
            "jobs",
            "1,200",
            "1,188",
            "16",
            "17",
            "16",
            "0",
            "12.00 µs",
            "0 ns",
            "1.00 µs",
            "9.00 µs",
            "2",
            "1",
            "12"
        ]
    );
    assert_eq!(cells(&app, "results")[1..3], ["2,000", "1,998"]);
    assert_eq!(cells(&app, "late")[1..3], ["14", "0"]);
    // No message of `late` was received: no latency.
    assert_eq!(cells(&app, "late")[9..11], ["-", "-"]);
    // By Sent/s, largest first.
    assert_eq!(order(&app), ["results", "jobs", "late"]);

    // Totals: the reports' own figures; the sort by Sent stays.
    app.key(Key::Char('r'));
    assert_eq!(app.table().headers[1], "Sent▼");
    assert_eq!(cells(&app, "jobs")[1..3], ["1,600", "1,584"]);
    assert_eq!(cells(&app, "jobs")[13], "16");
    assert_eq!(order(&app), ["jobs", "results", "late"]);

    // `v`: the locks, by their wait, largest first.
    app.key(Key::Char('r'));
    app.key(Key::Char('v'));
    assert_eq!(app.table_id(), TableId::Locks);
    assert_eq!(app.note().as_deref(), Some("v: the channels (3)"));
    assert_eq!(
        app.table().headers,
        [
            "Lock",
            "Acquired/s",
            "Contended/s",
            "Shared/s",
            "Wait/s▼",
            "Wait p50",
            "Wait p99",
            "Hold/s",
            "Hold p50",
            "Hold p99",
            "Hold max",
            "Max waiters",
        ]
    );
    // totals: 300 acquired, 30 contended, 60 µs waited, 300 µs held in
    // half a second; cache: 200 acquired, 1 contended, 500 ns waited.
    assert_eq!(
        cells(&app, "totals"),
        [
            "totals",
            "600",
            "60",
            "0",
            "120.00 µs",
            "300 ns",
            "700 ns",
            "600.00 µs",
            "1.00 µs",
            "2.00 µs",
            "5.00 µs",
            "3"
        ]
    );
    assert_eq!(cells(&app, "cache")[1..5], ["400", "2", "0", "1.00 µs"]);
    assert_eq!(order(&app), ["totals", "cache"]);
    // `2`: by Acquired/s, largest first; again: reversed.
    app.key(Key::Char('2'));
    assert_eq!(order(&app), ["totals", "cache"]);
    app.key(Key::Char('2'));
    assert_eq!(order(&app), ["cache", "totals"]);
    // `v` again: the channels, with their own sort kept.
    app.key(Key::Char('v'));
    assert_eq!(app.table_id(), TableId::Channels);
    assert_eq!(order(&app), ["results", "jobs", "late"]);
}

#[test]
fn data_flow_rows_sort_by_any_column_and_filter_by_name() {
    let (a, b) = two_flow_reports();
    let mut app = app();
    app.key(Key::Char('d'));
    app.update(Ok(frame(a)));
    app.update(Ok(frame(b)));
    // Queued, a level: largest first, then reversed.
    app.key(Key::Char('4'));
    assert_eq!(app.table().headers[3], "Queued▼");
    assert_eq!(order(&app), ["jobs", "late", "results"]);
    app.key(Key::Char('4'));
    assert_eq!(order(&app), ["results", "late", "jobs"]);
    // Capacity: numbers first, `unbounded` after them.
    app.key(Key::Char('6'));
    assert_eq!(order(&app), ["jobs", "late", "results"]);
    // By name, A to Z.
    app.key(Key::Char('1'));
    assert_eq!(order(&app), ["jobs", "late", "results"]);
    app.key(Key::Char('1'));
    assert_eq!(order(&app), ["results", "late", "jobs"]);
    // `s` moves to the next column: Sent.
    app.key(Key::Char('s'));
    assert_eq!(app.table().headers[1], "Sent/s▼");
    assert_eq!(order(&app), ["results", "jobs", "late"]);

    // The filter: by name, case-insensitive, applied on Enter.
    keys(&mut app, &[Key::Char('/')]);
    type_text(&mut app, "S");
    assert_eq!(order(&app).len(), 3);
    app.key(Key::Enter);
    assert_eq!(order(&app), ["results", "jobs"]);
    // It applies to the locks too.
    app.key(Key::Char('v'));
    assert_eq!(order(&app), ["totals"]);
    app.key(Key::Esc);
    assert_eq!(order(&app), ["totals", "cache"]);
    // The selection moves and stays in bounds.
    keys(&mut app, &[Key::Down, Key::Down, Key::Down]);
    assert_eq!(app.selected(), 1);
    app.scroll(-10);
    assert_eq!(app.selected(), 0);
}

#[test]
fn data_flow_shows_the_section_that_has_rows_or_says_there_is_none() {
    let mut app = app();
    app.key(Key::Char('d'));
    app.update(Ok(frame(flow_report(
        1_000_000_000,
        &[],
        &[lock("totals", 5, 1, 100)],
    ))));
    // Only locks: the locks, whatever the view chosen; `v` has nothing
    // else to show.
    assert_eq!(app.table_id(), TableId::Locks);
    assert_eq!(app.note(), None);
    app.key(Key::Char('v'));
    assert_eq!(app.table_id(), TableId::Locks);
    assert_eq!(order(&app), ["totals"]);
    // Only channels: the channels.
    app.update(Ok(frame(flow_report(
        2_000_000_000,
        &[channel("jobs", 5, 5, 0, None)],
        &[],
    ))));
    assert_eq!(app.table_id(), TableId::Channels);
    assert_eq!(order(&app), ["jobs"]);
    // Neither: no rows, and why.
    app.update(Ok(frame(flow_report(3_000_000_000, &[], &[]))));
    assert_eq!(order(&app).len(), 0);
    assert_eq!(
        app.note().as_deref(),
        Some("no channel or lock in this program (perflens::channel!, perflens::sync)")
    );
    let screen = super::draw_offscreen(&mut app, 120, 10);
    let text: String = (screen.content.iter()).map(|c| c.symbol()).collect();
    assert!(text.contains("Data flow"), "{text}");
    assert!(text.contains("no channel or lock"), "{text}");
}

#[test]
fn data_flow_rates_come_from_pictures_read_for_other_tabs() {
    let (a, b) = two_flow_reports();
    let mut app = app();
    // Read for the Functions tab: the flow sites' counts are exact, their
    // percentiles not read.
    let mut first = frame(a);
    first.holds = Needs {
        functions: true,
        ..Needs::default()
    };
    app.update(Ok(first));
    app.key(Key::Char('d'));
    // Not shown from such a picture: its percentiles would be wrong.
    assert_eq!(order(&app).len(), 0);
    let mut second = frame(b);
    second.holds = Needs {
        flow: true,
        ..Needs::default()
    };
    app.update(Ok(second));
    // Rates at once, against the picture before.
    assert_eq!(cells(&app, "jobs")[1], "1,200");
    // Count mode: no durations.
    let mut c = flow_report(
        2_000_000_000,
        &[channel("jobs", 2_000, 1_990, 10, Some(16))],
        &[lock("totals", 900, 50, 0)],
    );
    c.mode = perflens_report::ReportMode::Count;
    app.update(Ok(frame(c)));
    assert_eq!(cells(&app, "jobs")[1], "800");
    assert_eq!(cells(&app, "jobs")[7..11], ["-", "-", "-", "-"]);
}

/// The table, drawn straight into the buffer, is cell for cell (text and
/// style) what ratatui's Table widget drew from the same rows: flat and
/// tree tables, the selection, totals and rates, a filter, terminals wide
/// and narrow (columns left out, names cut), and a row scrolled to.
#[test]
fn the_table_is_drawn_as_the_table_widget_drew_it() {
    use super::view::table::{SPACING, columns_shown, name_cell};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::layout::{Constraint, Rect};
    use ratatui::style::{Modifier, Style};
    use ratatui::text::Line;
    use ratatui::widgets::{Cell, Clear, Row as WRow, Table};

    /// The table as the widget drew it, over whatever `area` held.
    fn widget(frame: &mut ratatui::Frame, app: &mut App, area: Rect) {
        if area.height < 2 {
            return;
        }
        let height = area.height as usize - 1;
        let offset = app.scroll_to_fit(height);
        let selected = app.selected();
        let table = app.table();
        let (shown, name_width) = columns_shown(&table.widths, area.width as usize);
        let mut widths = vec![Constraint::Length(name_width as u16)];
        widths.extend(
            table.widths[1..shown]
                .iter()
                .map(|&w| Constraint::Length(w as u16)),
        );
        let header = WRow::new(table.headers.iter().take(shown).enumerate().map(|(i, h)| {
            let line = Line::from(h.clone());
            Cell::from(if i == 0 { line } else { line.right_aligned() })
        }))
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let rows = (table.rows.iter().enumerate().skip(offset).take(height)).map(|(i, row)| {
            let cells = (0..shown).map(|c| {
                let text = table.cell(row, c);
                if c == 0 {
                    Cell::from(name_cell(&text, row.tree.then_some(row.depth), name_width))
                } else {
                    Cell::from(Line::from(text).right_aligned())
                }
            });
            let r = WRow::new(cells);
            if i == selected {
                r.style(Style::new().add_modifier(Modifier::REVERSED))
            } else {
                r
            }
        });
        frame.render_widget(Clear, area);
        frame.render_widget(
            Table::new(rows, widths)
                .header(header)
                .column_spacing(SPACING),
            area,
        );
    }

    let (a, b) = two_reports();
    let tree = |elapsed| tree_report(elapsed, 1);
    let cases: Vec<(Vec<Report>, Vec<Key>)> = vec![
        (vec![a.clone(), b.clone()], vec![]),
        (vec![a.clone(), b.clone()], vec![Key::Char('r'), Key::Down]),
        (
            vec![a.clone(), b.clone()],
            vec![Key::Char('3'), Key::Down, Key::Down],
        ),
        (
            vec![tree(1_000_000_000), tree(1_500_000_000)],
            vec![Key::Char('h'), Key::Down],
        ),
        (
            vec![tree(1_000_000_000), tree(1_500_000_000)],
            vec![Key::Char('h'), Key::End, Key::Left, Key::Char('r')],
        ),
        (
            vec![a, b],
            vec![Key::Char('/'), Key::Char('p'), Key::Char('a'), Key::Enter],
        ),
    ];
    for (reports, ks) in cases {
        for (width, height) in [(200, 30), (100, 12), (60, 8), (30, 7), (30, 6)] {
            let mut app = app();
            for r in &reports {
                app.update(Ok(frame(r.clone())));
            }
            keys(&mut app, &ks);
            let mut direct = Terminal::new(TestBackend::new(width, height)).unwrap();
            direct.draw(|f| super::view::draw(f, &mut app)).unwrap();
            let mut reference = Terminal::new(TestBackend::new(width, height)).unwrap();
            reference
                .draw(|f| {
                    super::view::draw(f, &mut app);
                    // The table's place: below the header, state, tabs
                    // and note lines, above the status line.
                    let body = Rect {
                        x: 0,
                        y: 4,
                        width,
                        height: height - 5,
                    };
                    widget(f, &mut app, body);
                })
                .unwrap();
            assert_eq!(
                direct.backend().buffer(),
                reference.backend().buffer(),
                "{width}x{height} after {ks:?}"
            );
        }
    }
}

/// A channel whose capacity the report does not know (none of its
/// channels was made in the session: `capacity_known` false) shows `-`,
/// never `unbounded`; one whose report predates the field reads as known.
#[test]
fn a_channel_capacity_not_known_is_a_dash() {
    let unknown = channel("made before", 5, 5, 0, None).replace(
        r#""capacity": null,"#,
        r#""capacity": null, "capacity_known": false,"#,
    );
    let report = flow_report(
        1_000_000_000,
        &[unknown, channel("results", 400, 400, 0, None)],
        &[],
    );
    assert!(
        !(report.channels.iter())
            .find(|c| c.name == "made before")
            .unwrap()
            .capacity_known
    );
    let mut app = app();
    app.update(Ok(frame(report)));
    app.key(Key::Char('d'));
    assert_eq!(app.table().headers[5], "Capacity");
    assert_eq!(cells(&app, "made before")[5], "-");
    assert_eq!(cells(&app, "results")[5], "unbounded");
}

/// A report at `elapsed` ns whose heap profile has `paths`: (frames,
/// bytes in use, bytes allocated).
fn heap_report(elapsed: u64, paths: &[(&[&str], u64, u64)]) -> Report {
    let rows: Vec<String> = (paths.iter())
        .map(|(frames, inuse, alloc)| {
            let frames: Vec<String> = frames.iter().map(|f| format!("\"{f}\"")).collect();
            format!(
                r#"{{"frames": [{}], "inuse_bytes": {inuse}, "inuse_objects": {},
                    "alloc_bytes": {alloc}, "alloc_objects": {}, "samples": 3}}"#,
                frames.join(","),
                inuse / 1024,
                alloc / 1024
            )
        })
        .collect();
    let heap = format!(
        r#", "heap": {{"rate_bytes": 524288, "inuse_bytes": 0, "inuse_objects": 0,
            "inuse_samples": 0, "sampled": 9, "dropped": 0, "capacity": 65536,
            "inuse_paths": [{}]}}"#,
        rows.join(",")
    );
    report_with(elapsed, false, &[], &[], &[], &format!("{ALLOC}{heap}"))
}

#[test]
fn the_memory_tab_shows_what_each_path_holds_growing_paths_first() {
    const MIB: u64 = 1 << 20;
    let mut app = app();
    app.update(Ok(frame(heap_report(
        1_000_000_000,
        &[
            (&["app::main", "app::cache"], 10 * MIB, 10 * MIB),
            (&["app::main", "app::leak"], MIB, MIB),
            (&[], 4096, 8192),
        ],
    ))));
    app.key(Key::Char('m'));
    assert_eq!(app.table_id(), TableId::Memory);
    assert_eq!(
        app.table().headers,
        [
            "Path",
            "In use Δ/s▼",
            "Objects",
            "Sampled",
            "Allocated/s",
            "Allocs/s"
        ]
    );
    // Half a second later the leak grew by 2 MiB, the cache held still,
    // and what no function allocated was freed.
    app.update(Ok(frame(heap_report(
        1_500_000_000,
        &[
            (&["app::main", "app::cache"], 10 * MIB, 10 * MIB),
            (&["app::main", "app::leak"], 3 * MIB, 3 * MIB),
        ],
    ))));
    assert_eq!(
        order(&app),
        ["app::main -> app::leak", "app::main -> app::cache"]
    );
    assert_eq!(
        cells(&app, "app::main -> app::leak"),
        [
            "app::main -> app::leak",
            "4.00 MiB",
            "3,072",
            "3",
            "4.00 MiB",
            "4,096"
        ]
    );
    assert_eq!(cells(&app, "app::main -> app::cache")[1], "0 B");
    // Totals: what each holds, the largest first.
    app.key(Key::Char('r'));
    assert_eq!(
        order(&app),
        ["app::main -> app::cache", "app::main -> app::leak"]
    );
    assert_eq!(cells(&app, "app::main -> app::cache")[1], "10.00 MiB");
    assert_eq!(app.note(), None);
    // A report without a heap profile says why the tab is empty.
    app.update(Ok(frame(report(2_000_000_000, false, &[], &[]))));
    assert!(app.note().unwrap().starts_with("the heap is not sampled"));
}
