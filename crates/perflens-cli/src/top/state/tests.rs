//! Unit tests of the state alone, without a terminal or a buffer: the
//! sort by integer keys against the comparison it stands for, columns'
//! widths against their cells' texts, names in natural order, and each
//! key's effect on the state (tabs, views, sort, filter, help, pause,
//! selection, the tree's expansion) on a table built by hand.

use super::cells::{Row, Shown, Table};
use super::sort::{SortColumn, Val, compare, name_ranks, natural};
use crate::top::table::{Raw, RawRow, RowKey};
use std::rc::Rc;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Sorting by integer keys gives exactly the order of the values'
/// comparison (a stable sort, ties by name rank): numbers with ties,
/// zeros of both signs, missing values, names that repeat, both
/// directions, every column.
#[test]
fn sorting_by_keys_is_the_comparison_order() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let names = ["b", "a#10", "a#2", "c", "a#2"];
    for round in 0..200 {
        let count = 1 + rng.below(40) as usize;
        let rows: Vec<RawRow> = (0..count)
            .map(|_| RawRow {
                key: RowKey(rng.next()),
                name: Rc::from(names[rng.below(names.len() as u64) as usize]),
                parent: None,
                values: vec![Raw::Name, Raw::U(0), Raw::Missing],
            })
            .collect();
        let n = 3;
        let vals: Vec<Val> = (rows.iter())
            .flat_map(|r| {
                let num = match rng.below(6) {
                    0 => Val::None,
                    1 => Val::Num(-0.0),
                    2 => Val::Num(0.0),
                    3 => Val::Num(-(rng.below(5) as f64)),
                    _ => Val::Num(rng.below(5) as f64 * 0.5),
                };
                let other = if rng.below(3) == 0 {
                    Val::None
                } else {
                    Val::Num(rng.below(1_000_000) as f64 / 7.0)
                };
                [Val::Text(&r.name), num, other]
            })
            .collect();
        let rank = name_ranks(&rows);
        for c in 0..n {
            for reversed in [false, true] {
                let order = |a: usize, b: usize| {
                    let o = compare(&vals[a * n + c], &vals[b * n + c]);
                    let o = if reversed { o.reverse() } else { o };
                    o.then_with(|| rank[a].cmp(&rank[b]))
                };
                let mut start: Vec<usize> = (0..count).collect();
                // Not in index order: ties keep this order.
                for i in (1..count).rev() {
                    start.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let mut want = start.clone();
                want.sort_by(|&a, &b| order(a, b));
                let mut got = start.clone();
                let column = SortColumn {
                    vals: &vals,
                    rows: &rows,
                    n,
                    c,
                    rank: &rank,
                    reversed,
                };
                column.sort(&mut got);
                assert_eq!(got, want, "round {round}, column {c}, reversed {reversed}");
            }
        }
    }
}

