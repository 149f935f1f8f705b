//! Signals: every handler perflens installs goes through here, so that a
//! platform without them (the portable build) has one place that says
//! so.
//!
//! - [`current`] and [`install`]: a signal's disposition, and setting a
//!   handler ([`Action`]): the facade's stop signals, the CPU sampler's
//!   sampling signal and SIGTRAP (`SA_SIGINFO`) and its SIGIO catcher,
//!   and restoring the default action.
//! - [`raise`], [`unblock_in_thread`], [`send_to_process`]: delivering a
//!   signal again (a stop signal after its report, a SIGTRAP that was not
//!   the sampler's).
//! - [`self_pipe`]: the stop signals' self-pipe: the handler writes the
//!   signal's number into a pipe (async-signal-safe), a thread of the
//!   profiler's own waits on it.
//! - [`SavedErrno`]: `errno` kept across a handler.
//! - [`alt_stack`]: the alternate signal stack installed on the calling
//!   thread (the sampler reads the interrupted stack only where it is
//!   mapped).
//! - The live reader's SIGBUS guard is part of [`crate::shm::ReadView`]
//!   (`posix/bus_guard.rs`, which Linux shares).
//!
//! The Linux and POSIX implementations share one file
//! (`posix/signal.rs`). The portable build has no signals: [`current`] and [`install`] say
//! so, [`self_pipe`] gives a channel no signal writes to (its waits
//! still time out, for the facade's periodic JSON rewrite), and the rest
//! does nothing.

/// What a signal does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// The default action.
    Default,
    /// Ignored.
    Ignore,
    /// A handler (the program's or ours).
    Handler,
}

/// A handler with the signal's number only.
pub type PlainHandler = extern "C" fn(i32);

/// A handler with the signal's details (`SA_SIGINFO`): the number, the
/// [`Info`], and the interrupted context (a `ucontext_t` on Linux, read
/// by the sampler's `arch/`).
pub type InfoHandler = extern "C" fn(i32, *mut Info, *mut std::ffi::c_void);

/// What [`install`] sets.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// The default action.
    Default,
    /// `handler(sig)`, system calls it interrupts restarted.
    Plain(PlainHandler),
    /// `handler(sig, info, context)`, system calls it interrupts
    /// restarted.
    Info(InfoHandler),
}

pub use crate::imp::signal::{
    Info, SIGINT, SIGIO, SIGTERM, SIGTRAP, SavedErrno, SelfPipe, SignalForwarder, alt_stack,
    current, install, raise, self_pipe, send_to_process, unblock_in_thread,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::time::Duration;

    static SEEN: AtomicI32 = AtomicI32::new(0);

    extern "C" fn note(sig: i32) {
        SEEN.store(sig, Ordering::SeqCst);
    }

    #[test]
    fn a_handler_is_installed_sees_its_signal_and_is_restored() {
        // SIGWINCH's default action is to do nothing: safe to raise.
        const SIGWINCH: i32 = 28;
        if !crate::CAPABILITIES.stop_signals {
            assert!(current(SIGWINCH).is_err());
            assert!(install(SIGWINCH, Action::Plain(note)).is_err());
            return;
        }
        assert_eq!(current(SIGWINCH).unwrap(), Disposition::Default);
        install(SIGWINCH, Action::Plain(note)).unwrap();
        assert_eq!(current(SIGWINCH).unwrap(), Disposition::Handler);
        raise(SIGWINCH);
        assert_eq!(SEEN.load(Ordering::SeqCst), SIGWINCH);
        install(SIGWINCH, Action::Default).unwrap();
        assert_eq!(current(SIGWINCH).unwrap(), Disposition::Default);
    }

    #[test]
    fn the_self_pipe_times_out_and_carries_nothing_unasked() {
        let (pipe, forwarder) = self_pipe().expect("a self-pipe");
        // Forwarding no signal: only the timeout wakes the reader.
        assert!(forwarder.forward(&[]).is_empty());
        assert_eq!(pipe.wait(Some(Duration::from_millis(5))).unwrap(), None);
    }

    #[test]
    fn errno_is_kept_across_a_handler() {
        let _ = std::fs::metadata("/nonexistent/perflens");
        let before = std::io::Error::last_os_error().raw_os_error();
        {
            let _saved = SavedErrno::save();
            let _ = std::fs::File::open(std::env::temp_dir());
        }
        // Kept where there are signals; the portable build has no handler
        // to keep it for.
        if crate::CAPABILITIES.stop_signals {
            assert_eq!(std::io::Error::last_os_error().raw_os_error(), before);
        }
    }

    #[test]
    fn an_alternate_stack_is_a_range() {
        // std gives the threads it starts one (for its stack-overflow
        // message) where it handles SIGSEGV; the portable build knows none.
        let alt = std::thread::spawn(alt_stack).join().unwrap();
        if let Some((lo, hi)) = alt {
            assert!(hi > lo && crate::CAPABILITIES.stop_signals);
        }
        if !crate::CAPABILITIES.stop_signals {
            assert_eq!(alt_stack(), None);
        }
    }
}
