//! Making the table on screen again when what it shows changed (a new
//! picture, sort, filter, tab or mode): the raw rows of each picture,
//! made once per picture and table; the selection kept on its row; and
//! the Self percentiles of the hot-path tree's rows, which a live source
//! reads only where they are seen, filled in and shown.

use super::cells::Shown;
use super::view_model::{LazyKeys, Picture, ViewModel};
use super::{App, Fill, Table};
use crate::top::source::Capture;
use crate::top::table::{self, Raw, RawRow, TableId};
use perflens_report::FrameTree;

impl App {
    /// Builds the table on screen from the current picture (and the
    /// previous, for rates), then keeps the selection on the same row.
    pub(super) fn rebuild(&mut self) {
        self.rebuild_with(None);
    }

    /// [`App::rebuild`], with `fill` to read the Self percentiles that
    /// order the first rows (to a page below the screen) of a tree sorted
    /// by one, where the picture lacks them.
    pub(super) fn rebuild_with(&mut self, fill: Option<Fill>) {
        let id = self.table_id();
        let slot = id.slot();
        // The selection stays on its row: the one it follows, else the
        // one selected, if that had its exact place (else it stays at
        // its place: the row there was one of many that could be). On
        // the first row, it stays there: the top of the table, whatever
        // comes first now.
        let selected = self.selected[slot];
        let selected_key = match self.follow.take() {
            Some((key, at)) if at == selected => Some(key),
            _ => (self.table.rows.get(selected))
                .filter(|_| selected > 0 && selected < self.table.sorted_rows)
                .map(|r| r.key),
        };
        let same_table =
            self.table.headers.first().map(String::as_str) == id.columns().first().map(|c| c.title);
        // The raw rows of each picture, made once per picture and table;
        // none from a picture read without what the table shows (the
        // tab was not on screen then): no rows yet, or no rates yet.
        let mut spare = std::mem::take(&mut self.spare);
        let mut raw_of = |cache: &mut Option<(TableId, Vec<RawRow>)>,
                          frame: Option<&Capture>,
                          holds: fn(&Capture, TableId) -> bool| match frame
        {
            Some(f) if !holds(f, id) => *cache = None,
            Some(f) if cache.as_ref().is_none_or(|(t, _)| *t != id) => {
                let spare = std::mem::take(&mut spare);
                *cache = Some((id, table::rows(id, &f.report, f.tree.as_ref(), spare)));
            }
            Some(_) => {}
            None => *cache = None,
        };
        raw_of(&mut self.raw, self.current.as_ref(), holds);
        raw_of(&mut self.raw_previous, self.previous.as_ref(), counts);
        let exact_until = self.first_row(self.page) + 2 * self.page.max(50);
        // The tree is lent to the reader of sort keys while the rows are
        // ordered.
        let mut tree = fill
            .is_some()
            .then(|| self.current.as_mut().and_then(|f| f.tree.take()))
            .flatten();
        let lend = tree.is_some();
        let mut fill = fill;
        let mut read_keys = |nodes: &[u32]| -> Result<Vec<[Option<u64>; 2]>, String> {
            let (Some(fill), Some(tree)) = (fill.as_mut(), tree.as_mut()) else {
                return Ok(vec![[None, None]; nodes.len()]);
            };
            fill(tree, nodes)?;
            Ok((nodes.iter())
                .map(|&k| {
                    (tree.nodes.get(k as usize))
                        .map_or([None, None], |n| [n.self_p50_ns, n.self_p99_ns])
                })
                .collect())
        };
        let built = match (&self.current, &self.raw) {
            (Some(frame), Some((_, rows))) => Some(
                ViewModel {
                    id,
                    current: Picture {
                        report: &frame.report,
                        rows,
                    },
                    previous: (self.previous.as_ref())
                        .zip(self.raw_previous.as_ref())
                        .filter(|(f, _)| counts(f, id))
                        .map(|(f, (_, rows))| Picture {
                            report: &f.report,
                            rows,
                        }),
                    values: self.values,
                    sort: self.sorts[slot],
                    filter: &self.filter,
                    collapsed: &self.collapsed,
                    keys: lend.then_some(LazyKeys {
                        read: &mut read_keys,
                        exact_until,
                    }),
                }
                .build(),
            ),
            _ => None,
        };
        if let (Some(tree), Some(frame)) = (tree, self.current.as_mut()) {
            frame.tree = Some(tree);
        }
        self.table = match built {
            Some(built) => {
                if let Some((_, raw)) = &mut self.raw {
                    for (i, v) in built.filled {
                        if let Some(row) = raw.get_mut(i as usize) {
                            for (c, x) in table::PATHS_SELF_PERCENTILES.into_iter().zip(v) {
                                row.values[c] = Raw::opt(x);
                            }
                        }
                    }
                }
                if built.error.is_some() {
                    self.error = built.error;
                }
                built.table
            }
            None => Table::default(),
        };
        if same_table {
            if let Some(key) = selected_key {
                if let Some(i) = self.table.rows.iter().position(|r| r.key == key) {
                    self.selected[slot] = i;
                    if i >= self.table.sorted_rows {
                        self.follow = Some((key, i));
                    }
                }
            }
        }
        let last = self.table.rows.len().saturating_sub(1);
        self.selected[slot] = self.selected[slot].min(last);
    }

