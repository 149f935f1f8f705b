//! The state of `perflens top`, without a terminal: the pictures, the
//! tab, the sort, the filter, the tree's expansion, the selection, and the
//! rows of the table on screen, built once per change (a new picture, a
//! new sort, filter, tab or mode), never per key press that only moves.

use super::source::{Frame, Needs, Target};
use super::table::{self, Agg, Column, KeyHash, Raw, RawRow, RowKey, TableId, Unit};
use perflens_format::snapshot::round_u64;
use perflens_report::{
    FrameTree, Report, write_bytes, write_count, write_duration, write_percent, write_signed_bytes,
};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

/// The tabs, in their order on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// Per function: timing, allocations or CPU ([`FnView`]).
    Functions,
    /// The hot paths as a tree of frames.
    HotPaths,
    /// Async functions.
    Async,
    /// Threads.
    Threads,
    /// Channels and locks ([`FlowView`]).
    DataFlow,
}

impl Tab {
    /// Every tab, in order.
    pub const ALL: [Tab; 5] = [
        Tab::Functions,
        Tab::HotPaths,
        Tab::Async,
        Tab::Threads,
        Tab::DataFlow,
    ];

    /// Its title on screen.
    pub fn title(self) -> &'static str {
        match self {
            Tab::Functions => "Functions",
            Tab::HotPaths => "Hot paths",
            Tab::Async => "Async",
            Tab::Threads => "Threads",
            Tab::DataFlow => "Data flow",
        }
    }

    fn index(self) -> usize {
        Tab::ALL.iter().position(|&t| t == self).unwrap_or(0)
    }
}

/// The views of the Functions tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnView {
    /// Calls and latency.
    Timing,
    /// Bytes and allocations.
    Alloc,
    /// Sampled CPU time.
    Cpu,
}

impl FnView {
    /// Its name on screen.
    pub fn title(self) -> &'static str {
        match self {
            FnView::Timing => "timing",
            FnView::Alloc => "allocations",
            FnView::Cpu => "CPU",
        }
    }
}

/// The views of the Data flow tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowView {
    /// The channel sites.
    Channels,
    /// The lock sites.
    Locks,
}

impl FlowView {
    /// Its name on screen.
    pub fn title(self) -> &'static str {
        match self {
            FlowView::Channels => "channels",
            FlowView::Locks => "locks",
        }
    }

    fn other(self) -> FlowView {
        match self {
            FlowView::Channels => FlowView::Locks,
            FlowView::Locks => FlowView::Channels,
        }
    }
}

/// What the numeric columns show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Per second over the last interval (two successive reports).
    Rate,
    /// The totals of the session so far.
    Total,
}

