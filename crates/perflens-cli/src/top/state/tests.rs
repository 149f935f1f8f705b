//! Unit tests of the state alone, without a terminal or a buffer: the
//! sort by integer keys against the comparison it stands for, columns'
//! widths against their cells' texts, names in natural order, and each
//! key's effect on the state (tabs, views, sort, filter, help, pause,
//! selection, the tree's expansion) on a table built by hand.

use super::cells::{Row, Shown, Table};
use super::sort::{Val, compare, name_ranks, natural, sort_rows};
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
                sort_rows(&mut got, &vals, &rows, n, c, &rank, reversed, order);
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
