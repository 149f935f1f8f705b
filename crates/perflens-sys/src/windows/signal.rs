//! Windows has no signals. A console program gets Ctrl-C, Ctrl-Break,
//! and its console closing, the user logging off or the system shutting
//! down as console control events, which `SetConsoleCtrlHandler` hands
//! to a function on a thread the system starts for each. Here they are
//! the two stop signals the facade catches, as the C runtime's `signal`
//! names them: Ctrl-C and Ctrl-Break are SIGINT, the other three SIGTERM.
//!
//! A handler installed for either gets the event on that thread and the
//! event counts as handled; once the facade's report is written,
//! [`send_to_process`] ends the process as the system's own handler does
//! (exit status `STATUS_CONTROL_C_EXIT`, what a console shows for a
//! program stopped by Ctrl-C). For the console's closing the system ends
//! the process when the handler returns (or 5 s later), so the handler
//! waits there for the report instead.
//!
//! Console handlers run last registered first and the first to handle an
//! event ends its delivery: a program that registers its own after the
//! session started (`tokio::signal::ctrl_c`, the `ctrlc` crate) gets the
//! event and keeps control, as it does on Linux. One registered before is
//! not seen by [`current`] (Windows has no way to ask) and gets the event
//! only if perflens's handler declines it (a stop signal left at its
//! default).
//!
//! No other signal exists: installing one is an error (no CPU sampling).

use super::portable::signal as portable;
use super::unsupported;
use crate::signal::{Action, Disposition, PlainHandler};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

// The channel the stop thread waits on, and its forwarder, which installs
// its handler through this file's `install`.
pub use portable::{
    Info, SIGINT, SIGIO, SIGTERM, SIGTRAP, SavedErrno, SelfPipe, SignalForwarder, alt_stack,
    self_pipe, unblock_in_thread,
};

const CTRL_C_EVENT: u32 = 0;
const CTRL_BREAK_EVENT: u32 = 1;
const CTRL_CLOSE_EVENT: u32 = 2;
const CTRL_LOGOFF_EVENT: u32 = 5;
const CTRL_SHUTDOWN_EVENT: u32 = 6;

/// The exit status of a program the system's handler ended on Ctrl-C.
const STATUS_CONTROL_C_EXIT: u32 = 0xC000_013A;

#[link(name = "kernel32")]
unsafe extern "system" {
    fn SetConsoleCtrlHandler(
        handler: Option<unsafe extern "system" fn(u32) -> i32>,
        add: i32,
    ) -> i32;
    fn ExitProcess(code: u32) -> !;
}

/// The handler installed for SIGINT (0) and SIGTERM (1), as a
/// `PlainHandler`'s address; 0: the default action.
static HANDLERS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// Whether [`on_event`] is registered with the console.
static REGISTERED: Mutex<bool> = Mutex::new(false);

fn slot(sig: i32) -> Option<&'static AtomicUsize> {
    match sig {
        SIGINT => Some(&HANDLERS[0]),
        SIGTERM => Some(&HANDLERS[1]),
        _ => None,
    }
}

/// The stop signal a console control event stands for.
fn signal_of(event: u32) -> Option<i32> {
    match event {
        CTRL_C_EVENT | CTRL_BREAK_EVENT => Some(SIGINT),
        CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT => Some(SIGTERM),
        _ => None,
    }
}

/// The console's handler: runs the handler installed for the event's
/// signal and says the event is handled (1), or declines it (0) when
/// the signal has its default action, so that the next handler (in the
/// end the system's, which ends the process) gets it.
unsafe extern "system" fn on_event(event: u32) -> i32 {
    let Some(sig) = signal_of(event) else {
        return 0;
    };
    let h = slot(sig).map_or(0, |s| s.load(Ordering::Acquire));
    if h == 0 {
        return 0;
    }
    // SAFETY: only `install` stores here, and it stores a `PlainHandler`.
    let f = unsafe { std::mem::transmute::<usize, PlainHandler>(h) };
    f(sig);
    if event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT {
        // The system ends the process when this returns: the report's
        // thread ends it first (`send_to_process`).
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    1
}

/// SIGINT's and SIGTERM's action: ours if installed, else the default
/// (a program's own console handler cannot be seen). Others: an error.
pub fn current(sig: i32) -> std::io::Result<Disposition> {
    match slot(sig) {
        Some(s) if s.load(Ordering::Acquire) != 0 => Ok(Disposition::Handler),
        Some(_) => Ok(Disposition::Default),
        None => Err(unsupported(
            "signals other than Ctrl-C and the console's closing",
        )),
    }
}

/// Sets SIGINT's or SIGTERM's action (registering the console handler
/// the first time); a handler with the signal's details, or another
/// signal, is an error.
pub fn install(sig: i32, action: Action) -> std::io::Result<()> {
    let Some(s) = slot(sig) else {
        return Err(unsupported(
            "signals other than Ctrl-C and the console's closing",
        ));
    };
    let handler = match action {
        Action::Default => 0,
        Action::Plain(f) => f as usize,
        Action::Info(_) => return Err(unsupported("signal details on Windows")),
    };
    if handler != 0 {
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        if !*registered {
            // SAFETY: registers a function that lives as long as the
            // process.
            if unsafe { SetConsoleCtrlHandler(Some(on_event), 1) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            *registered = true;
        }
    }
    s.store(handler, Ordering::Release);
    Ok(())
}

/// Runs SIGINT's or SIGTERM's action now: the handler installed, or the
/// default (the process ends as on Ctrl-C). Others: nothing.
pub fn raise(sig: i32) {
    let Some(s) = slot(sig) else {
        return;
    };
    match s.load(Ordering::Acquire) {
        0 => {
            // SAFETY: ends the process, as the system's handler would.
            unsafe { ExitProcess(STATUS_CONTROL_C_EXIT) }
        }
        h => {
            // SAFETY: only `install` stores here, a `PlainHandler`.
            let f = unsafe { std::mem::transmute::<usize, PlainHandler>(h) };
            f(sig);
        }
    }
}

/// As [`raise`]: a process has one console handler list.
pub fn send_to_process(sig: i32) {
    raise(sig);
}
