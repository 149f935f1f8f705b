//! The allocation figures: per function and path, and the session's totals.

use super::*;

/// The allocation figures of a function row ([`FunctionRow::alloc`]) or
/// of a hot path's last frame ([`HotPath::alloc`]). Either every figure
/// is there or none is: they are all set when the counting allocator was
/// installed.
///
/// In the JSON they are fields of the row or path itself, each named as
/// here with `alloc_` in front (`free_bytes` as is), and are all left out
/// when allocations were not counted. A row or path read from JSON
/// without any of them has no allocation figures (`None`); one with only
/// some of them is an invalid report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocFigures {
    /// Bytes allocated while a frame of this function (a path: its last
    /// frame) was the innermost measured frame (exclusive), summed over every
    /// frame.
    #[serde(rename = "alloc_bytes")]
    pub bytes: u64,
    /// Allocations made while this function (its last frame) was innermost
    /// (exclusive).
    #[serde(rename = "alloc_count")]
    pub count: u64,
    /// Bytes freed while this function (its last frame) was innermost
    /// (exclusive), whoever allocated them.
    pub free_bytes: u64,
    /// Bytes allocated by this function and everything it called
    /// (inclusive), counting a recursion's subtree once (outermost frames
    /// only, like `total_ns`). A path: bytes allocated in its last frame's
    /// subtree of the calling-context tree (the frame and every callee
    /// below it, completed or not).
    #[serde(rename = "alloc_incl_bytes")]
    pub incl_bytes: u64,
    /// Allocations made by this function and everything it called
    /// (inclusive, outermost frames only). A path: in its last frame's
    /// subtree.
    #[serde(rename = "alloc_incl_count")]
    pub incl_count: u64,
    /// Mean inclusive bytes allocated by one completed call (of the last
    /// frame) while it ran, with what it called in it: the mean of the
    /// distribution `p95_bytes` describes. It equals `incl_bytes / calls`
    /// when every byte of the subtree was allocated inside a completed
    /// call (and the function does not recurse); tasks a future spawned
    /// (they run outside its polls), calls still running and cancelled
    /// futures are in `incl_bytes` only, and the mean is then read from
    /// the histogram, within 1/64.
    #[serde(rename = "alloc_avg_bytes")]
    pub avg_bytes: u64,
    /// 95th percentile of the inclusive bytes allocated by one call (of
    /// the last frame).
    #[serde(rename = "alloc_p95_bytes")]
    pub p95_bytes: u64,
}

/// Allocation totals of a session, over all threads: everything the
/// counting allocator saw, inside measured functions or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocTotals {
    /// Bytes allocated (sum of every thread's `alloc_bytes`).
    pub total_bytes: u64,
    /// Number of allocations (sum of every thread's `alloc_count`).
    pub total_count: u64,
    /// Bytes freed (sum of every thread's `free_bytes`).
    pub free_bytes: u64,
    /// Bytes allocated minus bytes freed during the session, process-wide.
    pub live_bytes: i64,
    /// Highest process-wide live byte count seen during the session. Each
    /// thread publishes its live bytes in steps of
    /// `peak_resolution_bytes`, so this may be low by up to that much per
    /// allocating thread; it is never below the largest per-thread peak.
    pub peak_live_bytes: u64,
    /// Publication step of the per-thread counters behind
    /// `peak_live_bytes`.
    pub peak_resolution_bytes: u64,
}
