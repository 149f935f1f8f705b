//! Endpoints alive: one counter for senders and receivers, the only way
//! a measured endpoint counts itself.

use perflens_core::FlowSite;

/// One endpoint of a channel made at a site (a sender when `SENDER`, else
/// a receiver), counted alive when made or cloned and until dropped,
/// wherever the original endpoint beside it goes (an owned permit or an
/// owning future holds one).
pub(crate) struct Endpoint<const SENDER: bool>(pub(crate) &'static FlowSite);

/// A sender alive.
pub(crate) type SenderCount = Endpoint<true>;
/// A receiver alive.
pub(crate) type ReceiverCount = Endpoint<false>;

/// A channel made at `site`, of `capacity` (`None`: unbounded): counted
/// made, with its first sender and receiver.
pub(crate) fn made(
    site: &'static FlowSite,
    capacity: Option<usize>,
) -> (SenderCount, ReceiverCount) {
    site.created(capacity);
    (SenderCount::new(site), ReceiverCount::new(site))
}

impl<const SENDER: bool> Endpoint<SENDER> {
    /// Counts a new endpoint (a channel's first, a clone, an upgrade).
    #[inline]
    pub(crate) fn new(site: &'static FlowSite) -> Endpoint<SENDER> {
        if SENDER {
            site.senders(1);
        } else {
            site.receivers(1);
        }
        Endpoint(site)
    }

    /// Its channel's site.
    #[inline(always)]
    pub(crate) fn site(&self) -> &'static FlowSite {
        self.0
    }
}

impl<const SENDER: bool> Clone for Endpoint<SENDER> {
    fn clone(&self) -> Endpoint<SENDER> {
        Endpoint::new(self.0)
    }
}

impl<const SENDER: bool> Drop for Endpoint<SENDER> {
    #[inline]
    fn drop(&mut self) {
        if SENDER {
            self.0.senders(-1);
        } else {
            self.0.receivers(-1);
        }
    }
}
