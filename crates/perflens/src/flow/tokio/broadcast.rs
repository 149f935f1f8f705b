//! `tokio::sync::broadcast`, measured: `channel(n)`.
//!
//! Every receiver gets its own clone of each value, so the counts are per
//! copy: a `send` counts one message sent per receiver it reached (the
//! number it returns), each receiver's receive counts one received, and
//! the copies a receiver never gets are counted dropped: those it skipped
//! (`Lagged(n)` counts `n`) and those still unread when it is dropped.
//! So `sent = received + dropped + queued` holds per copy. Max queued is
//! the sender's `len()` after each send (values not yet seen by every
//! receiver, at most the buffer, which tokio rounds up to a power of
//! two); capacity is the `n` given.

pub use ::tokio::sync::broadcast::error;

#[cfg(not(feature = "enabled"))]
pub use ::tokio::sync::broadcast::{Receiver, Sender, WeakSender};

#[cfg(feature = "enabled")]
pub use measured::{Receiver, Sender, WeakSender};

#[cfg(feature = "enabled")]
mod measured {
    use super::super::{Receivers, Senders, timed};
    use super::error::{RecvError, SendError, TryRecvError};
    use crate::flow::{Envelope, Wrap};
    use ::std::fmt;
    use ::tokio::sync::broadcast;
    use perflens_core::FlowSite;

    /// The sending half of a measured broadcast channel.
    pub struct Sender<T> {
        inner: broadcast::Sender<Envelope<T>>,
        count: Senders,
    }

    /// A sender that does not keep the channel open; not counted as a
    /// sender.
    pub struct WeakSender<T> {
        inner: broadcast::WeakSender<Envelope<T>>,
        site: &'static FlowSite,
    }

    /// A receiving half of a measured broadcast channel.
    pub struct Receiver<T> {
        inner: broadcast::Receiver<Envelope<T>>,
        count: Receivers,
    }

