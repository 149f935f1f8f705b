//! `futures::channel::mpsc`'s measured endpoints.

use super::*;
use crate::flow::kernel::Counted;
use ::std::sync::Arc;
use ::std::sync::atomic::{AtomicUsize, Ordering};
use futures_channel::mpsc as fm;
use futures_channel::mpsc::{RecvError, SendError, TryRecvError};
use futures_core::{FusedFuture, FusedStream, Stream};

/// The error of [`Sender::try_send`] and
/// [`UnboundedSender::unbounded_send`]: the message handed back,
/// with why.
#[derive(Clone, PartialEq, Eq)]
pub struct TrySendError<T> {
    full: bool,
    val: T,
}

impl<T> TrySendError<T> {
    fn new(e: fm::TrySendError<Envelope<T>>) -> TrySendError<T> {
        TrySendError {
            full: e.is_full(),
            val: e.into_inner().into_value(),
        }
    }

    /// Whether the channel was full.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Whether the receiver was gone.
    pub fn is_disconnected(&self) -> bool {
        !self.full
    }

    /// The message.
    pub fn into_inner(self) -> T {
        self.val
    }

    /// The error, without the message.
    pub fn into_send_error(self) -> SendError {
        send_error(self.full)
    }
}

/// futures' own `SendError` of that kind (its fields are private:
/// made by a channel of `()` that fails so).
#[cold]
fn send_error(full: bool) -> SendError {
    let (mut tx, rx) = fm::channel::<()>(0);
    if full {
        let _ = tx.try_send(());
    } else {
        drop(rx);
    }
    match tx.try_send(()) {
        Err(e) => e.into_send_error(),
        Ok(()) => unreachable!("a parked or disconnected sender accepts nothing"),
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrySendError")
            .field("kind", &format_args!("{}", self.kind()))
            .finish()
    }
}

impl<T> TrySendError<T> {
    fn kind(&self) -> &'static str {
        if self.full { "Full" } else { "Disconnected" }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.full {
            write!(f, "send failed because channel is full")
        } else {
            write!(f, "send failed because receiver is gone")
        }
    }
}

impl<T: ::std::any::Any> ::std::error::Error for TrySendError<T> {}

/// What a bounded channel's endpoints share: its site, its
/// buffer, its senders, and the messages that went in and came
/// out (the channel does not tell its length).
struct Shared {
    site: &'static FlowSite,
    buffer: usize,
    senders: AtomicUsize,
    counted: Counted,
}

impl Shared {
    /// The most messages the channel holds now.
    fn capacity(&self) -> usize {
        (self.buffer).saturating_add(self.senders.load(Ordering::Relaxed))
    }

    #[inline(always)]
    fn sent(&self) {
        self.counted.sent(self.site, || self.capacity());
    }

    /// A message came out, on the one receiver's thread.
    #[inline(always)]
    fn got<T>(&self, env: Envelope<T>) -> T {
        self.counted.got(self.site, env)
    }
}

/// What both receivers have alike over futures' own (each has `site()`
/// and `got(env)`, a received message's value): the methods, `Stream`
/// and `FusedStream`.
macro_rules! receiver_common {
    ($($rx:ident),*) => {$(
        impl<T> $rx<T> {
            /// Closes the channel: no more sends; queued messages can
            /// still be received.
            pub fn close(&mut self) {
                self.inner.close()
            }

            /// Receives without waiting.
            pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
                self.inner.try_recv().map(|env| self.got(env))
            }

            /// Receives without waiting: `Ok(None)` when the channel
            /// is closed and empty.
            #[deprecated(note = "please use `try_recv` instead")]
            pub fn try_next(&mut self) -> Result<Option<T>, TryRecvError> {
                match self.try_recv() {
                    Ok(v) => Ok(Some(v)),
                    Err(TryRecvError::Closed) => Ok(None),
                    Err(e) => Err(e),
                }
            }

            /// A future receiving one message.
            pub fn recv(&mut self) -> Recv<'_, Self> {
                Recv { stream: self }
            }
        }

        impl<T> Stream for $rx<T> {
            type Item = T;

            fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
                let this = &mut *self;
                let (site, p) = (this.site(), Pin::new(&mut this.inner).poll_next(cx));
                this.wait.after(site, &p, FlowSite::recv_waited);
                p.map(|item| item.map(|env| this.got(env)))
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                self.inner.size_hint()
            }
        }

        impl<T> FusedStream for $rx<T> {
            fn is_terminated(&self) -> bool {
                self.inner.is_terminated()
            }
        }
    )*};
}

