//! The blocking endpoints' methods, written once for every backend whose
//! original has them (std's, crossbeam's, flume's): the sends (a first
//! non-blocking try, then the backend's own blocking call, its wait
//! timed), the receives, and the errors that hand a message back opened.

/// A backend's error over a message in its envelope: the same error over
/// the value, taken out without counting a drop.
pub(crate) trait Opened {
    type Value;
    fn opened(self) -> Self::Value;
}

/// [`Opened`] for a backend's error types: `opened!(SendError(),
/// TrySendError { Full, Disconnected })` (a tuple struct, or an enum and
/// its variants, each holding the message).
macro_rules! opened {
    (@ $e:ident, $err:ident) => {{
        let $err(env) = $e;
        $err(env.into_value())
    }};
    (@ $e:ident, $err:ident { $($variant:ident),* }) => {
        match $e {
            $($err::$variant(env) => $err::$variant(env.into_value()),)*
        }
    };
    ($($err:ident $(( ))? $({ $($variant:ident),* })?),* $(,)?) => {$(
        impl<T> $crate::flow::kernel::Opened for $err<$crate::flow::Envelope<T>> {
            type Value = $err<T>;
            #[inline(always)]
            fn opened(self) -> $err<T> {
                $crate::flow::kernel::opened!(@ self, $err $({ $($variant),* })?)
            }
        }
    )*};
}
pub(crate) use opened;

/// A blocking sender's `try_send` and its blocking send `$send` (and
/// with `timeouts`, `send_timeout` and `send_deadline`) over its
/// original `inner` and the backend's errors in scope (`SendError`,
/// `TrySendError` whose variant `$gone` says the channel is
/// disconnected, `SendTimeoutError`, each [`Opened`]). The sender has
/// `site()`, `sent()` (counts a message accepted) and `found_full()`.
macro_rules! blocking_sends {
    ($send:ident, $gone:ident $(, $timeouts:ident)?) => {
        /// The first, non-blocking try of every send: its message sealed
        /// and, if accepted, counted; a full channel noted.
        #[inline(always)]
        fn try_first(&self, msg: T) -> Result<(), TrySendError<$crate::flow::Envelope<T>>> {
            let site = self.site();
            let r = self.inner.try_send($crate::flow::Envelope::seal(msg, site, site.stamp()));
            match &r {
                Ok(()) => self.sent(),
                Err(TrySendError::Full(_)) => self.found_full(),
                Err(TrySendError::$gone(_)) => {}
            }
            r
        }

        /// Sends as a blocking call would wait for room, timing the wait.
        fn blocked<E>(&self, send: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
            let site = self.site();
            let r = $crate::flow::kernel::waited(site, ::perflens_core::FlowSite::send_waited, send);
            if r.is_ok() {
                self.sent();
            }
            r
        }

        /// Blocks until the message is sent, or returns it when every
        /// receiver is gone.
        pub fn $send(&self, msg: T) -> Result<(), SendError<T>> {
            use $crate::flow::kernel::Opened;
            match self.try_first(msg) {
                Ok(()) => Ok(()),
                Err(TrySendError::$gone(env)) => Err(SendError(env.into_value())),
                Err(TrySendError::Full(env)) => {
                    self.blocked(|| self.inner.$send(env)).map_err(Opened::opened)
                }
            }
        }

        /// Sends without blocking; a full channel hands the message back.
        pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
            self.try_first(msg).map_err($crate::flow::kernel::Opened::opened)
        }

        $($crate::flow::kernel::blocking_sends!(@ $timeouts);)?
    };
    (@ timeouts) => {
        /// Blocks at most `timeout` for room.
        pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
            self.send_waiting(msg, |env| self.inner.send_timeout(env, timeout))
        }

        /// Blocks until `deadline` at most for room.
        pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
            self.send_waiting(msg, |env| self.inner.send_deadline(env, deadline))
        }

        /// A send that waits with `wait` (the backend's own) if the first
        /// try found the channel full.
        fn send_waiting<W>(&self, msg: T, wait: W) -> Result<(), SendTimeoutError<T>>
        where
            W: FnOnce(
                $crate::flow::Envelope<T>,
            ) -> Result<(), SendTimeoutError<$crate::flow::Envelope<T>>>,
        {
            use $crate::flow::kernel::Opened;
            match self.try_first(msg) {
                Ok(()) => Ok(()),
                Err(TrySendError::Disconnected(env)) => {
                    Err(SendTimeoutError::Disconnected(env.into_value()))
                }
                Err(TrySendError::Full(env)) => {
                    self.blocked(|| wait(env)).map_err(Opened::opened)
                }
            }
        }
    };
}
pub(crate) use blocking_sends;

/// A blocking receiver's `try_recv` and its blocking receive `$recv`
/// (`$gone`: its error once every sender is gone), and the timed ones
/// named (`recv_timeout`, `recv_deadline`), over its original `inner` and
/// the backend's errors in scope. The receiver has `got(env)` (a
/// received message's value).
macro_rules! blocking_recvs {
    ($recv:ident -> $gone:expr $(, $timed:ident)*) => {
        /// Receives as a blocking call: a message now, or else `wait`
        /// for one (timed); `gone` when the channel is empty and
        /// disconnected.
        #[inline(always)]
        fn recv_with<E>(
            &self,
            gone: E,
            wait: impl FnOnce() -> Result<$crate::flow::Envelope<T>, E>,
        ) -> Result<T, E> {
            let (site, first) = (self.site(), self.inner.try_recv());
            let empty = |e: &TryRecvError| matches!(e, TryRecvError::Empty);
            $crate::flow::kernel::recv_with(site, first, empty, gone, wait).map(|env| self.got(env))
        }

        /// Blocks until a message arrives, or every sender is gone and the
        /// channel is empty.
        pub fn $recv(&self) -> Result<T, RecvError> {
            self.recv_with($gone, || self.inner.$recv())
        }

        /// Receives without blocking.
        pub fn try_recv(&self) -> Result<T, TryRecvError> {
            self.inner.try_recv().map(|env| self.got(env))
        }

        $($crate::flow::kernel::blocking_recvs!(@ $timed);)*
    };
    (@ recv_timeout) => {
        /// Blocks at most `timeout` for a message.
        pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
            let gone = RecvTimeoutError::Disconnected;
            self.recv_with(gone, || self.inner.recv_timeout(timeout))
        }
    };
    (@ recv_deadline) => {
        /// Blocks until `deadline` at most for a message.
        pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
            let gone = RecvTimeoutError::Disconnected;
            self.recv_with(gone, || self.inner.recv_deadline(deadline))
        }
    };
}
pub(crate) use blocking_recvs;
