//! `tokio::sync`'s channels, measured (feature `flow-tokio`).
//!
//! `perflens::channel!(tokio::sync::mpsc::channel(n))` (or
//! `mpsc::unbounded_channel()`, `oneshot::channel()`,
//! `broadcast::channel(n)`, `watch::channel(init)`) returns endpoints
//! with tokio's methods, errors, cancel-safety and traits; with `enabled`
//! off these names are tokio's own types, and each module re-exports
//! tokio's `error` module, so code that names them compiles both ways.
//!
//! ```
//! # #[cfg(feature = "enabled")] {
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use tokio::sync::mpsc::error::TrySendError;
//! let (tx, mut rx) = perflens::channel!(tokio::sync::mpsc::channel(1), label = "jobs");
//! tx.send(1u32).await.unwrap();
//! // Full: the message comes back, as from tokio itself.
//! assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
//! assert_eq!(rx.recv().await, Some(1));
//! # });
//! # }
//! ```
//!
//! What each kind counts (beyond channels made and endpoints alive):
//!
//! | kind | sent | received | dropped | max queued, capacity |
//! |---|---|---|---|---|
//! | [`mpsc`] bounded | messages accepted | messages received | queued when the receiver was dropped (tokio drops them then) | the channel's `max_capacity() - capacity()` after each send; `n` |
//! | [`mpsc`] unbounded | as above | as above | as above | a count the endpoints share; unbounded |
//! | [`oneshot`] | the value, when sent | the value, when received | sent, never received | 1; 1 |
//! | [`broadcast`] | one per receiver the value was sent to (`send`'s return) | one per receiver's receive (each receiver gets its own clone) | the copies a receiver skipped (`Lagged(n)`) or still had unread when dropped | the sender's `len()` after each send; `n` |
//! | [`watch`] | values sent (`send`, `send_replace`, `send_modify`, `send_if_modified` that modified) | changes observed (`changed()`, a `borrow_and_update` or `wait_for` that saw a new value) | none (a watch channel keeps only the last value) | none; 1 |
//!
//! So `sent = received + dropped + queued` for mpsc, oneshot and
//! broadcast; for watch, several sends between two looks are one
//! observed change, and each receiver observes its own.
//!
//! Waits: an async `send` (or `reserve`) on a full channel is timed from
//! when it finds no room to when it gets some; a `recv` (`changed`) on an
//! empty channel from its first `Pending` to its completion; a blocking
//! call when it finds the channel full (empty). Latency is send to
//! receive (for watch, to the `changed()` or `borrow_and_update()` that
//! observed the value).
//!
//! What is not kept: the constructors that make an endpoint without a
//! `perflens::channel!` site (`broadcast::Sender::new`,
//! `watch::Sender::new`, `Default` for `watch::Sender`): make the
//! channel with the macro. An endpoint's `Debug` prints no fields (so it
//! needs no `T: Debug`).

pub mod broadcast;
pub mod mpsc;
pub mod oneshot;
pub mod watch;
