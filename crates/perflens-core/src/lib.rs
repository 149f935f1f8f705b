//! The perflens runtime.
//!
//! This crate is what `#[perflens::measure]` calls into. It is not meant
//! to be used directly: depend on `perflens` with the `enabled` feature.
//!
//! What it is: a per-thread calling-context tree (a node per chain of
//! measured callers), updated in place when a measured call returns: a
//! shadow-stack push on entry, a node update on exit. No event queue, no
//! channel, no background thread, no heap allocation per call after a
//! path's first visit, and memory bounded by a per-thread node capacity.
//! Futures are wrapped so that each poll is a frame on whatever thread
//! polls it, under the parent captured when the future was created; an
//! await site ([`awaited`]) is a frame while the awaited future is
//! polled, and counts that await's suspensions and wait.
//!
//! What it is not: a sampler (see `perflens-sampler`), or a report
//! (see `perflens-report`, which turns a [`RawSnapshot`] into tables).
//!
//! ```
//! use perflens_core::{Callsite, RecordingOptions, Guard, start};
//!
//! static CS: Callsite = Callsite::new("work", || "");
//! let rec = start(&RecordingOptions::default()).unwrap();
//! for _ in 0..3 {
//!     let _g = Guard::enter(&CS);
//! }
//! let snap = rec.finish();
//! let calls: u64 = snap.threads.iter().flat_map(|t| &t.nodes).map(|n| n.calls).sum();
//! assert_eq!(calls, 3);
//! ```

mod alloc;
mod awaits;
mod barrier;
mod block;
mod callsite;
mod clock;
pub mod flow;
mod frame;
mod future;
mod guard;
pub mod heap;
mod hooks;
mod hot;
pub use perflens_format::histogram;
use perflens_sys::mem as memory;
mod paths;
pub mod publish;
mod published;
use perflens_format::read;
mod scope;
mod session;
pub use perflens_format::snapshot;
pub mod span;
#[doc(hidden)]
pub mod testing;
mod thread;
pub mod trace;

pub use alloc::{CountingAlloc, Internal, exclude_current_thread};
pub use awaits::{AwaitSite, Awaited, awaited};
pub use callsite::{Callsite, await_sites, fnv1a, normalize_name};
pub use flow::{FlowKind, FlowSite, Held, LockSite, Waiting, lock_clock};
pub use future::{Instrumented, instrument};
pub use guard::Guard;
pub use heap::{HeapOptions, MAX_FRAMES as HEAP_MAX_FRAMES, set_stack_walker};
pub use histogram::Histogram;
pub use hooks::set_first_call_hook;
pub use publish::{PublicationEnd, PublishOptions};
pub use scope::AllocCount;
#[cfg(feature = "alloc")]
pub use scope::{
    FunctionAllocs, SCOPE_CALL_DEPTH, count as count_allocations,
    count_by_function as count_allocations_by_function,
};
pub use session::{
    DEFAULT_NODES, DEFAULT_SAMPLE_EVERY, DEFAULT_STACK_DEPTH, Recording, RecordingOptions,
    Recursion, Snapshotter, StartError, is_recording, parse_mode, start,
};
pub use snapshot::{
    AllocSummary, AwaitSiteInfo, CallsiteInfo, CallsiteKind, ClockSource, HeapPathSnapshot,
    HeapSnapshot, Mode, NodeSnapshot, PathInfo, RawSnapshot, ThreadSnapshot,
};
pub use thread::{charge_sample, sample_context};