/// A column's width from the largest value of each unit is the
/// widest of its cells' texts, across the units' boundaries.
#[test]
fn a_column_is_as_wide_as_its_widest_cell() {
    use crate::top::table::{Agg, Column, Unit};
    static COLUMNS: [Column; 4] = [
        Column {
            title: "Count",
            unit: Unit::Count,
            agg: Agg::Counter,
        },
        Column {
            title: "Time",
            unit: Unit::Duration,
            agg: Agg::Counter,
        },
        Column {
            title: "Bytes",
            unit: Unit::Bytes,
            agg: Agg::Counter,
        },
        Column {
            title: "Share",
            unit: Unit::Percent,
            agg: Agg::Share,
        },
    ];
    let edges = [
        0.0,
        0.4,
        9.5,
        999.0,
        999.4,
        1_000.0,
        1_023.0,
        1_024.0,
        9_994.9,
        9_995.0,
        99_994.0,
        999_994.0,
        999_995.0,
        1_048_570.0,
        1_073_741_000.0,
        5e9,
        1.2e12,
    ];
    let mut rng = Rng(7);
    for round in 0..300 {
        let count = 1 + rng.below(12) as usize;
        let cells: Vec<Shown> = (0..count * 4)
            .map(|_| match rng.below(8) {
                0 => Shown::None,
                1 => Shown::Num(rng.below(100_000_000_000) as f64),
                _ => Shown::Num(edges[rng.below(edges.len() as u64) as usize]),
            })
            .collect();
        let rows: Vec<Row> = (0..count)
            .map(|index| Row {
                key: RowKey(index as u64),
                parent: None,
                index,
                name: Rc::from("x"),
                depth: 0,
                expanded: None,
                tree: false,
            })
            .collect();
        let table = Table {
            headers: Vec::new(),
            rows,
            widths: Vec::new(),
            cells,
            columns: &COLUMNS,
            sorted_rows: count,
        };
        let got = table.column_widths();
        assert_eq!(got.len(), COLUMNS.len());
        for (i, &width) in got.iter().enumerate() {
            let want = (table.rows.iter())
                .map(|r| table.cell(r, i).chars().count())
                .max()
                .unwrap_or(0);
            assert_eq!(width, want, "round {round}, column {i}");
        }
    }
}

#[test]
fn names_sort_with_digit_runs_as_numbers() {
    use std::cmp::Ordering::{Equal, Greater, Less};
    assert_eq!(natural("#2", "#10"), Less);
    assert_eq!(natural("#10", "#2"), Greater);
    assert_eq!(natural("route_07", "route_7"), Equal);
    assert_eq!(natural("route_007x", "route_7y"), Less);
    assert_eq!(natural("step_99", "step_100"), Less);
    assert_eq!(natural("a", "ab"), Less);
    assert_eq!(natural("app::b", "app::a"), Greater);
    assert_eq!(natural("", ""), Equal);
    // Digits before letters, as the characters order; beyond ASCII by
    // code point.
    assert_eq!(natural("a1", "ab"), Less);
    assert_eq!(natural("é2", "é10"), Less);
    assert_eq!(natural("z", "é"), Less);
    assert_eq!(natural("µs", "ms"), Greater);
}

#[test]
fn widths_from_numbers_are_those_of_their_texts() {
    use super::cells::number_width;
    use crate::top::table::Unit;
    use perflens_report::{format_count, format_duration};
    let mut values: Vec<u64> = vec![0, 1, 9, 10, 999, 1_000, 1_001, u64::MAX];
    for k in 0..19 {
        let p = 10u64.pow(k);
        for d in [1, 2, 3, 4, 5, 6, 9, 10, 11, 50, 94, 95, 96, 99, 100, 101] {
            values.extend([p * 10 - d.min(p * 10), p.saturating_mul(d), p + d]);
        }
    }
    // Around every place where two decimals round up to the next digit.
    for scale in [1_000u64, 1_000_000, 1_000_000_000] {
        for boundary in [10, 100, 1_000, 10_000] {
            let at = boundary * scale - scale / 200;
            values.extend((at.saturating_sub(50)..at + 50).step_by(1));
        }
    }
    for v in values {
        let n = v as f64;
        let text = format_duration(n.round().max(0.0) as u64);
        if let Some(w) = number_width(Unit::Duration, n) {
            assert_eq!(w, text.chars().count(), "{v}: {text}");
        }
        let text = format_count(n.round().max(0.0) as u64);
        assert_eq!(number_width(Unit::Count, n), Some(text.len()), "{v}");
    }
    // Rates are fractions: rounded first.
    assert_eq!(number_width(Unit::Count, 999.5), Some(5));
    assert_eq!(number_width(Unit::Duration, 999.4), Some(6));
}

// The state's transitions: an `App` fed pictures built by hand and keys,
// read back through its accessors and fields; nothing is drawn.

use super::view_model::{LazyKeys, Picture, ViewModel};
use super::{App, FlowView, FnView, Key, Sort, Tab, Values};
use crate::top::source::{Capture, Needs, Target};
use crate::top::table::{KeyHash, TableId};
use perflens_report::Report;
use std::cell::RefCell;
use std::collections::HashSet;
use std::time::Duration;

