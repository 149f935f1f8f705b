//! The tabs' line: each tab's title, the Functions and Data flow tabs
//! with the view they show, and the tab on screen highlighted.

use crate::top::state::{App, Tab};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::Tabs;

pub(super) fn draw_tabs(frame: &mut Frame, app: &App, area: Rect) {
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