/// A key, as the app understands it (the terminal loop maps crossterm's
/// events to these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Arrow up.
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home.
    Home,
    /// End.
    End,
    /// Tab.
    Tab,
    /// Shift-Tab.
    BackTab,
    /// Ctrl-C.
    CtrlC,
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
    index: usize,
    /// The name shown and filtered on.
    name: Rc<str>,
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
    fn cell_width(&self, row: &Row, i: usize) -> usize {
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
    fn column_widths(&self) -> Vec<usize> {
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
enum Shown {
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
    cells: Vec<Shown>,
    /// How each column's values are written.
    columns: &'static [Column],
    /// How many of the first rows are in their exact order: all of them,
    /// except in a tree sorted by a column read only where it is seen
    /// (the Self percentiles of a live session), whose rows further down
    /// are ordered by what was known.
    pub sorted_rows: usize,
}

/// How one table is sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    /// Column index.
    pub column: usize,
    /// Reversed from the column's natural order (numbers largest
    /// first, text A to Z).
    pub reversed: bool,
}

/// Everything `perflens top` shows, and every key's effect on it.
pub struct App {
    interval: Duration,
    source: String,
    current: Option<Frame>,
    previous: Option<Frame>,
    error: Option<String>,
    tab: Tab,
    fn_view: FnView,
    /// The Data flow tab's view, as chosen (`v`): the one shown while
    /// both sections have rows (see [`App::flow_view`]).
    flow_view: FlowView,
    values: Values,
    sorts: [Sort; TABLES],
    selected: [usize; TABLES],
    offsets: [usize; TABLES],
    filter: String,
    editing: Option<String>,
    paused: bool,
    help: bool,
    quit: bool,
    collapsed: HashSet<RowKey, KeyHash>,
    page: usize,
    table: Table,
    /// The raw rows of the current report, for the table they were made
    /// for (made again when the report or the table changes).
    raw: Option<(TableId, Vec<RawRow>)>,
    /// The same of the previous report, for rates: the current report's
    /// become these when a new picture arrives.
    raw_previous: Option<(TableId, Vec<RawRow>)>,
    /// The raw rows of the picture before the previous one, kept for
    /// their allocations: the next raw rows are made in them (ten
    /// thousand small vectors freed and allocated again at every refresh
    /// of a large tree otherwise).
    spare: Vec<RawRow>,
    /// The row the selection follows until it has its exact place: the
    /// selected row, when a rebuild placed it past the rows in their
    /// exact order ([`Table::sorted_rows`]), and the index it was placed
    /// at (a move of the selection forgets it).
    follow: Option<(RowKey, usize)>,
}

impl App {
    /// An app that refreshes every `interval`, watching what `source`
    /// describes; it has no picture yet.
    pub fn new(interval: Duration, source: String) -> App {
        let sorts = TableId::ALL.map(|t| Sort {
            column: t.default_sort(),
            reversed: false,
        });
        App {
            interval,
            source,
            current: None,
            previous: None,
            error: None,
            tab: Tab::Functions,
            fn_view: FnView::Timing,
            flow_view: FlowView::Channels,
            values: Values::Rate,
            sorts,
            selected: [0; TABLES],
            offsets: [0; TABLES],
            filter: String::new(),
            editing: None,
            paused: false,
            help: false,
            quit: false,
            collapsed: HashSet::default(),
            page: 10,
            table: Table::default(),
            raw: None,
            raw_previous: None,
            spare: Vec::new(),
            follow: None,
        }
    }

    /// Takes the result of one read of the source. A new picture (its
    /// elapsed time moved) becomes the current one and the current one the
    /// previous, for rates; the same picture again only updates the
    /// target's facts. An error keeps the last picture and is shown until
    /// the next good read.
    pub fn update(&mut self, read: Result<Frame, String>) {
        self.update_with(read, None);
    }

    /// [`App::update`], with `fill` to read the Self percentiles that
    /// order the rows on screen when the tree is sorted by one (else the
    /// rows are first ordered by what the picture holds, and
    /// [`App::fill_self_percentiles`] reads them and orders the rows
    /// again).
    pub fn update_with(&mut self, read: Result<Frame, String>, fill: Option<Fill>) {
        match read {
            Ok(frame) => {
                self.error = None;
                match self.current.take() {
                    // The same picture (the file was not rewritten since):
                    // the rates stay those of the last interval.
                    Some(cur) if cur.report.elapsed_ns == frame.report.elapsed_ns => {
                        let same = cur == frame;
                        self.current = Some(frame);
                        if same {
                            return;
                        }
                        self.raw = None;
                    }
                    Some(cur) if cur.report.elapsed_ns < frame.report.elapsed_ns => {
                        self.previous = Some(cur);
                        let before = std::mem::replace(&mut self.raw_previous, self.raw.take());
                        self.spare = before.map(|(_, rows)| rows).unwrap_or_default();
                        self.current = Some(frame);
                    }
                    // A new session (the clock went back): no rate yet.
                    _ => {
                        self.previous = None;
                        self.raw_previous = None;
                        self.raw = None;
                        self.current = Some(frame);
                    }
                }
                self.rebuild_with(fill);
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// True while the source should be read: not paused, and the target
    /// has not ended (its last picture stays).
    pub fn wants_read(&self) -> bool {
        !self.paused && !self.target_ended()
    }

    /// True once the target has ended: its report says the session
    /// finished, or the source says it no longer runs.
    pub fn target_ended(&self) -> bool {
        (self.current.as_ref()).is_some_and(|f| f.report.finished || !f.target.running)
    }

    /// True once `q` (or Ctrl-C) was pressed.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// The current picture's target, if there is a picture.
    pub fn target(&self) -> Option<&Target> {
        self.current.as_ref().map(|f| &f.target)
    }

    /// The current report.
    pub fn report(&self) -> Option<&Report> {
        self.current.as_ref().map(|f| &f.report)
    }

    /// True when the rates compare two pictures (there was a previous).
    pub fn has_rates(&self) -> bool {
        self.previous.is_some()
    }

    /// The last read's error, if it failed.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// What the source watches.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The refresh interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The tab on screen.
    pub fn tab(&self) -> Tab {
        self.tab
    }

    /// The Functions tab's view.
    pub fn fn_view(&self) -> FnView {
        self.fn_view
    }

    /// The Data flow tab's view: the one chosen, unless only the other
    /// section has rows (a program with locks and no channel shows its
    /// locks).
    pub fn flow_view(&self) -> FlowView {
        let Some(r) = self.report() else {
            return self.flow_view;
        };
        match (r.channels.is_empty(), r.locks.is_empty()) {
            (true, false) => FlowView::Locks,
            (false, true) => FlowView::Channels,
            _ => self.flow_view,
        }
    }

    /// What the next picture must hold for what is on screen: the hot
    /// paths' tree on their tab, and the exclusive-time and bytes-per-call
    /// histograms where columns come from them: the allocation view's
    /// average and p95 per call. (The paths' Self percentiles are read
    /// apart, where they are seen: [`App::fill_self_percentiles`].)
    pub fn needs(&self) -> Needs {
        Needs {
            hot_paths: self.tab == Tab::HotPaths,
            all_histograms: self.tab == Tab::Functions && self.fn_view == FnView::Alloc,
            functions: matches!(self.tab, Tab::Functions | Tab::Async),
            flow: self.tab == Tab::DataFlow,
        }
    }

    /// Rates or totals.
    pub fn values(&self) -> Values {
        self.values
    }

    /// The applied filter ("" for none).
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// The filter being typed, if `/` was pressed.
    pub fn editing(&self) -> Option<&str> {
        self.editing.as_deref()
    }

    /// True when paused.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// True while the help is shown.
    pub fn help(&self) -> bool {
        self.help
    }

    /// The table on screen.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The selected row's index in [`App::table`]'s rows.
    pub fn selected(&self) -> usize {
        self.selected[self.table_id().slot()]
    }

    /// The table on screen.
    pub fn table_id(&self) -> TableId {
        match self.tab {
            Tab::Functions => match self.fn_view {
                FnView::Timing => TableId::Timing,
                FnView::Alloc => TableId::Alloc,
                FnView::Cpu => TableId::Cpu,
            },
            Tab::HotPaths => TableId::Paths,
            Tab::Async => TableId::Async,
            Tab::Threads => TableId::Threads,
            Tab::DataFlow => match self.flow_view() {
                FlowView::Channels => TableId::Channels,
                FlowView::Locks => TableId::Locks,
            },
        }
    }

    /// A line about what the table on screen cannot show, if anything.
    pub fn note(&self) -> Option<String> {
        let report = self.report()?;
        match self.table_id() {
            TableId::Alloc if report.alloc.is_none() => Some(NO_ALLOC.into()),
            TableId::Cpu => cpu_note(report),
            TableId::Threads => {
                let notes: Vec<String> = (report.alloc.is_none().then(|| NO_ALLOC.to_string()))
                    .into_iter()
                    .chain(cpu_note(report))
                    .collect();
                (!notes.is_empty()).then(|| notes.join("; "))
            }
            TableId::Async if self.table.rows.is_empty() && self.filter.is_empty() => {
                Some("no async function was measured".into())
            }
            TableId::Channels | TableId::Locks => {
                let (channels, locks) = (report.channels.len(), report.locks.len());
                if channels == 0 && locks == 0 {
                    return Some(NO_FLOW.into());
                }
                // Both sections have rows: say where the other one is.
                let (other, n) = match self.flow_view() {
                    FlowView::Channels => ("locks", locks),
                    FlowView::Locks => ("channels", channels),
                };
                (n > 0).then(|| format!("v: the {other} ({n})"))
            }
            _ => None,
        }
    }

    /// The first row to draw for a table area `height` rows high, moved
    /// so that the selection is visible; remembers the height as the page
    /// size.
    pub fn scroll_to_fit(&mut self, height: usize) -> usize {
        let slot = self.table_id().slot();
        self.page = height.max(1);
        self.offsets[slot] = self.first_row(height);
        self.offsets[slot]
    }

    /// [`App::scroll_to_fit`]'s first row, without moving it.
    fn first_row(&self, height: usize) -> usize {
        let slot = self.table_id().slot();
        let selected = self.selected[slot];
        let mut offset = self.offsets[slot];
        if selected < offset {
            offset = selected;
        } else if height > 0 && selected >= offset + height {
            offset = selected + 1 - height;
        }
        offset.min(self.table.rows.len().saturating_sub(height))
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

    /// Moves the selection by `delta` rows (the mouse wheel, arrows).
    pub fn scroll(&mut self, delta: isize) {
        let slot = self.table_id().slot();
        let last = self.table.rows.len().saturating_sub(1);
        let s = &mut self.selected[slot];
        *s = s.saturating_add_signed(delta).min(last);
        self.follow = None;
    }

    /// Acts on one key.
    pub fn key(&mut self, key: Key) {
        if key == Key::CtrlC {
            self.quit = true;
            return;
        }
        if let Some(text) = &mut self.editing {
            match key {
                Key::Enter => {
                    self.filter = self.editing.take().unwrap_or_default();
                    self.rebuild();
                }
                Key::Esc => {
                    self.editing = None;
                    self.filter.clear();
                    self.rebuild();
                }
                Key::Backspace => {
                    text.pop();
                }
                Key::Char(c) => text.push(c),
                _ => {}
            }
            return;
        }
        if self.help {
            // Any key closes the help; `q` still quits.
            self.help = false;
            if key != Key::Char('q') {
                return;
            }
        }
        let page = self.page.max(1) as isize;
        match key {
            Key::Char('q') => self.quit = true,
            Key::Char('?') => self.help = true,
            Key::Char('p') => self.paused = !self.paused,
            Key::Char('r') => {
                self.values = match self.values {
                    Values::Rate => Values::Total,
                    Values::Total => Values::Rate,
                };
                self.rebuild();
            }
            Key::Char('/') => self.editing = Some(self.filter.clone()),
            Key::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                self.rebuild();
            }
            Key::Char('s') => {
                let n = self.table_id().columns().len();
                let slot = self.table_id().slot();
                let sort = &mut self.sorts[slot];
                *sort = Sort {
                    column: (sort.column + 1) % n,
                    reversed: false,
                };
                self.rebuild();
            }
            Key::Char('S') => {
                let slot = self.table_id().slot();
                self.sorts[slot].reversed = !self.sorts[slot].reversed;
                self.rebuild();
            }
            Key::Char(c @ '1'..='9') => {
                let column = c as usize - '1' as usize;
                if column < self.table_id().columns().len() {
                    let slot = self.table_id().slot();
                    let sort = &mut self.sorts[slot];
                    *sort = if sort.column == column {
                        Sort {
                            column,
                            reversed: !sort.reversed,
                        }
                    } else {
                        Sort {
                            column,
                            reversed: false,
                        }
                    };
                    self.rebuild();
                }
            }
            Key::Char('v') if self.tab == Tab::DataFlow => {
                self.flow_view = self.flow_view().other();
                self.rebuild();
            }
            Key::Char('v') => {
                self.fn_view = match self.fn_view {
                    FnView::Timing => FnView::Alloc,
                    FnView::Alloc => FnView::Cpu,
                    FnView::Cpu => FnView::Timing,
                };
                self.tab = Tab::Functions;
                self.rebuild();
            }
            Key::Tab => self.set_tab(Tab::ALL[(self.tab.index() + 1) % Tab::ALL.len()]),
            Key::BackTab => {
                self.set_tab(Tab::ALL[(self.tab.index() + Tab::ALL.len() - 1) % Tab::ALL.len()])
            }
            Key::Char('f') => self.set_tab(Tab::Functions),
            Key::Char('h') => self.set_tab(Tab::HotPaths),
            Key::Char('a') => self.set_tab(Tab::Async),
            Key::Char('t') => self.set_tab(Tab::Threads),
            Key::Char('d') => self.set_tab(Tab::DataFlow),
            Key::Up | Key::Char('k') => self.scroll(-1),
            Key::Down | Key::Char('j') => self.scroll(1),
            Key::PageUp => self.scroll(-page),
            Key::PageDown => self.scroll(page),
            Key::Home | Key::Char('g') => self.scroll(isize::MIN),
            Key::End | Key::Char('G') => self.scroll(isize::MAX),
            Key::Enter | Key::Right | Key::Left if self.tab == Tab::HotPaths => self.tree_key(key),
            _ => {}
        }
    }

    fn set_tab(&mut self, tab: Tab) {
        if self.tab != tab {
            self.tab = tab;
            self.rebuild();
        }
    }

    /// Enter toggles the selected node, Right expands it, Left collapses
    /// it (or, when it is collapsed or a leaf, selects its parent).
    fn tree_key(&mut self, key: Key) {
        let slot = self.table_id().slot();
        let Some(row) = self.table.rows.get(self.selected[slot]) else {
            return;
        };
        let (key_of, parent) = (row.key, row.parent);
        match (key, row.expanded) {
            (Key::Enter, Some(true)) | (Key::Left, Some(true)) => {
                self.collapsed.insert(key_of);
            }
            (Key::Enter, Some(false)) | (Key::Right, Some(false)) => {
                self.collapsed.remove(&key_of);
            }
            (Key::Left, _) => {
                if let Some(parent) = parent {
                    if let Some(i) = self.table.rows.iter().position(|r| r.key == parent) {
                        self.selected[slot] = i;
                        self.follow = None;
                    }
                }
                return;
            }
            _ => return,
        }
        self.rebuild();
    }

    /// Builds the table on screen from the current picture (and the
    /// previous, for rates), then keeps the selection on the same row.
    fn rebuild(&mut self) {
        self.rebuild_with(None);
    }

    /// [`App::rebuild`], with `fill` to read the Self percentiles that
    /// order the first rows (to a page below the screen) of a tree sorted
    /// by one, where the picture lacks them.
    fn rebuild_with(&mut self, fill: Option<Fill>) {
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
                          frame: Option<&Frame>,
                          holds: fn(&Frame, TableId) -> bool| match frame {
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
            (Some(frame), Some((_, rows))) => Some(build(
                id,
                &frame.report,
                rows,
                (self.previous.as_ref().map(|f| &f.report))
                    .zip(self.raw_previous.as_ref().map(|(_, r)| r.as_slice()))
                    .filter(|_| self.previous.as_ref().is_some_and(|f| counts(f, id))),
                self.values,
                self.sorts[slot],
                &self.filter,
                &self.collapsed,
                lend.then_some((&mut read_keys as SortKeys, exact_until)),
            )),
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
}

/// Whether a picture holds what table `id` shows.
fn holds(frame: &Frame, id: TableId) -> bool {
    match id {
        TableId::Paths => frame.holds.hot_paths,
        TableId::Timing | TableId::Alloc | TableId::Cpu | TableId::Async => frame.holds.functions,
        TableId::Threads => true,
        TableId::Channels | TableId::Locks => frame.holds.flow,
    }
}

/// Whether a picture holds the counters table `id`'s rates come from:
/// a flow site's are exact in any picture (only its percentiles need
/// [`Needs::flow`]), so the tab has rates at its first picture.
fn counts(frame: &Frame, id: TableId) -> bool {
    matches!(id, TableId::Channels | TableId::Locks) || holds(frame, id)
}

/// The tables' count, for the per-table state.
const TABLES: usize = TableId::ALL.len();

const NO_FLOW: &str = "no channel or lock in this program (perflens::channel!, perflens::sync)";

const NO_ALLOC: &str = "allocations were not counted (the `alloc` feature)";

/// Why a report has no CPU figures, if it has none.
fn cpu_note(report: &Report) -> Option<String> {
    match &report.cpu {
        None => Some(
            "no CPU samples in this report (a program built with the `cpu` feature \
             adds them to its final report)"
                .into(),
        ),
        Some(c) => c
            .unavailable_reason()
            .map(|why| format!("CPU sampling unavailable: {why}")),
    }
}

/// Reads the Self percentiles of nodes of a picture's tree (a live
/// source's [`Source::fill_self_percentiles`](super::source::Source)).
pub type Fill<'a> = &'a mut dyn FnMut(&mut FrameTree, &[u32]) -> Result<(), String>;

/// Reads the sort keys of tree rows while the rows are ordered: given
/// raw rows' indices, their Self `[p50, p99]`.
type SortKeys<'a> = &'a mut dyn FnMut(&[u32]) -> Result<Vec<[Option<u64>; 2]>, String>;

/// A table, and what was read on the way (see [`SortKeys`]).
struct Built {
    table: Table,
    /// The raw rows whose Self percentiles were read, with them.
    filled: Vec<(u32, [Option<u64>; 2])>,
    /// Why the sort keys could not be read.
    error: Option<String>,
}

/// A value ready to sort and format (text borrowed from the raw row).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Val<'a> {
    Num(f64),
    Text(&'a str),
    None,
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
        (Agg::Gauge, _) | (Agg::Counter, Values::Total) => Val::Num(n as f64),
        (Agg::Share, Values::Total) => {
            if elapsed_ns == 0 {
                Val::None
            } else {
                Val::Num(n as f64 * 100.0 / elapsed_ns as f64)
            }
        }
        (Agg::Counter | Agg::Share, Values::Rate) => {
            let Some(dt) = dt_ns.filter(|&d| d > 0) else {
                return Val::None;
            };
            let before = match prev {
                Some(Raw::U(p)) => *p,
                // The row is new: everything it counts is new.
                None => 0,
                // It was there but this was not measured then (a
                // running program's reports carry no CPU samples; its
                // final one does): no rate.
                Some(_) => return Val::None,
            };
            let Some(delta) = n.checked_sub(before) else {
                return Val::None;
            };
            let scale = if column.agg == Agg::Share { 100.0 } else { 1e9 };
            Val::Num(delta as f64 * scale / dt as f64)
        }
    }
}

/// Orders two values of a column: numbers largest first, text A to Z
/// (digit runs by their number: `#2` before `#10`); missing values last
/// either way.
fn compare(a: &Val, b: &Val) -> Ordering {
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

type KeyMap = HashMap<RowKey, usize, KeyHash>;

/// Builds one table from the current report's raw rows (`rows`): values
/// (rates from `previous`, the previous report and its raw rows), filter,
/// sort, and for the tree, the collapsed nodes left out. A tree sorted by
/// a Self percentile that `rows` lack has them read by `keys` for the
/// rows whose order they decide among the first `exact_until` rows (the
/// siblings of each of those rows: a few hundred of ten thousand).
#[allow(clippy::too_many_arguments)]
fn build(
    id: TableId,
    report: &Report,
    rows: &[RawRow],
    previous: Option<(&Report, &[RawRow])>,
    values: Values,
    sort: Sort,
    filter: &str,
    collapsed: &HashSet<RowKey, KeyHash>,
    mut keys: Option<(SortKeys, usize)>,
) -> Built {
    let columns = id.columns();
    let n = columns.len();
    let prev_rows: &[RawRow] = previous.map_or(&[], |(_, r)| r);
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
    let dt_ns = previous.map(|(p, _)| report.elapsed_ns.saturating_sub(p.elapsed_ns));
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
    let order = |vals: &[Val], a: usize, b: usize| {
        let o = compare(&vals[a * n + c], &vals[b * n + c]);
        let o = if sort.reversed { o.reverse() } else { o };
        // Ties: by name, so that the order is stable between refreshes.
        o.then_with(|| rank[a].cmp(&rank[b]))
    };

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
                    Some((read, until)) if emitted < *until && error.is_none() => {
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
            sort_rows(set, vals, rows, n, c, &rank, sort.reversed, |x, y| {
                order(vals, x, y)
            });
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
        sort_rows(
            &mut order_of,
            &vals,
            rows,
            n,
            c,
            &rank,
            sort.reversed,
            |a, b| order(&vals, a, b),
        );
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

/// Sorts `set` (indices of `rows`) by column `c` of `vals` (`n` a row)
/// in the order `order` gives (the column's order, reversed on ask, ties
/// by name rank `rank`, then by place in `set`, as a stable sort keeps
/// them). Where every value is a number, missing, or the row's name, as
/// one key per row, compared as integers: `order`'s comparisons of
/// values were a fifth of a large tree's refresh. Else with `order`.
#[allow(clippy::too_many_arguments)]
fn sort_rows(
    set: &mut [usize],
    vals: &[Val],
    rows: &[RawRow],
    n: usize,
    c: usize,
    rank: &[u32],
    reversed: bool,
    order: impl Fn(usize, usize) -> Ordering,
) {
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
                set.sort_by(|&x, &y| order(x, y));
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

/// Each row's place in the order of the names ([`natural`]), to compare
/// as numbers: the sort's ties are many (equal rates), the distinct names
/// few (a tree repeats its frames). Names that compare equal share one.
fn name_ranks(rows: &[RawRow]) -> Vec<u32> {
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

#[cfg(test)]
mod fast_paths {
    use super::*;

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
}
