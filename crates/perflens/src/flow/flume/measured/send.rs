//! flume's async sending side, measured: the send future and the sink.

use super::*;

/// [`Sender::send_async`]: flume's future, its message counted when
/// it is sent, its wait for room timed.
#[must_use = "futures/streams/sinks do nothing unless you `.await` or poll them"]
pub struct SendFut<'a, T> {
    pub(super) inner: fl::r#async::SendFut<'a, Envelope<T>>,
    pub(super) site: &'static FlowSite,
    pub(super) wait: Wait,
    /// Its message is not yet seen sent.
    pub(super) unsent: bool,
    pub(super) _owner: Option<SenderCount>,
}

impl<'a, T> SendFut<'a, T> {
    pub(super) fn new(
        inner: fl::r#async::SendFut<'a, Envelope<T>>,
        site: &'static FlowSite,
        owner: Option<SenderCount>,
    ) -> SendFut<'a, T> {
        SendFut {
            inner,
            site,
            wait: Wait::default(),
            unsent: true,
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
        let (site, inner) = (this.site, &this.inner);
        let (capacity, sent) = (|| inner.capacity(), || site.sent_sampled(|| inner.len()));
        send_polled(site, &mut this.wait, &mut this.unsent, r, capacity, sent)
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
        if self.unsent {
            self.site.sent(None);
        }
    }
}

/// [`Sender::sink`]: flume's sink, its items counted when sent.
pub struct SendSink<'a, T> {
    pub(super) inner: fl::r#async::SendSink<'a, Envelope<T>>,
    pub(super) sender: &'a Sender<T>,
    /// An item was started and not yet seen sent.
    pub(super) pending: bool,
    pub(super) wait: Wait,
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
        let (site, inner) = (self.sender.site(), &self.sender.inner);
        let (capacity, sent) = (|| inner.capacity(), || sent(site, inner));
        send_polled(site, &mut self.wait, &mut self.pending, r, capacity, sent)
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
            .map_err(Opened::opened)
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
