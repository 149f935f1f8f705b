//! `perflens::future!` and `perflens::stream!`: a future or stream with
//! its own behaviour, counted per site.
//!
//! A wrapped future is polled exactly when and as often as the inner
//! one; its output is the inner one's. It is `Unpin` when the inner
//! future is, and a `FusedFuture` when the inner one is (with the
//! `flow-stream` feature, which brings `futures-core`). A wrapped stream
//! yields the inner stream's items, with its `size_hint`, `Unpin` and
//! `FusedStream` likewise.

use ::std::future::Future;
use ::std::pin::Pin;
use ::std::task::{Context, Poll};
use perflens_core::FlowSite;

/// A future counted at its site: polls, time inside them, wall time to
/// completion, and whether it completed or was dropped first.
#[must_use = "futures do nothing unless polled"]
pub struct Measured<F> {
    inner: F,
    site: &'static FlowSite,
    /// Clock when made (0: not timed).
    created: u64,
    /// Ticks inside its polls so far.
    busy: u64,
    done: bool,
}

impl<F> Measured<F> {
    /// `inner`, counted at `site`. Used by `perflens::future!`.
    #[doc(hidden)]
    pub fn new(site: &'static FlowSite, inner: F) -> Measured<F> {
        Measured {
            inner,
            site,
            created: site.made(),
            busy: 0,
            done: false,
        }
    }
}

impl<F: Future> Future for Measured<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: never moved out of
        // `self` (not here, not in Drop); the other fields are plain data.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above; `this` outlives the pinned borrow.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let began = this.site.clock();
        let r = inner.poll(cx);
        let ready = r.is_ready();
        this.busy = (this.site).future_polled(began, ready, this.created, this.busy);
        this.done |= ready;
        r
    }
}

impl<F> Drop for Measured<F> {
    fn drop(&mut self) {
        if !self.done {
            self.site.future_cancelled(self.created);
        }
    }
}

#[cfg(feature = "flow-stream")]
impl<F: futures_core::FusedFuture> futures_core::FusedFuture for Measured<F> {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

/// A stream counted at its site: items, polls, `Pending` polls, the time
/// to its first item, the intervals between items, and whether it ended
/// or was dropped first.
#[cfg(feature = "flow-stream")]
#[must_use = "streams do nothing unless polled"]
pub struct MeasuredStream<S> {
    inner: S,
    site: &'static FlowSite,
    /// Clock when made or when it last yielded an item (0: not timed).
    last: u64,
    items: bool,
    ended: bool,
}

#[cfg(feature = "flow-stream")]
impl<S> MeasuredStream<S> {
    /// `inner`, counted at `site`. Used by `perflens::stream!`.
    #[doc(hidden)]
    pub fn new(site: &'static FlowSite, inner: S) -> MeasuredStream<S> {
        site.stream_made();
        MeasuredStream {
            inner,
            site,
            last: site.made(),
            items: false,
            ended: false,
        }
    }
}

#[cfg(feature = "flow-stream")]
impl<S: futures_core::Stream> futures_core::Stream for MeasuredStream<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        // SAFETY: `inner` is structurally pinned, as in `Measured`.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let r = inner.poll_next(cx);
        match &r {
            Poll::Pending => {
                this.site.stream_polled(None);
            }
            Poll::Ready(Some(_)) => {
                let first = !this.items;
                this.items = true;
                this.last = this.site.stream_polled(Some((this.last, first)));
            }
            Poll::Ready(None) => {
                this.site.stream_ended(!this.ended);
                this.ended = true;
            }
        }
        r
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

#[cfg(feature = "flow-stream")]
impl<S: futures_core::FusedStream> futures_core::FusedStream for MeasuredStream<S> {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

#[cfg(feature = "flow-stream")]
impl<S> Drop for MeasuredStream<S> {
    fn drop(&mut self) {
        if !self.ended {
            self.site.stream_dropped();
        }
    }
}