    impl<T> Wrap
        for (
            broadcast::Sender<Envelope<T>>,
            broadcast::Receiver<Envelope<T>>,
        )
    {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, capacity: Option<usize>) -> Self::Measured {
            site.created(capacity);
            (
                Sender {
                    inner: self.0,
                    count: Senders::new(site),
                },
                Receiver {
                    inner: self.1,
                    count: Receivers::new(site),
                },
            )
        }
    }

    impl<T> Sender<T> {
        /// Sends `value` to every receiver alive, returning how many;
        /// hands it back when there is none.
        pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
            let site = self.count.0;
            // No site in the envelope: tokio drops the value once every
            // receiver has seen it; the receivers count the copies lost.
            match self.inner.send(Envelope::stamped(value, site.stamp())) {
                Ok(n) => {
                    site.sent_n(n as u64, Some(self.inner.len()));
                    Ok(n)
                }
                Err(SendError(env)) => Err(SendError(env.into_value())),
            }
        }

        /// A new receiver, which gets the values sent from now on.
        pub fn subscribe(&self) -> Receiver<T> {
            Receiver {
                inner: self.inner.subscribe(),
                count: Receivers::new(self.count.0),
            }
        }

        /// A sender that does not keep the channel open.
        pub fn downgrade(&self) -> WeakSender<T> {
            WeakSender {
                inner: self.inner.downgrade(),
                site: self.count.0,
            }
        }

        /// Values not yet seen by every receiver.
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// Whether every value sent was seen by every receiver.
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// Receivers alive.
        pub fn receiver_count(&self) -> usize {
            self.inner.receiver_count()
        }

        /// Whether both senders belong to the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            self.inner.same_channel(&other.inner)
        }

        /// Completes when every receiver is dropped.
        pub async fn closed(&self) {
            self.inner.closed().await
        }

        /// Senders of the channel alive.
        pub fn strong_count(&self) -> usize {
            self.inner.strong_count()
        }

        /// Weak senders of the channel alive.
        pub fn weak_count(&self) -> usize {
            self.inner.weak_count()
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Sender<T> {
            Sender {
                inner: self.inner.clone(),
                count: self.count.clone(),
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Sender { .. }")
        }
    }

    impl<T> WeakSender<T> {
        /// A sender, if the channel has one left.
        pub fn upgrade(&self) -> Option<Sender<T>> {
            self.inner.upgrade().map(|inner| Sender {
                inner,
                count: Senders::new(self.site),
            })
        }

        /// Senders of the channel alive.
        pub fn strong_count(&self) -> usize {
            self.inner.strong_count()
        }

        /// Weak senders of the channel alive.
        pub fn weak_count(&self) -> usize {
            self.inner.weak_count()
        }
    }

    impl<T> Clone for WeakSender<T> {
        fn clone(&self) -> WeakSender<T> {
            WeakSender {
                inner: self.inner.clone(),
                site: self.site,
            }
        }
    }

    impl<T> fmt::Debug for WeakSender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("WeakSender { .. }")
        }
    }

    impl<T> Receiver<T> {
        /// Values sent that this receiver has not received yet.
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// Whether this receiver has received every value sent.
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// Whether both receivers belong to the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            self.inner.same_channel(&other.inner)
        }

        /// Senders of the channel alive.
        pub fn sender_strong_count(&self) -> usize {
            self.inner.sender_strong_count()
        }

        /// Weak senders of the channel alive.
        pub fn sender_weak_count(&self) -> usize {
            self.inner.sender_weak_count()
        }

        /// Whether every sender is gone.
        pub fn is_closed(&self) -> bool {
            self.inner.is_closed()
        }

        /// A received copy's value, its latency recorded; a lag counts
        /// the copies skipped as dropped.
        #[inline(always)]
        fn got<E: Lag>(&self, r: Result<Envelope<T>, E>) -> Result<T, E> {
            let site = self.count.0;
            match r {
                Ok(env) => {
                    let (value, stamp) = env.open();
                    site.received(stamp);
                    Ok(value)
                }
                Err(e) => {
                    if let Some(n) = e.lagged() {
                        site.dropped_in_queue(n);
                    }
                    Err(e)
                }
            }
        }
    }

    /// The two error types that may say a receiver lagged.
    trait Lag {
        fn lagged(&self) -> Option<u64>;
    }

    impl Lag for RecvError {
        fn lagged(&self) -> Option<u64> {
            match self {
                RecvError::Lagged(n) => Some(*n),
                RecvError::Closed => None,
            }
        }
    }

    impl Lag for TryRecvError {
        fn lagged(&self) -> Option<u64> {
            match self {
                TryRecvError::Lagged(n) => Some(*n),
                _ => None,
            }
        }
    }

    impl<T: Clone> Receiver<T> {
        /// A new receiver that gets the values sent from now on.
        pub fn resubscribe(&self) -> Self {
            Receiver {
                inner: self.inner.resubscribe(),
                count: self.count.clone(),
            }
        }

        /// Receives the next value, waiting for one (tokio's `recv`:
        /// cancel-safe; `Lagged(n)` when `n` values were overwritten
        /// unread; `Closed` when every sender is gone and all is read).
        pub async fn recv(&mut self) -> Result<T, RecvError> {
            let site = self.count.0;
            let r = timed(site, self.inner.recv(), FlowSite::recv_waited).await;
            self.got(r)
        }

        /// Receives a value if one is ready.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let r = self.inner.try_recv();
            self.got(r)
        }

        /// Receives from outside a runtime, blocking for a value
        /// (panics inside an async context, as tokio's).
        pub fn blocking_recv(&mut self) -> Result<T, RecvError> {
            let site = self.count.0;
            let since = if self.inner.is_empty() {
                site.clock()
            } else {
                0
            };
            let r = self.inner.blocking_recv();
            site.recv_waited(since);
            self.got(r)
        }
    }

    impl<T> Drop for Receiver<T> {
        /// The copies this receiver never got are dropped (tokio lets
        /// the values go once the others have seen them).
        fn drop(&mut self) {
            let unread = self.inner.len() as u64;
            if unread != 0 {
                self.count.0.dropped_in_queue(unread);
            }
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Receiver { .. }")
        }
    }
}
