//! `async_channel`'s endpoints, measured (feature `flow-async-channel`).
//!
//! `perflens::channel!(async_channel::bounded(n))` (or `unbounded()`)
//! returns a [`Sender`] and a [`Receiver`] with async-channel's methods,
//! errors and futures; the receiver is a `Stream` and a `FusedStream`,
//! and is `!Unpin`, as async-channel's is. With `enabled` off these names
//! are async-channel's own types.
//!
//! [`Send`] and [`Recv`] pair, wrap, async-channel's own futures, so they wait,
//! wake and cancel as those do: a [`Recv`] (or the stream) opens and
//! counts a message only once async-channel has returned it, so a `recv`
//! dropped inside a `select!` loses no message. A [`Send`] future
//! dropped before it completed counts its message as sent and, since
//! async-channel then drops it, as dropped: sent = received + dropped +
//! queued still holds. A message that `force_send` pushed out of a full
//! channel counts as dropped.
//!
//! Everything of async-channel's endpoints is kept, `Sender::closed`
//! ([`Closed`]) and the weak endpoints too.

pub use async_channel::{RecvError, SendError, TryRecvError, TrySendError};

#[cfg(not(feature = "enabled"))]
pub use async_channel::{Closed, Receiver, Recv, Send, Sender, WeakReceiver, WeakSender};

#[cfg(feature = "enabled")]
pub use measured::{Closed, Receiver, Recv, Send, Sender, WeakReceiver, WeakSender};

#[cfg(feature = "enabled")]
mod measured {
    use super::*;
    use crate::flow::Envelope;
    use crate::flow::kernel::{
        Opened, ReceiverCount, SenderCount, Wait, blocking_recvs, blocking_sends, clone_fields,
        delegate, full, opaque_debug, opened, pair, polled, send_polled, weak,
    };
    use ::std::future::Future;
    use ::std::pin::Pin;
    use ::std::task::{Context, Poll};
    use async_channel as ac;
    use futures_core::{FusedStream, Stream};
    use perflens_core::FlowSite;

    pair! {
        /// The sending side of a measured async-channel.
        Sender(ac::Sender),
        /// The receiving side of a measured async-channel; a `Stream`.
        Receiver(ac::Receiver) {
            /// As a stream: its wait for a message.
            wait: Wait = Wait::default()
        };
        |tx, _| tx.capacity()
    }
    opened!(SendError(), TrySendError { Full, Closed });

    #[inline(always)]
    fn sent<T>(site: &'static FlowSite, inner: &ac::Sender<Envelope<T>>) {
        site.sent_sampled(|| inner.len());
    }

    impl<T> Sender<T> {
        #[inline(always)]
        fn sent(&self) {
            sent(self.site(), &self.inner);
        }

        #[inline(always)]
        fn found_full(&self) {
            full(self.site(), self.inner.capacity());
        }

        blocking_sends!(send_blocking, Closed);

        /// A future sending `msg`, waiting for room.
        pub fn send(&self, msg: T) -> Send<'_, T> {
            let site = self.site();
            Send {
                inner: self.inner.send(Envelope::seal(msg, site, site.stamp())),
                sender: &self.inner,
                site,
                wait: Wait::default(),
                unsent: true,
            }
        }

