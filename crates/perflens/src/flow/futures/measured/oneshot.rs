//! `futures::channel::oneshot`'s measured endpoints.

use super::*;
use futures_channel::oneshot as fo;
use futures_channel::oneshot::Canceled;
use futures_core::FusedFuture;

pair! {
    /// The sending side of a measured oneshot channel.
    Sender(fo::Sender),
    /// The receiving side of a measured oneshot channel: a future.
    Receiver(fo::Receiver) { wait: Wait = Wait::default() };
    |_, _| Some(1)
}

impl<T> Sender<T> {
    /// Sends the value; a gone receiver hands it back.
    pub fn send(self, t: T) -> Result<(), T> {
        let Sender { inner, count } = self;
        let site = count.site();
        match inner.send(Envelope::seal(t, site, site.stamp())) {
            Ok(()) => {
                site.sent(Some(1));
                Ok(())
            }
            Err(e) => Err(e.into_value()),
        }
    }

    /// Ready once the receiver is gone.
    pub fn poll_canceled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.inner.poll_canceled(cx)
    }

    /// A future ready once the receiver is gone.
    pub fn cancellation(&mut self) -> Cancellation<'_, T> {
        Cancellation { sender: self }
    }

    /// Whether the receiver is gone.
    pub fn is_canceled(&self) -> bool {
        self.inner.is_canceled()
    }

    /// Whether this sender sends to `receiver`.
    pub fn is_connected_to(&self, receiver: &Receiver<T>) -> bool {
        self.inner.is_connected_to(&receiver.inner)
    }
}

/// [`Sender::cancellation`].
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Cancellation<'a, T> {
    sender: &'a mut Sender<T>,
}

impl<T> Future for Cancellation<'_, T> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.sender.poll_canceled(cx)
    }
}

impl<T> Receiver<T> {
    /// Closes the channel: the sender can no longer send.
    pub fn close(&mut self) {
        self.inner.close()
    }

    /// The value if sent, `Ok(None)` if not yet, `Err` if the
    /// sender is gone without sending.
    pub fn try_recv(&mut self) -> Result<Option<T>, Canceled> {
        let site = self.site();
        self.inner
            .try_recv()
            .map(|v| v.map(|env| env.received(site)))
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, Canceled>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let site = this.count.site();
        let p = Pin::new(&mut this.inner).poll(cx);
        polled(site, &mut this.wait, p)
    }
}

impl<T> FusedFuture for Receiver<T> {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

opaque_debug!(Sender, Cancellation<'_>, Receiver);
