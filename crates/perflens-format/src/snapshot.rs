//! The raw snapshot: a copy of every thread's calling-context tree.
//!
//! This is what the runtime hands to `perflens-report`. It is plain data
//! (no pointers into live blocks) so it can be taken at any time while
//! the program runs, kept, and turned into tables or JSON later.
//!
//! Identity: every node of every thread names a *path* by index into
//! [`RawSnapshot::paths`]. Paths are global (shared by all threads), so
//! merging threads is summing nodes with the same path index. Path 0 is
//! the root (no function); path 1 is the overflow bucket that collects
//! calls which could not get a node of their own. Likewise callsite 0 is
//! the root and callsite 1 is `[overflow]`.

use crate::histogram::Histogram;

/// How calls are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every call reads the clock twice (default).
    Timed,
    /// Calls are counted; the clock is never read.
    Count,
    /// Every call is counted; one call in `every` per callsite (and its
    /// callees) is timed, and totals are scaled up by `calls / timed_calls`.
    Sampled {
        /// Time one call in this many.
        every: u32,
    },
}

impl Mode {
    /// Short name used in reports and `PERFLENS_MODE`.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Timed => "timed",
            Mode::Count => "count",
            Mode::Sampled { .. } => "sampled",
        }
    }
}

/// Where timestamps came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockSource {
    /// The CPU's invariant counter: on x86_64 the time-stamp counter
    /// (`tsc`), calibrated against the monotonic clock; on aarch64 the
    /// generic timer's virtual counter (`cntvct`), at the rate
    /// `cntfrq_el0` gives.
    Tsc,
    /// `std::time::Instant` (nanoseconds since a process epoch).
    Instant,
}

impl ClockSource {
    /// Short name used in reports and `PERFLENS_CLOCK`.
    pub fn name(&self) -> &'static str {
        match self {
            ClockSource::Tsc if cfg!(target_arch = "aarch64") => "cntvct",
            ClockSource::Tsc => "tsc",
            ClockSource::Instant => "instant",
        }
    }
}

/// What kind of code a callsite instruments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallsiteKind {
    /// A synchronous function or block: one frame per call.
    Sync,
    /// A future (`async fn` or a block containing `.await`): one node
    /// per future, timed from creation to completion, polls summed.
    Async,
    /// The root or overflow pseudo-callsite.
    Internal,
    /// An await site (`expr.await` inside a measured future): not a
    /// function. Its node counts the awaits there: `calls` the completed
    /// ones, `total_ns` and the inclusive histogram the waits of those
    /// that suspended (one entry each), `polls` the suspensions, `busy_ns`
    /// the measured time run inside the awaited future's polls, and the
    /// `cancelled` fields the awaits dropped while suspended.
    Await,
    /// A data-flow site (a channel, stream, future or lock made at one
    /// place, or a probe): not a function. Its nodes sit under the root;
    /// what their fields count depends on the kind (see
    /// `perflens_core::flow`).
    Flow(crate::vocab::FlowKind),
}

/// One instrumented place in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallsiteInfo {
    /// Row name: `module::function`, `module::Type::method` or a label.
    pub name: String,
    /// Sync, async, internal or an await site.
    pub kind: CallsiteKind,
}

/// Where an await site ([`CallsiteKind::Await`]) is in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwaitSiteInfo {
    /// Index into [`RawSnapshot::callsites`] (the callsite id).
    pub callsite: u32,
    /// Source file, as `file!()` spells it.
    pub file: String,
    /// 1-based line of the `.await`.
    pub line: u32,
    /// 1-based column of the `.await`.
    pub column: u32,
    /// The awaited expression's text, shortened.
    pub expr: String,
}

/// One calling context: the chain of callsites from the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathInfo {
    /// Index of the parent path (0 for top-level frames; the root is its
    /// own parent).
    pub parent: u32,
    /// Index into [`RawSnapshot::callsites`].
    pub callsite: u32,
    /// Stable path id: a running hash of per-callsite salts derived from
    /// row names, identical across runs and machines.
    pub id: u64,
}

