//! A message as a measured channel holds it, and the trait that wraps a
//! constructor's endpoints.

use ::std::mem::ManuallyDrop;
use perflens_core::FlowSite;

/// A message in a measured channel: the value, the clock when it was sent
/// (0: not timed), and its site, which counts it as dropped with the
/// channel if it is never received. Not meant to be used by hand.
#[doc(hidden)]
pub struct Envelope<T> {
    value: ManuallyDrop<T>,
    stamp: u64,
    site: Option<&'static FlowSite>,
}

// Used by the channel backends, each behind a feature of its own.
#[allow(dead_code)]
impl<T> Envelope<T> {
    /// `value`, sent now from `site` (`stamp`: [`FlowSite::clock`]).
    #[inline(always)]
    pub(crate) fn seal(value: T, site: &'static FlowSite, stamp: u64) -> Envelope<T> {
        Envelope {
            value: ManuallyDrop::new(value),
            stamp,
            site: Some(site),
        }
    }

    /// A value that was never sent (a watch channel's first): not counted
    /// when dropped.
    pub fn unsent(value: T) -> Envelope<T> {
        Envelope {
            value: ManuallyDrop::new(value),
            stamp: 0,
            site: None,
        }
    }

    /// `value`, sent now (`stamp`), that counts no drop: for channels
    /// whose slots are dropped by other rules than "never received"
    /// (tokio's broadcast and watch, which drop a value once every
    /// receiver has seen it, or when it is replaced).
    #[cfg(feature = "flow-tokio")]
    #[inline(always)]
    pub(crate) fn stamped(value: T, stamp: u64) -> Envelope<T> {
        Envelope {
            value: ManuallyDrop::new(value),
            stamp,
            site: None,
        }
    }

    /// The value, in place.
    #[cfg(feature = "flow-tokio")]
    #[inline(always)]
    pub(crate) fn value(&self) -> &T {
        &self.value
    }

    /// The value, to change in place.
    #[cfg(feature = "flow-tokio")]
    #[inline(always)]
    pub(crate) fn value_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The clock when it was sent (0: not timed).
    #[cfg(feature = "flow-tokio")]
    #[inline(always)]
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Marks the value as sent again at `stamp` (changed in place).
    #[cfg(feature = "flow-tokio")]
    #[inline(always)]
    pub(crate) fn restamp(&mut self, stamp: u64) {
        self.stamp = stamp;
    }

    /// The value and its send time, without counting a drop.
    #[inline(always)]
    pub(crate) fn open(self) -> (T, u64) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used again nor dropped (ManuallyDrop), so
        // the value is taken out exactly once and its envelope's `Drop`
        // does not run.
        let value = unsafe { ManuallyDrop::take(&mut me.value) };
        (value, me.stamp)
    }

    /// The value of a received message, its latency recorded at `site`.
    #[inline(always)]
    pub(crate) fn received(self, site: &'static FlowSite) -> T {
        let (value, stamp) = self.open();
        site.received(stamp);
        value
    }

    /// The value, without counting a drop (an error handing it back).
    #[inline(always)]
    pub(crate) fn into_value(self) -> T {
        self.open().0
    }
}

impl<T> Drop for Envelope<T> {
    /// Runs only for a message dropped unreceived (with its channel):
    /// received and handed-back messages are opened instead.
    fn drop(&mut self) {
        if let Some(site) = self.site {
            site.dropped_in_queue(1);
        }
        // SAFETY: `drop` runs once, and `open` (the only other place that
        // takes the value) forgets the envelope, so the value is still
        // there and is dropped exactly once.
        unsafe { ManuallyDrop::drop(&mut self.value) };
    }
}

impl<T: Clone> Clone for Envelope<T> {
    fn clone(&self) -> Envelope<T> {
        Envelope {
            value: self.value.clone(),
            stamp: self.stamp,
            site: self.site,
        }
    }
}

/// The endpoints a constructor returned, as measured endpoints of the
/// same backend. Implemented for each backend's endpoint types; used by
/// `perflens::channel!`.
#[doc(hidden)]
pub trait Wrap {
    /// The measured endpoints.
    type Measured;
    /// Wraps the endpoints of one new channel made at `site`, of
    /// `capacity` when the constructor took one.
    fn wrap(self, site: &'static FlowSite, capacity: Option<usize>) -> Self::Measured;
}
