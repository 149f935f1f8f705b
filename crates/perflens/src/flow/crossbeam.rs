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
    use crate::flow::Envelope;
    use crate::flow::kernel::{
        blocking_recvs, blocking_sends, clone_fields, delegate, full, opaque_debug, opened, pair,
        receiver_iterators,
    };
    use ::std::time::{Duration, Instant};
    use crossbeam_channel as cb;

    pair! {
        /// The sending side of a measured crossbeam channel.
        Sender(cb::Sender),
        /// The receiving side of a measured crossbeam channel.
        Receiver(cb::Receiver);
        |tx, _| tx.capacity()
    }
    opened!(
        SendError(),
        TrySendError { Full, Disconnected },
        SendTimeoutError {
            Timeout,
            Disconnected
        }
    );

    impl<T> Sender<T> {
        /// Counts an accepted message, with the queue right after it now
        /// and then (see `FlowSite::sent_sampled`).
        #[inline(always)]
        fn sent(&self) {
            self.site().sent_sampled(|| self.inner.len());
        }

        #[inline(always)]
        fn found_full(&self) {
            full(self.site(), self.inner.capacity());
        }

        blocking_sends!(send, Disconnected, timeouts);
        delegate!(is_empty, is_full, len, capacity, same_channel);
    }

    impl<T> Receiver<T> {
        /// The value of a received message, its latency recorded.
        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            env.received(self.site())
        }

        blocking_recvs!(recv -> RecvError, recv_timeout, recv_deadline);
        delegate!(is_empty, is_full, len, capacity, same_channel);
    }

    opaque_debug!(Sender, Receiver);
    receiver_iterators!(Receiver { rx }, opaque);

    clone_fields!(Sender { count, inner }, Receiver { count, inner });
}