/// Counters of one node (one path on one thread).
///
/// All durations are nanoseconds. In sampled mode `total_ns`, `self_ns`,
/// `busy_ns` and `cancelled_ns` are sums over the *timed* calls (and
/// timed cancelled futures) only; scale them by `(calls + cancelled) /
/// (timed_calls + timed_cancelled)` for estimates (the report does).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeSnapshot {
    /// Index into [`RawSnapshot::paths`].
    pub path: u32,
    /// The node of the path's *nested* calls: calls of a function made
    /// while a frame of the same function was already on the stack at
    /// this path (a folded recursion, directly or through a cycle). Their
    /// calls, self time, polls and allocations count like any other;
    /// their inclusive time (`total_ns`, `busy_ns`, `cancelled_ns`) lies
    /// inside the outermost frame's and must not be added to it again.
    /// A thread has at most one nested node per path.
    pub nested: bool,
    /// Nested nodes: the deepest recursion seen, counting the outermost
    /// frame (at least 2). A flow site's node: its gauge's maximum (a
    /// channel's most messages queued). 0 otherwise.
    pub max_depth: u32,
    /// A flow site's node: its capacity figure (a channel's largest
    /// capacity, 0 for unbounded). 0 otherwise.
    pub capacity: u32,
    /// Completed calls (async: futures that returned `Ready`). A sync call
    /// that unwinds from a panic counts as completed.
    pub calls: u64,
    /// Calls whose duration was measured.
    pub timed_calls: u64,
    /// Inclusive time (async: wall time from creation to `Ready`, of the
    /// completed futures only; see `cancelled_ns`).
    pub total_ns: u64,
    /// Exclusive time: inclusive minus measured children run inside it
    /// (async: busy time minus measured futures polled inside its polls,
    /// cancelled futures included).
    pub self_ns: u64,
    /// Async only: time spent inside `poll`.
    pub busy_ns: u64,
    /// Async only: number of polls.
    pub polls: u64,
    /// Async only: futures dropped before completion (not in `calls`).
    pub cancelled: u64,
    /// Async only: futures among `cancelled` whose time was measured.
    pub timed_cancelled: u64,
    /// Async only: wall time, creation to drop, of the timed futures
    /// dropped before completion. Not in `total_ns`; their busy and self
    /// time are in `busy_ns` and `self_ns`.
    pub cancelled_ns: u64,
    /// Per-call inclusive durations, in clock ticks.
    pub hist_total: Histogram,
    /// Per-call exclusive durations, in clock ticks.
    pub hist_self: Histogram,
    /// Bytes allocated while this node was the innermost measured frame
    /// of this thread (exclusive). `realloc` counts as an allocation of
    /// the new size and a free of the old one. The root node (path 0)
    /// holds what the thread allocated outside any measured function.
    /// All allocation fields are 0 unless the counting allocator is
    /// installed ([`RawSnapshot::alloc`] is `Some`).
    ///
    /// With the `alloc` feature these are charged at frame boundaries
    /// (a measured call or poll beginning or ending on the thread): a
    /// snapshot adds what each thread moved since its last boundary to the
    /// node of the frame on top of its stack (noted by the thread's first
    /// allocation or free after that boundary). It is exact for the
    /// thread that takes it and for every thread not running meanwhile
    /// (exited, parked or blocked, at its root or inside a measured
    /// call), so a final snapshot is exact once the program's threads are
    /// idle; a thread running while it is read shows its allocations up
    /// to about that moment, an allocation or boundary in flight being
    /// left to the next snapshot, never counted twice. The thread's
    /// [`ThreadSnapshot::live_bytes`] and peak are always current.
    pub alloc_bytes: u64,
    /// Allocations made while this node was innermost (exclusive).
    pub alloc_count: u64,
    /// Bytes freed while this node was innermost (exclusive), whoever
    /// allocated them.
    pub free_bytes: u64,
    /// Frees made while this node was innermost (exclusive).
    pub free_count: u64,
    /// Per completed call: bytes allocated by the call and everything it
    /// called (inclusive), one entry per call. Values are bytes. Empty
    /// unless perflens-core is built with its `alloc` feature.
    pub hist_alloc: Histogram,
    /// The node's index in its thread's block (for a live reader that
    /// reads some of its histograms later: see
    /// `read_live_self_histograms`).
    pub index: u32,
}

