//! What one table on screen is built from, and the building: the
//! [`ViewModel`] carries the current picture's raw rows (and the previous
//! one's, for rates), the rates-or-totals choice, the sort, the filter and
//! the tree's collapsed nodes, and [`ViewModel::build`] turns them into
//! the [`Table`]: every row's values, filtered, sorted, and for the tree,
//! walked depth first without the collapsed nodes' children.

use super::Values;
use super::cells::{Row, Shown, Table};
use super::sort::{Sort, SortColumn, Val, name_ranks};
use crate::top::table::{self, Agg, Column, KeyHash, Raw, RawRow, RowKey, TableId};
use perflens_report::Report;
use std::collections::{HashMap, HashSet};

/// Reads the sort keys of tree rows while the rows are ordered: given
/// raw rows' indices, their Self `[p50, p99]`.
pub(super) type SortKeys<'a> = &'a mut dyn FnMut(&[u32]) -> Result<Vec<[Option<u64>; 2]>, String>;

/// One picture's report and the raw rows made from it for the table.
#[derive(Clone, Copy)]
pub(super) struct Picture<'a> {
    pub(super) report: &'a Report,
    pub(super) rows: &'a [RawRow],
}

/// The reader of a tree's sort keys where the rows lack them (see
/// [`SortKeys`]), asked for the rows whose order they decide among the
/// first `exact_until` rows (the siblings of each of those rows: a few
/// hundred of ten thousand).
pub(super) struct LazyKeys<'a> {
    pub(super) read: SortKeys<'a>,
    pub(super) exact_until: usize,
}

/// Everything one table on screen is built from: which table, the
/// current picture's raw rows, the previous picture's (for rates: `None`
/// when there is none, or it lacks the counters the rates come from),
/// rates or totals, the sort, the filter, the tree's collapsed nodes, and
/// for a tree sorted by a Self percentile the rows lack, their reader.
pub(super) struct ViewModel<'a> {
    pub(super) id: TableId,
    pub(super) current: Picture<'a>,
    pub(super) previous: Option<Picture<'a>>,
    pub(super) values: Values,
    pub(super) sort: Sort,
    pub(super) filter: &'a str,
    pub(super) collapsed: &'a HashSet<RowKey, KeyHash>,
    pub(super) keys: Option<LazyKeys<'a>>,
}

/// A table, and what was read on the way (see [`SortKeys`]).
#[derive(Debug)]
pub(super) struct Built {
    pub(super) table: Table,
    /// The raw rows whose Self percentiles were read, with them.
    pub(super) filled: Vec<(u32, [Option<u64>; 2])>,
    /// Why the sort keys could not be read.
    pub(super) error: Option<String>,
}

/// The value a column shows for one row: the report's, or its rate over
/// the interval from `prev` (the same row in the previous report, if it
/// was there: a row that appeared since counts from 0; a value that was
/// not measured then has no rate).
fn value<'a>(
    column: &Column,
    row: &'a RawRow,
    cur: &'a Raw,
    prev: Option<&Raw>,
    values: Values,
    elapsed_ns: u64,
    dt_ns: Option<u64>,
) -> Val<'a> {
    let n = match cur {
        Raw::U(v) => *v,
        Raw::I(v) => return Val::Num(*v as f64),
        Raw::T(t) => return Val::Text(t),
        Raw::Name => return Val::Text(&row.name),
        Raw::Missing => return Val::None,
    };
    match (column.agg, values) {
        (Agg::Gauge, _) | (Agg::Counter | Agg::Level, Values::Total) => Val::Num(n as f64),
        (Agg::Level, Values::Rate) => {
            let Some((before, dt)) = interval(prev, dt_ns) else {
                return Val::None;
            };
            Val::Num((n as f64 - before as f64) * 1e9 / dt as f64)
        }
        (Agg::Share, Values::Total) => {
            if elapsed_ns == 0 {
                Val::None
            } else {
                Val::Num(n as f64 * 100.0 / elapsed_ns as f64)
            }
        }
        (Agg::Counter | Agg::Share, Values::Rate) => {
            let Some((before, dt)) = interval(prev, dt_ns) else {
                return Val::None;
            };
            let Some(delta) = n.checked_sub(before) else {
                return Val::None;
            };
            let scale = if column.agg == Agg::Share { 100.0 } else { 1e9 };
            Val::Num(delta as f64 * scale / dt as f64)
        }
    }
}

