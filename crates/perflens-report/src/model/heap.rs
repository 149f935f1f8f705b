//! The heap profile (feature `heap`): the sampled allocations in use, by
//! the calling context that allocated them.

use super::*;

/// The heap profile of a session ([`Report::heap`]): estimates of what is
/// in use, from a sample of the allocations (one sampled byte every
/// `rate_bytes` on average, each sampled allocation scaled by the inverse
/// of the probability that one of its size was sampled), beside exact
/// allocation totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeapProfile {
    /// Mean bytes between sampled bytes.
    pub rate_bytes: u64,
    /// Estimated bytes in use (allocated during the session, not freed
    /// yet), over every path.
    pub inuse_bytes: u64,
    /// Estimated objects in use.
    pub inuse_objects: u64,
    /// Sampled allocations in use (what the estimates rest on).
    pub inuse_samples: u64,
    /// Allocations sampled during the session, in use or not.
    pub sampled: u64,
    /// Samples not kept for want of room in the sample table (their
    /// allocations are missing from the estimates).
    pub dropped: u64,
    /// Sampled allocations the table holds at once.
    pub capacity: u32,
    /// Paths with sampled allocations in use, by estimated bytes
    /// descending.
    pub inuse_paths: Vec<HeapPath>,
    /// The same allocations by native stack (and path), by estimated
    /// bytes descending; empty when no native stacks were taken (a
    /// platform without the unwinder, or a report read from a live
    /// session's files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inuse_stacks: Vec<HeapStack>,
    /// Samples whose native stack was not kept (the walk found none, or
    /// the stack table was full): in `inuse_stacks` they have no frames.
    #[serde(default)]
    pub stacks_dropped: u64,
}

/// What the allocations made from one native stack, on one path, hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeapStack {
    /// The native stack's functions, outermost first (inlined ones
    /// included), without the allocator's and the profiler's own frames
    /// (the innermost is the function that asked for the memory); empty
    /// when the stack was not kept.
    pub frames: Vec<String>,
    /// The measured path it was on, as [`HeapPath::frames`].
    pub path: Vec<String>,
    /// Estimated bytes in use.
    pub inuse_bytes: u64,
    /// Estimated objects in use.
    pub inuse_objects: u64,
    /// Sampled allocations in use.
    pub samples: u64,
}

/// What one calling context holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeapPath {
    /// The measured frames, outermost first, named as in
    /// [`Report::paths`]; empty for allocations made outside any measured
    /// function.
    pub frames: Vec<String>,
    /// Estimated bytes in use.
    pub inuse_bytes: u64,
    /// Estimated objects in use.
    pub inuse_objects: u64,
    /// Bytes allocated while this path's last frame was the innermost
    /// measured frame (exact: every allocation is counted).
    pub alloc_bytes: u64,
    /// Allocations made there (exact).
    pub alloc_objects: u64,
    /// Sampled allocations in use.
    pub samples: u64,
}
