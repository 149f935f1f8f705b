//! `perflens top [PID|PATH] [--interval MS]`: the full-screen live view.
//!
//! The view reads pictures from a [`Source`] every interval (500 ms by
//! default) and shows them in five tabs: Functions (timing, allocations,
//! CPU), Hot paths (a tree), Async, Threads and Data flow (channels,
//! locks). The numbers are rates per second over the last interval, or
//! the session's totals (`r`).
//!
//! - `source.rs`: the [`Source`] trait and the JSON report file source;
//! - `table.rs`: each table's columns and raw rows, from one report;
//! - `state/`: the state and every key's effect, testable without a
//!   terminal (rates, sorting, filtering, the tree's expansion);
//! - `view/`: drawing, with ratatui, one file per widget;
//! - here: the command line, the terminal, and the event loop.
//!
//! The terminal is restored (raw mode off, the alternate screen left, the
//! cursor shown, the mouse released) on `q`, on an error, and on a panic.

pub mod source;
mod state;
mod table;
mod view;

#[cfg(test)]
mod tests;

use source::{JsonFile, LiveSource, Source};
pub use state::{App, Key};

use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEventKind, KeyModifiers,
    MouseEventKind,
};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Refresh interval unless `--interval` says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

/// Why `perflens top` could not run.
#[derive(Debug)]
pub enum TopError {
    /// The command line is wrong.
    Usage(String),
    /// The target cannot be watched (one line).
    Input(String),
    /// The terminal failed.
    Terminal(std::io::Error),
}

impl From<std::io::Error> for TopError {
    fn from(e: std::io::Error) -> Self {
        TopError::Terminal(e)
    }
}

/// Runs `perflens top` with the arguments after `top`.
pub fn run(args: &[String]) -> Result<(), TopError> {
    let (target, interval) = parse_args(args)?;
    let mut source = open(target.as_deref())?;
    if !std::io::stdout().is_terminal() {
        return Err(TopError::Input(
            "top draws a full-screen view: its output must be a terminal".into(),
        ));
    }
    keep_freed_memory();
    let mut app = App::new(interval, source.describe());
    // The first picture now, if the file is there (it was read once
    // already to check it; this one is the one shown).
    source.set_needs(app.needs());
    app.update(source.read());
    watch(&mut app, source.as_mut())
}

/// Asks the allocator to keep the memory a refresh frees for the next
/// one. Every refresh makes the same few large vectors (a picture of ten
/// thousand nodes is megabytes) and drops the picture before last; by
/// default glibc maps the large ones afresh and returns freed memory at
/// the top of the heap to the kernel, so each refresh paid for page
/// faults and zeroed pages again (about 1 ms of the refresh benchmark's
/// 10). What is kept is at most a few pictures.
pub fn keep_freed_memory() {
    perflens_sys::mem::keep_freed_memory();
}

/// The target (`None`: the one running live session) and the interval.
fn parse_args(args: &[String]) -> Result<(Option<String>, Duration), TopError> {
    let mut target = None;
    let mut interval = DEFAULT_INTERVAL;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--interval" => {
                let v = it
                    .next()
                    .ok_or_else(|| TopError::Usage("--interval needs a value".into()))?;
                interval = parse_interval(v).ok_or_else(|| {
                    TopError::Usage(format!(
                        "--interval {v}: expected milliseconds (500) or a duration with a unit (500ms, 2s)"
                    ))
                })?;
            }
            flag if flag.starts_with("--") => {
                return Err(TopError::Usage(format!("unknown option `{flag}`")));
            }
            t if target.is_none() => target = Some(t.to_string()),
            extra => return Err(TopError::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    Ok((target, interval))
}

