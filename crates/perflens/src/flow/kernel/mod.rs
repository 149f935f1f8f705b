//! What every measured channel shares, written once: endpoints alive
//! ([`endpoints`]), the receiver iterators ([`iter`]), the waits of
//! blocking calls and of poll loops, and the methods and `Debug` that
//! only pass through to the original endpoint. A backend's file keeps
//! its constructor mapping (`Wrap`), its errors and what it cannot
//! share.

// Each backend is behind a feature of its own: an item unused by the
// backends compiled in is not dead code.
#![allow(dead_code, unused_imports, unused_macros)]

pub(crate) mod blocking;
pub(crate) mod endpoints;
pub(crate) mod iter;

pub(crate) use blocking::{Opened, blocking_recvs, blocking_sends, opened};
pub(crate) use endpoints::{ReceiverCount, SenderCount, made, pair, weak, wrap};
pub(crate) use iter::receiver_iterators;

use crate::flow::Envelope;
use perflens_core::FlowSite;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

/// A value alone on its cache line.
#[repr(align(64))]
struct Line<T>(T);

/// The messages that went into a channel that does not tell its length
/// (std's, futures' bounded one) and came out. The senders add to `sent`
/// (a line only they write); the one receiver counts `taken` on a line
/// only it writes.
pub(crate) struct Counted {
    sent: Line<AtomicUsize>,
    taken: Line<AtomicUsize>,
}

impl Counted {
    pub(crate) const fn new() -> Counted {
        Counted {
            sent: Line(AtomicUsize::new(0)),
            taken: Line(AtomicUsize::new(0)),
        }
    }

    /// A message went in: counted at `site`; now and then (see
    /// `FlowSite::sent_sampled`) with the queue after it, `sent - taken`
    /// read then, at most `capacity()`. That can be one ahead for each
    /// receive that has taken a message but not yet counted it: a queue
    /// never holds more than its capacity, so neither does the figure.
    #[inline(always)]
    pub(crate) fn sent(&self, site: &'static FlowSite, capacity: impl FnOnce() -> usize) {
        let sent = self.sent.0.fetch_add(1, Ordering::Relaxed) + 1;
        site.sent_sampled(|| {
            let taken = self.taken.0.load(Ordering::Relaxed);
            sent.saturating_sub(taken).min(capacity())
        });
    }

