//! Every key's effect on the state, as a transition: the keys `top`
//! understands, what each one changes (the tab, the view, rates or
//! totals, the sort, the filter being typed and applied, the help, the
//! pause, the tree's expansion), and the selection and scroll offset they
//! move. No key draws: a change that alters the rows rebuilds the table.

use super::{App, FnView, Sort, Tab, Values};

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

impl App {
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
            Key::Char('m') => self.set_tab(Tab::Memory),
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

    pub(super) fn set_tab(&mut self, tab: Tab) {
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
    pub(super) fn first_row(&self, height: usize) -> usize {
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
}
