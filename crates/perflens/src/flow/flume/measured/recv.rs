//! flume's receiving side, measured: the receiver's methods, its
//! receive future and stream, and the drain.

use super::*;

impl<T> Receiver<T> {
    #[inline(always)]
    fn got(&self, env: Envelope<T>) -> T {
        env.received(self.site())
    }

    blocking_recvs!(recv -> RecvError::Disconnected, recv_timeout, recv_deadline);

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
        polled(this.site, &mut this.wait, r)
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
        let r = Pin::new(&mut this.inner).poll_next(cx);
        polled(this.site, &mut this.wait, r)
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
    pub(super) inner: fl::Drain<'a, Envelope<T>>,
    pub(super) site: &'static FlowSite,
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

clone_fields!(Sender { inner, count }, Receiver { inner, count });
