//! Reading a block into a [`ThreadSnapshot`]: the one reader of block
//! memory, used by the session's own snapshots (the block is this
//! process's) and by the live reader in another process (the block is a
//! read-only mapping of a live session's file, see perflens-core's `live.rs`), so both
//! see exactly the same figures.

use crate::block::{Block, Geometry, HIST_ALLOC, NESTED_NODE, OVERFLOW_NODE};
use crate::histogram::Histogram;
use crate::snapshot::{NodeSnapshot, ThreadSnapshot};
use std::sync::atomic::{AtomicU64, Ordering};

mod hist;
mod live;
mod memo;

use hist::node_hist;
pub use live::{
    HIST_LINES, LiveBlockRead, LiveSelfLines, read_live_block, read_live_block_again,
    read_live_self_histograms,
};
pub use memo::{FULL_EVERY, HistMemo};

/// How much of a block to read.
#[derive(Clone, Copy)]
pub struct Read<'a> {
    /// The session generation the block must belong to.
    pub epoch: u32,
    /// Nanoseconds per clock tick.
    pub ns_per_tick: f64,
    /// The block's writer was built with the `alloc` feature, which
    /// charges allocations at frame boundaries (see `frame::boundary`).
    pub boundary_alloc: bool,
    /// Read the exclusive-time and bytes-per-call histograms too (the
    /// inclusive-time one is always read: it counts the timed calls).
    pub all_histograms: bool,
    /// Only count the inclusive-time histograms' entries (the timed
    /// calls), and leave the histograms empty: a view without time
    /// percentiles.
    pub total_counts_only: bool,
    /// Allocations were counted (the counting allocator is installed):
    /// else the bytes-per-call histograms are all empty and not read.
    pub alloc_counted: bool,
    /// Whether the page holding byte `offset` of the block may be read
    /// (a live reader skips the pages of the file that were never
    /// written: they are zero, and reading them through a shared
    /// mapping would make the file system allocate them).
    pub page_ok: &'a dyn Fn(usize) -> bool,
}

/// Every page may be read.
pub fn all_pages(_: usize) -> bool {
    true
}

/// The block's tree, `None` when it belongs to another session or to a
/// thread working for the profiler. Only loads: the block may be
/// another process's (read-only), and its owner may be writing it.
/// Indices read from the block are checked against its capacities, which
/// [`Block::validate`] checked against its size.
pub fn read_block(block: Block, how: &Read) -> Option<ThreadSnapshot> {
    read_block_in(block, Geometry::of(block), how, None)
}