/// A report `elapsed_ns` into the session with `functions` sync
/// functions `f00`, `f01`, ...: `f{i}` made `i + 1` calls of 1 µs each.
fn report(elapsed_ns: u64, functions: usize) -> Report {
    let rows: Vec<String> = (0..functions)
        .map(|i| {
            let (calls, total) = (i as u64 + 1, (i as u64 + 1) * 1_000);
            format!(
                r#"{{"name": "f{i:02}", "kind": "sync", "calls": {calls},
                    "timed_calls": {calls}, "total_ns": {total}, "self_ns": {total},
                    "avg_ns": 1000, "p50_ns": 1000, "p95_ns": 1000, "p99_ns": 1000,
                    "percentiles": {{}}, "sampled": false}}"#
            )
        })
        .collect();
    let json = format!(
        r#"{{"schema": "perflens.report/1", "mode": "timed", "sample_every": 1,
            "clock": "tsc", "elapsed_ns": {elapsed_ns}, "finished": false,
            "percentiles": [50.0, 95.0, 99.0], "functions": [{}], "paths": [],
            "threads": [], "dropped": {{"overflow_calls": 0, "overflow_paths": 0,
            "dropped_frames": 0}}, "path_capacity": 1024}}"#,
        rows.join(",")
    );
    Report::from_json_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn frame(report: Report) -> Capture {
    Capture {
        report,
        holds: Needs::ALL,
        tree: None,
        target: Target {
            pid: Some(7),
            program: "p".into(),
            running: true,
            warning: None,
        },
    }
}

fn app() -> App {
    App::new(Duration::from_millis(250), "test".into())
}

fn press(app: &mut App, keys: &[Key]) {
    for &k in keys {
        app.key(k);
    }
}

/// The tab keys move between the tabs (Tab and Shift-Tab around the
/// ends), each tab shows its table, and what the source is asked to read
/// follows the tab and the Functions tab's view.
#[test]
fn tabs_choose_the_table_and_what_the_source_reads() {
    let mut app = app();
    assert_eq!(
        (app.tab(), app.table_id()),
        (Tab::Functions, TableId::Timing)
    );
    let functions = Needs {
        functions: true,
        ..Needs::default()
    };
    assert_eq!(app.needs(), functions);
    app.key(Key::Tab);
    assert_eq!((app.tab(), app.table_id()), (Tab::HotPaths, TableId::Paths));
    assert_eq!(
        app.needs(),
        Needs {
            hot_paths: true,
            ..Needs::default()
        }
    );
    press(&mut app, &[Key::BackTab, Key::BackTab]);
    assert_eq!((app.tab(), app.table_id()), (Tab::Memory, TableId::Memory));
    // Every picture holds the heap profile: nothing more to read.
    assert_eq!(app.needs(), Needs::default());
    app.key(Key::BackTab);
    assert_eq!(
        (app.tab(), app.table_id()),
        (Tab::DataFlow, TableId::Channels)
    );
    assert_eq!(
        app.needs(),
        Needs {
            flow: true,
            ..Needs::default()
        }
    );
    press(&mut app, &[Key::Tab, Key::Tab]);
    assert_eq!(app.tab(), Tab::Functions);
    let direct = [
        ('m', Tab::Memory, TableId::Memory),
        ('h', Tab::HotPaths, TableId::Paths),
        ('a', Tab::Async, TableId::Async),
        ('t', Tab::Threads, TableId::Threads),
        ('d', Tab::DataFlow, TableId::Channels),
        ('f', Tab::Functions, TableId::Timing),
    ];
    for (c, tab, table) in direct {
        app.key(Key::Char(c));
        assert_eq!((app.tab(), app.table_id()), (tab, table), "{c}");
    }
    assert_eq!(app.needs(), functions);
    // The Async tab reads the function rows too, the Threads tab nothing
    // more than every picture holds.
    app.key(Key::Char('a'));
    assert_eq!(app.needs(), functions);
    app.key(Key::Char('t'));
    assert_eq!(app.needs(), Needs::default());
}

