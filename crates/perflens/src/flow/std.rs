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
    use crate::flow::{Envelope, Wrap};
    use ::std::fmt;
    use ::std::sync::Arc;
    use ::std::sync::atomic::{AtomicUsize, Ordering};
    use ::std::sync::mpsc;
    use ::std::time::Duration;
    use perflens_core::FlowSite;

    /// A value alone on its cache line.
    #[repr(align(64))]
    struct Line<T>(T);

    /// What one measured channel's endpoints share: its site, its
    /// capacity (`usize::MAX`: unbounded), and the messages that went in
    /// and came out. The senders add to `sent` (a line only they write);
    /// the one receiver counts `taken` on a line only it writes.
    struct Shared {
        site: &'static FlowSite,
        capacity: usize,
        sent: Line<AtomicUsize>,
        taken: Line<AtomicUsize>,
    }

    impl Shared {
        /// A message went in: counted; now and then (see
        /// `FlowSite::sent_sampled`) with the queue after it, `sent -
        /// taken` read then. That can be one ahead for each receive that
        /// has taken a message but not yet counted it: a queue never
        /// holds more than its capacity, so neither does the figure.
        #[inline(always)]
        fn sent(&self) {
            let sent = self.sent.0.fetch_add(1, Ordering::Relaxed) + 1;
            self.site.sent_sampled(|| {
                let taken = self.taken.0.load(Ordering::Relaxed);
                sent.saturating_sub(taken).min(self.capacity)
            });
        }

        /// A message came out (on the one receiver's thread): its value,
        /// its latency recorded.
        #[inline(always)]
        fn got<T>(&self, env: Envelope<T>) -> T {
            let taken = &self.taken.0;
            taken.store(
                taken.load(Ordering::Relaxed).wrapping_add(1),
                Ordering::Relaxed,
            );
            let (value, stamp) = env.open();
            self.site.received(stamp);
            value
        }
    }

    /// The sending side of a measured `mpsc::channel`.
    pub struct Sender<T> {
        inner: mpsc::Sender<Envelope<T>>,
        shared: Arc<Shared>,
    }

    /// The sending side of a measured `mpsc::sync_channel`.
    pub struct SyncSender<T> {
        inner: mpsc::SyncSender<Envelope<T>>,
        shared: Arc<Shared>,
    }

    /// The receiving side of a measured std channel.
    pub struct Receiver<T> {
        inner: mpsc::Receiver<Envelope<T>>,
        shared: Arc<Shared>,
    }

    fn shared(site: &'static FlowSite, capacity: Option<usize>) -> Arc<Shared> {
        site.created(capacity);
        site.senders(1);
        site.receivers(1);
        let _internal = perflens_core::Internal::enter();
        Arc::new(Shared {
            site,
            capacity: capacity.unwrap_or(usize::MAX),
            sent: Line(AtomicUsize::new(0)),
            taken: Line(AtomicUsize::new(0)),
        })
    }

    impl<T> Wrap for (mpsc::Sender<Envelope<T>>, mpsc::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            let shared = shared(site, None);
            let inner = self.0;
            let tx = Sender {
                inner,
                shared: shared.clone(),
            };
            (
                tx,
                Receiver {
                    inner: self.1,
                    shared,
                },
            )
        }
    }

    impl<T> Wrap for (mpsc::SyncSender<Envelope<T>>, mpsc::Receiver<Envelope<T>>) {
        type Measured = (SyncSender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, capacity: Option<usize>) -> Self::Measured {
            let shared = shared(site, Some(capacity.unwrap_or(0)));
            (
                SyncSender {
                    inner: self.0,
                    shared: shared.clone(),
                },
                Receiver {
                    inner: self.1,
                    shared,
                },
            )
        }
    }

    impl<T> Sender<T> {
        /// Sends without blocking (the channel is unbounded), or returns
        /// the message when the receiver is gone.
        pub fn send(&self, t: T) -> Result<(), SendError<T>> {
            let site = self.shared.site;
            match self.inner.send(Envelope::seal(t, site, site.stamp())) {
                Ok(()) => {
                    self.shared.sent();
                    Ok(())
                }
                Err(SendError(e)) => Err(SendError(e.into_value())),
            }
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Sender<T> {
            self.shared.site.senders(1);
            Sender {
                inner: self.inner.clone(),
                shared: self.shared.clone(),
            }
        }
    }

    impl<T> Drop for Sender<T> {
        fn drop(&mut self) {
            self.shared.site.senders(-1);
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Sender { .. }")
        }
    }

    impl<T> SyncSender<T> {
        /// Blocks until there is room, or returns the message when the
        /// receiver is gone.
        pub fn send(&self, t: T) -> Result<(), SendError<T>> {
            let site = self.shared.site;
            let r = match self.inner.try_send(Envelope::seal(t, site, site.stamp())) {
                Ok(()) => Ok(()),
                Err(mpsc::TrySendError::Disconnected(e)) => Err(SendError(e)),
                Err(mpsc::TrySendError::Full(e)) => {
                    site.found_full(self.shared.capacity);
                    let since = site.clock();
                    let r = self.inner.send(e);
                    site.send_waited(since);
                    r
                }
            };
            match r {
                Ok(()) => {
                    self.shared.sent();
                    Ok(())
                }
                Err(SendError(e)) => Err(SendError(e.into_value())),
            }
        }

        /// Sends without blocking; a full channel hands the message back.
        pub fn try_send(&self, t: T) -> Result<(), TrySendError<T>> {
            let site = self.shared.site;
            match self.inner.try_send(Envelope::seal(t, site, site.stamp())) {
                Ok(()) => {
                    self.shared.sent();
                    Ok(())
                }
                Err(TrySendError::Full(e)) => {
                    site.found_full(self.shared.capacity);
                    Err(TrySendError::Full(e.into_value()))
                }
                Err(TrySendError::Disconnected(e)) => {
                    Err(TrySendError::Disconnected(e.into_value()))
                }
            }
        }
    }

    impl<T> Clone for SyncSender<T> {
        fn clone(&self) -> SyncSender<T> {
            self.shared.site.senders(1);
            SyncSender {
                inner: self.inner.clone(),
                shared: self.shared.clone(),
            }
        }
    }

    impl<T> Drop for SyncSender<T> {
        fn drop(&mut self) {
            self.shared.site.senders(-1);
        }
    }

    impl<T> fmt::Debug for SyncSender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("SyncSender { .. }")
        }
    }

    impl<T> Receiver<T> {
        /// Receives as a blocking call would wait, timing the wait.
        fn blocked<E>(&self, recv: impl FnOnce() -> Result<Envelope<T>, E>) -> Result<T, E> {
            let site = self.shared.site;
            let since = site.clock();
            let r = recv();
            site.recv_waited(since);
            r.map(|env| self.shared.got(env))
        }

        /// Blocks until a message arrives, or every sender is gone and the
        /// channel is empty.
        pub fn recv(&self) -> Result<T, RecvError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(self.shared.got(env)),
                Err(TryRecvError::Disconnected) => Err(RecvError),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv()),
            }
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| self.shared.got(env))
        }

        /// Blocks at most `timeout` for a message.
        pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(self.shared.got(env)),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv_timeout(timeout)),
            }
        }

        /// A blocking iterator over the messages, ending when every
        /// sender is gone and the channel is empty.
        pub fn iter(&self) -> Iter<'_, T> {
            Iter { rx: self }
        }

        /// An iterator over the messages already in the channel.
        pub fn try_iter(&self) -> TryIter<'_, T> {
            TryIter { rx: self }
        }
    }

    impl<T> Drop for Receiver<T> {
        fn drop(&mut self) {
            self.shared.site.receivers(-1);
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
            f.debug_struct("Iter").field("rx", &self.rx).finish()
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
            f.debug_struct("TryIter").field("rx", &self.rx).finish()
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
            f.debug_struct("IntoIter").field("rx", &self.rx).finish()
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
