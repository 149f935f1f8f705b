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

    /// A queue was made, of `capacity` (`None`: unbounded).
    #[inline]
    pub fn created(&'static self, capacity: Option<usize>) {
        #[cfg(feature = "enabled")]
        self.site().created(capacity);
        #[cfg(not(feature = "enabled"))]
        let _ = capacity;
    }

    /// `n` producers were made (negative: dropped). Their count alive is
    /// the row's senders.
    #[inline]
    pub fn senders(&'static self, n: i64) {
        #[cfg(feature = "enabled")]
        self.site().senders(n);
        #[cfg(not(feature = "enabled"))]
        let _ = n;
    }

    /// `n` consumers were made (negative: dropped).
    #[inline]
    pub fn receivers(&'static self, n: i64) {
        #[cfg(feature = "enabled")]
        self.site().receivers(n);
        #[cfg(not(feature = "enabled"))]
        let _ = n;
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

    /// A message went in; `queued`: the messages queued right after it,
    /// if known (for Max queued).
    #[inline]
    pub fn sent(&'static self, queued: Option<usize>) {
        #[cfg(feature = "enabled")]
        self.site().sent(queued);
        #[cfg(not(feature = "enabled"))]
        let _ = queued;
    }

    /// A message came out; `sent_at`: the [`Probe::stamp`] taken when it
    /// was sent (its latency is recorded), or `Stamp::default()`.
    #[inline]
    pub fn received(&'static self, sent_at: Stamp) {
        #[cfg(feature = "enabled")]
        self.site().received(sent_at.0);
        #[cfg(not(feature = "enabled"))]
        let _ = sent_at;
    }

    /// A producer waited for room since `since` (a [`Probe::stamp`]).
    #[inline]
    pub fn send_waited(&'static self, since: Stamp) {
        #[cfg(feature = "enabled")]
        self.site().send_waited(since.0);
        #[cfg(not(feature = "enabled"))]
        let _ = since;
    }

    /// A consumer waited for a message since `since`.
    #[inline]
    pub fn recv_waited(&'static self, since: Stamp) {
        #[cfg(feature = "enabled")]
        self.site().recv_waited(since.0);
        #[cfg(not(feature = "enabled"))]
        let _ = since;
    }

    /// `n` messages were still queued when the queue was dropped.
    #[inline]
    pub fn dropped(&'static self, n: u64) {
        #[cfg(feature = "enabled")]
        self.site().dropped_in_queue(n);
        #[cfg(not(feature = "enabled"))]
        let _ = n;
    }
}