/// `v` cycles the Functions tab's views (from another tab, it shows the
/// Functions tab in its next view) and only the allocation view asks for
/// every histogram; on the Data flow tab it switches channels and locks.
#[test]
fn v_cycles_the_views_of_the_functions_and_data_flow_tabs() {
    let mut app = app();
    let steps = [
        (FnView::Alloc, TableId::Alloc, true),
        (FnView::Cpu, TableId::Cpu, false),
        (FnView::Timing, TableId::Timing, false),
    ];
    for (view, table, all_histograms) in steps {
        app.key(Key::Char('v'));
        assert_eq!((app.fn_view(), app.table_id()), (view, table));
        assert_eq!(app.needs().all_histograms, all_histograms, "{view:?}");
    }
    app.key(Key::Char('t'));
    app.key(Key::Char('v'));
    assert_eq!(
        (app.tab(), app.fn_view(), app.table_id()),
        (Tab::Functions, FnView::Alloc, TableId::Alloc)
    );
    // Data flow: without a picture, the view chosen is the view shown.
    app.key(Key::Char('d'));
    assert_eq!(app.flow_view(), FlowView::Channels);
    app.key(Key::Char('v'));
    assert_eq!(
        (app.flow_view(), app.table_id()),
        (FlowView::Locks, TableId::Locks)
    );
    // The Functions tab's view stays what it was.
    assert_eq!(app.fn_view(), FnView::Alloc);
    app.key(Key::Char('v'));
    assert_eq!(
        (app.flow_view(), app.table_id()),
        (FlowView::Channels, TableId::Channels)
    );
}

/// Each table keeps its own sort: `s` moves to the next column (not
/// reversed), `S` reverses, a digit picks a column (again: reverses), a
/// digit past the last column does nothing.
#[test]
fn sort_keys_change_the_sort_of_the_table_on_screen_only() {
    let mut app = app();
    let sort = |app: &App, t: TableId| app.sorts[t.slot()];
    let timing = |column, reversed| Sort { column, reversed };
    assert_eq!(sort(&app, TableId::Timing), timing(6, false));
    app.key(Key::Char('S'));
    assert_eq!(sort(&app, TableId::Timing), timing(6, true));
    app.key(Key::Char('s'));
    assert_eq!(sort(&app, TableId::Timing), timing(7, false));
    press(&mut app, &[Key::Char('s'), Key::Char('s')]);
    assert_eq!(sort(&app, TableId::Timing), timing(0, false));
    app.key(Key::Char('3'));
    assert_eq!(sort(&app, TableId::Timing), timing(2, false));
    app.key(Key::Char('3'));
    assert_eq!(sort(&app, TableId::Timing), timing(2, true));
    // The CPU view has 6 columns: `7` is no column of it.
    press(&mut app, &[Key::Char('v'), Key::Char('v'), Key::Char('7')]);
    assert_eq!(app.table_id(), TableId::Cpu);
    assert_eq!(sort(&app, TableId::Cpu), timing(1, false));
    app.key(Key::Char('6'));
    assert_eq!(sort(&app, TableId::Cpu), timing(5, false));
    // The other tables kept theirs.
    assert_eq!(sort(&app, TableId::Timing), timing(2, true));
    for t in [
        TableId::Alloc,
        TableId::Paths,
        TableId::Threads,
        TableId::Locks,
    ] {
        assert_eq!(sort(&app, t), timing(t.default_sort(), false), "{t:?}");
    }
}

