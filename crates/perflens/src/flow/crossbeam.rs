//! `crossbeam_channel`'s endpoints, measured (feature `flow-crossbeam`).
//!
//! `perflens::channel!(crossbeam_channel::bounded(n))` (or `unbounded()`)
//! returns a [`Sender`] and a [`Receiver`] with crossbeam's methods,
//! errors and traits; with `enabled` off these names are crossbeam's own
//! types. Not supported: crossbeam's `select!` and `Select` take
//! crossbeam's own receivers; use the methods here, or `recv_timeout`.

pub use crossbeam_channel::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};

#[cfg(not(feature = "enabled"))]
pub use crossbeam_channel::{IntoIter, Iter, Receiver, Sender, TryIter};

#[cfg(feature = "enabled")]
pub use measured::{IntoIter, Iter, Receiver, Sender, TryIter};

#[cfg(feature = "enabled")]
mod measured {
    use super::*;
    use crate::flow::kernel::{
        Emptiness, ReceiverCount, SenderCount, clone_fields, delegate, full, made, opaque_debug,
        receiver_iterators, recv_with, waited,
    };
    use crate::flow::{Envelope, Wrap};
    use ::std::time::{Duration, Instant};
    use crossbeam_channel as cb;
    use perflens_core::FlowSite;

    /// The sending side of a measured crossbeam channel.
    pub struct Sender<T> {
        count: SenderCount,
        inner: cb::Sender<Envelope<T>>,
    }

    /// The receiving side of a measured crossbeam channel.
    pub struct Receiver<T> {
        count: ReceiverCount,
        inner: cb::Receiver<Envelope<T>>,
    }

    impl<T> Wrap for (cb::Sender<Envelope<T>>, cb::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            let (tx, rx) = made(site, self.0.capacity());
            let tx = Sender {
                count: tx,
                inner: self.0,
            };
            (
                tx,
                Receiver {
                    count: rx,
                    inner: self.1,
                },
            )
        }
    }

    impl<T> Sender<T> {
        #[inline(always)]
        fn site(&self) -> &'static FlowSite {
            self.count.site()
        }

        /// Counts an accepted message, with the queue right after it now
        /// and then (see `FlowSite::sent_sampled`).
        #[inline(always)]
        fn sent(&self) {
            self.site().sent_sampled(|| self.inner.len());
        }

        /// The first, non-blocking try of every send: its message sealed
        /// and, if accepted, counted; a full channel noted.
        #[inline(always)]
        fn try_first(&self, msg: T) -> Result<(), TrySendError<Envelope<T>>> {
            let site = self.site();
            let r = self.inner.try_send(Envelope::seal(msg, site, site.stamp()));
            match &r {
                Ok(()) => self.sent(),
                Err(TrySendError::Full(_)) => full(site, self.inner.capacity()),
                Err(TrySendError::Disconnected(_)) => {}
            }
            r
        }

        /// Sends as a blocking call would wait for room, timing the wait.
        fn blocked<E>(&self, send: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
            let r = waited(self.site(), FlowSite::send_waited, send);
            if r.is_ok() {
                self.sent();
            }
            r
        }

        /// Blocks until the message is sent, or returns it when every
        /// receiver is gone.
        pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
            match self.try_first(msg) {
                Ok(()) => Ok(()),
                Err(TrySendError::Disconnected(env)) => Err(SendError(env.into_value())),
                Err(TrySendError::Full(env)) => self
                    .blocked(|| self.inner.send(env))
                    .map_err(|SendError(e)| SendError(e.into_value())),
            }
        }

        /// Sends without blocking; a full channel hands the message back.
        pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
            self.try_first(msg).map_err(|e| match e {
                TrySendError::Full(e) => TrySendError::Full(e.into_value()),
                TrySendError::Disconnected(e) => TrySendError::Disconnected(e.into_value()),
            })
        }

        /// Blocks at most `timeout` for room.
        pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
            self.send_deadline_opt(msg, Instant::now().checked_add(timeout))
        }

        /// Blocks until `deadline` at most for room.
        pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
            self.send_deadline_opt(msg, Some(deadline))
        }

        fn send_deadline_opt(
            &self,
            msg: T,
            deadline: Option<Instant>,
        ) -> Result<(), SendTimeoutError<T>> {
            match self.try_first(msg) {
                Ok(()) => Ok(()),
                Err(TrySendError::Disconnected(e)) => {
                    Err(SendTimeoutError::Disconnected(e.into_value()))
                }
                // No deadline that far: as `send`.
                Err(TrySendError::Full(env)) => self
                    .blocked(|| match deadline {
                        Some(d) => self.inner.send_deadline(env, d),
                        None => (self.inner.send(env))
                            .map_err(|SendError(e)| SendTimeoutError::Disconnected(e)),
                    })
                    .map_err(|e| match e {
                        SendTimeoutError::Timeout(e) => SendTimeoutError::Timeout(e.into_value()),
                        SendTimeoutError::Disconnected(e) => {
                            SendTimeoutError::Disconnected(e.into_value())
                        }
                    }),
            }
        }

        delegate!(is_empty, is_full, len, capacity, same_channel);
    }

    impl<T> Receiver<T> {
        /// The value of a received message, its latency recorded.
        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            env.received(self.count.site())
        }

        /// Receives as a blocking call: a message now, or else `wait`
        /// for one (timed); `gone` when the channel is empty and
        /// disconnected.
        #[inline(always)]
        fn recv_with<E>(
            &self,
            gone: E,
            wait: impl FnOnce() -> Result<Envelope<T>, E>,
        ) -> Result<T, E> {
            let first = self.inner.try_recv();
            recv_with(self.count.site(), first, gone, wait).map(|env| self.got(env))
        }

        /// Blocks until a message arrives, or every sender is gone and the
        /// channel is empty.
        pub fn recv(&self) -> Result<T, RecvError> {
            self.recv_with(RecvError, || self.inner.recv())
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| self.got(env))
        }

        /// Blocks at most `timeout` for a message.
        pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
            let gone = RecvTimeoutError::Disconnected;
            self.recv_with(gone, || self.inner.recv_timeout(timeout))
        }

        /// Blocks until `deadline` at most for a message.
        pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
            let gone = RecvTimeoutError::Disconnected;
            self.recv_with(gone, || self.inner.recv_deadline(deadline))
        }

        delegate!(is_empty, is_full, len, capacity, same_channel);
    }

    impl Emptiness for TryRecvError {
        fn empty(&self) -> bool {
            self.is_empty()
        }
    }

    opaque_debug!(Sender, Receiver);
    receiver_iterators!(Receiver { rx }, opaque);

    clone_fields!(Sender { count, inner }, Receiver { count, inner });
}
