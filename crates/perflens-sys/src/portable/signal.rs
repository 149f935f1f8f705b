//! No signals in `std`: nothing can be installed or raised, so there is
//! no report on a stop signal and no CPU sampling. The self-pipe is a
//! channel no signal writes to: its waits time out, which the facade's
//! periodic JSON rewrite needs. (Windows uses the same channel, with its
//! console events installed through its own `install`.)

use super::unsupported;
use crate::signal::{Action, Disposition};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

// The numbers C gives them (POSIX and Windows agree on these two); only
// compared and named here.
pub const SIGINT: i32 = 2;
pub const SIGTERM: i32 = 15;
pub const SIGTRAP: i32 = 5;
pub const SIGIO: i32 = 29;

/// A signal's details: never delivered here.
#[repr(C)]
#[derive(Debug)]
pub struct Info {
    _opaque: [u8; 0],
}

/// No signals: an error.
pub fn current(_sig: i32) -> std::io::Result<Disposition> {
    Err(unsupported("signal handling"))
}

/// No signals: an error.
pub fn install(_sig: i32, _action: Action) -> std::io::Result<()> {
    Err(unsupported("signal handling"))
}

/// No signals: nothing.
pub fn raise(_sig: i32) {}

/// No signals: nothing.
pub fn unblock_in_thread(_sig: i32) {}

/// No signals: nothing.
pub fn send_to_process(_sig: i32) {}

/// No handler to keep `errno` for.
#[derive(Debug)]
pub struct SavedErrno;

impl SavedErrno {
    /// Nothing to save.
    pub fn save() -> SavedErrno {
        SavedErrno
    }
}

/// No alternate stacks: `None`.
pub fn alt_stack() -> Option<(u64, u64)> {
    None
}

/// The waiting end: a channel nothing sends on.
#[derive(Debug)]
pub struct SelfPipe {
    rx: mpsc::Receiver<i32>,
}

/// The sending end, kept for the life of the process by
/// [`SignalForwarder::forward`] so that waits time out rather than end.
#[derive(Debug)]
pub struct SignalForwarder {
    tx: mpsc::Sender<i32>,
}

/// A channel in place of a pipe.
pub fn self_pipe() -> std::io::Result<(SelfPipe, SignalForwarder)> {
    let (tx, rx) = mpsc::channel();
    Ok((SelfPipe { rx }, SignalForwarder { tx }))
}

/// The sending end, once forwarding (kept for the life of the process).
static FORWARD: Mutex<Option<mpsc::Sender<i32>>> = Mutex::new(None);

/// The handler installed for each forwarded signal: sends its number to
/// the waiting thread. Only where a handler runs on a thread of its own
/// (Windows's console events), since it takes a lock.
extern "C" fn forward_signal(sig: i32) {
    if let Some(tx) = FORWARD.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        let _ = tx.send(sig);
    }
}

impl SignalForwarder {
    /// Keeps the sending end for the life of the process (so that waits
    /// time out rather than end) and installs [`forward_signal`] for each
    /// of `signals` with the implementation's `install`: none here, the
    /// console events on Windows. Returns those it took for.
    pub fn forward(self, signals: &[i32]) -> Vec<i32> {
        *FORWARD.lock().unwrap_or_else(|e| e.into_inner()) = Some(self.tx);
        signals
            .iter()
            .copied()
            .filter(|&s| crate::imp::signal::install(s, Action::Plain(forward_signal)).is_ok())
            .collect()
    }
}

impl SelfPipe {
    /// Waits up to `timeout` (`None`: for ever): `None` when the time is
    /// up (nothing is ever sent).
    pub fn wait(&self, timeout: Option<Duration>) -> std::io::Result<Option<i32>> {
        match timeout {
            Some(t) => match self.rx.recv_timeout(t) {
                Ok(sig) => Ok(Some(sig)),
                Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
                }
            },
            None => self
                .rx
                .recv()
                .map(Some)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
        }
    }
}
