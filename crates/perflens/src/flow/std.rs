//! `std::sync::mpsc`'s endpoints, measured (feature `flow-std`).
//!
//! `perflens::channel!(std::sync::mpsc::channel())` (or
//! `sync_channel(n)`) returns a [`Sender`] (or [`SyncSender`]) and a
//! [`Receiver`] with std's methods, errors and traits; with `enabled` off
//! these names are std's own types. std's channels do not tell how many
//! messages they hold, so each measured channel also counts what went in
//! (the senders, on a cache line of their own) and what came out (its
//! receiver, on another), for its Max queued.

pub use ::std::sync::mpsc::{RecvError, RecvTimeoutError, SendError, TryRecvError, TrySendError};

#[cfg(not(feature = "enabled"))]
pub use ::std::sync::mpsc::{IntoIter, Iter, Receiver, Sender, SyncSender, TryIter};

#[cfg(feature = "enabled")]
pub use measured::{IntoIter, Iter, Receiver, Sender, SyncSender, TryIter};

#[cfg(feature = "enabled")]
mod measured {
    use super::*;
    use crate::flow::Envelope;
    use crate::flow::kernel::{
        Counted, SenderCount, blocking_recvs, blocking_sends, clone_fields, opaque_debug, opened,
        pair, receiver_iterators, wrap,
    };
    use ::std::sync::Arc;
    use ::std::sync::mpsc;
    use ::std::time::Duration;
    use perflens_core::FlowSite;

    /// What one measured channel's endpoints share: its capacity
    /// (`usize::MAX`: unbounded), and the messages that went in and came
    /// out (std's channels do not tell their length).
    struct Shared {
        capacity: usize,
        counted: Counted,
    }

    impl Shared {
        fn new(capacity: Option<usize>) -> Arc<Shared> {
            let _internal = perflens_core::Internal::enter();
            Arc::new(Shared {
                capacity: capacity.unwrap_or(usize::MAX),
                counted: Counted::new(),
            })
        }

        /// A message went in (see [`Counted::sent`]).
        #[inline(always)]
        fn sent(&self, site: &'static FlowSite) {
            self.counted.sent(site, || self.capacity);
        }
    }

    pair! {
        /// The sending side of a measured `mpsc::channel`.
        Sender(mpsc::Sender) { shared: Arc<Shared> = s.clone() },
        /// The receiving side of a measured std channel.
        Receiver(mpsc::Receiver) { shared: Arc<Shared> = s };
        |_, _| None; let s = Shared::new(None)
    }

    /// The sending side of a measured `mpsc::sync_channel`.
    pub struct SyncSender<T> {
        count: SenderCount,
        inner: mpsc::SyncSender<Envelope<T>>,
        shared: Arc<Shared>,
    }

    wrap!(
        mpsc::SyncSender, mpsc::Receiver => SyncSender { shared: s.clone() }, Receiver { shared: s };
        |_, c| Some(c.unwrap_or(0)); let s = Shared::new(Some(c.unwrap_or(0)))
    );
    opened!(SendError(), TrySendError { Full, Disconnected });

    impl<T> Sender<T> {
        /// Sends without blocking (the channel is unbounded), or returns
        /// the message when the receiver is gone.
        pub fn send(&self, t: T) -> Result<(), SendError<T>> {
            let site = self.site();
            match self.inner.send(Envelope::seal(t, site, site.stamp())) {
                Ok(()) => {
                    self.shared.sent(site);
                    Ok(())
                }
                Err(SendError(e)) => Err(SendError(e.into_value())),
            }
        }
    }

    impl<T> SyncSender<T> {
        #[inline(always)]
        fn site(&self) -> &'static FlowSite {
            self.count.site()
        }

        #[inline(always)]
        fn sent(&self) {
            self.shared.sent(self.site());
        }

        #[inline(always)]
        fn found_full(&self) {
            self.site().found_full(self.shared.capacity);
        }

        blocking_sends!(send, Disconnected);
    }

    clone_fields!(
        Sender {
            count,
            inner,
            shared
        },
        SyncSender {
            count,
            inner,
            shared
        }
    );

    impl<T> Receiver<T> {
        /// A received message's value.
        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            self.shared.counted.got(self.site(), env)
        }

        blocking_recvs!(recv -> RecvError, recv_timeout);
    }

    opaque_debug!(Sender, SyncSender, Receiver);
    receiver_iterators!(Receiver { rx }, fields);
}