/// While a filter is typed every key is text (no command runs but
/// Ctrl-C), arrows do nothing; Enter applies it, `/` again starts from
/// the filter applied, and Esc outside typing clears it.
#[test]
fn a_filter_is_typed_then_applied() {
    let mut app = app();
    app.update(Ok(frame(report(1_000_000_000, 12))));
    app.key(Key::Char('/'));
    assert_eq!(app.editing(), Some(""));
    press(
        &mut app,
        &[
            Key::Char('p'),
            Key::Char('r'),
            Key::Char('h'),
            Key::Char('q'),
        ],
    );
    press(
        &mut app,
        &[Key::Down, Key::Tab, Key::Backspace, Key::Backspace],
    );
    assert_eq!(app.editing(), Some("pr"));
    assert_eq!(
        (app.paused(), app.values(), app.tab(), app.selected()),
        (false, Values::Rate, Tab::Functions, 0)
    );
    assert!(!app.should_quit());
    // Applied: `F1` matches f10 and f11 (case aside), no rate yet to
    // order them but their names.
    press(
        &mut app,
        &[
            Key::Backspace,
            Key::Backspace,
            Key::Char('F'),
            Key::Char('1'),
        ],
    );
    app.key(Key::Enter);
    assert_eq!((app.editing(), app.filter()), (None, "F1"));
    let names: Vec<&str> = app.table().rows.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["f10", "f11"]);
    // Typing again starts from it.
    app.key(Key::Char('/'));
    assert_eq!(app.editing(), Some("F1"));
    app.key(Key::Char('0'));
    app.key(Key::Enter);
    assert_eq!(app.table().rows.len(), 1);
    app.key(Key::Esc);
    assert_eq!((app.editing(), app.filter()), (None, ""));
    assert_eq!(app.table().rows.len(), 12);
    // Ctrl-C quits even while typing.
    press(&mut app, &[Key::Char('/'), Key::CtrlC]);
    assert!(app.should_quit());
}

/// `p` pauses and resumes the reads; `?` shows the help, and the next key
/// only closes it (`p` does not pause then).
#[test]
fn pause_and_help() {
    let mut app = app();
    assert!(app.wants_read());
    app.key(Key::Char('p'));
    assert!(app.paused() && !app.wants_read());
    press(&mut app, &[Key::Char('?'), Key::Char('p')]);
    assert!(!app.help() && app.paused());
    app.key(Key::Char('p'));
    assert!(!app.paused() && app.wants_read());
}

/// The selection moves by rows, by the page the last drawing was high,
/// and to either end, within the table; the first row drawn follows it;
/// each table keeps its own.
#[test]
fn the_selection_moves_within_the_table_and_each_table_keeps_its_own() {
    let mut app = app();
    app.update(Ok(frame(report(1_000_000_000, 30))));
    app.key(Key::Char('r'));
    assert_eq!(app.table().rows.len(), 30);
    // By total, largest first: f29 on top.
    assert_eq!(app.table().rows[0].name(), "f29");
    press(
        &mut app,
        &[Key::Down, Key::Char('j'), Key::Down, Key::Char('k')],
    );
    assert_eq!(app.selected(), 2);
    // Before any drawing a page is 10 rows.
    app.key(Key::PageDown);
    assert_eq!(app.selected(), 12);
    assert_eq!(app.scroll_to_fit(8), 5);
    app.key(Key::PageDown);
    assert_eq!(app.selected(), 20);
    assert_eq!(app.scroll_to_fit(8), 13);
    press(&mut app, &[Key::End, Key::Down]);
    assert_eq!(app.selected(), 29);
    assert_eq!(app.scroll_to_fit(8), 22);
    app.key(Key::PageUp);
    assert_eq!(app.selected(), 21);
    // Moving up inside the rows drawn keeps the first row.
    assert_eq!(app.scroll_to_fit(8), 21);
    press(&mut app, &[Key::Char('G'), Key::Char('g'), Key::Up]);
    assert_eq!(app.selected(), 0);
    assert_eq!(app.scroll_to_fit(8), 0);
    press(&mut app, &[Key::Down, Key::Down, Key::Down]);
    // The Threads table has no row: its selection stays 0.
    app.key(Key::Char('t'));
    assert_eq!((app.table().rows.len(), app.selected()), (0, 0));
    press(&mut app, &[Key::Down, Key::End]);
    assert_eq!(app.selected(), 0);
    app.key(Key::Char('f'));
    assert_eq!(app.selected(), 3);
    assert_eq!(app.table().rows[3].name(), "f26");
}

