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
    use super::error::{RecvError, SendError, TryRecvError};
    use crate::flow::Envelope;
    use crate::flow::kernel::{
        Opened, ReceiverCount, SenderCount, clock_if, clone_fields, delegate, opaque_debug, opened,
        pair, timed, weak,
    };
    use ::tokio::sync::broadcast;
    use perflens_core::FlowSite;

    pair! {
        /// The sending half of a measured broadcast channel.
        Sender(broadcast::Sender),
        /// A receiving half of a measured broadcast channel.
        Receiver(broadcast::Receiver);
        |_, c| c
    }
    opened!(SendError());

    weak! {
        /// A sender that does not keep the channel open; not counted as a
        /// sender.
        WeakSender = broadcast::WeakSender of Sender,
        |w, inner| Sender { inner, count: SenderCount::new(w.site) }
    }

    impl<T> Sender<T> {
        /// Sends `value` to every receiver alive, returning how many;
        /// hands it back when there is none.
        pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
            let site = self.site();
            // No site in the envelope: tokio drops the value once every
            // receiver has seen it; the receivers count the copies lost.
            match self.inner.send(Envelope::stamped(value, site.stamp())) {
                Ok(n) => {
                    site.sent_n(n as u64, Some(self.inner.len()));
                    Ok(n)
                }
                Err(e) => Err(e.opened()),
            }
        }

        /// A new receiver, which gets the values sent from now on.
        pub fn subscribe(&self) -> Receiver<T> {
            Receiver {
                inner: self.inner.subscribe(),
                count: ReceiverCount::new(self.site()),
            }
        }

        delegate!(
            closed,
            len,
            is_empty,
            receiver_count,
            same_channel,
            strong_count,
            weak_count
        );
    }

    impl<T> WeakSender<T> {
        delegate!(strong_count, weak_count);
    }

    impl<T> Receiver<T> {
        /// A received copy's value, its latency recorded; a lag counts
        /// the copies skipped as dropped.
        #[inline(always)]
        fn got<E: Lag>(&self, r: Result<Envelope<T>, E>) -> Result<T, E> {
            let site = self.site();
            match r {
                Ok(env) => Ok(env.received(site)),
                Err(e) => {
                    if let Some(n) = e.lagged() {
                        site.dropped_in_queue(n);
                    }
                    Err(e)
                }
            }
        }

        delegate!(
            len,
            is_empty,
            same_channel,
            sender_strong_count,
            sender_weak_count,
            is_closed
        );
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
            let site = self.site();
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
            let site = self.site();
            let since = clock_if(site, self.inner.is_empty());
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
                self.site().dropped_in_queue(unread);
            }
        }
    }

    opaque_debug!(Sender, WeakSender, Receiver);

    clone_fields!(Sender { inner, count });
}
