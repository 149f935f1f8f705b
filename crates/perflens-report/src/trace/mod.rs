//! Timeline layout: the pure decisions a trace exporter makes before it
//! writes a single event.
//!
//! Trace recording (`PERFLENS_TRACE`) hands the exporter threads, polls and
//! spans with timestamps; how they are laid out on tracks is decided here,
//! on plain data, so it can be tested exactly without running a program:
//!
//! - [`collapse`]: short-lived threads packed into the fewest shared
//!   tracks, named `short-lived threads (k)`, so a program that spawns
//!   thousands of brief threads does not draw thousands of near-empty
//!   tracks.
//!
//! Nothing here reads the environment or writes a file; the facade reads
//! `PERFLENS_TRACE_*` and passes the values in.

pub mod collapse;
