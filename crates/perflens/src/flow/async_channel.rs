//! `async_channel`'s endpoints, measured (feature `flow-async-channel`).
//!
//! `perflens::channel!(async_channel::bounded(n))` (or `unbounded()`)
//! returns a [`Sender`] and a [`Receiver`] with async-channel's methods,
//! errors and futures; the receiver is a `Stream` and a `FusedStream`,
//! and is `!Unpin`, as async-channel's is. With `enabled` off these names
//! are async-channel's own types.
//!
//! [`Send`] and [`Recv`] wrap async-channel's own futures, so they wait,
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
    use crate::flow::{Envelope, ReceiverCount, SenderCount, Wrap};
    use ::std::fmt;
    use ::std::future::Future;
    use ::std::pin::Pin;
    use ::std::task::{Context, Poll};
    use async_channel as ac;
    use futures_core::{FusedStream, Stream};
    use perflens_core::FlowSite;

    /// The sending side of a measured async-channel.
    pub struct Sender<T> {
        inner: ac::Sender<Envelope<T>>,
        count: SenderCount,
    }

    /// The receiving side of a measured async-channel; a `Stream`.
    pub struct Receiver<T> {
        inner: ac::Receiver<Envelope<T>>,
        count: ReceiverCount,
        /// As a stream: waiting since (clock), and whether it waits.
        since: u64,
        waiting: bool,
    }

    impl<T> Wrap for (ac::Sender<Envelope<T>>, ac::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            site.created(self.0.capacity());
            (
                Sender {
                    inner: self.0,
                    count: SenderCount::new(site),
                },
                Receiver::new(self.1, ReceiverCount::new(site)),
            )
        }
    }

    #[inline(always)]
    fn sent<T>(site: &'static FlowSite, inner: &ac::Sender<Envelope<T>>) {
        site.sent_sampled(|| inner.len());
    }

    #[cold]
    fn full<T>(site: &'static FlowSite, inner: &ac::Sender<Envelope<T>>) {
        if let Some(cap) = inner.capacity() {
            site.found_full(cap);
        }
    }

    #[inline(always)]
    fn got<T>(site: &'static FlowSite, env: Envelope<T>) -> T {
        let (value, stamp) = env.open();
        site.received(stamp);
        value
    }

    impl<T> Sender<T> {
        fn site(&self) -> &'static FlowSite {
            self.count.0
        }

        /// Sends without waiting; a full or closed channel hands the
        /// message back.
        pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
            let site = self.site();
            match self.inner.try_send(Envelope::seal(msg, site, site.stamp())) {
                Ok(()) => {
                    sent(site, &self.inner);
                    Ok(())
                }
                Err(TrySendError::Full(e)) => {
                    full(site, &self.inner);
                    Err(TrySendError::Full(e.into_value()))
                }
                Err(TrySendError::Closed(e)) => Err(TrySendError::Closed(e.into_value())),
            }
        }

        /// A future sending `msg`, waiting for room.
        pub fn send(&self, msg: T) -> Send<'_, T> {
            let site = self.site();
            Send {
                inner: self.inner.send(Envelope::seal(msg, site, site.stamp())),
                sender: &self.inner,
                site,
                since: 0,
                waiting: false,
                done: false,
            }
        }

        /// A future ready once the channel is closed.
        pub fn closed(&self) -> Closed<'_, T> {
            Closed {
                inner: self.inner.closed(),
            }
        }

        /// Sends, blocking the thread while the channel is full.
        pub fn send_blocking(&self, msg: T) -> Result<(), SendError<T>> {
            let site = self.site();
            let r = match self.inner.try_send(Envelope::seal(msg, site, site.stamp())) {
                Ok(()) => Ok(()),
                Err(TrySendError::Closed(e)) => Err(SendError(e)),
                Err(TrySendError::Full(e)) => {
                    full(site, &self.inner);
                    let since = site.clock();
                    let r = self.inner.send_blocking(e);
                    site.send_waited(since);
                    r
                }
            };
            match r {
                Ok(()) => {
                    sent(site, &self.inner);
                    Ok(())
                }
                Err(SendError(e)) => Err(SendError(e.into_value())),
            }
        }

        /// Sends even into a full channel, pushing out (and returning)
        /// the oldest message, which counts as dropped.
        pub fn force_send(&self, msg: T) -> Result<Option<T>, SendError<T>> {
            let site = self.site();
            match self
                .inner
                .force_send(Envelope::seal(msg, site, site.stamp()))
            {
                Ok(old) => {
                    sent(site, &self.inner);
                    Ok(old.map(|e| {
                        site.dropped_in_queue(1);
                        e.into_value()
                    }))
                }
                Err(SendError(e)) => Err(SendError(e.into_value())),
            }
        }

        /// Closes the channel; `true` if this call closed it.
        pub fn close(&self) -> bool {
            self.inner.close()
        }

        /// Whether the channel is closed.
        pub fn is_closed(&self) -> bool {
            self.inner.is_closed()
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

        /// Receivers of the channel.
        pub fn receiver_count(&self) -> usize {
            self.inner.receiver_count()
        }

        /// Senders of the channel.
        pub fn sender_count(&self) -> usize {
            self.inner.sender_count()
        }

        /// A sender that does not keep the channel open.
        pub fn downgrade(&self) -> WeakSender<T> {
            WeakSender {
                inner: self.inner.downgrade(),
                site: self.site(),
            }
        }

        /// Whether both senders belong to the same channel.
        pub fn same_channel(&self, other: &Sender<T>) -> bool {
            self.inner.same_channel(&other.inner)
        }
    }

    impl<T> Clone for Sender<T> {
        fn clone(&self) -> Sender<T> {
            Sender {
                inner: self.inner.clone(),
                count: SenderCount::new(self.site()),
            }
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Sender {{ .. }}")
        }
    }

    /// A sender that does not keep its channel open ([`Sender::downgrade`]).
    pub struct WeakSender<T> {
        inner: ac::WeakSender<Envelope<T>>,
        site: &'static FlowSite,
    }

    impl<T> WeakSender<T> {
        /// A sender again, unless the channel is closed.
        pub fn upgrade(&self) -> Option<Sender<T>> {
            self.inner.upgrade().map(|inner| Sender {
                inner,
                count: SenderCount::new(self.site),
            })
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
            write!(f, "WeakSender {{ .. }}")
        }
    }

    /// A receiver that does not keep its channel open
    /// ([`Receiver::downgrade`]).
    pub struct WeakReceiver<T> {
        inner: ac::WeakReceiver<Envelope<T>>,
        site: &'static FlowSite,
    }

    impl<T> WeakReceiver<T> {
        /// A receiver again, unless the channel is closed.
        pub fn upgrade(&self) -> Option<Receiver<T>> {
            (self.inner.upgrade()).map(|inner| Receiver::new(inner, ReceiverCount::new(self.site)))
        }
    }

    impl<T> Clone for WeakReceiver<T> {
        fn clone(&self) -> WeakReceiver<T> {
            WeakReceiver {
                inner: self.inner.clone(),
                site: self.site,
            }
        }
    }

    impl<T> fmt::Debug for WeakReceiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "WeakReceiver {{ .. }}")
        }
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

    impl<T> fmt::Debug for Closed<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Closed { .. }")
        }
    }

    /// [`Sender::send`]: async-channel's future, its message counted when
    /// sent, its wait for room timed.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Send<'a, T> {
        inner: ac::Send<'a, Envelope<T>>,
        sender: &'a ac::Sender<Envelope<T>>,
        site: &'static FlowSite,
        since: u64,
        waiting: bool,
        done: bool,
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
            let site = this.site;
            match r {
                Poll::Pending => {
                    if !this.waiting {
                        this.waiting = true;
                        full(site, this.sender);
                        this.since = site.clock();
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => {
                    this.done = true;
                    if this.waiting {
                        site.send_waited(this.since);
                    }
                    Poll::Ready(match r {
                        Ok(()) => {
                            sent(site, this.sender);
                            Ok(())
                        }
                        Err(SendError(e)) => Err(SendError(e.into_value())),
                    })
                }
            }
        }
    }

    impl<T> Drop for Send<'_, T> {
        fn drop(&mut self) {
            // Its message is dropped with async-channel's future (and
            // counted so by its envelope).
            if !self.done {
                self.site.sent(None);
            }
        }
    }

    impl<T> fmt::Debug for Send<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Send { .. }")
        }
    }

    impl<T> Receiver<T> {
        fn new(inner: ac::Receiver<Envelope<T>>, count: ReceiverCount) -> Receiver<T> {
            Receiver {
                inner,
                count,
                since: 0,
                waiting: false,
            }
        }

        fn site(&self) -> &'static FlowSite {
            self.count.0
        }

        /// Receives without waiting.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| got(self.site(), env))
        }

        /// A future receiving one message. Cancel-safe: dropped before it
        /// is ready, it takes no message.
        pub fn recv(&self) -> Recv<'_, T> {
            Recv {
                inner: self.inner.recv(),
                site: self.site(),
                since: 0,
                waiting: false,
            }
        }

        /// Receives, blocking the thread while the channel is empty.
        pub fn recv_blocking(&self) -> Result<T, RecvError> {
            let site = self.site();
            match self.inner.try_recv() {
                Ok(env) => Ok(got(site, env)),
                Err(TryRecvError::Closed) => Err(RecvError),
                Err(TryRecvError::Empty) => {
                    let since = site.clock();
                    let r = self.inner.recv_blocking();
                    site.recv_waited(since);
                    r.map(|env| got(site, env))
                }
            }
        }

        /// Closes the channel; `true` if this call closed it.
        pub fn close(&self) -> bool {
            self.inner.close()
        }

        /// Whether the channel is closed.
        pub fn is_closed(&self) -> bool {
            self.inner.is_closed()
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

        /// Receivers of the channel.
        pub fn receiver_count(&self) -> usize {
            self.inner.receiver_count()
        }

        /// Senders of the channel.
        pub fn sender_count(&self) -> usize {
            self.inner.sender_count()
        }

        /// A receiver that does not keep the channel open.
        pub fn downgrade(&self) -> WeakReceiver<T> {
            WeakReceiver {
                inner: self.inner.downgrade(),
                site: self.site(),
            }
        }

        /// Whether both receivers belong to the same channel.
        pub fn same_channel(&self, other: &Receiver<T>) -> bool {
            self.inner.same_channel(&other.inner)
        }
    }

    impl<T> Clone for Receiver<T> {
        fn clone(&self) -> Receiver<T> {
            Receiver::new(self.inner.clone(), ReceiverCount::new(self.site()))
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Receiver {{ .. }}")
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
            let site = this.count.0;
            match r {
                Poll::Pending => {
                    if !this.waiting {
                        this.waiting = true;
                        this.since = site.clock();
                    }
                    Poll::Pending
                }
                Poll::Ready(item) => {
                    if this.waiting {
                        this.waiting = false;
                        site.recv_waited(this.since);
                    }
                    Poll::Ready(item.map(|env| got(site, env)))
                }
            }
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
        since: u64,
        waiting: bool,
    }

    impl<T> Future for Recv<'_, T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            // SAFETY: `inner` is structurally pinned, as in `Send`.
            let this = unsafe { self.get_unchecked_mut() };
            // SAFETY: as above.
            let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
            match r {
                Poll::Pending => {
                    if !this.waiting {
                        this.waiting = true;
                        this.since = this.site.clock();
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => {
                    if this.waiting {
                        this.waiting = false;
                        this.site.recv_waited(this.since);
                    }
                    Poll::Ready(r.map(|env| got(this.site, env)))
                }
            }
        }
    }

    impl<T> fmt::Debug for Recv<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Recv { .. }")
        }
    }
}
