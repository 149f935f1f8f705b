//! `futures::channel`'s endpoints (the `futures-channel` crate),
//! measured (feature `flow-futures`).
//!
//! `perflens::channel!(futures::channel::mpsc::channel(n))` (or
//! `mpsc::unbounded()`, `oneshot::channel()`; spelled
//! `futures_channel::...` just as well) returns endpoints with the
//! original's methods, `Sink` and `Stream` implementations; with
//! `enabled` off these names are the original types.
//!
//! A bounded `mpsc` channel holds its buffer plus one message per
//! sender (each sender may always put one message in): its Capacity in
//! the report is that, the buffer plus the most senders it had, and its
//! Max queued is counted by the channel's own endpoints (it does not tell
//! its length). A send that finds the channel full counts the buffer
//! plus one (the message that parked this sender) as its queue.
//!
//! What differs:
//! - `mpsc::Sender::try_send` and `UnboundedSender::unbounded_send`
//!   return [`mpsc::TrySendError`], perflens's own, with the original's
//!   methods (`is_full`, `is_disconnected`, `into_inner`,
//!   `into_send_error`), `Debug`, `Display`, `Error`, `Clone` and `Eq`:
//!   the original's fields are private, so it cannot be built around a
//!   message taken out of its envelope.
//! - `Receiver::recv` returns [`mpsc::Recv`], perflens's own future of the
//!   same shape (`Recv<'_, Self>`, a `FusedFuture`), for the same reason.
//! - `oneshot::Sender::cancellation` returns [`oneshot::Cancellation`],
//!   perflens's own future of the same behaviour.
//! - `Debug` of a measured `mpsc` receiver prints `Receiver { .. }` (or
//!   `UnboundedReceiver { .. }`), and of the oneshot endpoints `Sender {
//!   .. }` and `Receiver { .. }` (the originals print their state).

/// `futures::channel::mpsc`, measured.
pub mod mpsc {
    pub use futures_channel::mpsc::{RecvError, SendError, TryRecvError};

    #[cfg(not(feature = "enabled"))]
    pub use futures_channel::mpsc::{
        Receiver, Recv, Sender, TrySendError, UnboundedReceiver, UnboundedSender,
    };

    #[cfg(feature = "enabled")]
    pub use super::measured::mpsc::{
        Receiver, Recv, Sender, TrySendError, UnboundedReceiver, UnboundedSender,
    };
}

/// `futures::channel::oneshot`, measured.
pub mod oneshot {
    pub use futures_channel::oneshot::Canceled;

    #[cfg(not(feature = "enabled"))]
    pub use futures_channel::oneshot::{Cancellation, Receiver, Sender};

    #[cfg(feature = "enabled")]
    pub use super::measured::oneshot::{Cancellation, Receiver, Sender};
}

#[cfg(feature = "enabled")]
mod measured;