/// [`read_block`] with the block's geometry given: a live block's, as
/// [`Block::validate`] checked it (its header may have changed since),
/// and, for a live reader reading it again, what it kept of its last
/// read (see [`HistMemo`]).
fn read_block_in(
    block: Block,
    g: Geometry,
    how: &Read,
    mut memo: Option<&mut HistMemo>,
) -> Option<ThreadSnapshot> {
    let to_ns = |t: u64| crate::snapshot::round_u64(t as f64 * how.ns_per_tick);
    let h = block.header();
    if h.epoch.load(Ordering::Acquire) != how.epoch || h.excluded.load(Ordering::Acquire) == 1 {
        return None;
    }
    let count = h.node_count.load(Ordering::Acquire).min(g.node_cap);
    let pending = block.pending_in(g.node_cap);
    if let Some(m) = memo.as_deref_mut() {
        m.begin(how.epoch, h.thread_index);
    }
    // How many lines the last scan of an inclusive (0) and of an
    // exclusive-time (1) histogram read: as many of a later node's are
    // asked for ahead (the bytes-per-call ones are few, and not asked).
    let lines_hint = [std::cell::Cell::new(1usize), std::cell::Cell::new(1usize)];
    // A histogram and its count (the count alone, with an empty
    // histogram, where only the count is wanted).
    let read_hist = |node: u32, which: usize, entries: Option<u64>| {
        let wanted = match which {
            0 => true,
            HIST_ALLOC => how.all_histograms && how.alloc_counted,
            _ => how.all_histograms,
        };
        if wanted {
            let hint = &lines_hint[which.min(1)];
            let keep = which != 0 || !how.total_counts_only;
            // SAFETY: node < node_count <= node_cap, of this block's
            // geometry.
            let (h, lines, count) =
                unsafe { node_hist(block, &g, node, which, pending, how.page_ok, entries, keep) };
            hint.set(lines);
            (h, count)
        } else {
            (Histogram::default(), 0)
        }
    };
    let mut cpu = Vec::new();
    let mut nodes = Vec::with_capacity(count as usize);
    let mut overflow_calls = 0;
    for i in 0..count {
        // The lines of a later node's histograms that its scan will
        // likely read (as many as the last scan of each kind read), asked
        // for ahead: the scan's loads were a large live read's cost, one
        // miss after another (each histogram lies on a page of its own).
        if i + PREFETCH_AHEAD < count {
            for (which, hint) in lines_hint.iter().enumerate() {
                if which == 1 && !how.all_histograms {
                    break;
                }
                for line in 0..(hint.get() + 1).min(PREFETCH_LINES) {
                    // SAFETY: that node is below node_count <= node_cap,
                    // of this block's geometry, and line * 8 < BUCKETS;
                    // only the address is made.
                    prefetch(unsafe {
                        block.bucket_in(&g, i + PREFETCH_AHEAD, which, line * LINE)
                    });
                }
            }
        }
        // SAFETY: i < node_count <= node_cap, of this block's geometry.
        let n = unsafe { block.node_in(&g, i) };
        let r = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        // `calls` counts the untimed calls; each timed one is an entry of
        // the inclusive histogram.
        let (hist_total, timed_calls) = match memo.as_deref_mut() {
            Some(m) => {
                // SAFETY: i < node_count <= node_cap, of this block's
                // geometry.
                let (h, lines, count) = unsafe {
                    m.read_node(block, &g, i, pending, how.page_ok, !how.total_counts_only)
                };
                lines_hint[0].set(lines);
                (h, count)
            }
            None => read_hist(i, 0, None),
        };
        // Saturating: a hostile live block may hold any counts.
        let calls = r(&n.calls).saturating_add(timed_calls);
        // At most one entry per completed call (or future).
        let mut hist_alloc = read_hist(i, HIST_ALLOC, Some(calls)).0;
        // Calls that allocated nothing are not in the histogram. Without
        // the `alloc` feature calls record nothing there: leave it empty.
        if how.boundary_alloc && how.all_histograms {
            let zero_calls = calls.saturating_sub(hist_alloc.count());
            if zero_calls != 0 {
                hist_alloc.record_n(0, zero_calls);
            }
        }
        let path = n.path.load(Ordering::Relaxed);
        let nested = path & NESTED_NODE != 0;
        let node = NodeSnapshot {
            path: path & !NESTED_NODE,
            nested,
            // Only nested nodes and flow sites' nodes (which are never
            // nested) write these.
            max_depth: n.rec_max.load(Ordering::Relaxed),
            capacity: if nested {
                0
            } else {
                n.rec_open.load(Ordering::Relaxed)
            },
            calls,
            timed_calls,
            total_ns: to_ns(r(&n.total)),
            self_ns: to_ns(r(&n.self_)),
            busy_ns: to_ns(r(&n.busy)),
            polls: r(&n.polls),
            cancelled: r(&n.cancelled),
            timed_cancelled: r(&n.cancelled_timed),
            cancelled_ns: to_ns(r(&n.cancelled_wall)),
            hist_total,
            // One entry per timed call, as the inclusive histogram's
            // (a call's inclusive entry is added before its exclusive
            // one: a call that ends while this reads counts in neither,
            // so the two counts agree).
            hist_self: read_hist(i, 1, Some(timed_calls)).0,
            alloc_bytes: r(&n.alloc_bytes),
            alloc_count: r(&n.alloc_count),
            free_bytes: r(&n.free_bytes),
            free_count: r(&n.free_count),
            hist_alloc,
            index: i,
        };
        if i == OVERFLOW_NODE {
            overflow_calls = node.calls.saturating_add(node.cancelled);
        }
        let samples = r(&n.cpu_samples);
        if samples != 0 {
            cpu.push((node.path, samples, r(&n.cpu_ns)));
        }
        nodes.push(node);
    }
    if let Some(m) = memo {
        m.end();
    }
    // Read after every node counter: see `unattributed`.
    if let Some((top, moved)) = how.boundary_alloc.then(|| unattributed(block)).flatten() {
        if let Some(node) = nodes.get_mut(top as usize) {
            node.alloc_bytes = node.alloc_bytes.wrapping_add(moved[0]);
            node.alloc_count = node.alloc_count.wrapping_add(moved[1]);
            node.free_bytes = node.free_bytes.wrapping_add(moved[2]);
            node.free_count = node.free_count.wrapping_add(moved[3]);
        }
    }
    // A node that recorded nothing yet (a call still running) is left
    // out. A channel site's node may hold only what its creating thread
    // wrote (channels made in `timed_cancelled`, senders and receivers made
    // in `alloc_bytes` and `free_bytes`, the capacity): an idle channel,
    // or one made on a thread that never sends nor receives on it. It is
    // kept: those counts are the row's `created`, endpoints alive and
    // capacity. (For other nodes these three are never set alone:
    // `timed_cancelled` is a part of `cancelled`, and bytes come with
    // their count.)
    nodes.retain(|node| {
        node.calls != 0
            || node.cancelled != 0
            || node.polls != 0
            || node.alloc_count != 0
            || node.free_count != 0
            || node.timed_cancelled != 0
            || node.alloc_bytes != 0
            || node.free_bytes != 0
    });
    Some(ThreadSnapshot {
        index: h.thread_index,
        tid: h.tid,
        name: None,
        exited: h.exited.load(Ordering::Acquire) == 1,
        nodes,
        node_capacity: g.node_cap.saturating_sub(crate::block::INTERNAL_NODES),
        overflow_calls,
        dropped_frames: h.dropped_frames.load(Ordering::Relaxed),
        live_bytes: h.alloc.live(),
        peak_live_bytes: h.alloc.peak.load(Ordering::Relaxed),
        cpu_samples: cpu,
    })
}