/// What both senders have alike over futures' own (`$rx`: their
/// receiver), and `Debug` as futures' (`Name { closed: .. }`).
macro_rules! sender_common {
    ($($tx:ident -> $rx:ident),*) => {$(
        impl<T> $tx<T> {
            /// Whether both senders send to the same receiver.
            pub fn same_receiver(&self, other: &Self) -> bool {
                self.inner.same_receiver(&other.inner)
            }

            /// Whether this sender sends to `receiver`.
            pub fn is_connected_to(&self, receiver: &$rx<T>) -> bool {
                self.inner.is_connected_to(&receiver.inner)
            }

            /// Hashes the receiver this sender sends to.
            pub fn hash_receiver<H: ::std::hash::Hasher>(&self, hasher: &mut H) {
                self.inner.hash_receiver(hasher)
            }
        }

        impl<T> fmt::Debug for $tx<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($tx))
                    .field("closed", &self.is_closed())
                    .finish()
            }
        }
    )*};
}

receiver_common!(Receiver, UnboundedReceiver);
sender_common!(Sender -> Receiver, UnboundedSender -> UnboundedReceiver);

/// The sending side of a measured bounded `mpsc` channel.
pub struct Sender<T> {
    inner: fm::Sender<Envelope<T>>,
    shared: Arc<Shared>,
    /// `None` once disconnected.
    count: Option<SenderCount>,
    wait: Wait,
}

/// The receiving side of a measured bounded `mpsc` channel.
pub struct Receiver<T> {
    inner: fm::Receiver<Envelope<T>>,
    shared: Arc<Shared>,
    _count: ReceiverCount,
    wait: Wait,
}

impl<T> Wrap for (fm::Sender<Envelope<T>>, fm::Receiver<Envelope<T>>) {
    type Measured = (Sender<T>, Receiver<T>);
    fn wrap(self, site: &'static FlowSite, capacity: Option<usize>) -> Self::Measured {
        let buffer = capacity.unwrap_or(0);
        site.created(Some(buffer.saturating_add(1)));
        let shared = {
            let _internal = perflens_core::Internal::enter();
            Arc::new(Shared {
                site,
                buffer,
                senders: AtomicUsize::new(1),
                counted: Counted::new(),
            })
        };
        (
            Sender {
                inner: self.0,
                shared: shared.clone(),
                count: Some(SenderCount::new(site)),
                wait: Wait::default(),
            },
            Receiver {
                inner: self.1,
                shared,
                _count: ReceiverCount::new(site),
                wait: Wait::default(),
            },
        )
    }
}

impl<T> Sender<T> {
    /// Sends without waiting; a full channel (this sender parked)
    /// or a gone receiver hands the message back.
    pub fn try_send(&mut self, msg: T) -> Result<(), TrySendError<T>> {
        let site = self.shared.site;
        match self.inner.try_send(Envelope::seal(msg, site, site.stamp())) {
            Ok(()) => {
                self.shared.sent();
                Ok(())
            }
            Err(e) => {
                if e.is_full() {
                    site.found_full(self.shared.buffer.saturating_add(1));
                }
                Err(TrySendError::new(e))
            }
        }
    }

    /// Sends (after `poll_ready` said there is room); the message
    /// is dropped on an error.
    pub fn start_send(&mut self, msg: T) -> Result<(), SendError> {
        self.try_send(msg).map_err(TrySendError::into_send_error)
    }

    /// Whether this sender may send, its wait for room timed.
    pub fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        let site = self.shared.site;
        let r = self.inner.poll_ready(cx);
        if r.is_pending() {
            if self.wait.pending(site) {
                site.found_full(self.shared.buffer.saturating_add(1));
            }
        } else {
            self.wait.ready(site, FlowSite::send_waited);
        }
        r
    }

    /// Closes the channel, for every sender.
    pub fn close_channel(&mut self) {
        self.inner.close_channel()
    }

    /// Disconnects this sender (the others stay).
    pub fn disconnect(&mut self) {
        self.inner.disconnect();
        if self.count.take().is_some() {
            self.shared.senders.fetch_sub(1, Ordering::Relaxed);
        }
    }

    delegate!(is_closed);
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        let inner = self.inner.clone();
        let site = self.shared.site;
        // A disconnected sender's clone is disconnected too.
        let count = self.count.as_ref().map(|_| {
            self.shared.senders.fetch_add(1, Ordering::Relaxed);
            site.capacity_at_least(self.shared.capacity());
            SenderCount::new(site)
        });
        Sender {
            inner,
            shared: self.shared.clone(),
            count,
            wait: Wait::default(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.count.is_some() {
            self.shared.senders.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl<T> futures_sink::Sink<T> for Sender<T> {
    type Error = SendError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        (*self).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, msg: T) -> Result<(), Self::Error> {
        (*self).start_send(msg)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match (*self).poll_ready(cx) {
            // A gone receiver: the sink is flushed.
            Poll::Ready(Err(ref e)) if e.is_disconnected() => Poll::Ready(Ok(())),
            x => x,
        }
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.disconnect();
        Poll::Ready(Ok(()))
    }
}

impl<T> Receiver<T> {
    #[inline(always)]
    fn site(&self) -> &'static FlowSite {
        self.shared.site
    }

    /// A message came out (see [`Shared::got`]).
    #[inline(always)]
    fn got(&self, env: Envelope<T>) -> T {
        self.shared.got(env)
    }
}

/// The sending side of a measured unbounded `mpsc` channel.
pub struct UnboundedSender<T> {
    inner: fm::UnboundedSender<Envelope<T>>,
    site: &'static FlowSite,
    /// `None` once disconnected.
    count: Option<SenderCount>,
}

/// The receiving side of a measured unbounded `mpsc` channel.
pub struct UnboundedReceiver<T> {
    inner: fm::UnboundedReceiver<Envelope<T>>,
    count: ReceiverCount,
    wait: Wait,
}

impl<T> Wrap
    for (
        fm::UnboundedSender<Envelope<T>>,
        fm::UnboundedReceiver<Envelope<T>>,
    )
{
    type Measured = (UnboundedSender<T>, UnboundedReceiver<T>);
    fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
        site.created(None);
        (
            UnboundedSender {
                inner: self.0,
                site,
                count: Some(SenderCount::new(site)),
            },
            UnboundedReceiver {
                inner: self.1,
                count: ReceiverCount::new(site),
                wait: Wait::default(),
            },
        )
    }
}

