//! Data flow: channels measured with their own types' behaviour.
//!
//! `perflens::channel!(constructor(args))` makes the channel with its own
//! constructor and returns measured endpoints: every method keeps the
//! original's signature and behaviour (capacity, backpressure, the errors
//! that hand the message back, disconnection), and each message carries
//! the time it was sent, beside it in the channel's own slot, so the
//! receiver records its latency. With the `enabled` feature off the macro
//! is the constructor call itself and the aliases below are the original
//! types, so code that names them compiles both ways:
//!
//! | feature | module | wraps |
//! |---|---|---|
//! | `flow-std` | [`flow::std`](self::std) | `std::sync::mpsc`: `channel`, `sync_channel` |
//! | `flow-crossbeam` | [`flow::crossbeam`](self::crossbeam) | `crossbeam_channel`: `bounded`, `unbounded` |
//! | `flow-tokio` | [`flow::tokio`](self::tokio) | `tokio::sync`: `mpsc::channel`, `mpsc::unbounded_channel`, `oneshot::channel`, `broadcast::channel`, `watch::channel` |
//!
//! ```
//! # #[cfg(feature = "flow-crossbeam")] {
//! let (tx, rx) = perflens::channel!(crossbeam_channel::bounded(2), label = "jobs");
//! tx.send(1u32).unwrap();
//! tx.try_send(2).unwrap();
//! // Full: the message comes back, as from crossbeam itself.
//! assert_eq!(tx.try_send(3), Err(crossbeam_channel::TrySendError::Full(3)));
//! assert_eq!(rx.recv(), Ok(1));
//! # }
//! ```
//!
//! What is counted, per site (its `label`, or else the macro's
//! `file:line:col`), summed over its channels and the threads that used
//! them: channels made, senders and receivers alive, messages sent and
//! received, messages still queued when their channel was dropped, the
//! queue now (sent − received − dropped) and its maximum (seen right
//! after each send), the capacity, the time senders waited on a full
//! channel and receivers on an empty one, and the send-to-receive
//! latency. The counters live in each thread's own block (no shared
//! counter is written per message); see `perflens_core::flow`.
//! `latency = false` on the macro, or `PERFLENS_FLOW_LATENCY=0`, reads
//! no clock: counts only.
//!
//! What changes: each message is 16 bytes larger in the channel (its send
//! time and site), and a blocking `send`/`recv` first tries once without
//! blocking (to time only the waits), which is what the blocking call
//! does first anyway.

#[cfg(feature = "enabled")]
mod envelope;
#[cfg(feature = "enabled")]
pub use envelope::{Envelope, Wrap};

#[cfg(feature = "flow-crossbeam")]
pub mod crossbeam;
#[cfg(feature = "flow-std")]
pub mod std;
#[cfg(feature = "flow-tokio")]
pub mod tokio;