/// The path of each node of one of this process's blocks (index = node,
/// the nested-node flag cleared), with the block's thread index; `None`
/// when the block belongs to another session. What a trace's events
/// name their nodes by.
pub fn node_paths(block: Block, epoch: u32) -> Option<(u32, Vec<u32>)> {
    let g = Geometry::of(block);
    let h = block.header();
    if h.epoch.load(Ordering::Acquire) != epoch {
        return None;
    }
    let count = h.node_count.load(Ordering::Acquire).min(g.node_cap);
    let paths = (0..count)
        // SAFETY: i < node_count <= node_cap, of this block's geometry.
        .map(|i| unsafe { block.node_in(&g, i) }.path.load(Ordering::Relaxed) & !NESTED_NODE)
        .collect();
    Some((h.thread_index, paths))
}

/// What a thread allocated and freed since its last frame boundary
/// (with the `alloc` feature, allocations are charged to nodes at frame
/// boundaries: see `frame::boundary`), and the node it belongs to: the
/// frame on top of the thread's stack since that boundary, as noted by
/// the thread at each change of its top frame (see `AllocMark::top`). `None`
/// when the thread kept crossing boundaries while this read it (a live
/// snapshot then shows that part at the thread's next boundary).
///
/// Never counts a byte twice. The caller read the node counters before;
/// the owner stores the marks, then (release fence) adds to the node
/// counters, so a charge whose addition was read has its marks seen here
/// (acquire fence), and what it charged is not in `totals - marks`.
/// Which node: the owner records the top node, then (release fence) moves
/// the totals, so totals seen moved past the marks mean that node is
/// seen, or a later one; a later one was noted at a later boundary, which
/// charged (every boundary after a movement does) and so stored new
/// marks first (release fence in the charge),
/// so the second read of the marks differs and this reads again. A
/// thread that is not running (parked, blocked, or waiting for the
/// session to end) is read exactly.
pub fn unattributed(block: Block) -> Option<(u32, [u64; 4])> {
    use std::sync::atomic::fence;
    let h = block.header();
    let marks = || h.mark.counters().map(|m| m.load(Ordering::Relaxed));
    fence(Ordering::Acquire);
    for _ in 0..8 {
        let before = marks();
        let totals = h.alloc.totals();
        fence(Ordering::Acquire);
        let top = h.mark.top.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if marks() != before {
            continue;
        }
        let moved = [0, 1, 2, 3].map(|i| totals[i].wrapping_sub(before[i]));
        // Bytes freed are derived from two counters the owner may be
        // updating: a read between them can look like a step back.
        if moved.iter().any(|&d| (d as i64) < 0) {
            continue;
        }
        return Some((top, moved));
    }
    None
}

/// How many nodes ahead [`read_block_in`] asks for histogram lines.
const PREFETCH_AHEAD: u32 = 8;
/// At most this many lines of a histogram are asked for ahead (asking
/// for many more than the scan reads was slower: 16 lines of a histogram
/// whose scan read 8 took a large read from 5.4 to 7 ms).
const PREFETCH_LINES: usize = 12;
/// Counters in a cache line.
const LINE: usize = 8;

/// Asks the CPU to bring the line at `p` into the cache. Never faults
/// (a line of a page not mapped yet is dropped, not fetched: a
/// never-written page of a live file stays unallocated).
#[inline(always)]
fn prefetch(p: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints; it reads nothing the program sees
    // and cannot fault.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            p as *const AtomicU64 as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
