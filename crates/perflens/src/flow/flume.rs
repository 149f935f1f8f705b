//! `flume`'s endpoints, measured (feature `flow-flume`).
//!
//! `perflens::channel!(flume::bounded(n))` (or `unbounded()`) returns a
//! [`Sender`] and a [`Receiver`] with flume's methods, errors, futures,
//! sink and stream; with `enabled` off these names are flume's own types
//! (`flume::Sender`, ..., `flume::r#async::SendFut`, ...).
//!
//! The async side: [`SendFut`] and [`RecvFut`] wrap flume's own futures,
//! so they wait, wake and cancel as flume's do. A received message is
//! opened (and counted) only once flume's future has returned it, so a
//! `recv_async` dropped inside a `select!` loses no message. A
//! `send_async` future (or a sink's started item) dropped before it
//! completed counts its message as sent: flume then either had already
//! handed it to a receiver (received) or drops it (dropped), so sent =
//! received + dropped + queued still holds.
//!
//! Not kept:
//! - `Sender::into_sink`: the measured sink answers `sender()` with the
//!   measured sender, which it must then borrow; [`Sender::sink`] is kept.
//! - `flume::Selector`: it takes flume's own endpoints.
//! - [`Drain`]'s `Debug` prints `Drain { .. }` (flume's prints the
//!   queued messages, with `T: Debug`).

pub use flume::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};

#[cfg(not(feature = "enabled"))]
pub use flume::r#async::{RecvFut, RecvStream, SendFut, SendSink};
#[cfg(not(feature = "enabled"))]
pub use flume::{Drain, IntoIter, Iter, Receiver, Sender, TryIter, WeakSender};

#[cfg(feature = "enabled")]
pub use measured::{
    Drain, IntoIter, Iter, Receiver, RecvFut, RecvStream, SendFut, SendSink, Sender, TryIter,
    WeakSender,
};

#[cfg(feature = "enabled")]
mod measured {
    use super::*;
    use crate::flow::kernel::{
        Emptiness, ReceiverCount, SenderCount, Wait, clone_fields, delegate, full, made,
        opaque_debug, receiver_iterators, recv_with, waited,
    };
    use crate::flow::{Envelope, Wrap};
    use ::std::future::Future;
    use ::std::pin::Pin;
    use ::std::task::{Context, Poll};
    use ::std::time::{Duration, Instant};
    use flume as fl;
    use futures_core::{FusedFuture, FusedStream, Stream};
    use perflens_core::FlowSite;

    /// The sending side of a measured flume channel.
    pub struct Sender<T> {
        inner: fl::Sender<Envelope<T>>,
        count: SenderCount,
    }

    /// The receiving side of a measured flume channel.
    pub struct Receiver<T> {
        inner: fl::Receiver<Envelope<T>>,
        count: ReceiverCount,
    }

