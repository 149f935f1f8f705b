//! The table on screen once built: its headers, its rows in the order
//! shown, every row's values before they are written, and each column's
//! width. A value becomes text only when asked (the view asks for the
//! rows it draws), and a column's width is found from the largest value
//! of each unit rather than by writing every cell.

use crate::top::table::{Column, RowKey, Unit};
use perflens_format::snapshot::round_u64;
use perflens_report::{
    write_bytes, write_count, write_duration, write_percent, write_signed_bytes,
};
use std::rc::Rc;

/// The table on screen: headers, rows, their values, and each column's
/// width.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Header texts (a counter's ends in `/s` in rate mode; the sort
    /// column's has an arrow).
    pub headers: Vec<String>,
    /// The rows, sorted and filtered.
    pub rows: Vec<Row>,
    /// Widest text of each column, header included.
    pub widths: Vec<usize>,
    /// Every raw row's values, one per column, in the raw rows' order
    /// (a row's are at its index): one vector for the whole table, not
    /// one per row.
    pub(super) cells: Vec<Shown>,
    /// How each column's values are written.
    pub(super) columns: &'static [Column],
    /// How many of the first rows are in their exact order: all of them,
    /// except in a tree sorted by a column read only where it is seen
    /// (the Self percentiles of a live session), whose rows further down
    /// are ordered by what was known.
    pub sorted_rows: usize,
}

/// A row of the table on screen. Its values are the table's
/// ([`Table::cells`]), written as text only when asked: the view asks for
/// the rows it draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Identity across refreshes (see [`RowKey`]).
    pub key: RowKey,
    /// Tree rows: the parent's key.
    pub parent: Option<RowKey>,
    /// The row's index in the table's raw rows (a tree row's: its node's
    /// index in the tree).
    pub(super) index: usize,
    /// The name shown and filtered on.
    pub(super) name: Rc<str>,
    /// Tree rows: depth, 0 for a root.
    pub depth: usize,
    /// Tree rows: `Some(expanded)` when the node has children.
    pub expanded: Option<bool>,
    /// True for a row of the tree (its first cell starts with its
    /// indentation and marker: `2 * depth + 2` columns).
    pub tree: bool,
}

impl Row {
    /// The name alone (what the filter matched).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Table {
    /// Row `row`'s values, one per column (the first: the name).
    fn values(&self, row: &Row) -> &[Shown] {
        let n = self.columns.len();
        self.cells
            .get(row.index * n..(row.index + 1) * n)
            .unwrap_or(&[])
    }

    /// One text per column of `row` (one of this table's rows); the
    /// first holds a tree row's indentation and marker.
    pub fn cells(&self, row: &Row) -> Vec<String> {
        (0..self.values(row).len())
            .map(|i| self.cell(row, i))
            .collect()
    }

    /// The text of column `i` of `row`.
    pub fn cell(&self, row: &Row, i: usize) -> String {
        let mut out = String::new();
        // Writing into a String does not fail.
        let _ = self.write_cell(&mut out, row, i);
        out
    }

    /// The width of column `i`'s text, in characters, without writing it.
    pub(super) fn cell_width(&self, row: &Row, i: usize) -> usize {
        let chars = |s: &str| {
            if s.is_ascii() {
                s.len()
            } else {
                s.chars().count()
            }
        };
        match self.values(row).get(i) {
            Some(Shown::Name) if row.tree => 2 * row.depth + 2 + chars(row.name()),
            Some(Shown::Name) => chars(row.name()),
            Some(Shown::Text(t)) => chars(t),
            Some(Shown::None) | None => 1,
            Some(Shown::Num(n)) => number_width(self.columns[i].unit, *n).unwrap_or_else(|| {
                let mut count = CharCount(0);
                let _ = self.write_cell(&mut count, row, i);
                count.0
            }),
        }
    }