/// `500` (milliseconds), `500ms`, `0.5s` or `2s`; at least 10 ms, at
/// most an hour.
pub fn parse_interval(v: &str) -> Option<Duration> {
    let v = v.trim();
    let (number, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        (v, 1e-3)
    };
    let secs = number.trim().parse::<f64>().ok()? * scale;
    (secs.is_finite() && (0.01..=3600.0).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

/// The source for `target`: a live session by pid or directory (or,
/// with no target, the only running one), or a JSON report file. A
/// `.json` file that is not there yet is waited for (the program may
/// not have written it yet); anything else that cannot be read is
/// refused in one line.
fn open(target: Option<&str>) -> Result<Box<dyn Source>, TopError> {
    // A live target needs the live view (a JSON file does not).
    let root = || perflens_live::root().map_err(|e| TopError::Input(e.0));
    let live = |dir: std::path::PathBuf| -> Result<Box<dyn Source>, TopError> {
        let source = LiveSource::open(&dir).map_err(TopError::Input)?;
        Ok(Box::new(source))
    };
    let Some(target) = target else {
        return live(perflens_live::find(&root()?, None).map_err(|e| TopError::Input(e.0))?);
    };
    let path = Path::new(target);
    if path.is_dir() || target.bytes().all(|b| b.is_ascii_digit()) {
        return live(
            perflens_live::find(&root()?, Some(target)).map_err(|e| TopError::Input(e.0))?,
        );
    }
    let mut source = JsonFile::new(path);
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if !path.exists() && is_json {
        return Ok(Box::new(source));
    }
    match source.read() {
        Ok(_) => Ok(Box::new(source)),
        Err(e) if is_json => Err(TopError::Input(e)),
        Err(e) => Err(TopError::Input(format!(
            "{e} (top reads a live session by pid, or a JSON report file: PERFLENS_JSON=FILE.json)"
        ))),
    }
}

/// Draws `app` as `perflens top` does, into an off-screen terminal of
/// `width` x `height` cells, and returns the cells (for tests: the same
/// drawing code, no terminal).
pub fn draw_offscreen(app: &mut App, width: u16, height: u16) -> ratatui::buffer::Buffer {
    Offscreen::new(width, height).draw(app).clone()
}

/// An off-screen terminal kept from one drawing to the next, as
/// `perflens top` keeps its terminal (each drawing is compared with the
/// last to find what changed): for benchmarks.
pub struct Offscreen(Terminal<ratatui::backend::TestBackend>);

impl Offscreen {
    /// A terminal of `width` x `height` cells.
    pub fn new(width: u16, height: u16) -> Offscreen {
        let backend = ratatui::backend::TestBackend::new(width, height);
        Offscreen(Terminal::new(backend).expect("an off-screen terminal cannot fail"))
    }

    /// Draws `app` and returns the cells.
    pub fn draw(&mut self, app: &mut App) -> &ratatui::buffer::Buffer {
        self.0
            .draw(|f| view::draw(f, app))
            .expect("an off-screen terminal cannot fail");
        self.0.backend().buffer()
    }
}

/// True while the terminal is in full-screen mode.
static FULL_SCREEN: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back: raw mode off, the alternate screen left, the
/// cursor shown, the mouse released. Only once: the panic hook and the
/// [`Screen`] dropped while unwinding both call it, and leaving the
/// alternate screen a second time would move the cursor back over the
/// panic's message (terminals restore the cursor saved on entering it).
fn restore_terminal() {
    if !FULL_SCREEN.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
}

/// The terminal in full-screen mode while it lives.
struct Screen;

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        // A panic anywhere restores the terminal before its message is
        // printed, so that the message is readable and the shell usable.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        crossterm::terminal::enable_raw_mode()?;
        FULL_SCREEN.store(true, Ordering::SeqCst);
        let screen = Screen;
        execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableMouseCapture,
            cursor::Hide
        )?;
        Ok(screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// The event loop: a key redraws at once; the source is read every
/// interval; the screen is drawn only when something changed.
fn watch(app: &mut App, source: &mut dyn Source) -> Result<(), TopError> {
    let _screen = Screen::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let mut next_read = Instant::now() + app.interval();
    // What the last read was asked to hold (the first, in `run`, was
    // asked for what the app needed then).
    let mut needs = app.needs();
    let mut dirty = true;
    while !app.should_quit() {
        if dirty {
            // The rows about to be drawn may lack figures the source
            // reads only for the rows on screen.
            app.fill_self_percentiles(|tree, nodes| source.fill_self_percentiles(tree, nodes));
            terminal.draw(|f| view::draw(f, app))?;
            dirty = false;
        }
        let wait = next_read.saturating_duration_since(Instant::now());
        if event::poll(wait)? {
            dirty |= handle(app, event::read()?);
            // Take whatever else is queued (a fast wheel) before drawing.
            while !app.should_quit() && event::poll(Duration::ZERO)? {
                dirty |= handle(app, event::read()?);
            }
        }
        let now = Instant::now();
        // A key that changed what the picture must hold (a tab whose
        // figures the last read left out) reads at once.
        if now >= next_read || (app.needs() != needs && app.wants_read()) {
            next_read = now + app.interval();
            if app.wants_read() {
                needs = app.needs();
                source.set_needs(needs);
                let read = source.read();
                // A tree sorted by a Self percentile reads those of the
                // rows whose order they decide while it orders them.
                app.update_with(
                    read,
                    Some(&mut |tree, nodes| source.fill_self_percentiles(tree, nodes)),
                );
                dirty = true;
            }
        }
    }
    Ok(())
}

/// Acts on one terminal event; true when the screen must be redrawn.
fn handle(app: &mut App, event: Event) -> bool {
    match event {
        Event::Key(k) if k.kind != KeyEventKind::Release => {
            let key = match k.code {
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::CtrlC,
                KeyCode::Char(c) => Key::Char(c),
                KeyCode::Enter => Key::Enter,
                KeyCode::Esc => Key::Esc,
                KeyCode::Backspace => Key::Backspace,
                KeyCode::Up => Key::Up,
                KeyCode::Down => Key::Down,
                KeyCode::Left => Key::Left,
                KeyCode::Right => Key::Right,
                KeyCode::PageUp => Key::PageUp,
                KeyCode::PageDown => Key::PageDown,
                KeyCode::Home => Key::Home,
                KeyCode::End => Key::End,
                KeyCode::Tab => Key::Tab,
                KeyCode::BackTab => Key::BackTab,
                _ => return false,
            };
            app.key(key);
            true
        }
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => {
                app.scroll(3);
                true
            }
            MouseEventKind::ScrollUp => {
                app.scroll(-3);
                true
            }
            _ => false,
        },
        Event::Resize(..) => true,
        _ => false,
    }
}
