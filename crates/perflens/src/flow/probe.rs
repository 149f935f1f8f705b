//! The probe API: a primitive perflens does not wrap (an actor's mailbox,
//! a custom queue) reports its own events and gets a Channels row like a
//! measured channel's.
//!
//! ```
//! use perflens::flow::{Probe, Stamp};
//! use std::collections::VecDeque;
//! use std::sync::Mutex;
//!
//! static MAILBOX: Probe = Probe::channel("actor mailbox");
//!
//! struct Mailbox {
//!     queue: Mutex<VecDeque<(String, Stamp)>>,
//! }
//!
//! impl Mailbox {
//!     fn new() -> Mailbox {
//!         MAILBOX.created(None);
//!         Mailbox { queue: Mutex::new(VecDeque::new()) }
//!     }
//!     fn post(&self, msg: String) {
//!         let mut q = self.queue.lock().unwrap();
//!         q.push_back((msg, MAILBOX.stamp()));
//!         MAILBOX.sent(Some(q.len()));
//!     }
//!     fn take(&self) -> Option<String> {
//!         let (msg, stamp) = self.queue.lock().unwrap().pop_front()?;
//!         MAILBOX.received(stamp);
//!         Some(msg)
//!     }
//! }
//!
//! impl Drop for Mailbox {
//!     fn drop(&mut self) {
//!         MAILBOX.dropped(self.queue.get_mut().unwrap().len() as u64);
//!     }
//! }
//!
//! let m = Mailbox::new();
//! m.post("hello".into());
//! assert_eq!(m.take().as_deref(), Some("hello"));
//! ```
//!
//! Without the `enabled` feature every method does nothing and a
//! [`Stamp`] is empty, so a library can report through a probe
//! unconditionally.

#[cfg(feature = "enabled")]
use perflens_core::{FlowKind, FlowSite};

/// A time read by a [`Probe`] (a send time, or the start of a wait), or
/// nothing when no clock is read (count mode, latency off, no session,
/// `enabled` off). Carry it with a message to get its latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp(#[cfg(feature = "enabled")] u64);

/// One row of the Channels section, reported by hand. Make it in a
/// `static` (one row per probe; two probes with one label share it).
pub struct Probe {
    #[cfg(feature = "enabled")]
    site: FlowSite,
}

/// The methods that report one event: with `enabled` off each does
/// nothing with its argument.
macro_rules! report {
    ($($(#[$m:meta])* fn $name:ident($arg:ident: $ty:ty) => $call:ident$(($field:tt))?;)*) => {$(
        $(#[$m])*
        #[inline]
        pub fn $name(&'static self, $arg: $ty) {
            #[cfg(feature = "enabled")]
            self.site().$call($arg$(.$field)?);
            #[cfg(not(feature = "enabled"))]
            let _ = $arg;
        }
    )*};
}

impl Probe {
    /// A probe whose row is a channel's, named `label`.
    pub const fn channel(label: &'static str) -> Probe {
        #[cfg(not(feature = "enabled"))]
        let _ = label;
        Probe {
            #[cfg(feature = "enabled")]
            site: FlowSite::new(FlowKind::Channel, label, "", 0, 0, true),
        }
    }

    #[cfg(feature = "enabled")]
    #[inline(always)]
    fn site(&'static self) -> &'static FlowSite {
        &self.site
    }

    report! {
        /// A queue was made, of `capacity` (`None`: unbounded).
        fn created(capacity: Option<usize>) => created;
        /// `n` producers were made (negative: dropped). Their count alive is
        /// the row's senders.
        fn senders(n: i64) => senders;
        /// `n` consumers were made (negative: dropped).
        fn receivers(n: i64) => receivers;
        /// A message went in; `queued`: the messages queued right after it,
        /// if known (for Max queued).
        fn sent(queued: Option<usize>) => sent;
        /// A message came out; `sent_at`: the [`Probe::stamp`] taken when it
        /// was sent (its latency is recorded), or `Stamp::default()`.
        fn received(sent_at: Stamp) => received(0);
        /// A producer waited for room since `since` (a [`Probe::stamp`]).
        fn send_waited(since: Stamp) => send_waited(0);
        /// A consumer waited for a message since `since`.
        fn recv_waited(since: Stamp) => recv_waited(0);
        /// `n` messages were still queued when the queue was dropped.
        fn dropped(n: u64) => dropped_in_queue;
    }

    /// The time now, if this session times flows: a message's send time,
    /// or the start of a wait.
    #[inline]
    pub fn stamp(&'static self) -> Stamp {
        #[cfg(feature = "enabled")]
        return Stamp(self.site().clock());
        #[cfg(not(feature = "enabled"))]
        Stamp()
    }
}
