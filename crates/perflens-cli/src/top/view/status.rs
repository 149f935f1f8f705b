//! The bottom line: the keys most used, or, when the last read failed
//! while an earlier report is shown, why.

use crate::top::state::App;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub(super) fn status_line(app: &App) -> Paragraph<'static> {
    if let (Some(err), Some(_)) = (app.error(), app.report()) {
        return Paragraph::new(Line::from(Span::styled(
            format!("read failed, showing the last good report: {err}"),
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        )));
    }
    Paragraph::new(
        "q quit  ? help  Tab/f/h/a/t/d/m tabs  v view  r rate/total  s/S sort  / filter  p pause",
    )
    .style(Style::new().add_modifier(Modifier::DIM))
}