    impl<T> Wrap for (fl::Sender<Envelope<T>>, fl::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            let (tx, rx) = made(site, self.0.capacity());
            let tx = Sender {
                inner: self.0,
                count: tx,
            };
            (
                tx,
                Receiver {
                    inner: self.1,
                    count: rx,
                },
            )
        }
    }

    /// Counts an accepted message, with the queue right after it now and
    /// then (see `FlowSite::sent_sampled`).
    #[inline(always)]
    fn sent<T>(site: &'static FlowSite, inner: &fl::Sender<Envelope<T>>) {
        site.sent_sampled(|| inner.len());
    }

    impl<T> Sender<T> {
        fn site(&self) -> &'static FlowSite {
            self.count.site()
        }

        /// The first, non-blocking try of every send: its message sealed
        /// and, if accepted, counted; a full channel noted.
        #[inline(always)]
        fn try_first(&self, msg: T) -> Result<(), TrySendError<Envelope<T>>> {
            let site = self.site();
            let r = self.inner.try_send(Envelope::seal(msg, site, site.stamp()));
            match &r {
                Ok(()) => sent(site, &self.inner),
                Err(TrySendError::Full(_)) => full(site, self.inner.capacity()),
                Err(TrySendError::Disconnected(_)) => {}
            }
            r
        }

        /// Sends as a blocking call would wait for room, timing the wait.
        fn blocked<E>(&self, send: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
            let r = waited(self.site(), FlowSite::send_waited, send);
            if r.is_ok() {
                sent(self.site(), &self.inner);
            }
            r
        }

        /// Sends without blocking; a full channel hands the message back.
        pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
            self.try_first(msg).map_err(|e| match e {
                TrySendError::Full(e) => TrySendError::Full(e.into_value()),
                TrySendError::Disconnected(e) => TrySendError::Disconnected(e.into_value()),
            })
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

        /// Blocks until `deadline` at most for room.
        pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
            self.send_waiting(msg, |inner, e| inner.send_deadline(e, deadline))
        }

        /// Blocks at most `dur` for room.
        pub fn send_timeout(&self, msg: T, dur: Duration) -> Result<(), SendTimeoutError<T>> {
            self.send_waiting(msg, |inner, e| inner.send_timeout(e, dur))
        }

        fn send_waiting(
            &self,
            msg: T,
            wait: impl FnOnce(
                &fl::Sender<Envelope<T>>,
                Envelope<T>,
            ) -> Result<(), SendTimeoutError<Envelope<T>>>,
        ) -> Result<(), SendTimeoutError<T>> {
            match self.try_first(msg) {
                Ok(()) => Ok(()),
                Err(TrySendError::Disconnected(e)) => {
                    Err(SendTimeoutError::Disconnected(e.into_value()))
                }
                Err(TrySendError::Full(env)) => {
                    self.blocked(|| wait(&self.inner, env))
                        .map_err(|e| match e {
                            SendTimeoutError::Timeout(e) => {
                                SendTimeoutError::Timeout(e.into_value())
                            }
                            SendTimeoutError::Disconnected(e) => {
                                SendTimeoutError::Disconnected(e.into_value())
                            }
                        })
                }
            }
        }

        /// A future that sends `item`, waiting for room without blocking
        /// the thread.
        pub fn send_async(&self, item: T) -> SendFut<'_, T> {
            let site = self.site();
            let env = Envelope::seal(item, site, site.stamp());
            SendFut::new(self.inner.send_async(env), site, None)
        }

        /// As [`Sender::send_async`], the future owning the sender.
        pub fn into_send_async<'a>(self, item: T) -> SendFut<'a, T> {
            let Sender { inner, count } = self;
            let site = count.site();
            let env = Envelope::seal(item, site, site.stamp());
            SendFut::new(inner.into_send_async(env), site, Some(count))
        }

        /// A sink sending into the channel; the sender stays usable.
        pub fn sink(&self) -> SendSink<'_, T> {
            SendSink {
                inner: self.inner.sink(),
                sender: self,
                pending: false,
                wait: Wait::default(),
            }
        }

        /// A sender that does not keep the channel open.
        pub fn downgrade(&self) -> WeakSender<T> {
            WeakSender {
                inner: self.inner.downgrade(),
                site: self.site(),
            }
        }

        delegate!(
            is_disconnected,
            is_empty,
            is_full,
            len,
            capacity,
            sender_count,
            receiver_count,
            same_channel
        );
    }

    /// A sender that does not keep its channel open ([`Sender::downgrade`]).
    pub struct WeakSender<T> {
        inner: fl::WeakSender<Envelope<T>>,
        site: &'static FlowSite,
    }

    impl<T> WeakSender<T> {
        /// A sender again, unless every sender is gone.
        pub fn upgrade(&self) -> Option<Sender<T>> {
            self.inner.upgrade().map(|inner| Sender {
                inner,
                count: SenderCount::new(self.site),
            })
        }
    }

    /// [`Sender::send_async`]: flume's future, its message counted when
    /// it is sent, its wait for room timed.
    #[must_use = "futures/streams/sinks do nothing unless you `.await` or poll them"]
    pub struct SendFut<'a, T> {
        inner: fl::r#async::SendFut<'a, Envelope<T>>,
        site: &'static FlowSite,
        wait: Wait,
        done: bool,
        _owner: Option<SenderCount>,
    }

    impl<'a, T> SendFut<'a, T> {
        fn new(
            inner: fl::r#async::SendFut<'a, Envelope<T>>,
            site: &'static FlowSite,
            owner: Option<SenderCount>,
        ) -> SendFut<'a, T> {
            SendFut {
                inner,
                site,
                wait: Wait::default(),
                done: false,
                _owner: owner,
            }
        }

        delegate!(is_disconnected, is_empty, is_full, len, capacity);
    }

    impl<T> Future for SendFut<'_, T> {
        type Output = Result<(), SendError<T>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll(cx);
            let site = this.site;
            match r {
                Poll::Pending => {
                    // flume's send waits only when the channel is full.
                    if this.wait.pending(site) {
                        full(site, this.inner.capacity());
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => {
                    if !this.done {
                        this.done = true;
                        this.wait.ready(site, FlowSite::send_waited);
                        if r.is_ok() {
                            site.sent_sampled(|| this.inner.len());
                        }
                    }
                    Poll::Ready(r.map_err(|SendError(e)| SendError(e.into_value())))
                }
            }
        }
    }

    impl<T> FusedFuture for SendFut<'_, T> {
        fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }
    }

    impl<T> Drop for SendFut<'_, T> {
        fn drop(&mut self) {
            // Its message is now either a receiver's or dropped by flume
            // (and counted so by its envelope).
            if !self.done {
                self.site.sent(None);
            }
        }
    }

    /// [`Sender::sink`]: flume's sink, its items counted when sent.
    pub struct SendSink<'a, T> {
        inner: fl::r#async::SendSink<'a, Envelope<T>>,
        sender: &'a Sender<T>,
        /// An item was started and not yet seen sent.
        pending: bool,
        wait: Wait,
    }

    impl<T> SendSink<'_, T> {
        /// The sender of this sink.
        pub fn sender(&self) -> &Sender<T> {
            self.sender
        }

        delegate!(
            is_disconnected,
            is_empty,
            is_full,
            len,
            capacity,
            same_channel
        );

        /// Counts what a poll of flume's sink says of the started item.
        fn polled(
            &mut self,
            r: Poll<Result<(), SendError<Envelope<T>>>>,
        ) -> Poll<Result<(), SendError<T>>> {
            let site = self.sender.site();
            match r {
                Poll::Pending => {
                    if self.pending && self.wait.pending(site) {
                        full(site, self.sender.inner.capacity());
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => {
                    if self.pending {
                        self.pending = false;
                        self.wait.ready(site, FlowSite::send_waited);
                        if r.is_ok() {
                            sent(site, &self.sender.inner);
                        }
                    }
                    Poll::Ready(r.map_err(|SendError(e)| SendError(e.into_value())))
                }
            }
        }
    }

    impl<T> futures_sink::Sink<T> for SendSink<'_, T> {
        type Error = SendError<T>;

        fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll_ready(cx);
            this.polled(r)
        }

        fn start_send(self: Pin<&mut Self>, item: T) -> Result<(), Self::Error> {
            let this = self.get_mut();
            let site = this.sender.site();
            if this.pending {
                // flume gives up the previous item (see `Drop`).
                site.sent(None);
            }
            this.pending = true;
            this.wait = Wait::default();
            Pin::new(&mut this.inner)
                .start_send(Envelope::seal(item, site, site.stamp()))
                .map_err(|SendError(e)| SendError(e.into_value()))
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll_flush(cx);
            this.polled(r)
        }

        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll_close(cx);
            this.polled(r)
        }
    }

    impl<T> Drop for SendSink<'_, T> {
        fn drop(&mut self) {
            // As a dropped `SendFut`: the item is a receiver's or dropped.
            if self.pending {
                self.sender.site().sent(None);
            }
        }
    }

    impl<T> Clone for SendSink<'_, T> {
        fn clone(&self) -> Self {
            SendSink {
                inner: self.inner.clone(),
                sender: self.sender,
                pending: false,
                wait: Wait::default(),
            }
        }
    }

    impl<T> Receiver<T> {
        fn site(&self) -> &'static FlowSite {
            self.count.site()
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
            recv_with(self.site(), first, gone, wait).map(|env| env.received(self.site()))
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| env.received(self.site()))
        }

        /// Blocks until a message arrives, or every sender is gone and
        /// the channel is empty.
        pub fn recv(&self) -> Result<T, RecvError> {
            self.recv_with(RecvError::Disconnected, || self.inner.recv())
        }

        /// Blocks until `deadline` at most for a message.
        pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
            let gone = RecvTimeoutError::Disconnected;
            self.recv_with(gone, || self.inner.recv_deadline(deadline))
        }

        /// Blocks at most `dur` for a message.
        pub fn recv_timeout(&self, dur: Duration) -> Result<T, RecvTimeoutError> {
            let gone = RecvTimeoutError::Disconnected;
            self.recv_with(gone, || self.inner.recv_timeout(dur))
        }

        /// A future receiving one message. Cancel-safe: dropped before it
        /// is ready, it takes no message.
        pub fn recv_async(&self) -> RecvFut<'_, T> {
            let (inner, site) = (self.inner.recv_async(), self.site());
            RecvFut::new(inner, site, None)
        }

        /// As [`Receiver::recv_async`], the future owning the receiver.
        pub fn into_recv_async<'a>(self) -> RecvFut<'a, T> {
            let Receiver { inner, count } = self;
            RecvFut::new(inner.into_recv_async(), count.site(), Some(count))
        }

        /// A stream of the messages; the receiver stays usable.
        pub fn stream(&self) -> RecvStream<'_, T> {
            let (inner, site) = (self.inner.stream(), self.site());
            RecvStream::new(inner, site, None)
        }

        /// As [`Receiver::stream`], the stream owning the receiver.
        pub fn into_stream<'a>(self) -> RecvStream<'a, T> {
            let Receiver { inner, count } = self;
            RecvStream::new(inner.into_stream(), count.site(), Some(count))
        }

        /// Takes every message in the channel now.
        pub fn drain(&self) -> Drain<'_, T> {
            Drain {
                inner: self.inner.drain(),
                site: self.site(),
            }
        }

        delegate!(
            is_disconnected,
            is_empty,
            is_full,
            len,
            capacity,
            sender_count,
            receiver_count,
            same_channel
        );
    }

    impl Emptiness for TryRecvError {
        fn empty(&self) -> bool {
            matches!(self, TryRecvError::Empty)
        }
    }

    /// What a receiving poll returned, a message opened only when ready.
    #[inline(always)]
    fn received<T, E>(
        site: &'static FlowSite,
        wait: &mut Wait,
        r: Poll<Result<Envelope<T>, E>>,
    ) -> Poll<Result<T, E>> {
        wait.after(site, &r, FlowSite::recv_waited);
        r.map(|r| r.map(|env| env.received(site)))
    }

    /// Defines a receiving future or stream `$name` over flume's, which
    /// opens and counts each message once flume's has returned it.
    macro_rules! receiving {
        ($(#[$m:meta])* $name:ident) => {
            $(#[$m])*
            pub struct $name<'a, T> {
                inner: fl::r#async::$name<'a, Envelope<T>>,
                site: &'static FlowSite,
                wait: Wait,
                _owner: Option<ReceiverCount>,
            }

            impl<'a, T> $name<'a, T> {
                fn new(
                    inner: fl::r#async::$name<'a, Envelope<T>>,
                    site: &'static FlowSite,
                    _owner: Option<ReceiverCount>,
                ) -> Self {
                    let wait = Wait::default();
                    $name { inner, site, wait, _owner }
                }

                delegate!(is_disconnected, is_empty, is_full, len, capacity);
            }
        };
    }

    receiving! {
        /// [`Receiver::recv_async`]: flume's future; its message is opened
        /// and counted once flume's future has returned it.
        #[must_use = "futures/streams/sinks do nothing unless you `.await` or poll them"]
        RecvFut
    }

    receiving! {
        /// [`Receiver::stream`]: flume's stream, each message opened and
        /// counted once flume's stream has returned it.
        RecvStream
    }

    impl<T> Future for RecvFut<'_, T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll(cx);
            received(this.site, &mut this.wait, r)
        }
    }

    impl<T> FusedFuture for RecvFut<'_, T> {
        fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }
    }

    impl<T> RecvStream<'_, T> {
        delegate!(same_channel);
    }

    impl<T> Stream for RecvStream<'_, T> {
        type Item = T;

        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner)
                .poll_next(cx)
                .map(|item| item.ok_or(()));
            received(this.site, &mut this.wait, r).map(Result::ok)
        }
    }

    impl<T> FusedStream for RecvStream<'_, T> {
        fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }
    }

    impl<T> Clone for RecvStream<'_, T> {
        fn clone(&self) -> Self {
            // flume's owning stream clones its receiver.
            let owner = self._owner.as_ref().map(|_| ReceiverCount::new(self.site));
            RecvStream::new(self.inner.clone(), self.site, owner)
        }
    }

    /// [`Receiver::drain`]: the messages that were in the channel, each
    /// counted received as it is taken from the iterator (those never
    /// taken count as dropped).
    pub struct Drain<'a, T> {
        inner: fl::Drain<'a, Envelope<T>>,
        site: &'static FlowSite,
    }

    impl<T> Iterator for Drain<'_, T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.inner.next().map(|env| env.received(self.site))
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            let n = self.inner.len();
            (n, Some(n))
        }
    }

    impl<T> ExactSizeIterator for Drain<'_, T> {
        fn len(&self) -> usize {
            self.inner.len()
        }
    }

    opaque_debug!(@bare Sender, WeakSender, SendFut<'_>, SendSink<'_>, Receiver, RecvFut<'_>, RecvStream<'_>);
    opaque_debug!(Drain<'_>);
    receiver_iterators!(Receiver { receiver }, fields);

    clone_fields!(
        Sender { inner, count },
        WeakSender { inner, site },
        Receiver { inner, count }
    );
}