/// `r` switches rates and totals; the headers say which (a counter's
/// ends in `/s` in rates) and where the sort is.
#[test]
fn r_switches_rates_and_totals_in_the_values_and_headers() {
    let mut app = app();
    app.update(Ok(frame(report(1_000_000_000, 2))));
    app.update(Ok(frame(report(1_500_000_000, 3))));
    assert_eq!(app.values(), Values::Rate);
    let headers = |app: &App| app.table().headers.join("|");
    assert_eq!(
        headers(&app),
        "Function|Calls/s|Avg|p50|p95|p99|Total/s▼|Self/s|% Total"
    );
    // f02 is new: its 3 calls in 0.5 s.
    let f02 = app.table().rows.iter().find(|r| r.name() == "f02").unwrap();
    assert_eq!(app.table().cell(f02, 1), "6");
    app.key(Key::Char('r'));
    assert_eq!(app.values(), Values::Total);
    assert_eq!(
        headers(&app),
        "Function|Calls|Avg|p50|p95|p99|Total▼|Self|% Total"
    );
    let f02 = app.table().rows.iter().find(|r| r.name() == "f02").unwrap();
    assert_eq!(app.table().cell(f02, 1), "3");
}

/// `ViewModel::build` alone, on raw rows made by hand: rates against the
/// previous picture's rows by key (a new row counts from 0), the sort,
/// the filter, the headers.
#[test]
fn a_view_model_builds_its_table_from_raw_rows() {
    let raw = |name: &str, calls: u64, total: u64| RawRow {
        key: RowKey::of(&[name]),
        name: Rc::from(name),
        parent: None,
        values: vec![
            Raw::Name,
            Raw::U(calls),
            Raw::U(1_000),
            Raw::Missing,
            Raw::Missing,
            Raw::Missing,
            Raw::U(total),
            Raw::U(total),
            Raw::Missing,
        ],
    };
    let before = [raw("render", 4, 8_000_000), raw("parse", 10, 2_000_000)];
    let after = [
        raw("parse", 30, 12_000_000),
        raw("render", 4, 8_000_000),
        raw("late", 5, 1_000),
    ];
    let (a, b) = (report(1_000_000_000, 0), report(1_500_000_000, 0));
    let collapsed = HashSet::default();
    let model = |values, sort, filter| ViewModel {
        id: TableId::Timing,
        current: Picture {
            report: &b,
            rows: &after,
        },
        previous: Some(Picture {
            report: &a,
            rows: &before,
        }),
        values,
        sort,
        filter,
        collapsed: &collapsed,
        keys: None,
    };
    let total = Sort {
        column: 6,
        reversed: false,
    };
    let built = model(Values::Rate, total, "").build();
    assert_eq!((&built.filled, &built.error), (&vec![], &None));
    let table = built.table;
    let shown: Vec<Vec<String>> = (table.rows.iter())
        .map(|r| [0, 1, 2, 3, 6].map(|c| table.cell(r, c)).to_vec())
        .collect();
    assert_eq!(
        shown,
        [
            ["parse", "40", "1.00 µs", "-", "20.00 ms"],
            ["late", "10", "1.00 µs", "-", "2.00 µs"],
            ["render", "0", "1.00 µs", "-", "0 ns"],
        ]
    );
    assert_eq!(table.headers[6], "Total/s▼");
    assert_eq!(table.sorted_rows, 3);
    // Totals, by calls reversed (fewest first), filtered.
    let calls_up = Sort {
        column: 1,
        reversed: true,
    };
    let table = model(Values::Total, calls_up, "R").build().table;
    let names: Vec<&str> = table.rows.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["render", "parse"]);
    assert_eq!(table.headers[..2], ["Function", "Calls▲"]);
    assert_eq!(table.cell(&table.rows[1], 1), "30");
}

