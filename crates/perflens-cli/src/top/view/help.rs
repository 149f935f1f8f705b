//! The help: every key, one a line, in a box over the middle of the
//! screen (`?` opens it, any key closes it).

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// The help, one key a line.
const HELP: &[(&str, &str)] = &[
    ("Tab / Shift-Tab", "next / previous tab"),
    (
        "f h a t d m",
        "Functions, Hot paths, Async, Threads, Data flow, Memory",
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

pub(super) fn draw_help(frame: &mut Frame, area: Rect) {
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
