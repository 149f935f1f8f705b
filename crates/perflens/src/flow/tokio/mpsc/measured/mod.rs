//! tokio's mpsc channels, measured: the bounded channel's endpoints and
//! permits here, the unbounded one's in `unbounded.rs`.

use super::error::{SendError, SendTimeoutError, TryRecvError, TrySendError};
use crate::flow::Envelope;
use crate::flow::kernel::{
    Opened, SenderCount, Wait, clock_if, clone_fields, delegate, opaque_debug, opened, pair, timed,
    weak,
};
use ::std::future::poll_fn;
use ::std::sync::Arc;
use ::std::sync::atomic::{AtomicIsize, Ordering};
use ::std::task::{Context, Poll};
use ::std::time::Duration;
use ::tokio::sync::mpsc;
use perflens_core::FlowSite;

opened!(SendError());

pub use unbounded::{UnboundedReceiver, UnboundedSender, WeakUnboundedSender};

/// Counts a message accepted by a bounded channel, with the queue
/// right after it (messages in it and permits held).
#[inline(always)]
fn sent_bounded<T>(chan: &mpsc::Sender<Envelope<T>>, site: &'static FlowSite) {
    site.sent_sampled(|| chan.max_capacity() - chan.capacity());
}

/// A permit to send one message (from [`Sender::reserve`]); sends
/// through the measured path.
pub struct Permit<'a, T> {
    inner: mpsc::Permit<'a, Envelope<T>>,
    chan: &'a mpsc::Sender<Envelope<T>>,
    site: &'static FlowSite,
}

/// Permits to send `n` messages (from [`Sender::reserve_many`]).
pub struct PermitIterator<'a, T> {
    inner: mpsc::PermitIterator<'a, Envelope<T>>,
    chan: &'a mpsc::Sender<Envelope<T>>,
    site: &'static FlowSite,
}

/// A permit that owns its sender (from [`Sender::reserve_owned`]).
/// The sender inside still counts as a sender alive.
pub struct OwnedPermit<T> {
    inner: mpsc::OwnedPermit<Envelope<T>>,
    count: SenderCount,
}

pair! {
    /// The sending half of a measured bounded tokio channel.
    Sender(mpsc::Sender),
    /// The receiving half of a measured bounded tokio channel.
    Receiver(mpsc::Receiver) { waiting: Wait = Wait::default() };
    |tx, _| Some(tx.max_capacity())
}

weak! {
    /// A sender that does not keep the channel open (tokio's
    /// `WeakSender`); not counted as a sender.
    WeakSender = mpsc::WeakSender of Sender,
    |w, inner| Sender { inner, count: SenderCount::new(w.site) }
}

