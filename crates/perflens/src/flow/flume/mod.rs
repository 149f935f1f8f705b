//! `flume`'s endpoints, measured (feature `flow-flume`).
//!
//! `perflens::channel!(flume::bounded(n))` (or `unbounded()`) returns a
//! [`Sender`] and a [`Receiver`] with flume's methods, errors, futures,
//! sink and stream; with `enabled` off these names are flume's own types
//! (`flume::Sender`, ..., `flume::r#async::SendFut`, ...).
//!
//! The async side: [`SendFut`] and [`RecvFut`] wrap flume's own futures,
//! so they wait, wake and cancel as flume's do. A received message is
//! opened (and counted) only once flume's future has returned it, so a
//! `recv_async` dropped inside a `select!` loses no message. A
//! `send_async` future (or a sink's started item) dropped before it
//! completed counts its message as sent: flume then either had already
//! handed it to a receiver (received) or drops it (dropped), so sent =
//! received + dropped + queued still holds.
//!
//! Not kept:
//! - `Sender::into_sink`: the measured sink answers `sender()` with the
//!   measured sender, which it must then borrow; [`Sender::sink`] is kept.
//! - `flume::Selector`: it takes flume's own endpoints.
//! - [`Drain`]'s `Debug` prints `Drain { .. }` (flume's prints the
//!   queued messages, with `T: Debug`).

pub use flume::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};

#[cfg(not(feature = "enabled"))]
pub use flume::r#async::{RecvFut, RecvStream, SendFut, SendSink};
#[cfg(not(feature = "enabled"))]
pub use flume::{Drain, IntoIter, Iter, Receiver, Sender, TryIter, WeakSender};

#[cfg(feature = "enabled")]
pub use measured::{
    Drain, IntoIter, Iter, Receiver, RecvFut, RecvStream, SendFut, SendSink, Sender, TryIter,
    WeakSender,
};

#[cfg(feature = "enabled")]
mod measured;
