//! `tokio::sync::watch`, measured: `channel(init)`.
//!
//! A watch channel holds one value and no queue, so it counts values
//! sent (`send`, `send_replace`, `send_modify`, and `send_if_modified`
//! when it modified) and changes observed: a `changed()` that returns
//! `Ok`, and a `borrow_and_update()` or `wait_for` whose value is new to
//! the receiver. Several sends between two looks are one observed
//! change, and each receiver observes its own, so sent and received need
//! not match; nothing is ever dropped. The latency of an observed change
//! is from the send of the value the receiver then sees (for
//! `changed()`, the value current when it returns) to the observation.
//! Capacity 1; no Max queued. `borrow()` returns this module's [`Ref`],
//! which derefs to the value as tokio's does.

pub use ::tokio::sync::watch::error;

#[cfg(not(feature = "enabled"))]
pub use ::tokio::sync::watch::{Receiver, Ref, Sender};

#[cfg(feature = "enabled")]
pub use measured::{Receiver, Ref, Sender};

#[cfg(feature = "enabled")]
mod measured {
    use super::error::{RecvError, SendError};
    use crate::flow::Envelope;
    use crate::flow::kernel::{
        Opened, ReceiverCount, clone_fields, delegate, opaque_debug, opened, pair, timed,
    };
    use ::std::fmt;
    use ::std::ops::Deref;
    use ::tokio::sync::watch;
    use perflens_core::FlowSite;

    pair! {
        /// The sending half of a measured watch channel.
        Sender(watch::Sender),
        /// A receiving half of a measured watch channel.
        Receiver(watch::Receiver);
        |_, _| Some(1)
    }

    /// A borrow of a watch channel's value (holds its read lock, as
    /// tokio's `Ref`), deref'ing to the value.
    pub struct Ref<'a, T> {
        inner: watch::Ref<'a, Envelope<T>>,
    }

    opened!(SendError());

    impl<T> Sender<T> {
        /// Replaces the value and notifies the receivers; hands the value
        /// back (storing nothing) when there is no receiver.
        pub fn send(&self, value: T) -> Result<(), SendError<T>> {
            let site = self.site();
            match self.inner.send(Envelope::stamped(value, site.stamp())) {
                Ok(()) => {
                    site.sent(None);
                    Ok(())
                }
                Err(e) => Err(e.opened()),
            }
        }

        /// Changes the value in place and notifies the receivers (even
        /// with none).
        pub fn send_modify<F>(&self, modify: F)
        where
            F: FnOnce(&mut T),
        {
            let site = self.site();
            let stamp = site.stamp();
            self.inner.send_modify(|env| {
                modify(env.value_mut());
                env.restamp(stamp);
            });
            site.sent(None);
        }

        /// Changes the value in place, notifying the receivers only if
        /// `modify` returns true (returned).
        pub fn send_if_modified<F>(&self, modify: F) -> bool
        where
            F: FnOnce(&mut T) -> bool,
        {
            let site = self.site();
            let stamp = site.stamp();
            let modified = self.inner.send_if_modified(|env| {
                let m = modify(env.value_mut());
                if m {
                    env.restamp(stamp);
                }
                m
            });
            if modified {
                site.sent(None);
            }
            modified
        }

        /// Replaces the value (even with no receiver), returning the old
        /// one.
        pub fn send_replace(&self, value: T) -> T {
            let site = self.site();
            let old = self
                .inner
                .send_replace(Envelope::stamped(value, site.stamp()));
            site.sent(None);
            old.into_value()
        }

        /// The current value.
        pub fn borrow(&self) -> Ref<'_, T> {
            Ref {
                inner: self.inner.borrow(),
            }
        }

        /// A new receiver, which has seen the current value.
        pub fn subscribe(&self) -> Receiver<T> {
            Receiver {
                inner: self.inner.subscribe(),
                count: ReceiverCount::new(self.site()),
            }
        }

        delegate!(
            closed,
            is_closed,
            receiver_count,
            sender_count,
            same_channel
        );
    }

    impl<T> Receiver<T> {
        /// The current value, without marking it seen.
        pub fn borrow(&self) -> Ref<'_, T> {
            Ref {
                inner: self.inner.borrow(),
            }
        }

        /// The current value, marked seen (an observed change when it
        /// was new to this receiver).
        pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
            let site = self.site();
            let inner = self.inner.borrow_and_update();
            if inner.has_changed() {
                site.received(inner.stamp());
            }
            Ref { inner }
        }

        /// Whether the value changed since this receiver last saw it;
        /// `Err` when every sender is gone.
        pub fn has_changed(&self) -> Result<bool, RecvError> {
            self.inner.has_changed()
        }

        /// Marks the current value unseen.
        pub fn mark_changed(&mut self) {
            self.inner.mark_changed()
        }

        /// Marks the current value seen (not an observed change).
        pub fn mark_unchanged(&mut self) {
            self.inner.mark_unchanged()
        }

        /// Waits for a value this receiver has not seen, and marks it
        /// seen; `Err` when every sender is gone. Cancel-safe, as tokio's.
        pub async fn changed(&mut self) -> Result<(), RecvError> {
            let site = self.site();
            let r = timed(site, self.inner.changed(), FlowSite::recv_waited).await;
            if r.is_ok() {
                let stamp = self.inner.borrow().stamp();
                site.received(stamp);
            }
            r
        }

        /// Waits for a value for which `f` is true (the current one
        /// included), marking it seen.
        pub async fn wait_for(
            &mut self,
            mut f: impl FnMut(&T) -> bool,
        ) -> Result<Ref<'_, T>, RecvError> {
            let site = self.site();
            let inner = timed(
                site,
                self.inner.wait_for(|env| f(env.value())),
                FlowSite::recv_waited,
            )
            .await?;
            if inner.has_changed() {
                site.received(inner.stamp());
            }
            Ok(Ref { inner })
        }

        delegate!(is_closed, same_channel);
    }

    impl<T> Ref<'_, T> {
        /// Whether the value was new to the receiver that borrowed it
        /// (`borrow_and_update`, `wait_for`).
        pub fn has_changed(&self) -> bool {
            self.inner.has_changed()
        }
    }

    impl<T> Deref for Ref<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.inner.value()
        }
    }

    impl<T: fmt::Debug> fmt::Debug for Ref<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&**self, f)
        }
    }

    opaque_debug!(Sender, Receiver);

    clone_fields!(Sender { inner, count }, Receiver { inner, count });
}