impl<T> UnboundedSender<T> {
    /// Sends; a gone receiver hands the message back.
    pub fn unbounded_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        let site = self.site;
        match (self.inner).unbounded_send(Envelope::seal(msg, site, site.stamp())) {
            Ok(()) => {
                site.sent_sampled(|| self.inner.len());
                Ok(())
            }
            Err(e) => Err(TrySendError::new(e)),
        }
    }

    /// Sends; the message is dropped on an error.
    pub fn start_send(&mut self, msg: T) -> Result<(), SendError> {
        self.unbounded_send(msg)
            .map_err(TrySendError::into_send_error)
    }

    /// Whether the channel is open (it never waits for room).
    pub fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        self.inner.poll_ready(cx)
    }

    /// Closes the channel, for every sender.
    pub fn close_channel(&self) {
        self.inner.close_channel()
    }

    /// Disconnects this sender (the others stay).
    pub fn disconnect(&mut self) {
        self.inner.disconnect();
        self.count = None;
    }

    delegate!(is_closed, len, is_empty);
}

impl<T> Clone for UnboundedSender<T> {
    fn clone(&self) -> UnboundedSender<T> {
        UnboundedSender {
            inner: self.inner.clone(),
            site: self.site,
            count: self.count.as_ref().map(|_| SenderCount::new(self.site)),
        }
    }
}

impl<T> futures_sink::Sink<T> for UnboundedSender<T> {
    type Error = SendError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        Self::poll_ready(&*self, cx)
    }

    fn start_send(mut self: Pin<&mut Self>, msg: T) -> Result<(), SendError> {
        Self::start_send(&mut *self, msg)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        self.disconnect();
        Poll::Ready(Ok(()))
    }
}

impl<T> futures_sink::Sink<T> for &UnboundedSender<T> {
    type Error = SendError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        UnboundedSender::poll_ready(*self, cx)
    }

    fn start_send(self: Pin<&mut Self>, msg: T) -> Result<(), SendError> {
        self.unbounded_send(msg)
            .map_err(TrySendError::into_send_error)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        self.close_channel();
        Poll::Ready(Ok(()))
    }
}

impl<T> UnboundedReceiver<T> {
    #[inline(always)]
    fn site(&self) -> &'static FlowSite {
        self.count.site()
    }

    #[inline(always)]
    fn got(&self, env: Envelope<T>) -> T {
        env.received(self.site())
    }
}

opaque_debug!(Receiver, UnboundedReceiver);

/// `recv()`: the next message of a stream, as futures' `Recv`.
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Recv<'a, St: ?Sized> {
    stream: &'a mut St,
}

impl<St: ?Sized + Unpin> Unpin for Recv<'_, St> {}

impl<St: ?Sized + FusedStream + Unpin> FusedFuture for Recv<'_, St> {
    fn is_terminated(&self) -> bool {
        self.stream.is_terminated()
    }
}

impl<St: ?Sized + Stream + Unpin> Future for Recv<'_, St> {
    type Output = Result<St::Item, RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.stream).poll_next(cx) {
            Poll::Ready(Some(msg)) => Poll::Ready(Ok(msg)),
            Poll::Ready(None) => Poll::Ready(Err(RecvError)),
            Poll::Pending => Poll::Pending,
        }
    }
}