    /// The tree nodes whose Self percentiles the picture lacks (a live
    /// source reads them apart: see `Needs::all_histograms`) among the
    /// rows on screen, and a screen's worth above and below (at least
    /// 50 rows: the first picture comes before the screen's height is
    /// known).
    pub fn wanted_self_percentiles(&self) -> Vec<u32> {
        let Some((TableId::Paths, raw)) = &self.raw else {
            return Vec::new();
        };
        let page = self.page.max(50);
        let first = self.first_row(self.page);
        let [p50, _] = table::PATHS_SELF_PERCENTILES;
        (self.table.rows.iter().take(first + 2 * page))
            .skip(first.saturating_sub(page))
            .filter(|r| {
                raw.get(r.index)
                    .is_some_and(|raw| raw.values[p50] == Raw::Missing)
            })
            .map(|r| r.index as u32)
            .collect()
    }

    /// Asks `fill` to fill in the Self percentiles of the current
    /// picture's tree where they are seen, and shows them: when the tree
    /// is sorted by one and the rows on screen are past those in their
    /// exact order (`Table::sorted_rows`: the selection moved down, or
    /// the sort changed), the rows are ordered again, reading the
    /// percentiles of the rows whose order they decide; then those of the
    /// rows [`App::wanted_self_percentiles`] names, which stay where they
    /// are.
    pub fn fill_self_percentiles(
        &mut self,
        mut fill: impl FnMut(&mut FrameTree, &[u32]) -> Result<(), String>,
    ) {
        // Ordered again, the selected row may move down past the rows in
        // their order: again (its place only moves down while they grow).
        for _ in 0..3 {
            let end = (self.first_row(self.page) + self.page).min(self.table.rows.len());
            if self.table_id() != TableId::Paths || self.table.sorted_rows >= end {
                break;
            }
            self.rebuild_with(Some(&mut fill));
        }
        let wanted = self.wanted_self_percentiles();
        let Some(tree) = self.current.as_mut().and_then(|f| f.tree.as_mut()) else {
            return;
        };
        if wanted.is_empty() {
            return;
        }
        if let Err(e) = fill(tree, &wanted) {
            self.error = Some(e);
            return;
        }
        let frame = self.current.as_ref().expect("it holds the tree");
        let (Some(tree), Some((TableId::Paths, raw))) = (&frame.tree, &mut self.raw) else {
            return;
        };
        let mut filled = vec![false; raw.len()];
        for &n in &wanted {
            let (Some(node), Some(row)) = (tree.nodes.get(n as usize), raw.get_mut(n as usize))
            else {
                continue;
            };
            for (c, v) in table::PATHS_SELF_PERCENTILES
                .into_iter()
                .zip([node.self_p50_ns, node.self_p99_ns])
            {
                row.values[c] = v.map_or(Raw::Missing, Raw::U);
            }
            filled[n as usize] = true;
        }
        let n = self.table.columns.len();
        for (i, row) in raw.iter().enumerate() {
            if filled[i] {
                for c in table::PATHS_SELF_PERCENTILES {
                    if let Some(cell) = self.table.cells.get_mut(i * n + c) {
                        // A level: shown as read, in rates as in totals.
                        *cell = match row.values[c] {
                            Raw::U(v) => Shown::Num(v as f64),
                            _ => Shown::None,
                        };
                    }
                }
            }
        }
        let table = &self.table;
        let widths: Vec<(usize, usize)> = (table.rows.iter())
            .filter(|r| filled.get(r.index) == Some(&true))
            .flat_map(|r| table::PATHS_SELF_PERCENTILES.map(|c| (c, table.cell_width(r, c))))
            .collect();
        for (c, w) in widths {
            self.table.widths[c] = self.table.widths[c].max(w);
        }
    }
}

/// Whether a picture holds what table `id` shows.
fn holds(frame: &Capture, id: TableId) -> bool {
    match id {
        TableId::Paths => frame.holds.hot_paths,
        TableId::Timing | TableId::Alloc | TableId::Cpu | TableId::Async => frame.holds.functions,
        TableId::Threads | TableId::Memory => true,
        TableId::Channels | TableId::Locks => frame.holds.flow,
    }
}

/// Whether a picture holds the counters table `id`'s rates come from:
/// a flow site's are exact in any picture (only its percentiles need
/// [`Needs::flow`]), so the tab has rates at its first picture.
fn counts(frame: &Capture, id: TableId) -> bool {
    matches!(id, TableId::Channels | TableId::Locks) || holds(frame, id)
}
