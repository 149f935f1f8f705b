//! perflens's data model: what a session records and what every reader
//! of it reads.
//!
//! The runtime (`perflens-core`) fills these types; the report writers
//! (`perflens-report`), the live reader, the command and the CPU sampler
//! read them. Keeping them here, with no dependencies and no operating
//! system calls, lets a reader be built without the runtime's
//! thread-local state and allocator hook (see `docs/architecture.md` and `docs/design/layers.md`).
//!
//! - [`snapshot`]: a session's per-thread calling-context trees, its
//!   callsites and paths ([`RawSnapshot`]).
//! - [`histogram`]: the log-linear duration and size histograms.
//! - [`trace`]: the timeline's events ([`RawTrace`]).
//! - [`flow`]: what a data-flow site's node counters hold, and the
//!   figures read back from them.
//! - [`block`]: the bytes of a per-thread block (shadow stack, node
//!   table, nodes, histograms), which a live session shares as a file.
//! - [`read`]: the one reader of a block's counters, for the session's
//!   own snapshots and for the live reader in another process alike.
//! - [`session_file`]: a live session's header file.
//! - [`names`]: the live session's names records.
//! - [`proto`]: the protobuf wire writer of the pprof and Perfetto outputs.
//! - [`vocab`]: small shared names ([`FlowKind`]).

pub mod block;
pub mod flow;
pub mod heap;
pub mod histogram;
pub mod names;
pub mod proto;
pub mod read;
pub mod session_file;
pub mod snapshot;
pub mod trace;
pub mod vocab;

pub use histogram::Histogram;
pub use snapshot::{
    AllocSummary, AwaitSiteInfo, CallsiteInfo, CallsiteKind, ClockSource, Mode, NodeSnapshot,
    PathInfo, RawSnapshot, ThreadSnapshot,
};
pub use trace::{RawTrace, ThreadTrace, TraceEvent};
pub use vocab::FlowKind;