/// A tree sorted by Self p99, which its rows lack: the reader is asked
/// for the rows whose order it decides (the root's children, once the
/// root is out) while they are among the first `exact_until` rows, and
/// what it read is returned; past them, nothing is read and the rows from
/// there on are not in their exact order. A collapsed node's children
/// are neither shown nor read.
#[test]
fn a_tree_view_model_reads_the_sort_keys_it_lacks_where_they_decide() {
    let node = |frames: &[&str], parent: Option<usize>, p99: Raw| RawRow {
        key: RowKey::of(frames),
        name: Rc::from(*frames.last().unwrap()),
        parent,
        values: vec![
            Raw::Name,
            Raw::U(1),
            Raw::U(100),
            Raw::U(100),
            p99.clone(),
            p99,
            Raw::Missing,
        ],
    };
    let rows = [
        node(&["main"], None, Raw::U(5)),
        node(&["main", "a"], Some(0), Raw::Missing),
        node(&["main", "b"], Some(0), Raw::Missing),
        node(&["main", "c"], Some(0), Raw::Missing),
    ];
    let report = report(1_000_000_000, 0);
    let asked: RefCell<Vec<Vec<u32>>> = RefCell::default();
    let mut read = |nodes: &[u32]| -> Result<Vec<[Option<u64>; 2]>, String> {
        asked.borrow_mut().push(nodes.to_vec());
        Ok((nodes.iter())
            .map(|&n| [Some(1), Some([0, 30, 10, 20][n as usize])])
            .collect())
    };
    let none = HashSet::default();
    fn model<'a>(
        report: &'a Report,
        rows: &'a [RawRow],
        keys: Option<LazyKeys<'a>>,
        collapsed: &'a HashSet<RowKey, KeyHash>,
    ) -> ViewModel<'a> {
        ViewModel {
            id: TableId::Paths,
            current: Picture { report, rows },
            previous: None,
            values: Values::Total,
            sort: Sort {
                column: 5,
                reversed: false,
            },
            filter: "",
            collapsed,
            keys,
        }
    }
    let built = model(
        &report,
        &rows,
        Some(LazyKeys {
            read: &mut read,
            exact_until: 10,
        }),
        &none,
    )
    .build();
    let names: Vec<&str> = built.table.rows.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["main", "a", "c", "b"]);
    assert_eq!(built.table.sorted_rows, 4);
    assert_eq!(
        built.filled,
        [
            (1, [Some(1), Some(30)]),
            (2, [Some(1), Some(10)]),
            (3, [Some(1), Some(20)])
        ]
    );
    assert_eq!(built.table.cell(&built.table.rows[1], 5), "30 ns");
    assert_eq!(*asked.borrow(), [vec![1, 2, 3]]);
    // Past the rows to order exactly: nothing read, the report's order.
    asked.borrow_mut().clear();
    let built = model(
        &report,
        &rows,
        Some(LazyKeys {
            read: &mut read,
            exact_until: 1,
        }),
        &none,
    )
    .build();
    let names: Vec<&str> = built.table.rows.iter().map(|r| r.name()).collect();
    assert_eq!(names, ["main", "a", "b", "c"]);
    assert_eq!((built.table.sorted_rows, built.filled.len()), (1, 0));
    assert!(asked.borrow().is_empty());
    // Collapsed: only the root, marked collapsed.
    let collapsed: HashSet<RowKey, _> = [RowKey::of(&["main"])].into_iter().collect();
    let built = model(
        &report,
        &rows,
        Some(LazyKeys {
            read: &mut read,
            exact_until: 10,
        }),
        &collapsed,
    )
    .build();
    assert_eq!(built.table.rows.len(), 1);
    assert_eq!(built.table.rows[0].expanded, Some(false));
    assert!(asked.borrow().is_empty());
}
