//! `tokio::sync::mpsc`, measured: `channel(n)` and `unbounded_channel()`.
//!
//! Every method of tokio's endpoints, with its signature, errors and
//! cancel-safety: `recv` and `recv_many` poll tokio's own receiver and
//! open a message only in the poll that returns it, so a `recv` dropped
//! in a `select!` loses nothing. An async `send` (`reserve`,
//! `reserve_owned`, `send_timeout`) holds the plain message while it
//! waits for a permit, then sends through it: cancelled, it drops the
//! message as tokio's does, and no message is counted. The unbounded
//! channel's endpoints share one count of the messages queued (tokio's
//! unbounded sender cannot tell), for its Max queued.

pub use ::tokio::sync::mpsc::error;

#[cfg(not(feature = "enabled"))]
pub use ::tokio::sync::mpsc::{
    OwnedPermit, Permit, PermitIterator, Receiver, Sender, UnboundedReceiver, UnboundedSender,
    WeakSender, WeakUnboundedSender,
};

#[cfg(feature = "enabled")]
pub use measured::{
    OwnedPermit, Permit, PermitIterator, Receiver, Sender, UnboundedReceiver, UnboundedSender,
    WeakSender, WeakUnboundedSender,
};

#[cfg(feature = "enabled")]
mod measured;