/// A rate's starting point: the row's value in the previous report (0
/// for a row that is new: everything it counts is new) and the interval,
/// or `None` without an interval, or when the value was not measured then
/// (a running program's reports carry no CPU samples; its final one
/// does): no rate.
fn interval(prev: Option<&Raw>, dt_ns: Option<u64>) -> Option<(u64, u64)> {
    let dt = dt_ns.filter(|&d| d > 0)?;
    match prev {
        Some(Raw::U(p)) => Some((*p, dt)),
        None => Some((0, dt)),
        Some(_) => None,
    }
}

type KeyMap = HashMap<RowKey, usize, KeyHash>;

impl ViewModel<'_> {
    /// Builds the table: every row's values (rates against the previous
    /// picture's rows, found by key), the filter, the sort, and for the
    /// tree, the collapsed nodes' children left out. A tree sorted by a
    /// Self percentile the rows lack has them read by [`ViewModel::keys`]
    /// for the rows whose order they decide.
    pub(super) fn build(self) -> Built {
        let ViewModel {
            id,
            current: Picture { report, rows },
            previous,
            values,
            sort,
            filter,
            collapsed,
            mut keys,
        } = self;
        let columns = id.columns();
        let n = columns.len();
        let prev_rows: &[RawRow] = previous.map_or(&[], |p| p.rows);
        // The previous rows by key, made only when a row is not where it was
        // (a tree's rows keep their places from one picture to the next:
        // nodes are only added).
        let mut prev_index: Option<KeyMap> = None;
        let mut previous_of = |i: usize, key: RowKey| match prev_rows.get(i) {
            Some(p) if p.key == key => Some(p),
            _ => {
                let index = prev_index.get_or_insert_with(|| {
                    let mut m = KeyMap::default();
                    m.reserve(prev_rows.len());
                    for (j, r) in prev_rows.iter().enumerate() {
                        m.insert(r.key, j);
                    }
                    m
                });
                index.get(&key).map(|&j| &prev_rows[j])
            }
        };
        let dt_ns = previous.map(|p| report.elapsed_ns.saturating_sub(p.report.elapsed_ns));
        // Every row's values, `n` a row.
        let mut vals: Vec<Val> = Vec::with_capacity(rows.len() * n);
        for (k, raw) in rows.iter().enumerate() {
            let prev = previous_of(k, raw.key);
            for (i, c) in columns.iter().enumerate() {
                let before = prev.and_then(|p| p.values.get(i));
                vals.push(value(
                    c,
                    raw,
                    &raw.values[i],
                    before,
                    values,
                    report.elapsed_ns,
                    dt_ns,
                ));
            }
        }
        let needle = filter.to_lowercase();
        let matches = |name: &str| needle.is_empty() || name.to_lowercase().contains(&needle);
        let c = sort.column.min(n - 1);
        let rank = name_ranks(rows);

        let mut out: Vec<Row> = Vec::with_capacity(rows.len());
        let mut sorted_rows = None;
        let (mut filled, mut error) = (Vec::new(), None);
        if id == TableId::Paths {
            // Children by parent; a node is shown when it or a descendant
            // matches the filter.
            // Children by parent, in one vector: the children of `p` are
            // `kids[start[p]..start[p + 1]]`.
            let mut start = vec![0usize; rows.len() + 1];
            for r in rows {
                if let Some(p) = r.parent {
                    start[p + 1] += 1;
                }
            }
            for i in 0..rows.len() {
                start[i + 1] += start[i];
            }
            let mut kids = vec![0usize; start[rows.len()]];
            let mut next = start.clone();
            let mut roots: Vec<usize> = Vec::new();
            for (i, r) in rows.iter().enumerate() {
                match r.parent {
                    Some(p) => {
                        kids[next[p]] = i;
                        next[p] += 1;
                    }
                    None => roots.push(i),
                }
            }
            let mut keep = vec![needle.is_empty(); rows.len()];
            if !needle.is_empty() {
                // Parents come before their children: walk back.
                for i in (0..rows.len()).rev() {
                    if matches(&rows[i].name) {
                        keep[i] = true;
                    }
                    if keep[i] {
                        if let Some(p) = rows[i].parent {
                            keep[p] = true;
                        }
                    }
                }
            }
            // Sorts one set of siblings, `emitted` rows being out before
            // them. Sorted by a Self percentile the rows lack (a live
            // source's: see `SortKeys`), they are read first while the set's
            // rows may be among the first `exact_until`; past those, or
            // without a reader, the set is ordered by what is known, and the
            // rows from there on are not in their exact order.
            let lazy = table::PATHS_SELF_PERCENTILES.contains(&c);
            let mut sort_set = |set: &mut [usize], emitted: usize, vals: &mut Vec<Val>| {
                let missing: Vec<u32> = (set.iter())
                    .filter(|&&i| lazy && keep[i] && vals[i * n + c] == Val::None)
                    .map(|&i| i as u32)
                    .collect();
                if !missing.is_empty() {
                    let read = match &mut keys {
                        Some(LazyKeys { read, exact_until })
                            if emitted < *exact_until && error.is_none() =>
                        {
                            read(&missing).map_err(|e| error = Some(e)).ok()
                        }
                        _ => None,
                    };
                    match read {
                        Some(got) => {
                            for (&i, v) in missing.iter().zip(got) {
                                for (col, x) in table::PATHS_SELF_PERCENTILES.into_iter().zip(v) {
                                    // A level: shown as read, in rates as in
                                    // totals.
                                    vals[i as usize * n + col] =
                                        x.map_or(Val::None, |x| Val::Num(x as f64));
                                }
                                filled.push((i, v));
                            }
                        }
                        None => {
                            sorted_rows.get_or_insert(emitted);
                        }
                    }
                }
                SortColumn {
                    vals,
                    rows,
                    n,
                    c,
                    rank: &rank,
                    reversed: sort.reversed,
                }
                .sort(set);
            };
            sort_set(&mut roots, 0, &mut vals);
            // Depth first, in order; a node's children are sorted when its
            // row is out (those of a collapsed node never are).
            let mut stack: Vec<(usize, usize)> = Vec::with_capacity(rows.len());
            stack.extend(roots.iter().rev().map(|&i| (i, 0)));
            while let Some((i, depth)) = stack.pop() {
                if !keep[i] {
                    continue;
                }
                let kids = &mut kids[start[i]..start[i + 1]];
                let has_kids = kids.iter().any(|&k| keep[k]);
                let expanded = has_kids.then(|| !collapsed.contains(&rows[i].key));
                let parent = rows[i].parent.map(|p| rows[p].key);
                out.push(row(&rows[i], i, Some((depth, expanded)), parent));
                if expanded == Some(true) {
                    sort_set(kids, out.len(), &mut vals);
                    stack.extend(kids.iter().rev().map(|&k| (k, depth + 1)));
                }
            }
        } else {
            let mut order_of: Vec<usize> = (0..rows.len())
                .filter(|&i| matches(&rows[i].name))
                .collect();
            SortColumn {
                vals: &vals,
                rows,
                n,
                c,
                rank: &rank,
                reversed: sort.reversed,
            }
            .sort(&mut order_of);
            out = order_of
                .into_iter()
                .map(|i| row(&rows[i], i, None, None))
                .collect();
        }

        let headers: Vec<String> = (columns.iter().enumerate())
            .map(|(i, c)| {
                let mut h = c.title.to_string();
                if values == Values::Rate && c.agg == Agg::Counter {
                    h.push_str("/s");
                }
                if values == Values::Rate && c.agg == Agg::Level {
                    h.push_str(" Δ/s");
                }
                if i == sort.column {
                    h.push(if sort.reversed { '▲' } else { '▼' });
                }
                h
            })
            .collect();
        let cells = (vals.iter().enumerate())
            .map(|(k, v)| match v {
                // The first column is the name.
                Val::Text(_) if k % n == 0 => Shown::Name,
                Val::Text(t) => Shown::Text(t.to_string()),
                Val::Num(x) => Shown::Num(*x),
                Val::None => Shown::None,
            })
            .collect();
        let mut table = Table {
            widths: headers.iter().map(|h| h.chars().count()).collect(),
            headers,
            sorted_rows: sorted_rows.unwrap_or(out.len()),
            rows: out,
            cells,
            columns,
        };
        // Every row's widths (not only those drawn: the columns keep their
        // width while the selection moves).
        let mut widths = std::mem::take(&mut table.widths);
        for (w, c) in widths.iter_mut().zip(table.column_widths()) {
            *w = (*w).max(c);
        }
        table.widths = widths;
        Built {
            table,
            filled,
            error,
        }
    }
}

/// One row on screen (raw row `index`); `tree` gives a tree row's depth
/// and expansion.
fn row(
    raw: &RawRow,
    index: usize,
    tree: Option<(usize, Option<bool>)>,
    parent: Option<RowKey>,
) -> Row {
    let (depth, expanded) = tree.unwrap_or((0, None));
    Row {
        key: raw.key,
        parent,
        index,
        name: raw.name.clone(),
        depth,
        expanded,
        tree: tree.is_some(),
    }
}
