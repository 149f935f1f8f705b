//! The line above the table: the filter being typed or applied, what the
//! table on screen cannot show (no allocations, no CPU samples, no
//! channel or lock, the other Data flow section), or that rates wait for
//! a second report.

use crate::top::state::{App, Values};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub(super) fn note_line(app: &App) -> Paragraph<'static> {
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
