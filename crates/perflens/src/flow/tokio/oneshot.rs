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
    use super::error::{RecvError, TryRecvError};
    use crate::flow::Envelope;
    use crate::flow::kernel::{Wait, clock_if, delegate, opaque_debug, pair, polled};
    use ::std::future::Future;
    use ::std::pin::Pin;
    use ::std::task::{Context, Poll};
    use ::tokio::sync::oneshot;

    pair! {
        /// The sending half of a measured oneshot channel.
        Sender(oneshot::Sender),
        /// The receiving half of a measured oneshot channel: a future of
        /// the value.
        Receiver(oneshot::Receiver) { waiting: Wait = Wait::default() };
        |_, _| Some(1)
    }

    impl<T> Sender<T> {
        /// Sends the value; hands it back if the receiver is gone (or
        /// closed).
        pub fn send(self, t: T) -> Result<(), T> {
            let Sender { inner, count } = self;
            let site = count.site();
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

        /// Polls for the receiver to be dropped or closed.
        pub fn poll_closed(&mut self, cx: &mut Context<'_>) -> Poll<()> {
            self.inner.poll_closed(cx)
        }

        delegate!(is_closed);
    }

    impl<T> Receiver<T> {
        #[inline(always)]
        fn got(&self, env: Envelope<T>) -> T {
            env.received(self.site())
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

        /// Receives the value if it was sent.
        pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
            let r = self.inner.try_recv();
            r.map(|env| self.got(env))
        }

        /// Receives from outside a runtime, blocking for the value
        /// (panics inside an async context, as tokio's).
        pub fn blocking_recv(self) -> Result<T, RecvError> {
            let site = self.site();
            let since = clock_if(site, self.inner.is_empty());
            let Receiver { inner, count, .. } = self;
            let r = inner.blocking_recv();
            site.recv_waited(since);
            let r = r.map(|env| env.received(site));
            drop(count);
            r
        }

        delegate!(is_empty);
    }

    impl<T> Future for Receiver<T> {
        type Output = Result<T, RecvError>;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, RecvError>> {
            let me = self.get_mut();
            let site = me.count.site();
            let p = Pin::new(&mut me.inner).poll(cx);
            polled(site, &mut me.waiting, p)
        }
    }

    opaque_debug!(Sender, Receiver);
}
