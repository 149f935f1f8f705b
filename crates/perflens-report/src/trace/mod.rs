//! Trace export: timelines of what each thread and each task did, with
//! arrows between related events (as opposed to the aggregates of the
//! rest of this crate), laid out on tracks and written in the formats
//! trace viewers load.
//!
//! Trace recording (`PERFLENS_TRACE`) hands the exporter threads, polls
//! and spans with timestamps. The modules here work on plain data, so
//! that each decision and each byte can be tested exactly without
//! running a program; they record nothing, read no environment variable
//! and open no file (the facade reads `PERFLENS_TRACE_*` and passes the
//! values in):
//!
//! - [`collapse`]: short-lived threads packed into the fewest shared
//!   tracks, named `short-lived threads (k)`, so a program that spawns
//!   thousands of brief threads does not draw thousands of near-empty
//!   tracks;
//! - [`model`]: the [`Timeline`](model::Timeline) a recorded trace makes:
//!   each thread's measured calls as nested slices;
//! - [`chrome`]: Chrome Trace Event JSON, which Perfetto UI and
//!   `chrome://tracing` load;
//! - [`pftrace`]: native Perfetto protobuf (`.pftrace`), which Perfetto UI
//!   and `trace_processor` read directly.

pub mod chrome;
pub mod collapse;
pub mod model;
pub mod pftrace;
