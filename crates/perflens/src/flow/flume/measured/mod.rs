//! flume's measured endpoints: the sender and receiver and the weak
//! sender here; their futures, sink, stream and drain in `send.rs` and
//! `recv.rs`.

use super::*;
use crate::flow::kernel::{
    Emptiness, ReceiverCount, SenderCount, Wait, clone_fields, delegate, full, made, opaque_debug,
    receiver_iterators, recv_with, waited,
};
use crate::flow::{Envelope, Wrap};
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
                        SendTimeoutError::Timeout(e) => SendTimeoutError::Timeout(e.into_value()),
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