    /// The widest text of each column over the table's rows. A count's,
    /// a duration's or a size's text width grows with the value within
    /// each of its units (ns, µs, ms, s; B, KiB, ...): only the largest
    /// value of each unit is written, which costs a fraction of
    /// measuring every cell of a large table (one pass over the rows).
    pub(super) fn column_widths(&self) -> Vec<usize> {
        // Where each unit starts, as `write_duration` and `write_bytes`
        // pick it (their tests on floats, found once as integers).
        let starts: Vec<Option<Vec<u64>>> = (self.columns.iter())
            .map(|c| match c.unit {
                Unit::Count => Some(Vec::new()),
                Unit::Duration => Some(vec![
                    1_000,
                    first_where(|u| u as f64 / 1e3 >= 999.995),
                    first_where(|u| u as f64 / 1e6 >= 999.995),
                ]),
                Unit::Bytes => Some(vec![
                    1024,
                    first_where(|u| u as f64 / 1024.0 >= 1023.995),
                    first_where(|u| u as f64 / (1024.0 * 1024.0) >= 1023.995),
                    first_where(|u| u as f64 / (1024.0 * 1024.0 * 1024.0) >= 1023.995),
                ]),
                _ => None,
            })
            .collect();
        let n = self.columns.len();
        let mut widest = vec![0; n];
        // Per column, the largest value of each unit, and a row that has it.
        let mut largest: Vec<[Option<(f64, &Row)>; 5]> = vec![[None; 5]; n];
        // The rows' values in the order they lie in (the rows are in the
        // order of the sort): read in order, not one row here and one
        // there, they cost a third.
        let mut row_at: Vec<Option<&Row>> = vec![None; self.cells.len() / n.max(1)];
        for r in &self.rows {
            if let Some(at) = row_at.get_mut(r.index) {
                *at = Some(r);
            }
        }
        for (r, values) in row_at.iter().zip(self.cells.chunks_exact(n.max(1))) {
            let Some(r) = *r else {
                continue;
            };
            for (i, v) in values.iter().enumerate() {
                if let (Shown::Num(x), Some(Some(starts))) = (v, starts.get(i)) {
                    let u = round_u64(*x);
                    let k = starts.iter().filter(|&&s| u >= s).count();
                    if let Some(l) = largest.get_mut(i).and_then(|l| l.get_mut(k)) {
                        if l.is_none_or(|(y, _)| *x > y) {
                            *l = Some((*x, r));
                        }
                        continue;
                    }
                }
                let width = match v {
                    Shown::None => 1,
                    _ => self.cell_width(r, i),
                };
                if let Some(w) = widest.get_mut(i) {
                    *w = (*w).max(width);
                }
            }
        }
        for (i, l) in largest.iter().enumerate() {
            for (_, r) in l.iter().flatten() {
                widest[i] = widest[i].max(self.cell_width(r, i));
            }
        }
        widest
    }

    fn write_cell<W: std::fmt::Write>(&self, out: &mut W, row: &Row, i: usize) -> std::fmt::Result {
        let n = match self.values(row).get(i) {
            Some(Shown::Name) if row.tree => {
                let marker = match row.expanded {
                    Some(true) => "▾ ",
                    Some(false) => "▸ ",
                    None => "  ",
                };
                for _ in 0..row.depth {
                    out.write_str("  ")?;
                }
                out.write_str(marker)?;
                return out.write_str(row.name());
            }
            Some(Shown::Name) => return out.write_str(row.name()),
            Some(Shown::Text(t)) => return out.write_str(t),
            Some(Shown::None) | None => return out.write_str("-"),
            Some(Shown::Num(n)) => *n,
        };
        let u = round_u64(n);
        match self.columns[i].unit {
            Unit::Text | Unit::Id => write!(out, "{}", n.round() as i64),
            Unit::Count => write_count(out, u),
            Unit::Duration => write_duration(out, u),
            Unit::Bytes => write_bytes(out, u),
            Unit::SignedBytes => write_signed_bytes(out, n.round() as i64),
            Unit::Percent => write_percent(out, n),
        }
    }
}

/// The width of a count's or a duration's text (as `write_cell` writes
/// it), from the number alone; `None` for other units, and where two
/// decimals round to the next power of ten or so near it that only the
/// text tells (`9.995`).
pub(super) fn number_width(unit: Unit, n: f64) -> Option<usize> {
    let digits = |v: u64| v.checked_ilog10().map_or(1, |d| d as usize + 1);
    let u = round_u64(n);
    match unit {
        Unit::Count => Some(digits(u) + (digits(u) - 1) / 3),
        Unit::Duration if u < 1_000 => Some(digits(u) + 3),
        Unit::Duration => {
            // As write_duration picks the unit.
            let v = u as f64;
            let (x, unit_chars) = if v / 1e3 < 999.995 {
                (v / 1e3, 2)
            } else if v / 1e6 < 999.995 {
                (v / 1e6, 2)
            } else {
                (v / 1e9, 1)
            };
            let hundredths = x * 100.0;
            let frac = hundredths - hundredths.floor();
            if (frac - 0.5).abs() < 1e-3 {
                return None;
            }
            let whole = hundredths.round() as u64 / 100;
            // "x.yy unit"
            Some(digits(whole) + 3 + 1 + unit_chars)
        }
        _ => None,
    }
}

/// The smallest `u` for which `test` holds, `test` being false then true
/// as `u` grows (`u64::MAX` if it never holds).
fn first_where(test: impl Fn(u64) -> bool) -> u64 {
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if test(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// A value of a row on screen, before it is written.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Shown {
    Num(f64),
    /// The row's name (the first column).
    Name,
    Text(String),
    /// Not measured, or no rate: `-`.
    None,
}

/// Counts the characters written, keeping none.
struct CharCount(usize);

impl std::fmt::Write for CharCount {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.chars().count();
        Ok(())
    }
}
