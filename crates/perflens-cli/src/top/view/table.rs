//! The table: which columns fit the terminal's width (a narrow one loses
//! the last columns, not the digits of every one), the header, and only
//! the visible rows, written straight into the buffer with the selection
//! highlighted and names cut on the left to fit.

use crate::top::state::App;
use perflens_report::truncate_left;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;

/// Columns between two table columns.
pub(in crate::top) const SPACING: u16 = 2;

/// The name column's width below which numeric columns are left out.
const NAME_MIN: usize = 24;

/// How many of a table's columns (widest texts `widths`, the name's
/// first) fit in `total` columns of the terminal, and the name column's
/// width: numeric columns as wide as their widest text, left to right
/// while they fit beside a name column of at least NAME_MIN (a narrow
/// terminal loses the last columns, not the digits of every one); the
/// name column gets the rest.
pub(in crate::top) fn columns_shown(widths: &[usize], total: usize) -> (usize, usize) {
    let Some(&name) = widths.first() else {
        return (0, total.max(1));
    };
    let mut used = name.min(NAME_MIN);
    let shown = 1
        + (widths.iter().skip(1))
            .take_while(|&&w| {
                used += w + SPACING as usize;
                used <= total
            })
            .count();
    let others: usize = (widths[1..shown].iter())
        .map(|w| w + SPACING as usize)
        .sum();
    (shown, total.saturating_sub(others).max(1))
}

pub(super) fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
    if area.height < 2 {
        return;
    }
    // One line for the header.
    let height = area.height as usize - 1;
    let offset = app.scroll_to_fit(height);
    let selected = app.selected();
    let table = app.table();
    if table.headers.is_empty() {
        return;
    }
    let (shown, name_width) = columns_shown(&table.widths, area.width as usize);

    // Drawn straight into the buffer, as ratatui's Table widget drew
    // it (a test holds them to the same cells): the widget solved the
    // columns' constraints and built a text per cell at every refresh,
    // a tenth of a large tree's refresh; the widths are known here.
    let columns: Vec<(u16, u16)> = {
        let mut x = area.x;
        std::iter::once(name_width)
            .chain(table.widths[1..shown].iter().copied())
            .map(|w| {
                let w = w.min(u16::MAX as usize) as u16;
                let at = (x, w);
                x = x.saturating_add(w).saturating_add(SPACING);
                at
            })
            .collect()
    };
    let buf = frame.buffer_mut();
    let right = area.x.saturating_add(area.width);
    // A cell's text in its column: the name on the left, the others on
    // the right (they fit: a column is as wide as its widest text).
    let put = |buf: &mut ratatui::buffer::Buffer, y: u16, c: usize, text: &str| {
        let Some(&(x, w)) = columns.get(c) else {
            return;
        };
        let w = w.min(right.saturating_sub(x));
        if w == 0 {
            return;
        }
        let x = if c == 0 {
            x
        } else {
            let tw = Span::raw(text).width().min(u16::MAX as usize) as u16;
            x + w.saturating_sub(tw)
        };
        buf.set_stringn(x, y, text, w as usize, Style::new());
    };
    let line = |y: u16| Rect {
        x: area.x,
        y,
        width: area.width,
        height: 1,
    };
    buf.set_style(
        line(area.y),
        Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
    );
    for (c, h) in table.headers.iter().take(shown).enumerate() {
        put(buf, area.y, c, h);
    }
    let visible = table.rows.iter().enumerate().skip(offset).take(height);
    for (k, (i, row)) in visible.enumerate() {
        let y = area.y + 1 + k as u16;
        if i == selected {
            buf.set_style(line(y), Style::new().add_modifier(Modifier::REVERSED));
        }
        for c in 0..shown {
            let text = table.cell(row, c);
            if c == 0 {
                put(
                    buf,
                    y,
                    c,
                    &name_cell(&text, row.tree.then_some(row.depth), name_width),
                );
            } else {
                put(buf, y, c, &text);
            }
        }
    }
    if table.rows.is_empty() {
        let empty = if app.filter().is_empty() {
            "(no rows)"
        } else {
            "(no row matches the filter)"
        };
        let area = Rect {
            y: area.y + 1,
            height: 1,
            ..area
        };
        frame.render_widget(Paragraph::new(empty), area);
    }
}

/// The name cut on the left to fit (the end of a name is what tells);
/// a tree row keeps its indentation and marker.
pub(in crate::top) fn name_cell(text: &str, tree_depth: Option<usize>, width: usize) -> String {
    // Tree rows: two columns per level, then a two-column marker.
    let prefix = tree_depth.map_or(0, |d| (2 * d + 2).min(text.chars().count()));
    let (head, name): (String, String) = {
        let mut chars = text.chars();
        let head: String = chars.by_ref().take(prefix).collect();
        (head, chars.collect())
    };
    let room = width.saturating_sub(head.chars().count());
    format!("{head}{}", truncate_left(&name, room))
}
