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
    use crate::flow::{Envelope, Wrap};
    use ::std::fmt;
    use ::std::time::{Duration, Instant};
    use crossbeam_channel as cb;
    use perflens_core::FlowSite;

    /// The sending side of a measured crossbeam channel.
    pub struct Sender<T> {
        inner: cb::Sender<Envelope<T>>,
        site: &'static FlowSite,
    }

    /// The receiving side of a measured crossbeam channel.
    pub struct Receiver<T> {
        inner: cb::Receiver<Envelope<T>>,
        site: &'static FlowSite,
    }

    impl<T> Wrap for (cb::Sender<Envelope<T>>, cb::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            site.created(self.0.capacity());
            site.senders(1);
            site.receivers(1);
            (
                Sender {
                    inner: self.0,
                    site,
                },
                Receiver {
                    inner: self.1,
                    site,
                },
            )
        }
    }

    impl<T> Sender<T> {
        /// Counts an accepted message, with the queue right after it now
        /// and then (see `FlowSite::sent_sampled`).
        #[inline(always)]
        fn sent(&self) {
            self.site.sent_sampled(|| self.inner.len());
        }

        /// A send found the channel full.
        #[cold]
        fn full(&self) {
            if let Some(cap) = self.inner.capacity() {
                self.site.found_full(cap);
            }
        }

        /// Sends as `send` would block for room, timing the wait.
        fn blocked<E>(
            &self,
            env: Envelope<T>,
            send: impl FnOnce(Envelope<T>) -> Result<(), E>,
        ) -> Result<(), E> {
            let since = self.site.clock();
            let r = send(env);
            self.site.send_waited(since);
            if r.is_ok() {
                self.sent();
            }
            r
        }

        /// Blocks until the message is sent, or returns it when every
        /// receiver is gone.
        pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
            let stamp = self.site.stamp();
            match self.inner.try_send(Envelope::seal(msg, self.site, stamp)) {
                Ok(()) => {
                    self.sent();
                    Ok(())
                }
                Err(TrySendError::Disconnected(env)) => Err(SendError(env.into_value())),
                Err(TrySendError::Full(env)) => {
                    self.full();
                    self.blocked(env, |e| self.inner.send(e))
                        .map_err(|SendError(e)| SendError(e.into_value()))
                }
            }
        }

        /// Sends without blocking; a full channel hands the message back.
        pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
            let stamp = self.site.stamp();
            match self.inner.try_send(Envelope::seal(msg, self.site, stamp)) {
                Ok(()) => {
                    self.sent();
                    Ok(())
                }
                Err(TrySendError::Full(e)) => {
                    self.full();
                    Err(TrySendError::Full(e.into_value()))
                }
                Err(TrySendError::Disconnected(e)) => {
                    Err(TrySendError::Disconnected(e.into_value()))
                }
            }
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
            let stamp = self.site.stamp();
            let back = |e: SendTimeoutError<Envelope<T>>| match e {
                SendTimeoutError::Timeout(e) => SendTimeoutError::Timeout(e.into_value()),
                SendTimeoutError::Disconnected(e) => SendTimeoutError::Disconnected(e.into_value()),
            };
            match self.inner.try_send(Envelope::seal(msg, self.site, stamp)) {
                Ok(()) => {
                    self.sent();
                    Ok(())
                }
                Err(TrySendError::Disconnected(e)) => {
                    Err(SendTimeoutError::Disconnected(e.into_value()))
                }
                // No deadline that far: as `send`.
                Err(TrySendError::Full(env)) => {
                    self.full();
                    self.blocked(env, |e| match deadline {
                        Some(d) => self.inner.send_deadline(e, d),
                        None => self
                            .inner
                            .send(e)
                            .map_err(|SendError(e)| SendTimeoutError::Disconnected(e)),
                    })
                    .map_err(back)
                }
            }
        }

        /// Whether the channel is empty.
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// Whether the channel is full.
        pub fn is_full(&self) -> bool {
            self.inner.is_full()
        }

        /// Messages in the channel.
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// The channel's capacity; `None` when unbounded.
        pub fn capacity(&self) -> Option<usize> {
            self.inner.capacity()
        }

        /// Whether both senders belong to the same channel.
        pub fn same_channel(&self, other: &Sender<T>) -> bool {
            self.inner.same_channel(&other.inner)
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Sender<T> {
            self.site.senders(1);
            Sender {
                inner: self.inner.clone(),
                site: self.site,
            }
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            self.site.senders(-1);
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Sender { .. }")
        }
    }

    impl<T> Receiver<T> {
        /// The value of a received message, its latency recorded.
        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            let (value, stamp) = env.open();
            self.site.received(stamp);
            value
        }

        /// Receives as a blocking call would wait for a message, timing
        /// the wait.
        fn blocked<E>(&self, recv: impl FnOnce() -> Result<Envelope<T>, E>) -> Result<T, E> {
            let since = self.site.clock();
            let r = recv();
            self.site.recv_waited(since);
            r.map(|env| self.got(env))
        }

        /// Blocks until a message arrives, or every sender is gone and the
        /// channel is empty.
        pub fn recv(&self) -> Result<T, RecvError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(self.got(env)),
                Err(TryRecvError::Disconnected) => Err(RecvError),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv()),
            }
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| self.got(env))
        }

        /// Blocks at most `timeout` for a message.
        pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(self.got(env)),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv_timeout(timeout)),
            }
        }

        /// Blocks until `deadline` at most for a message.
        pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(self.got(env)),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv_deadline(deadline)),
            }
        }

        /// Whether the channel is empty.
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// Whether the channel is full.
        pub fn is_full(&self) -> bool {
            self.inner.is_full()
        }

        /// Messages in the channel.
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// The channel's capacity; `None` when unbounded.
        pub fn capacity(&self) -> Option<usize> {
            self.inner.capacity()
        }

        /// A blocking iterator over the messages, ending when the channel
        /// is empty and disconnected.
        pub fn iter(&self) -> Iter<'_, T> {
            Iter { rx: self }
        }

        /// An iterator over the messages already in the channel.
        pub fn try_iter(&self) -> TryIter<'_, T> {
            TryIter { rx: self }
        }

        /// Whether both receivers belong to the same channel.
        pub fn same_channel(&self, other: &Receiver<T>) -> bool {
            self.inner.same_channel(&other.inner)
        }
    }

    impl<T> Clone for Receiver<T> {
        fn clone(&self) -> Receiver<T> {
            self.site.receivers(1);
            Receiver {
                inner: self.inner.clone(),
                site: self.site,
            }
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            self.site.receivers(-1);
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Receiver { .. }")
        }
    }

    /// [`Receiver::iter`].
    pub struct Iter<'a, T> {
        rx: &'a Receiver<T>,
    }

    impl<T> Iterator for Iter<'_, T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.rx.recv().ok()
        }
    }

    impl<T> fmt::Debug for Iter<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Iter { .. }")
        }
    }

    /// [`Receiver::try_iter`].
    pub struct TryIter<'a, T> {
        rx: &'a Receiver<T>,
    }

    impl<T> Iterator for TryIter<'_, T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.rx.try_recv().ok()
        }
    }

    impl<T> fmt::Debug for TryIter<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("TryIter { .. }")
        }
    }

    /// The owning iterator of a [`Receiver`].
    pub struct IntoIter<T> {
        rx: Receiver<T>,
    }

    impl<T> Iterator for IntoIter<T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.rx.recv().ok()
        }
    }

    impl<T> fmt::Debug for IntoIter<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("IntoIter { .. }")
        }
    }

    impl<'a, T> IntoIterator for &'a Receiver<T> {
        type Item = T;
        type IntoIter = Iter<'a, T>;
        fn into_iter(self) -> Iter<'a, T> {
            self.iter()
        }
    }

    impl<T> IntoIterator for Receiver<T> {
        type Item = T;
        type IntoIter = IntoIter<T>;
        fn into_iter(self) -> IntoIter<T> {
            IntoIter { rx: self }
        }
    }
}
