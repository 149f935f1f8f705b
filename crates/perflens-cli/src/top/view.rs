//! Drawing `perflens top`: a header, the target's state, the tabs, the
//! table (only its visible rows), a status line, and the help on top.
//! Everything drawn comes from the [`App`]; nothing here changes it but
//! the scroll offset.

use super::app::{App, Tab, Values};
use perflens_report::{format_duration, truncate_left};
use ratatui::Frame;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs};

/// Columns between two table columns.
pub(super) const SPACING: u16 = 2;

/// The name column's width below which numeric columns are left out.
const NAME_MIN: usize = 24;

/// The help, one key a line.
pub const HELP: &[(&str, &str)] = &[
    ("Tab / Shift-Tab", "next / previous tab"),
    (
        "f h a t d",
        "Functions, Hot paths, Async, Threads, Data flow",
    ),
    ("v", "Functions: timing, allocations, CPU"),
    ("v", "Data flow: channels, locks"),
    ("r", "rate per second over the last interval / totals"),
    ("s / S", "sort by the next column / reverse the order"),
    ("1-9", "sort by that column (again: reverse)"),
    ("/", "filter by name: type, Enter applies, Esc clears"),
    ("Esc", "clear the filter"),
    ("Enter → ←", "Hot paths: toggle, expand, collapse a node"),
    (
        "↑ ↓ PgUp PgDn Home End",
        "move the selection (the wheel too)",
    ),
    ("p", "pause / resume the refresh"),
    ("?", "this help (any key closes it)"),
    ("q", "quit"),
];

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let [header, state, tabs, note, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(header_line(app), header);
    frame.render_widget(state_line(app), state);
    draw_tabs(frame, app, tabs);
    frame.render_widget(note_line(app), note);
    draw_table(frame, app, body);
    frame.render_widget(status_line(app), status);
    if app.help() {
        draw_help(frame, frame.area());
    }
}

/// What is shown and how, the most useful first (a narrow terminal cuts
/// the end): paused, rates or totals, the interval, the report's mode and
/// elapsed time, the source.
fn header_line(app: &App) -> Paragraph<'static> {
    let mut spans = Vec::new();
    if app.paused() {
        spans.push(Span::styled(
            " PAUSED ",
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ));
        spans.push(Span::raw(" "));
    }
    let mut parts = vec![
        "perflens top".to_string(),
        match app.values() {
            Values::Rate => "rates per second".into(),
            Values::Total => "totals".into(),
        },
        format!("every {} ms", app.interval().as_millis()),
    ];
    if let Some(r) = app.report() {
        parts.push(format!("{:?}", r.mode).to_lowercase());
        parts.push(format!("elapsed {}", format_duration(r.elapsed_ns)));
    }
    parts.push(app.source().to_string());
    spans.push(Span::raw(parts.join(" · ")));
    Paragraph::new(Line::from(spans))
}

fn state_line(app: &App) -> Paragraph<'static> {
    match app.target() {
        None => Paragraph::new(Line::from(Span::styled(
            format!(
                "waiting for the first report: {}",
                app.error().unwrap_or("nothing read yet")
            ),
            Style::new().fg(Color::Yellow),
        ))),
        Some(t) if app.target_ended() => Paragraph::new(Line::from(Span::styled(
            format!("■ target exited: {} — showing its last report", t.label()),
            Style::new()
                .fg(Color::Red)
                .add_modifier(Modifier::BOLD | Modifier::REVERSED),
        ))),
        Some(t) => Paragraph::new(Line::from(Span::styled(
            format!("● running: {}", t.label()),
            Style::new().fg(Color::Green),
        ))),
    }
}

fn draw_tabs(frame: &mut Frame, app: &App, area: Rect) {
    let titles = Tab::ALL.iter().map(|t| {
        match t {
            Tab::Functions => format!("Functions [{}]", app.fn_view().title()),
            // No view to name before the first picture, or without a
            // channel or a lock.
            Tab::DataFlow
                if (app.report())
                    .is_some_and(|r| !r.channels.is_empty() || !r.locks.is_empty()) =>
            {
                format!("Data flow [{}]", app.flow_view().title())
            }
            _ => t.title().to_string(),
        }
    });
    let selected = Tab::ALL.iter().position(|&t| t == app.tab());
    let tabs = Tabs::new(titles)
        .select(selected)
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD));
    frame.render_widget(tabs, area);
}

fn note_line(app: &App) -> Paragraph<'static> {
    let mut spans = Vec::new();
    if let Some(text) = app.editing() {
        spans.push(Span::styled(
            format!("filter: {text}▏"),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::raw("  (Enter applies, Esc clears)"));
    } else if !app.filter().is_empty() {
        spans.push(Span::styled(
            format!("filter: {}", app.filter()),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::raw("  (Esc clears)"));
    }
    if let Some(note) = app.note() {
        if !spans.is_empty() {
            spans.push(Span::raw("  ·  "));
        }
        spans.push(Span::styled(note, Style::new().fg(Color::Yellow)));
    }
    if spans.is_empty()
        && app.values() == Values::Rate
        && !app.has_rates()
        && app.report().is_some()
    {
        spans.push(Span::raw(
            "rates compare two reports: waiting for the next one",
        ));
    }
    Paragraph::new(Line::from(spans))
}

/// How many of a table's columns (widest texts `widths`, the name's
/// first) fit in `total` columns of the terminal, and the name column's
/// width: numeric columns as wide as their widest text, left to right
/// while they fit beside a name column of at least NAME_MIN (a narrow
/// terminal loses the last columns, not the digits of every one); the
/// name column gets the rest.
pub(super) fn columns_shown(widths: &[usize], total: usize) -> (usize, usize) {
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

fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
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
pub(super) fn name_cell(text: &str, tree_depth: Option<usize>, width: usize) -> String {
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

fn status_line(app: &App) -> Paragraph<'static> {
    if let (Some(err), Some(_)) = (app.error(), app.report()) {
        return Paragraph::new(Line::from(Span::styled(
            format!("read failed, showing the last good report: {err}"),
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        )));
    }
    Paragraph::new(
        "q quit  ? help  Tab/f/h/a/t/d tabs  v view  r rate/total  s/S sort  / filter  p pause",
    )
    .style(Style::new().add_modifier(Modifier::DIM))
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let key_width = HELP
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(k, what)| Line::from(format!(" {k:<key_width$}  {what}")))
        .collect();
    let width = (lines.iter().map(Line::width).max().unwrap_or(0) + 4) as u16;
    let height = lines.len() as u16 + 2;
    let popup = Rect {
        x: area.x + area.width.saturating_sub(width) / 2,
        y: area.y + area.height.saturating_sub(height) / 2,
        width: width.min(area.width),
        height: height.min(area.height),
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::new()
                .borders(Borders::ALL)
                .title(" perflens top: keys ")
                .title_alignment(Alignment::Center),
        ),
        popup,
    );
}
