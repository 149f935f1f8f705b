//! flume's measured endpoints: the sender and receiver and the weak
//! sender here; their futures, sink, stream and drain in `send.rs` and
//! `recv.rs`.

use super::*;
use crate::flow::Envelope;
use crate::flow::kernel::{
    Opened, ReceiverCount, SenderCount, Wait, blocking_recvs, blocking_sends, clone_fields,
    delegate, full, opaque_debug, opened, pair, polled, receiver_iterators, send_polled, weak,
};
use ::std::future::Future;
use ::std::pin::Pin;
use ::std::task::{Context, Poll};
use ::std::time::{Duration, Instant};
use flume as fl;
use futures_core::{FusedFuture, FusedStream, Stream};
use perflens_core::FlowSite;

mod recv;
mod send;

pub use recv::{Drain, IntoIter, Iter, RecvFut, RecvStream, TryIter};
pub use send::{SendFut, SendSink};

pair! {
    /// The sending side of a measured flume channel.
    Sender(fl::Sender),
    /// The receiving side of a measured flume channel.
    Receiver(fl::Receiver);
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

/// Counts an accepted message, with the queue right after it now and
/// then (see `FlowSite::sent_sampled`).
#[inline(always)]
fn sent<T>(site: &'static FlowSite, inner: &fl::Sender<Envelope<T>>) {
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

    blocking_sends!(send, Disconnected, timeouts);

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

weak! {
    /// A sender that does not keep its channel open ([`Sender::downgrade`]).
    WeakSender = fl::WeakSender of Sender,
    |w, inner| Sender { inner, count: SenderCount::new(w.site) }
}