impl<T> Sender<T> {
    /// A permit, waiting for room if the channel is full: tokio's
    /// `reserve`, with its first attempt written out. A permit is
    /// taken now as tokio's would take it when there is room (the
    /// task's cooperative budget asked first, and spent on success;
    /// the semaphore's waiters are served before any permit is left
    /// to take), so that a send that does not wait builds no reserve
    /// future. Only a full channel makes one, which waits in tokio's
    /// queue, its wait timed.
    async fn permit(&self) -> Result<mpsc::Permit<'_, Envelope<T>>, SendError<()>> {
        let site = self.site();
        let mut reserve = ::std::pin::pin!(None);
        let mut waiting = Wait::default();
        poll_fn(|cx| {
            if reserve.is_none() {
                let coop = ::std::task::ready!(::tokio::task::coop::poll_proceed(cx));
                match self.inner.try_reserve() {
                    Ok(p) => {
                        coop.made_progress();
                        return Poll::Ready(Ok(p));
                    }
                    Err(TrySendError::Closed(())) => {
                        coop.made_progress();
                        return Poll::Ready(Err(SendError(())));
                    }
                    Err(TrySendError::Full(())) => {
                        // The budget is given back (the wait's own
                        // poll asks for it).
                        drop(coop);
                        site.found_full(self.inner.max_capacity());
                        reserve.set(Some(self.inner.reserve()));
                    }
                }
            }
            let slow = reserve.as_mut().as_pin_mut().expect("made above");
            let p = slow.poll(cx);
            waiting.after(site, &p, FlowSite::send_waited);
            p
        })
        .await
    }

    /// Sends `value`, waiting for room; hands it back when the
    /// receiver is gone (tokio's `send`, and as cancel-safe: a
    /// cancelled send drops the value, having sent nothing).
    pub async fn send(&self, value: T) -> Result<(), SendError<T>> {
        let site = self.site();
        let stamp = site.stamp();
        match self.permit().await {
            Ok(p) => {
                p.send(Envelope::seal(value, site, stamp));
                sent_bounded(&self.inner, site);
                Ok(())
            }
            Err(SendError(())) => Err(SendError(value)),
        }
    }

    /// Sends without waiting; a full or closed channel hands the
    /// message back.
    pub fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        let site = self.site();
        match self.inner.try_reserve() {
            Ok(p) => {
                p.send(Envelope::seal(message, site, site.stamp()));
                sent_bounded(&self.inner, site);
                Ok(())
            }
            Err(TrySendError::Full(())) => {
                site.found_full(self.inner.max_capacity());
                Err(TrySendError::Full(message))
            }
            Err(TrySendError::Closed(())) => Err(TrySendError::Closed(message)),
        }
    }

    /// Sends, waiting at most `timeout` for room (needs tokio's
    /// timer, as tokio's `send_timeout`).
    pub async fn send_timeout(
        &self,
        value: T,
        timeout: Duration,
    ) -> Result<(), SendTimeoutError<T>> {
        let site = self.site();
        let stamp = site.stamp();
        let r = ::tokio::time::timeout(timeout, self.inner.reserve());
        let permit = match timed(site, r, FlowSite::send_waited).await {
            Ok(Ok(p)) => p,
            Ok(Err(SendError(()))) => return Err(SendTimeoutError::Closed(value)),
            Err(_) => return Err(SendTimeoutError::Timeout(value)),
        };
        permit.send(Envelope::seal(value, site, stamp));
        sent_bounded(&self.inner, site);
        Ok(())
    }

    /// Sends from outside a runtime, blocking for room (panics
    /// inside an async context, as tokio's).
    pub fn blocking_send(&self, value: T) -> Result<(), SendError<T>> {
        let site = self.site();
        let since = clock_if(site, self.inner.capacity() == 0);
        let r = self
            .inner
            .blocking_send(Envelope::seal(value, site, site.stamp()));
        site.send_waited(since);
        match r {
            Ok(()) => {
                sent_bounded(&self.inner, site);
                Ok(())
            }
            Err(e) => Err(e.opened()),
        }
    }

    /// Waits for room for one message and reserves it.
    pub async fn reserve(&self) -> Result<Permit<'_, T>, SendError<()>> {
        let p = self.permit().await?;
        Ok(Permit {
            inner: p,
            chan: &self.inner,
            site: self.site(),
        })
    }

    /// Waits for room for `n` messages and reserves it.
    pub async fn reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, SendError<()>> {
        let site = self.site();
        let p = timed(site, self.inner.reserve_many(n), FlowSite::send_waited).await?;
        Ok(PermitIterator {
            inner: p,
            chan: &self.inner,
            site,
        })
    }

    /// Waits for room for one message, and reserves it with the
    /// sender moved into the permit.
    pub async fn reserve_owned(self) -> Result<OwnedPermit<T>, SendError<()>> {
        let Sender { inner, count } = self;
        let site = count.site();
        let p = timed(site, inner.reserve_owned(), FlowSite::send_waited).await?;
        Ok(OwnedPermit { inner: p, count })
    }

    /// Reserves room for one message if there is some now.
    pub fn try_reserve(&self) -> Result<Permit<'_, T>, TrySendError<()>> {
        Ok(Permit {
            inner: self.inner.try_reserve()?,
            chan: &self.inner,
            site: self.site(),
        })
    }

    /// Reserves room for `n` messages if there is some now.
    pub fn try_reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, TrySendError<()>> {
        Ok(PermitIterator {
            inner: self.inner.try_reserve_many(n)?,
            chan: &self.inner,
            site: self.site(),
        })
    }

    /// Reserves room for one message if there is some now, moving
    /// the sender into the permit; else hands the sender back.
    pub fn try_reserve_owned(self) -> Result<OwnedPermit<T>, TrySendError<Self>> {
        let Sender { inner, count } = self;
        match inner.try_reserve_owned() {
            Ok(p) => Ok(OwnedPermit { inner: p, count }),
            Err(TrySendError::Full(inner)) => Err(TrySendError::Full(Sender { inner, count })),
            Err(TrySendError::Closed(inner)) => Err(TrySendError::Closed(Sender { inner, count })),
        }
    }

    /// Room left now (the capacity minus messages and permits).
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    delegate!(
        closed,
        is_closed,
        same_channel,
        max_capacity,
        strong_count,
        weak_count
    );
}

impl<T> WeakSender<T> {
    delegate!(strong_count, weak_count);
}