/// One thread's tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadSnapshot {
    /// Registration order, starting at 0.
    pub index: u32,
    /// OS thread id (Linux `gettid`), 0 where unknown.
    pub tid: u64,
    /// `std::thread` name, if any.
    pub name: Option<String>,
    /// The thread had exited when the snapshot was taken.
    pub exited: bool,
    /// Nodes in creation order (a parent before its children).
    pub nodes: Vec<NodeSnapshot>,
    /// Maximum calling contexts of measured functions this thread's tree
    /// can hold (besides its root and overflow nodes).
    pub node_capacity: u32,
    /// Calls that found the tree full and were counted under the overflow
    /// node instead of a node of their own.
    pub overflow_calls: u64,
    /// Calls deeper than the shadow stack; these were not recorded.
    pub dropped_frames: u64,
    /// Bytes this thread allocated minus bytes it freed during the
    /// session (negative when it freed memory other threads allocated).
    pub live_bytes: i64,
    /// Highest `live_bytes` seen during the session.
    pub peak_live_bytes: u64,
    /// `(path, samples, cpu_ns)`: the CPU samples charged to this
    /// thread's nodes (see `charge_sample`), one entry per node sampled
    /// (a nested node under its path). Every node counts, also one whose
    /// function has not completed a call yet. Empty unless a CPU sampler
    /// charges samples.
    pub cpu_samples: Vec<(u32, u64, u64)>,
}

/// Process-wide allocation figures, present when the counting allocator
/// is installed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocSummary {
    /// Bytes allocated minus bytes freed during the session, all threads.
    pub live_bytes: i64,
    /// Highest process-wide live byte count seen during the session. To
    /// keep threads off a shared counter, each thread publishes its live
    /// bytes in steps of [`AllocSummary::peak_resolution_bytes`], so this
    /// may be low by up to that much per allocating thread; it is never
    /// below the largest per-thread peak.
    pub peak_live_bytes: u64,
    /// Publication step of the per-thread counters (see above).
    pub peak_resolution_bytes: u64,
}

/// The sampled heap profile of a session (feature `heap`): the sampled
/// allocations still in use, by the calling context that allocated them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeapSnapshot {
    /// Mean bytes between sampled bytes.
    pub rate_bytes: u64,
    /// Sampled allocations the table holds at once.
    pub capacity: u32,
    /// Allocations sampled this session (kept or not).
    pub sampled: u64,
    /// Samples not kept: the table was full (their allocations are
    /// missing from the estimates).
    pub dropped: u64,
    /// Kept samples freed since.
    pub freed: u64,
    /// Sampled allocations in use, by path, by estimated bytes
    /// descending.
    pub paths: Vec<HeapPathSnapshot>,
    /// The same, by path and native stack, by estimated bytes
    /// descending. The program's own snapshots fill in each stack's
    /// addresses; a reader of its files sees only the ids (and
    /// [`encode_heap`](crate::heap::encode_heap) keeps none of this).
    pub stacks: Vec<HeapStackSnapshot>,
    /// Samples taken with a stack walker whose native stack was not kept
    /// (the walk found none, or the stack table was full): they count
    /// by path, under no stack.
    pub stacks_dropped: u64,
}

/// The sampled allocations in use that one path made from one native
/// stack.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeapStackSnapshot {
    /// Index into [`RawSnapshot::paths`], as [`HeapPathSnapshot::path`].
    pub path: u32,
    /// The stack's id in the program's stack table (0: no stack taken).
    pub stack: u32,
    /// The stack's return addresses, innermost first (the first one is
    /// the allocation's own caller chain, starting inside the profiler's
    /// hook); empty when not taken or not resolved.
    pub addrs: Vec<u64>,
    /// The stack's function names, innermost first, once a symbolizer
    /// (the facade, with perflens-sampler) has named `addrs`; empty
    /// before.
    pub names: Vec<String>,
    /// Sampled allocations in use.
    pub samples: u64,
    /// Estimated objects in use.
    pub inuse_objects: f64,
    /// Estimated bytes in use.
    pub inuse_bytes: f64,
}

