//! Drawing `perflens top` with ratatui, one file per widget: the screen's
//! layout here, and `header.rs` (what is shown and the target's state),
//! `tabs.rs`, `note.rs` (the filter and what the table cannot show),
//! `table.rs` (the table's visible rows), `status.rs` and `help.rs`.
//! Everything drawn comes from the [`App`]; nothing here changes it but
//! the scroll offset, which follows the selection into the area drawn.

mod header;
mod help;
mod note;
mod status;
pub(super) mod table;
mod tabs;

use super::state::App;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};

/// Draws the whole screen.
pub(super) fn draw(frame: &mut Frame, app: &mut App) {
    let [header, state, tabs, note, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(header::header_line(app), header);
    frame.render_widget(header::state_line(app), state);
    tabs::draw_tabs(frame, app, tabs);
    frame.render_widget(note::note_line(app), note);
    table::draw_table(frame, app, body);
    frame.render_widget(status::status_line(app), status);
    if app.help() {
        help::draw_help(frame, frame.area());
    }
}
