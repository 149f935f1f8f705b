//! `tokio::sync::oneshot`, measured: `channel()`.
//!
//! The receiver is a future, as tokio's, and opens the value only in the
//! poll that returns it. A value sent and never received (the receiver
//! dropped, or closed, first) is counted as dropped. Capacity 1, and Max
//! queued 1 once a value was sent.

pub use ::tokio::sync::oneshot::error;

#[cfg(not(feature = "enabled"))]
pub use ::tokio::sync::oneshot::{Receiver, Sender};

#[cfg(feature = "enabled")]
pub use measured::{Receiver, Sender};

#[cfg(feature = "enabled")]
mod measured {
    use super::super::{Receivers, Senders, Waiting};
    use super::error::{RecvError, TryRecvError};
    use crate::flow::{Envelope, Wrap};
    use ::std::fmt;
    use ::std::future::Future;
    use ::std::pin::Pin;
    use ::std::task::{Context, Poll};
    use ::tokio::sync::oneshot;
    use perflens_core::FlowSite;

    /// The sending half of a measured oneshot channel.
    pub struct Sender<T> {
        inner: oneshot::Sender<Envelope<T>>,
        count: Senders,
    }

    /// The receiving half of a measured oneshot channel: a future of the
    /// value.
    pub struct Receiver<T> {
        inner: oneshot::Receiver<Envelope<T>>,
        count: Receivers,
        waiting: Waiting,
    }

    impl<T> Wrap for (oneshot::Sender<Envelope<T>>, oneshot::Receiver<Envelope<T>>) {
        type Measured = (Sender<T>, Receiver<T>);
        fn wrap(self, site: &'static FlowSite, _capacity: Option<usize>) -> Self::Measured {
            site.created(Some(1));
            (
                Sender {
                    inner: self.0,
                    count: Senders::new(site),
                },
                Receiver {
                    inner: self.1,
                    count: Receivers::new(site),
                    waiting: Waiting::default(),
                },
            )
        }
    }

    impl<T> Sender<T> {
        /// Sends the value; hands it back if the receiver is gone (or
        /// closed).
        pub fn send(self, t: T) -> Result<(), T> {
            let Sender { inner, count } = self;
            let site = count.0;
            match inner.send(Envelope::seal(t, site, site.stamp())) {
                Ok(()) => {
                    site.sent(Some(1));
                    Ok(())
                }
                Err(env) => Err(env.into_value()),
            }
        }

        /// Completes when the receiver is dropped or closed.
        pub async fn closed(&mut self) {
            self.inner.closed().await
        }

        /// Whether the receiver is dropped or closed.
        pub fn is_closed(&self) -> bool {
            self.inner.is_closed()
        }

        /// Polls for the receiver to be dropped or closed.
        pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
            self.inner.poll_closed(cx)
        }
    }

    impl<T> fmt::Debug for Sender<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Sender { .. }")
        }
    }

    impl<T> Receiver<T> {
        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            let (value, stamp) = env.open();
            self.count.0.received(stamp);
            value
        }

        /// Refuses the value from now on (a later `send` hands it back);
        /// a value already sent can still be received.
        pub fn close(&mut self) {
            self.inner.close()
        }

        /// Whether the receiver has returned its value or error (polling
        /// it again panics).
        pub fn is_terminated(&self) -> bool {
            self.inner.is_terminated()
        }

        /// Whether no value is waiting in the channel.
        pub fn is_empty(&self) -> bool {
            self.inner.is_empty()
        }

        /// Receives the value if it was sent.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let r = self.inner.try_recv();
            r.map(|env| self.got(env))
        }

        /// Receives from outside a runtime, blocking for the value
        /// (panics inside an async context, as tokio's).
        pub fn blocking_recv(self) -> Result<T, RecvError> {
            let site = self.count.0;
            let since = if self.inner.is_empty() {
                site.clock()
            } else {
                0
            };
            let Receiver { inner, count, .. } = self;
            let r = inner.blocking_recv();
            site.recv_waited(since);
            let r = r.map(|env| {
                let (value, stamp) = env.open();
                site.received(stamp);
                value
            });
            drop(count);
            r
        }
    }

    impl<T> Future for Receiver<T> {
        type Output = Result<T, RecvError>;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
            let me = self.get_mut();
            let site = me.count.0;
            let p = Pin::new(&mut me.inner).poll(cx);
            me.waiting.after(site, &p, FlowSite::recv_waited);
            p.map(|r| r.map(|env| me.got(env)))
        }
    }

    impl<T> fmt::Debug for Receiver<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Receiver { .. }")
        }
    }
}
