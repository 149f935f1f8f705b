//! The state of `perflens top`, without a terminal: the pictures, the
//! tab, the sort, the filter, the tree's expansion, the selection, and the
//! rows of the table on screen, built once per change (a new picture, a
//! new sort, filter, tab or mode), never per key press that only moves.
//! Everything here is tested without drawing; `view/` turns it into
//! widgets. This file holds the [`App`] (the pictures it keeps and what it
//! answers about them); `keys.rs` each key's effect, `rebuild.rs` the
//! table's making, `view_model.rs` and `sort.rs` the rows' values and
//! order, `cells.rs` their text, `tabs.rs` the tabs and views.

mod cells;
mod keys;
mod rebuild;
mod sort;
mod tabs;
mod view_model;

#[cfg(test)]
mod tests;

pub use cells::Table;
// The rows' type, named by the tests of the whole view.
#[cfg(test)]
pub use cells::Row;
pub use keys::Key;
use sort::Sort;
pub use tabs::{FlowView, FnView, Tab, Values};

use super::source::{Capture, Needs, Target};
use super::table::{KeyHash, RawRow, RowKey, TableId};
use perflens_report::{FrameTree, Report};
use std::collections::HashSet;
use std::time::Duration;

/// Everything `perflens top` shows, and every key's effect on it.
pub struct App {
    interval: Duration,
    source: String,
    current: Option<Capture>,
    previous: Option<Capture>,
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
    pub fn update(&mut self, read: Result<Capture, String>) {
        self.update_with(read, None);
    }

    /// [`App::update`], with `fill` to read the Self percentiles that
    /// order the rows on screen when the tree is sorted by one (else the
    /// rows are first ordered by what the picture holds, and
    /// [`App::fill_self_percentiles`] reads them and orders the rows
    /// again).
    pub fn update_with(&mut self, read: Result<Capture, String>, fill: Option<Fill>) {
        match read {
            Ok(capture) => {
                self.error = None;
                match self.current.take() {
                    // The same picture (the file was not rewritten since):
                    // the rates stay those of the last interval.
                    Some(cur) if cur.report.elapsed_ns == capture.report.elapsed_ns => {
                        let same = cur == capture;
                        self.current = Some(capture);
                        if same {
                            return;
                        }
                        self.raw = None;
                    }
                    Some(cur) if cur.report.elapsed_ns < capture.report.elapsed_ns => {
                        self.previous = Some(cur);
                        let before = std::mem::replace(&mut self.raw_previous, self.raw.take());
                        self.spare = before.map(|(_, rows)| rows).unwrap_or_default();
                        self.current = Some(capture);
                    }
                    // A new session (the clock went back): no rate yet.
                    _ => {
                        self.previous = None;
                        self.raw_previous = None;
                        self.raw = None;
                        self.current = Some(capture);
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
            Tab::Memory => TableId::Memory,
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
            TableId::Memory if report.heap.is_none() => Some(NO_HEAP.into()),
            TableId::Memory if self.table.rows.is_empty() && self.filter.is_empty() => {
                Some("no sampled allocation is in use".into())
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
}

/// The tables' count, for the per-table state.
const TABLES: usize = TableId::ALL.len();

const NO_FLOW: &str = "no channel or lock in this program (perflens::channel!, perflens::sync)";

const NO_ALLOC: &str = "allocations were not counted (the `alloc` feature)";
const NO_HEAP: &str = "the heap is not sampled (the `heap` feature, PERFLENS_HEAP_RATE not 0)";

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
