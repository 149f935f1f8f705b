//! Trace export: timelines written in formats that trace viewers load.
//!
//! A trace is a timeline of what each thread and each task did, with
//! arrows between related events, as opposed to the aggregates of the
//! rest of this crate. These modules hold the file formats; they encode
//! what they are given and record nothing themselves.
//!
//! - [`pftrace`]: native Perfetto protobuf (`.pftrace`), which Perfetto UI
//!   and `trace_processor` read directly.

pub mod pftrace;
