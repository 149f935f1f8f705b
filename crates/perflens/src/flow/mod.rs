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
//! | `flow-std` | `flow::std` | `std::sync::mpsc`: `channel`, `sync_channel` |
//! | `flow-crossbeam` | `flow::crossbeam` | `crossbeam_channel`: `bounded`, `unbounded` |
//! | `flow-flume` | `flow::flume` | `flume`: `bounded`, `unbounded` (with `send_async`, `recv_async`, `sink`, `stream`) |
//! | `flow-async-channel` | `flow::async_channel` | `async_channel`: `bounded`, `unbounded` (the receiver a `Stream`) |
//! | `flow-futures` | `flow::futures` | `futures::channel` (`futures-channel`): `mpsc::channel`, `mpsc::unbounded`, `oneshot::channel` (senders `Sink`s, receivers `Stream`s or a `Future`) |
//! | `flow-tokio` | `flow::tokio` | `tokio::sync`: `mpsc::channel`, `mpsc::unbounded_channel`, `oneshot::channel`, `broadcast::channel`, `watch::channel` |
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
//! after sends: each of a thread's first 256 at a site, then one in 64,
//! and the capacity once a send found the channel full), the capacity, the time senders waited on a full
//! channel and receivers on an empty one, and the send-to-receive
//! latency. The counters live in each thread's own block (no shared
//! counter is written per message); see `perflens_core::flow`.
//!
//! Latency: each sending thread stamps every one of its first 256
//! messages at a site with its send time, then one in 8 at random
//! (`PERFLENS_FLOW_LATENCY=N`: one in N, `1`: every message); only a
//! stamped message's receiver reads the clock, and the row's
//! `latency_count` says how many were timed. `latency = false` on the
//! macro, or `PERFLENS_FLOW_LATENCY=0`, reads no clock: counts only.
//!
//! A primitive perflens does not wrap (an actor's mailbox, a custom
//! queue) reports its own events through a [`Probe`] and gets the same
//! row.
//!
//! What changes: each message is 16 bytes larger in the channel (its send
//! time and site), and a blocking `send`/`recv` first tries once without
//! blocking (to time only the waits), which is what the blocking call
//! does first anyway. An async send or receive wraps the backend's own
//! future: it waits and wakes as that one does, and a receive opens its
//! message only once the backend's future has returned it, so dropping
//! it (a `select!` branch not taken) loses no message. What a backend
//! cannot keep exactly is listed in its module's docs.

mod probe;
pub use probe::{Probe, Stamp};

#[cfg(feature = "enabled")]
mod envelope;
#[cfg(feature = "enabled")]
mod kernel;
#[cfg(feature = "enabled")]
mod wrapped;
#[cfg(feature = "enabled")]
pub use envelope::{Envelope, Wrap};
#[cfg(feature = "enabled")]
pub use wrapped::Measured;
#[cfg(all(feature = "enabled", feature = "flow-stream"))]
pub use wrapped::MeasuredStream;

#[cfg(feature = "flow-async-channel")]
pub mod async_channel;
#[cfg(feature = "flow-crossbeam")]
pub mod crossbeam;
#[cfg(feature = "flow-flume")]
pub mod flume;
#[cfg(feature = "flow-futures")]
pub mod futures;
#[cfg(feature = "flow-std")]
pub mod std;
#[cfg(feature = "flow-tokio")]
pub mod tokio;
