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
    use crate::flow::kernel::{
        Counted, ReceiverCount, SenderCount, clone_fields, opaque_debug, receiver_iterators,
        recv_with, waited,
    };
    use crate::flow::{Envelope, Wrap};
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
        /// A message went in (see [`Counted::sent`]).
        #[inline(always)]
        fn sent(&self, site: &'static FlowSite) {
            self.counted.sent(site, || self.capacity);
        }
    }

    /// The sending side of a measured `mpsc::channel`.
    pub struct Sender<T> {
        count: SenderCount,
        inner: mpsc::Sender<Envelope<T>>,
        shared: Arc<Shared>,
    }

    /// The sending side of a measured `mpsc::sync_channel`.
    pub struct SyncSender<T> {
        count: SenderCount,
        inner: mpsc::SyncSender<Envelope<T>>,
        shared: Arc<Shared>,
    }

    /// The receiving side of a measured std channel.
    pub struct Receiver<T> {
        count: ReceiverCount,
        inner: mpsc::Receiver<Envelope<T>>,
        shared: Arc<Shared>,
    }

    /// A new channel's endpoint counts and what they share.
    fn shared(
        site: &'static FlowSite,
        capacity: Option<usize>,
    ) -> (SenderCount, ReceiverCount, Arc<Shared>) {
        site.created(capacity);
        let counts = (SenderCount::new(site), ReceiverCount::new(site));
        let _internal = perflens_core::Internal::enter();
        let shared = Arc::new(Shared {
            capacity: capacity.unwrap_or(usize::MAX),
            counted: Counted::new(),
        });
        (counts.0, counts.1, shared)
    }

    impl<T> Wrap for (mpsc::Sender<Envelope<T>>, mpsc::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            let (count, count_rx, shared) = shared(site, None);
            let tx = Sender {
                count,
                inner: self.0,
                shared: shared.clone(),
            };
            let (count, inner) = (count_rx, self.1);
            (
                tx,
                Receiver {
                    count,
                    inner,
                    shared,
                },
            )
        }
    }

    impl<T> Wrap for (mpsc::SyncSender<Envelope<T>>, mpsc::Receiver<Envelope<T>>) {
        type Measured = (SyncSender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, capacity: Option<usize>) -> Self::Measured {
            let (count, count_rx, shared) = shared(site, Some(capacity.unwrap_or(0)));
            let tx = SyncSender {
                count,
                inner: self.0,
                shared: shared.clone(),
            };
            let (count, inner) = (count_rx, self.1);
            (
                tx,
                Receiver {
                    count,
                    inner,
                    shared,
                },
            )
        }
    }

    impl<T> Sender<T> {
        /// Sends without blocking (the channel is unbounded), or returns
        /// the message when the receiver is gone.
        pub fn send(&self, t: T) -> Result<(), SendError<T>> {
            let site = self.count.site();
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
        /// The first, non-blocking try of every send: its message sealed
        /// and, if accepted, counted; a full channel noted.
        #[inline(always)]
        fn try_first(&self, t: T) -> Result<(), TrySendError<Envelope<T>>> {
            let site = self.count.site();
            let r = self.inner.try_send(Envelope::seal(t, site, site.stamp()));
            match &r {
                Ok(()) => self.shared.sent(site),
                Err(TrySendError::Full(_)) => site.found_full(self.shared.capacity),
                Err(TrySendError::Disconnected(_)) => {}
            }
            r
        }

        /// Blocks until there is room, or returns the message when the
        /// receiver is gone.
        pub fn send(&self, t: T) -> Result<(), SendError<T>> {
            let site = self.count.site();
            let r = match self.try_first(t) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(e)) => Err(SendError(e)),
                Err(TrySendError::Full(e)) => {
                    let r = waited(site, FlowSite::send_waited, || self.inner.send(e));
                    if r.is_ok() {
                        self.shared.sent(site);
                    }
                    r
                }
            };
            r.map_err(|SendError(e)| SendError(e.into_value()))
        }

        /// Sends without blocking; a full channel hands the message back.
        pub fn try_send(&self, t: T) -> Result<(), TrySendError<T>> {
            self.try_first(t).map_err(|e| match e {
                TrySendError::Full(e) => TrySendError::Full(e.into_value()),
                TrySendError::Disconnected(e) => TrySendError::Disconnected(e.into_value()),
            })
        }
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
            self.shared.counted.got(self.count.site(), env)
        }

        /// Blocks until a message arrives, or every sender is gone and the
        /// channel is empty.
        pub fn recv(&self) -> Result<T, RecvError> {
            let site = self.count.site();
            recv_with(site, self.inner.try_recv(), RecvError, || self.inner.recv())
                .map(|env| self.got(env))
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| self.got(env))
        }

        /// Blocks at most `timeout` for a message.
        pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
            let (site, gone) = (self.count.site(), RecvTimeoutError::Disconnected);
            recv_with(site, self.inner.try_recv(), gone, || {
                self.inner.recv_timeout(timeout)
            })
            .map(|env| self.got(env))
        }
    }

    impl crate::flow::kernel::Emptiness for TryRecvError {
        fn empty(&self) -> bool {
            matches!(self, TryRecvError::Empty)
        }
    }

    opaque_debug!(Sender, SyncSender, Receiver);
    receiver_iterators!(Receiver { rx }, fields);
}