impl<T> Permit<'_, T> {
    /// Sends `value` in the reserved room.
    pub fn send(self, value: T) {
        self.inner
            .send(Envelope::seal(value, self.site, self.site.stamp()));
        sent_bounded(self.chan, self.site);
    }
}

impl<'a, T> Iterator for PermitIterator<'a, T> {
    type Item = Permit<'a, T>;
    fn next(&mut self) -> Option<Permit<'a, T>> {
        self.inner.next().map(|inner| Permit {
            inner,
            chan: self.chan,
            site: self.site,
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T> ExactSizeIterator for PermitIterator<'_, T> {}
impl<T> ::std::iter::FusedIterator for PermitIterator<'_, T> {}

impl<T> OwnedPermit<T> {
    /// Sends `value` in the reserved room, giving the sender back.
    pub fn send(self, value: T) -> Sender<T> {
        let OwnedPermit { inner, count } = self;
        let site = count.site();
        let inner = inner.send(Envelope::seal(value, site, site.stamp()));
        sent_bounded(&inner, site);
        Sender { inner, count }
    }

    /// Gives the room back, and the sender.
    pub fn release(self) -> Sender<T> {
        let OwnedPermit { inner, count } = self;
        Sender {
            inner: inner.release(),
            count,
        }
    }

    /// Whether the permit and `sender` belong to the same channel.
    pub fn same_channel_as_sender(&self, sender: &Sender<T>) -> bool {
        self.inner.same_channel_as_sender(&sender.inner)
    }

    delegate!(same_channel);
}

/// The methods both receivers have, over tokio's receiver `$inner`.
macro_rules! receiver_methods {
    () => {
        /// Receives the next message, waiting for one; `None` once the
        /// channel is closed and empty. Cancel-safe, as tokio's.
        pub async fn recv(&mut self) -> Option<T> {
            self.waiting = Wait::default();
            poll_fn(|cx| self.poll_recv(cx)).await
        }

        /// Receives up to `limit` messages into `buffer`, waiting for
        /// at least one; 0 once the channel is closed and empty (or
        /// when `limit` is 0). Cancel-safe, as tokio's.
        pub async fn recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
            self.waiting = Wait::default();
            poll_fn(|cx| self.poll_recv_many(cx, buffer, limit)).await
        }

        /// Receives a message if one is queued.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let r = self.inner.try_recv();
            r.map(|env| self.got(env))
        }

        /// Receives from outside a runtime, blocking for a message
        /// (panics inside an async context, as tokio's).
        pub fn blocking_recv(&mut self) -> Option<T> {
            let site = self.site();
            let since = clock_if(site, self.inner.is_empty());
            let r = self.inner.blocking_recv();
            site.recv_waited(since);
            r.map(|env| self.got(env))
        }

        /// [`blocking_recv`](Self::blocking_recv) for up to `limit`
        /// messages.
        pub fn blocking_recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
            let site = self.site();
            let since = clock_if(site, self.inner.is_empty());
            let mut envs = Vec::new();
            let n = self.inner.blocking_recv_many(&mut envs, limit);
            site.recv_waited(since);
            for env in envs {
                buffer.push(self.got(env));
            }
            n
        }

        /// Closes the channel to senders; queued messages can still be
        /// received.
        pub fn close(&mut self) {
            self.inner.close()
        }

        delegate!(
            is_closed,
            is_empty,
            len,
            sender_strong_count,
            sender_weak_count
        );

        /// Polls for the next message (tokio's `poll_recv`); a wait
        /// is timed from the first `Pending` to the `Ready`.
        #[inline]
        pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
            let site = self.site();
            let p = self.inner.poll_recv(cx);
            self.waiting.after(site, &p, FlowSite::recv_waited);
            p.map(|r| r.map(|env| self.got(env)))
        }

        /// Polls for up to `limit` messages, extending `buffer`.
        pub fn poll_recv_many(
            &mut self,
            cx: &mut Context<'_>,
            buffer: &mut Vec<T>,
            limit: usize,
        ) -> Poll<usize> {
            let site = self.site();
            let mut envs = Vec::new();
            let p = self.inner.poll_recv_many(cx, &mut envs, limit);
            self.waiting.after(site, &p, FlowSite::recv_waited);
            for env in envs {
                buffer.push(self.got(env));
            }
            p
        }
    };
}

impl<T> Receiver<T> {
    receiver_methods!();

    #[inline(always)]
    fn got(&self, env: Envelope<T>) -> T {
        env.received(self.site())
    }

    /// The room left now.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    delegate!(max_capacity);
}

// After `receiver_methods!`, which the unbounded receiver uses too.
mod unbounded;
