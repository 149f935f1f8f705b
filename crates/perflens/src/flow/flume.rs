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
    use crate::flow::{Envelope, ReceiverCount, SenderCount, Wrap};
    use ::std::fmt;
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
            site.created(self.0.capacity());
            (
                Sender {
                    inner: self.0,
                    count: SenderCount::new(site),
                },
                Receiver {
                    inner: self.1,
                    count: ReceiverCount::new(site),
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

    /// A send found the channel full.
    #[cold]
    fn full<T>(site: &'static FlowSite, inner: &fl::Sender<Envelope<T>>) {
        if let Some(cap) = inner.capacity() {
            site.found_full(cap);
        }
    }

    /// The value of a received message, its latency recorded.
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

        /// Sends as a blocking call would wait for room, timing the wait.
        fn blocked<E>(
            &self,
            env: Envelope<T>,
            send: impl FnOnce(Envelope<T>) -> Result<(), E>,
        ) -> Result<(), E> {
            let since = self.site().clock();
            let r = send(env);
            self.site().send_waited(since);
            if r.is_ok() {
                sent(self.site(), &self.inner);
            }
            r
        }

        /// Sends without blocking; a full channel hands the message back.
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
                Err(TrySendError::Disconnected(e)) => {
                    Err(TrySendError::Disconnected(e.into_value()))
                }
            }
        }

        /// Blocks until the message is sent, or returns it when every
        /// receiver is gone.
        pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
            let site = self.site();
            match self.inner.try_send(Envelope::seal(msg, site, site.stamp())) {
                Ok(()) => {
                    sent(site, &self.inner);
                    Ok(())
                }
                Err(TrySendError::Disconnected(env)) => Err(SendError(env.into_value())),
                Err(TrySendError::Full(env)) => {
                    full(site, &self.inner);
                    self.blocked(env, |e| self.inner.send(e))
                        .map_err(|SendError(e)| SendError(e.into_value()))
                }
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
            let site = self.site();
            match self.inner.try_send(Envelope::seal(msg, site, site.stamp())) {
                Ok(()) => {
                    sent(site, &self.inner);
                    Ok(())
                }
                Err(TrySendError::Disconnected(e)) => {
                    Err(SendTimeoutError::Disconnected(e.into_value()))
                }
                Err(TrySendError::Full(env)) => {
                    full(site, &self.inner);
                    self.blocked(env, |e| wait(&self.inner, e))
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
            SendFut::new(
                self.inner
                    .send_async(Envelope::seal(item, site, site.stamp())),
                site,
                None,
            )
        }

        /// As [`Sender::send_async`], the future owning the sender.
        pub fn into_send_async<'a>(self, item: T) -> SendFut<'a, T> {
            let Sender { inner, count } = self;
            let site = count.0;
            SendFut::new(
                inner.into_send_async(Envelope::seal(item, site, site.stamp())),
                site,
                Some(count),
            )
        }

        /// A sink sending into the channel; the sender stays usable.
        pub fn sink(&self) -> SendSink<'_, T> {
            SendSink {
                inner: self.inner.sink(),
                sender: self,
                pending: false,
                waiting: false,
                since: 0,
            }
        }

        /// Whether every receiver (or every sender) is gone.
        pub fn is_disconnected(&self) -> bool {
            self.inner.is_disconnected()
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

        /// Senders of the channel.
        pub fn sender_count(&self) -> usize {
            self.inner.sender_count()
        }

        /// Receivers of the channel.
        pub fn receiver_count(&self) -> usize {
            self.inner.receiver_count()
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
            f.debug_struct("Sender").finish()
        }
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
            f.debug_struct("WeakSender").finish()
        }
    }

    /// [`Sender::send_async`]: flume's future, its message counted when
    /// it is sent, its wait for room timed.
    #[must_use = "futures/streams/sinks do nothing unless you `.await` or poll them"]
    pub struct SendFut<'a, T> {
        inner: fl::r#async::SendFut<'a, Envelope<T>>,
        site: &'static FlowSite,
        since: u64,
        waiting: bool,
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
                since: 0,
                waiting: false,
                done: false,
                _owner: owner,
            }
        }

        /// See [`Sender::is_disconnected`].
        pub fn is_disconnected(&self) -> bool {
            self.inner.is_disconnected()
        }

        /// See [`Sender::is_empty`].
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// See [`Sender::is_full`].
        pub fn is_full(&self) -> bool {
            self.inner.is_full()
        }

        /// See [`Sender::len`].
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// See [`Sender::capacity`].
        pub fn capacity(&self) -> Option<usize> {
            self.inner.capacity()
        }
    }

    impl<T> Future for SendFut<'_, T> {
        type Output = Result<(), SendError<T>>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll(cx);
            let site = this.site;
            match r {
                Poll::Pending => {
                    if !this.waiting {
                        // flume's send waits only when the channel is full.
                        this.waiting = true;
                        if let Some(cap) = this.inner.capacity() {
                            site.found_full(cap);
                        }
                        this.since = site.clock();
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => {
                    if this.done {
                        return Poll::Ready(r.map_err(|SendError(e)| SendError(e.into_value())));
                    }
                    this.done = true;
                    if this.waiting {
                        site.send_waited(this.since);
                    }
                    Poll::Ready(match r {
                        Ok(()) => {
                            site.sent_sampled(|| this.inner.len());
                            Ok(())
                        }
                        Err(SendError(e)) => Err(SendError(e.into_value())),
                    })
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

    impl<T> fmt::Debug for SendFut<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("SendFut").finish()
        }
    }

    /// [`Sender::sink`]: flume's sink, its items counted when sent.
    pub struct SendSink<'a, T> {
        inner: fl::r#async::SendSink<'a, Envelope<T>>,
        sender: &'a Sender<T>,
        /// An item was started and not yet seen sent.
        pending: bool,
        waiting: bool,
        since: u64,
    }

    impl<T> SendSink<'_, T> {
        /// The sender of this sink.
        pub fn sender(&self) -> &Sender<T> {
            self.sender
        }

        /// See [`Sender::is_disconnected`].
        pub fn is_disconnected(&self) -> bool {
            self.inner.is_disconnected()
        }

        /// See [`Sender::is_empty`].
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// See [`Sender::is_full`].
        pub fn is_full(&self) -> bool {
            self.inner.is_full()
        }

        /// See [`Sender::len`].
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// See [`Sender::capacity`].
        pub fn capacity(&self) -> Option<usize> {
            self.inner.capacity()
        }

        /// Whether both sinks send into the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            self.inner.same_channel(&other.inner)
        }

        /// Counts what a poll of flume's sink says of the started item.
        fn polled(
            &mut self,
            r: Poll<Result<(), SendError<Envelope<T>>>>,
        ) -> Poll<Result<(), SendError<T>>> {
            let site = self.sender.site();
            match r {
                Poll::Pending => {
                    if self.pending && !self.waiting {
                        self.waiting = true;
                        full(site, &self.sender.inner);
                        self.since = site.clock();
                    }
                    Poll::Pending
                }
                Poll::Ready(r) => {
                    if self.pending {
                        self.pending = false;
                        if self.waiting {
                            site.send_waited(self.since);
                        }
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
            this.waiting = false;
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
                waiting: false,
                since: 0,
            }
        }
    }

    impl<T> fmt::Debug for SendSink<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("SendSink").finish()
        }
    }

    impl<T> Receiver<T> {
        fn site(&self) -> &'static FlowSite {
            self.count.0
        }

        /// Receives as a blocking call would wait, timing the wait.
        fn blocked<E>(&self, recv: impl FnOnce() -> Result<Envelope<T>, E>) -> Result<T, E> {
            let site = self.site();
            let since = site.clock();
            let r = recv();
            site.recv_waited(since);
            r.map(|env| got(site, env))
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| got(self.site(), env))
        }

        /// Blocks until a message arrives, or every sender is gone and
        /// the channel is empty.
        pub fn recv(&self) -> Result<T, RecvError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(got(self.site(), env)),
                Err(TryRecvError::Disconnected) => Err(RecvError::Disconnected),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv()),
            }
        }

        /// Blocks until `deadline` at most for a message.
        pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(got(self.site(), env)),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv_deadline(deadline)),
            }
        }

        /// Blocks at most `dur` for a message.
        pub fn recv_timeout(&self, dur: Duration) -> Result<T, RecvTimeoutError> {
            match self.inner.try_recv() {
                Ok(env) => Ok(got(self.site(), env)),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => self.blocked(|| self.inner.recv_timeout(dur)),
            }
        }

        /// A future receiving one message. Cancel-safe: dropped before it
        /// is ready, it takes no message.
        pub fn recv_async(&self) -> RecvFut<'_, T> {
            RecvFut {
                inner: self.inner.recv_async(),
                site: self.site(),
                since: 0,
                waiting: false,
                _owner: None,
            }
        }

        /// As [`Receiver::recv_async`], the future owning the receiver.
        pub fn into_recv_async<'a>(self) -> RecvFut<'a, T> {
            let Receiver { inner, count } = self;
            RecvFut {
                inner: inner.into_recv_async(),
                site: count.0,
                since: 0,
                waiting: false,
                _owner: Some(count),
            }
        }

        /// A stream of the messages; the receiver stays usable.
        pub fn stream(&self) -> RecvStream<'_, T> {
            RecvStream {
                inner: self.inner.stream(),
                site: self.site(),
                since: 0,
                waiting: false,
                owner: None,
            }
        }

        /// As [`Receiver::stream`], the stream owning the receiver.
        pub fn into_stream<'a>(self) -> RecvStream<'a, T> {
            let Receiver { inner, count } = self;
            RecvStream {
                inner: inner.into_stream(),
                site: count.0,
                since: 0,
                waiting: false,
                owner: Some(count),
            }
        }

        /// A blocking iterator over the messages, ending when every
        /// sender is gone and the channel is empty.
        pub fn iter(&self) -> Iter<'_, T> {
            Iter { receiver: self }
        }

        /// An iterator over the messages already in the channel.
        pub fn try_iter(&self) -> TryIter<'_, T> {
            TryIter { receiver: self }
        }

        /// Takes every message in the channel now.
        pub fn drain(&self) -> Drain<'_, T> {
            Drain {
                inner: self.inner.drain(),
                site: self.site(),
            }
        }

        /// Whether every sender (or every receiver) is gone.
        pub fn is_disconnected(&self) -> bool {
            self.inner.is_disconnected()
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

        /// Senders of the channel.
        pub fn sender_count(&self) -> usize {
            self.inner.sender_count()
        }

        /// Receivers of the channel.
        pub fn receiver_count(&self) -> usize {
            self.inner.receiver_count()
        }

        /// Whether both receivers belong to the same channel.
        pub fn same_channel(&self, other: &Receiver<T>) -> bool {
            self.inner.same_channel(&other.inner)
        }
    }

    impl<T> Clone for Receiver<T> {
        fn clone(&self) -> Receiver<T> {
            Receiver {
                inner: self.inner.clone(),
                count: ReceiverCount::new(self.site()),
            }
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Receiver").finish()
        }
    }

    /// [`Receiver::recv_async`]: flume's future; its message is opened
    /// and counted once flume's future has returned it.
    #[must_use = "futures/streams/sinks do nothing unless you `.await` or poll them"]
    pub struct RecvFut<'a, T> {
        inner: fl::r#async::RecvFut<'a, Envelope<T>>,
        site: &'static FlowSite,
        since: u64,
        waiting: bool,
        _owner: Option<ReceiverCount>,
    }

    impl<T> RecvFut<'_, T> {
        /// See [`Receiver::is_disconnected`].
        pub fn is_disconnected(&self) -> bool {
            self.inner.is_disconnected()
        }

        /// See [`Receiver::is_empty`].
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// See [`Receiver::is_full`].
        pub fn is_full(&self) -> bool {
            self.inner.is_full()
        }

        /// See [`Receiver::len`].
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// See [`Receiver::capacity`].
        pub fn capacity(&self) -> Option<usize> {
            self.inner.capacity()
        }
    }

    /// What a receiving poll returned, a message opened only when ready.
    fn received<T, E>(
        site: &'static FlowSite,
        waiting: &mut bool,
        since: &mut u64,
        r: Poll<Result<Envelope<T>, E>>,
    ) -> Poll<Result<T, E>> {
        match r {
            Poll::Pending => {
                if !*waiting {
                    *waiting = true;
                    *since = site.clock();
                }
                Poll::Pending
            }
            Poll::Ready(r) => {
                if *waiting {
                    *waiting = false;
                    site.recv_waited(*since);
                }
                Poll::Ready(r.map(|env| got(site, env)))
            }
        }
    }

    impl<T> Future for RecvFut<'_, T> {
        type Output = Result<T, RecvError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner).poll(cx);
            received(this.site, &mut this.waiting, &mut this.since, r)
        }
    }

    impl<T> FusedFuture for RecvFut<'_, T> {
        fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }
    }

    impl<T> fmt::Debug for RecvFut<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("RecvFut").finish()
        }
    }

    /// [`Receiver::stream`]: flume's stream, each message opened and
    /// counted once flume's stream has returned it.
    pub struct RecvStream<'a, T> {
        inner: fl::r#async::RecvStream<'a, Envelope<T>>,
        site: &'static FlowSite,
        since: u64,
        waiting: bool,
        owner: Option<ReceiverCount>,
    }

    impl<T> RecvStream<'_, T> {
        /// See [`Receiver::is_disconnected`].
        pub fn is_disconnected(&self) -> bool {
            self.inner.is_disconnected()
        }

        /// See [`Receiver::is_empty`].
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// See [`Receiver::is_full`].
        pub fn is_full(&self) -> bool {
            self.inner.is_full()
        }

        /// See [`Receiver::len`].
        pub fn len(&self) -> usize {
            self.inner.len()
        }

        /// See [`Receiver::capacity`].
        pub fn capacity(&self) -> Option<usize> {
            self.inner.capacity()
        }

        /// Whether both streams receive from the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            self.inner.same_channel(&other.inner)
        }
    }

    impl<T> Stream for RecvStream<'_, T> {
        type Item = T;

        fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            let this = self.get_mut();
            let r = Pin::new(&mut this.inner)
                .poll_next(cx)
                .map(|item| item.ok_or(()));
            received(this.site, &mut this.waiting, &mut this.since, r).map(Result::ok)
        }
    }

    impl<T> FusedStream for RecvStream<'_, T> {
        fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }
    }

    impl<T> Clone for RecvStream<'_, T> {
        fn clone(&self) -> Self {
            RecvStream {
                inner: self.inner.clone(),
                site: self.site,
                since: 0,
                waiting: false,
                // flume's owning stream clones its receiver.
                owner: self.owner.as_ref().map(|_| ReceiverCount::new(self.site)),
            }
        }
    }

    impl<T> fmt::Debug for RecvStream<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("RecvStream").finish()
        }
    }

    /// [`Receiver::iter`].
    pub struct Iter<'a, T> {
        receiver: &'a Receiver<T>,
    }

    impl<T> Iterator for Iter<'_, T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.receiver.recv().ok()
        }
    }

    impl<T> fmt::Debug for Iter<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Iter")
                .field("receiver", &self.receiver)
                .finish()
        }
    }

    /// [`Receiver::try_iter`].
    pub struct TryIter<'a, T> {
        receiver: &'a Receiver<T>,
    }

    impl<T> Iterator for TryIter<'_, T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.receiver.try_recv().ok()
        }
    }

    impl<T> fmt::Debug for TryIter<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("TryIter")
                .field("receiver", &self.receiver)
                .finish()
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
            self.inner.next().map(|env| got(self.site, env))
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

    impl<T> fmt::Debug for Drain<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Drain { .. }")
        }
    }

    /// The owning iterator of a [`Receiver`].
    pub struct IntoIter<T> {
        receiver: Receiver<T>,
    }

    impl<T> Iterator for IntoIter<T> {
        type Item = T;
        fn next(&mut self) -> Option<T> {
            self.receiver.recv().ok()
        }
    }

    impl<T> fmt::Debug for IntoIter<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("IntoIter")
                .field("receiver", &self.receiver)
                .finish()
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
            IntoIter { receiver: self }
        }
    }
}
