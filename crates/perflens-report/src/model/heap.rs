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