    /// A message came out (on the one receiver's thread): its value, its
    /// latency recorded.
    #[inline(always)]
    pub(crate) fn got<T>(&self, site: &'static FlowSite, env: Envelope<T>) -> T {
        let taken = &self.taken.0;
        taken.store(
            taken.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        env.received(site)
    }
}

/// Runs a blocking call that found the channel full (or empty) on its
/// first try, its wait recorded at `site` with `record`
/// ([`FlowSite::send_waited`] or [`FlowSite::recv_waited`]).
#[inline]
pub(crate) fn waited<R>(
    site: &'static FlowSite,
    record: fn(&'static FlowSite, u64),
    call: impl FnOnce() -> R,
) -> R {
    let since = site.clock();
    let r = call();
    record(site, since);
    r
}

/// The protocol of a blocking receive: `first` is what the first,
/// non-blocking try gave; a message then is taken at once, a
/// disconnected channel gives `gone`, and an empty one (its error
/// `empty`) calls `wait`, which blocks as the backend's blocking call
/// does, its wait timed.
#[inline(always)]
pub(crate) fn recv_with<T, F, E>(
    site: &'static FlowSite,
    first: Result<T, F>,
    empty: impl FnOnce(&F) -> bool,
    gone: E,
    wait: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    match first {
        Ok(env) => Ok(env),
        Err(e) if empty(&e) => waited(site, FlowSite::recv_waited, wait),
        Err(_) => Err(gone),
    }
}

/// The start of a blocking call's wait: the clock now if `waits` (it
/// found the channel full, or empty), else 0 (no wait to record).
#[inline]
pub(crate) fn clock_if(site: &'static FlowSite, waits: bool) -> u64 {
    if waits { site.clock() } else { 0 }
}

/// A send found a channel of `capacity` (`None`: unbounded) full.
#[cold]
pub(crate) fn full(site: &'static FlowSite, capacity: Option<usize>) {
    if let Some(cap) = capacity {
        site.found_full(cap);
    }
}

/// A wait that starts at the first `Pending` of a poll loop and is
/// recorded when the loop completes (0: not waiting, or not timed).
#[derive(Default)]
pub(crate) struct Wait(u64);

impl Wait {
    /// After a `Pending`: starts the wait; whether none was started
    /// (untimed, every `Pending` says so).
    #[inline(always)]
    pub(crate) fn pending(&mut self, site: &'static FlowSite) -> bool {
        let first = self.0 == 0;
        if first {
            self.0 = site.clock();
        }
        first
    }

    /// After a `Ready`: records a wait started, with `record`.
    #[inline(always)]
    pub(crate) fn ready(&mut self, site: &'static FlowSite, record: fn(&'static FlowSite, u64)) {
        if self.0 != 0 {
            record(site, ::std::mem::take(&mut self.0));
        }
    }

    /// After a poll: [`Wait::pending`] or [`Wait::ready`].
    #[inline(always)]
    pub(crate) fn after<R>(
        &mut self,
        site: &'static FlowSite,
        p: &Poll<R>,
        record: fn(&'static FlowSite, u64),
    ) {
        if p.is_pending() {
            self.pending(site);
        } else {
            self.ready(site, record);
        }
    }
}

/// `fut` (one of the backend's own futures, polled as its method would
/// poll it: same cancel-safety, same cooperative budget), its wait timed
/// from its first `Pending` to its `Ready` and recorded with `record`.
pub(crate) async fn timed<F: ::std::future::Future>(
    site: &'static FlowSite,
    fut: F,
    record: fn(&'static FlowSite, u64),
) -> F::Output {
    let mut fut = ::std::pin::pin!(fut);
    let mut wait = Wait::default();
    ::std::future::poll_fn(|cx| {
        let p = fut.as_mut().poll(cx);
        wait.after(site, &p, record);
        p
    })
    .await
}

/// `Debug` that prints the type's name and no field (so it needs no
/// `T: Debug`): `Name { .. }`, or with `@bare` only `Name`.
macro_rules! opaque_debug {
    (@bare $($name:ident $(<$lt:lifetime>)?),* $(,)?) => {$(
        impl<T> ::std::fmt::Debug for $name<$($lt,)? T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($name)).finish()
            }
        }
    )*};
    ($($name:ident $(<$lt:lifetime>)?),* $(,)?) => {$(
        impl<T> ::std::fmt::Debug for $name<$($lt,)? T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.pad(concat!(stringify!($name), " { .. }"))
            }
        }
    )*};
}
pub(crate) use opaque_debug;

/// Methods that only ask the original endpoint (its field `inner`),
/// each written here once with its docs: `delegate!(len, is_empty)`.
macro_rules! delegate {
    ($($name:ident),* $(,)?) => {$( $crate::flow::kernel::delegate!(@ $name); )*};
    (@ is_empty) => { $crate::flow::kernel::delegate!(@ is_empty -> bool, "Whether the channel is empty."); };
    (@ is_full) => { $crate::flow::kernel::delegate!(@ is_full -> bool, "Whether the channel is full."); };
    (@ len) => { $crate::flow::kernel::delegate!(@ len -> usize, "Messages in the channel."); };
    (@ capacity) => {
        $crate::flow::kernel::delegate!(@ capacity -> Option<usize>, "The channel's capacity; `None` when unbounded.");
    };
    (@ is_disconnected) => {
        $crate::flow::kernel::delegate!(@ is_disconnected -> bool, "Whether every receiver (or every sender) is gone.");
    };
    (@ is_closed) => { $crate::flow::kernel::delegate!(@ is_closed -> bool, "Whether the channel is closed."); };
    (@ sender_count) => { $crate::flow::kernel::delegate!(@ sender_count -> usize, "Senders of the channel."); };
    (@ receiver_count) => { $crate::flow::kernel::delegate!(@ receiver_count -> usize, "Receivers of the channel."); };
    (@ max_capacity) => {
        $crate::flow::kernel::delegate!(@ max_capacity -> usize, "The capacity the channel was made with.");
    };
    (@ strong_count) => { $crate::flow::kernel::delegate!(@ strong_count -> usize, "Senders of the channel alive."); };
    (@ weak_count) => { $crate::flow::kernel::delegate!(@ weak_count -> usize, "Weak senders of the channel alive."); };
    (@ sender_strong_count) => {
        $crate::flow::kernel::delegate!(@ sender_strong_count -> usize, "Senders of the channel alive.");
    };
    (@ sender_weak_count) => {
        $crate::flow::kernel::delegate!(@ sender_weak_count -> usize, "Weak senders of the channel alive.");
    };
    (@ closed) => {
        /// Completes when every receiver is gone (dropped or closed).
        pub async fn closed(&self) {
            self.inner.closed().await
        }
    };
    (@ same_channel) => {
        /// Whether both belong to the same channel.
        pub fn same_channel(&self, other: &Self) -> bool {
            self.inner.same_channel(&other.inner)
        }
    };
    (@ $name:ident -> $ret:ty, $doc:literal) => {
        #[doc = $doc]
        pub fn $name(&self) -> $ret {
            self.inner.$name()
        }
    };
}
pub(crate) use delegate;

