//! The two lines at the top of the screen: what is shown and how (paused,
//! rates or totals, the interval, the report's mode and elapsed time, the
//! source), and the target's state (waiting for its first report,
//! running, or exited with its last report shown).

use crate::top::state::{App, Values};
use perflens_report::format_duration;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// What is shown and how, the most useful first (a narrow terminal cuts
/// the end): paused, rates or totals, the interval, the report's mode and
/// elapsed time, the source.
pub(super) fn header_line(app: &App) -> Paragraph<'static> {
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

pub(super) fn state_line(app: &App) -> Paragraph<'static> {
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