        /// A future ready once the channel is closed.
        pub fn closed(&self) -> Closed<'_, T> {
            Closed {
                inner: self.inner.closed(),
            }
        }

        /// Sends even into a full channel, pushing out (and returning)
        /// the oldest message, which counts as dropped.
        pub fn force_send(&self, msg: T) -> Result<Option<T>, SendError<T>> {
            let site = self.site();
            let env = Envelope::seal(msg, site, site.stamp());
            match self.inner.force_send(env) {
                Ok(old) => {
                    sent(site, &self.inner);
                    Ok(old.map(|e| {
                        site.dropped_in_queue(1);
                        e.into_value()
                    }))
                }
                Err(e) => Err(e.opened()),
            }
        }

        /// Closes the channel; `true` if this call closed it.
        pub fn close(&self) -> bool {
            self.inner.close()
        }

        delegate!(
            is_closed,
            is_empty,
            is_full,
            len,
            capacity,
            receiver_count,
            sender_count,
            same_channel
        );
    }

    weak! {
        /// A sender that does not keep its channel open ([`Sender::downgrade`]).
        WeakSender = ac::WeakSender of Sender,
        |w, inner| Sender { inner, count: SenderCount::new(w.site) }
    }

    weak! {
        /// A receiver that does not keep its channel open
        /// ([`Receiver::downgrade`]).
        WeakReceiver = ac::WeakReceiver of Receiver,
        |w, inner| Receiver::new(inner, ReceiverCount::new(w.site))
    }

    /// [`Sender::closed`]: async-channel's own future.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Closed<'a, T> {
        inner: ac::Closed<'a, Envelope<T>>,
    }

    impl<T> Future for Closed<'_, T> {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            // SAFETY: `inner` is structurally pinned (never moved out).
            unsafe { self.map_unchecked_mut(|c| &mut c.inner) }.poll(cx)
        }
    }

    /// [`Sender::send`]: async-channel's future, its message counted when
    /// sent, its wait for room timed.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Send<'a, T> {
        inner: ac::Send<'a, Envelope<T>>,
        sender: &'a ac::Sender<Envelope<T>>,
        site: &'static FlowSite,
        wait: Wait,
        /// Its message is not yet seen sent.
        unsent: bool,
    }

    impl<T> Future for Send<'_, T> {
        type Output = Result<(), SendError<T>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            // SAFETY: `inner` is structurally pinned: never moved out of
            // `self` (not here, not in Drop); the other fields are plain
            // data and references.
            let this = unsafe { self.get_unchecked_mut() };
            // SAFETY: as above.
            let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
            let (site, sender) = (this.site, this.sender);
            let (capacity, sent) = (|| sender.capacity(), || sent(site, sender));
            send_polled(site, &mut this.wait, &mut this.unsent, r, capacity, sent)
        }
    }

    impl<T> Drop for Send<'_, T> {
        fn drop(&mut self) {
            // Its message is dropped with async-channel's future (and
            // counted so by its envelope).
            if self.unsent {
                self.site.sent(None);
            }
        }
    }

    impl<T> Receiver<T> {
        fn new(inner: ac::Receiver<Envelope<T>>, count: ReceiverCount) -> Receiver<T> {
            let wait = Wait::default();
            Receiver { inner, count, wait }
        }

        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            env.received(self.site())
        }

        blocking_recvs!(recv_blocking -> RecvError);

        /// A future receiving one message. Cancel-safe: dropped before it
        /// is ready, it takes no message.
        pub fn recv(&self) -> Recv<'_, T> {
            Recv {
                inner: self.inner.recv(),
                site: self.site(),
                wait: Wait::default(),
            }
        }

        /// Closes the channel; `true` if this call closed it.
        pub fn close(&self) -> bool {
            self.inner.close()
        }

        delegate!(
            is_closed,
            is_empty,
            is_full,
            len,
            capacity,
            receiver_count,
            sender_count,
            same_channel
        );
    }

    impl<T> Clone for Receiver<T> {
        fn clone(&self) -> Receiver<T> {
            Receiver::new(self.inner.clone(), ReceiverCount::new(self.site()))
        }
    }

    impl<T> Stream for Receiver<T> {
        type Item = T;

        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            // SAFETY: `inner` is structurally pinned: never moved out of
            // a pinned `Receiver` (the methods that move it take `self`,
            // which a pinned `!Unpin` receiver cannot give).
            let this = unsafe { self.get_unchecked_mut() };
            // SAFETY: as above.
            let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll_next(cx);
            polled(this.count.site(), &mut this.wait, r)
        }
    }

    impl<T> FusedStream for Receiver<T> {
        fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }
    }

    /// [`Receiver::recv`]: async-channel's future; its message is opened
    /// and counted once async-channel's future has returned it.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Recv<'a, T> {
        inner: ac::Recv<'a, Envelope<T>>,
        site: &'static FlowSite,
        wait: Wait,
    }

    impl<T> Future for Recv<'_, T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            // SAFETY: `inner` is structurally pinned, as in `Send`.
            let this = unsafe { self.get_unchecked_mut() };
            // SAFETY: as above.
            let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
            polled(this.site, &mut this.wait, r)
        }
    }

    opaque_debug!(Sender, WeakSender, WeakReceiver, Receiver);
    opaque_debug!(Closed<'_>, Send<'_>, Recv<'_>);

    clone_fields!(Sender { inner, count });
}