/// The sampled allocations in use of one path.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeapPathSnapshot {
    /// Index into [`RawSnapshot::paths`] of the innermost measured frame
    /// that allocated them (the root outside any).
    pub path: u32,
    /// Sampled allocations in use.
    pub samples: u64,
    /// Their bytes.
    pub sampled_bytes: u64,
    /// Estimated objects in use: each sample scaled by the inverse of the
    /// probability that an allocation of its size was sampled.
    pub inuse_objects: f64,
    /// Estimated bytes in use, scaled the same way.
    pub inuse_bytes: f64,
}

/// A copy of all recorded data at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSnapshot {
    /// Timing mode of the session.
    pub mode: Mode,
    /// Sampled mode: calls of each calling context timed before sampling
    /// starts (0 otherwise; see `RecordingOptions::sample_warmup`).
    pub sample_warmup: u32,
    /// Clock used for timestamps.
    pub clock: ClockSource,
    /// Nanoseconds per clock tick (1.0 for [`ClockSource::Instant`]).
    pub ns_per_tick: f64,
    /// Wall time since the session started.
    pub elapsed_ns: u64,
    /// True for the snapshot taken when the session finished.
    pub finished: bool,
    /// Callsites by index (0 = root, 1 = overflow).
    pub callsites: Vec<CallsiteInfo>,
    /// Paths by index (0 = root, 1 = overflow).
    pub paths: Vec<PathInfo>,
    /// Per-thread trees, in registration order.
    pub threads: Vec<ThreadSnapshot>,
    /// Maximum number of distinct paths (process-wide).
    pub path_capacity: u32,
    /// Calls whose path could not be registered because the path table
    /// was full (they are counted under the overflow node).
    pub overflow_paths: u64,
    /// Measured calls and futures made on threads that could get no
    /// memory for their tree (address space exhausted): not recorded.
    pub unrecorded_calls: u64,
    /// Allocation summary, `None` when the counting allocator is not
    /// installed (then every allocation field is 0).
    pub alloc: Option<AllocSummary>,
    /// The sampled heap profile, `None` unless the session samples the
    /// heap (feature `heap`).
    pub heap: Option<HeapSnapshot>,
}

/// `x.round() as u64`, exactly (halves away from zero; negative and NaN
/// give 0, past `u64::MAX` gives `u64::MAX`), without `round`: on x86_64
/// without SSE4.1, `f64::round` is a call into libm, and a reader
/// rounding every figure of ten thousand nodes spent a tenth of a
/// millisecond in it.
#[inline]
pub fn round_u64(x: f64) -> u64 {
    // Truncation toward zero, saturating (NaN: 0).
    let t = x as u64;
    // Exact: below 2^53 both are representable and t <= x < t + 1;
    // from there on x is a whole number and `t as f64 == x` (or t
    // saturated, and the addition below saturates too).
    let frac = x - t as f64;
    t.saturating_add(u64::from(frac >= 0.5))
}

impl RawSnapshot {
    /// Converts clock ticks (as found in histograms) to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        round_u64(ticks as f64 * self.ns_per_tick)
    }

    /// The callsite chain of a path, root first (excluding the root).
    pub fn frames(&self, path: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut p = path;
        // Bounded walk: a path never has more ancestors than paths exist.
        for _ in 0..self.paths.len() {
            if p == 0 || p as usize >= self.paths.len() {
                break;
            }
            out.push(self.paths[p as usize].callsite);
            p = self.paths[p as usize].parent;
        }
        out.reverse();
        out
    }
}

#[cfg(test)]
mod round_tests {
    use super::round_u64;

    /// The same as `f64::round` then `as u64` on halves, near-halves,
    /// the edges of f64's integers, negatives, NaN and infinities.
    #[test]
    fn rounds_as_round_does() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.4,
            -0.5,
            -1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            18446744073709549568.0,
            18446744073709551616.0,
            1e30,
        ];
        let mut v = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..100_000 {
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            let scale = [1.0, 1e-3, 0.37, 1e6, 1e12][(v % 5) as usize];
            xs.push((v >> 11) as f64 * scale / 7.0);
            xs.push((v % 1000) as f64 + 0.5);
        }
        for x in xs {
            assert_eq!(round_u64(x), x.round() as u64, "{x:e}");
        }
    }
}