/// `Clone` of endpoint types whose fields each clone on their own (a
/// counted endpoint is counted once more): `clone_fields!(Sender {
/// inner, count })`.
macro_rules! clone_fields {
    ($($name:ident $(<$lt:lifetime>)? { $($field:ident),* }),* $(,)?) => {$(
        impl<T> Clone for $name<$($lt,)? T> {
            fn clone(&self) -> Self {
                $name { $($field: self.$field.clone()),* }
            }
        }
    )*};
}
pub(crate) use clone_fields;

/// What a receive returned: a message in its envelope, or not.
pub(crate) trait Received {
    type Value;
    /// Opens the message, counted received at `site` with its latency.
    fn received(self, site: &'static FlowSite) -> Self::Value;
}

impl<T> Received for Option<Envelope<T>> {
    type Value = Option<T>;
    #[inline(always)]
    fn received(self, site: &'static FlowSite) -> Option<T> {
        self.map(|env| env.received(site))
    }
}

impl<T, E> Received for Result<Envelope<T>, E> {
    type Value = Result<T, E>;
    #[inline(always)]
    fn received(self, site: &'static FlowSite) -> Result<T, E> {
        self.map(|env| env.received(site))
    }
}

/// A receiving poll of the backend's own future or stream: its wait
/// timed with `wait`, its message opened only in the poll that returns
/// it (so a receive dropped before then takes none).
#[inline(always)]
pub(crate) fn polled<R: Received>(
    site: &'static FlowSite,
    wait: &mut Wait,
    p: Poll<R>,
) -> Poll<R::Value> {
    wait.after(site, &p, FlowSite::recv_waited);
    p.map(|r| r.received(site))
}

/// A sending poll of the backend's own future or sink, whose message is
/// `unsent` (started and not yet seen sent; cleared once it is): a
/// `Pending` starts its wait (the channel was full, of `capacity()`), a
/// `Ready` records the wait and, if the message went in, counts it with
/// `sent`. The error hands the message back opened.
#[inline(always)]
pub(crate) fn send_polled<E: Opened>(
    site: &'static FlowSite,
    wait: &mut Wait,
    unsent: &mut bool,
    p: Poll<Result<(), E>>,
    capacity: impl FnOnce() -> Option<usize>,
    sent: impl FnOnce(),
) -> Poll<Result<(), E::Value>> {
    match p {
        Poll::Pending => {
            // A send waits only when the channel is full.
            if *unsent && wait.pending(site) {
                full(site, capacity());
            }
            Poll::Pending
        }
        Poll::Ready(r) => {
            if ::std::mem::take(unsent) {
                wait.ready(site, FlowSite::send_waited);
                if r.is_ok() {
                    sent();
                }
            }
            Poll::Ready(r.map_err(Opened::opened))
        }
    }
}
