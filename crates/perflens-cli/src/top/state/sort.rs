//! How a table's rows are ordered: the sort a table is in (a column, and
//! whether reversed), the order of two values of a column (numbers
//! largest first, names A to Z with digit runs as numbers, missing values
//! last), and the sort itself, by one integer key per row where it can.

use crate::top::table::{KeyHash, Raw, RawRow};
use std::cmp::Ordering;
use std::collections::HashMap;

/// How one table is sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    /// Column index.
    pub column: usize,
    /// Reversed from the column's natural order (numbers largest
    /// first, text A to Z).
    pub reversed: bool,
}

/// A value ready to sort and format (text borrowed from the raw row).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Val<'a> {
    Num(f64),
    Text(&'a str),
    None,
}

/// Orders two values of a column: numbers largest first, text A to Z
/// (digit runs by their number: `#2` before `#10`); missing values last
/// either way.
pub(super) fn compare(a: &Val, b: &Val) -> Ordering {
    match (a, b) {
        (Val::Num(x), Val::Num(y)) => y.partial_cmp(x).unwrap_or(Ordering::Equal),
        (Val::Text(x), Val::Text(y)) => natural(x, y),
        (Val::None, Val::None) => Ordering::Equal,
        (Val::None, _) => Ordering::Greater,
        (_, Val::None) => Ordering::Less,
        (Val::Num(_), Val::Text(_)) => Ordering::Less,
        (Val::Text(_), Val::Num(_)) => Ordering::Greater,
    }
}

/// Text A to Z, digit runs by their number (leading zeros aside: `7`
/// and `07` tie there, and the rest decides). On bytes: UTF-8 orders as
/// the code points do, and no byte of a multi-byte character is an ASCII
/// digit.
pub(super) fn natural(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // The common start compares equal: begin where they differ, or at
    // the start of the digit run they differ in.
    let mut same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    while same > 0 && a[same - 1].is_ascii_digit() {
        same -= 1;
    }
    let (mut i, mut j) = (same, same);
    loop {
        match (a.get(i), b.get(j)) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                /// The digit run at `at`, without its leading zeros;
                /// `at` moves past it.
                fn run<'s>(s: &'s [u8], at: &mut usize) -> &'s [u8] {
                    let start = *at;
                    while s.get(*at).is_some_and(u8::is_ascii_digit) {
                        *at += 1;
                    }
                    let zeros = (s[start..*at].iter()).take_while(|&&d| d == b'0').count();
                    &s[start + zeros..*at]
                }
                let (x, y) = (run(a, &mut i), run(b, &mut j));
                let o = (x.len().cmp(&y.len())).then(x.cmp(y));
                if o != Ordering::Equal {
                    return o;
                }
            }
            (Some(x), Some(y)) => {
                let o = x.cmp(y);
                if o != Ordering::Equal {
                    return o;
                }
                i += 1;
                j += 1;
            }
        }
    }
}

/// One column of a table's values as the sort reads it: every row's
/// values (`n` a row; the column is `c`), the raw rows they come from,
/// each row's place in the order of the names ([`name_ranks`]), and
/// whether the column's order is reversed.
#[derive(Clone, Copy)]
pub(super) struct SortColumn<'v, 'a> {
    pub(super) vals: &'v [Val<'a>],
    pub(super) rows: &'v [RawRow],
    pub(super) n: usize,
    pub(super) c: usize,
    pub(super) rank: &'v [u32],
    pub(super) reversed: bool,
}

impl SortColumn<'_, '_> {
    /// The order of rows `a` and `b`: the column's ([`compare`]),
    /// reversed on ask, ties by name rank.
    pub(super) fn order(&self, a: usize, b: usize) -> Ordering {
        let (vals, n, c) = (self.vals, self.n, self.c);
        let o = compare(&vals[a * n + c], &vals[b * n + c]);
        let o = if self.reversed { o.reverse() } else { o };
        // Ties: by name, so that the order is stable between refreshes.
        o.then_with(|| self.rank[a].cmp(&self.rank[b]))
    }

    /// Sorts `set` (indices of the rows) in [`SortColumn::order`], rows
    /// equal there by their place in `set`, as a stable sort keeps them.
    /// Where every value is a number, missing, or the row's name, as one
    /// key per row, compared as integers: the comparisons of values were
    /// a fifth of a large tree's refresh. Else with [`SortColumn::order`].
    pub(super) fn sort(&self, set: &mut [usize]) {
        let SortColumn {
            vals,
            rows,
            n,
            c,
            rank,
            reversed,
        } = *self;
        // The column's order as an ascending number: numbers largest first,
        // then texts (names, by rank), then missing values.
        let key = |i: usize| -> Option<u128> {
            let primary: u128 = match vals.get(i * n + c)? {
                Val::Num(x) if x.is_nan() => return None,
                Val::Num(x) => {
                    // -0.0 and 0.0 compare equal.
                    let x = if *x == 0.0 { 0.0 } else { *x };
                    let b = x.to_bits();
                    let ascending = if b >> 63 == 1 { !b } else { b | 1 << 63 };
                    u128::from(!ascending)
                }
                Val::Text(_) if rows.get(i)?.values.get(c) == Some(&Raw::Name) => {
                    1 << 64 | u128::from(*rank.get(i)?)
                }
                Val::Text(_) => return None,
                Val::None => 2 << 64,
            };
            let primary = if reversed {
                (3 << 64) - primary
            } else {
                primary
            };
            Some(primary << 32 | u128::from(*rank.get(i)?))
        };
        let mut keyed: Vec<(u128, usize)> = Vec::with_capacity(set.len());
        for (k, &i) in set.iter().enumerate() {
            match key(i) {
                Some(v) => keyed.push((v, k)),
                None => {
                    set.sort_by(|&x, &y| self.order(x, y));
                    return;
                }
            }
        }
        // Unique keys (the place in `set` last): as stable as a stable sort.
        keyed.sort_unstable();
        let before: Vec<usize> = set.to_vec();
        for (s, &(_, k)) in set.iter_mut().zip(&keyed) {
            *s = before[k];
        }
    }
}

/// Each row's place in the order of the names ([`natural`]), to compare
/// as numbers: the sort's ties are many (equal rates), the distinct names
/// few (a tree repeats its frames). Names that compare equal share one.
pub(super) fn name_ranks(rows: &[RawRow]) -> Vec<u32> {
    let mut ids: HashMap<&str, u32, KeyHash> = HashMap::default();
    let mut distinct: Vec<&str> = Vec::new();
    let id_of: Vec<u32> = (rows.iter())
        .map(|r| {
            *ids.entry(&r.name).or_insert_with(|| {
                distinct.push(&r.name);
                (distinct.len() - 1) as u32
            })
        })
        .collect();
    let mut by_name: Vec<usize> = (0..distinct.len()).collect();
    by_name.sort_by(|&a, &b| natural(distinct[a], distinct[b]));
    let mut rank_of = vec![0u32; distinct.len()];
    let mut rank = 0;
    for (k, &id) in by_name.iter().enumerate() {
        if k > 0 && natural(distinct[by_name[k - 1]], distinct[id]) != Ordering::Equal {
            rank += 1;
        }
        rank_of[id] = rank;
    }
    id_of.into_iter().map(|id| rank_of[id as usize]).collect()
}
