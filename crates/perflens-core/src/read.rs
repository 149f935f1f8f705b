//! Reading a block into a [`ThreadSnapshot`]: the one reader of block
//! memory, used by the session's own snapshots (the block is this
//! process's) and by the live reader in another process (the block is a
//! read-only mapping of a live session's file, see `live.rs`), so both
//! see exactly the same figures.

use crate::block::{Block, Geometry, HISTS, NESTED_NODE, OVERFLOW_NODE};
use crate::frame::HIST_ALLOC;
use crate::histogram::{BUCKETS, Histogram};
use crate::snapshot::{NodeSnapshot, ThreadSnapshot};
use std::sync::atomic::Ordering;

/// How much of a block to read.
#[derive(Clone, Copy)]
pub(crate) struct Read<'a> {
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
    /// Whether the page holding byte `offset` of the block may be read
    /// (a live reader skips the pages of the file that were never
    /// written: they are zero, and reading them through a shared
    /// mapping would make the file system allocate them).
    pub page_ok: &'a dyn Fn(usize) -> bool,
}

/// Every page may be read.
pub(crate) fn all_pages(_: usize) -> bool {
    true
}

/// The block's tree, `None` when it belongs to another session or to a
/// thread working for the profiler. Only loads: the block may be
/// another process's (read-only), and its owner may be writing it.
/// Indices read from the block are checked against its capacities, which
/// [`Block::validate`] checked against its size.
pub(crate) fn read_block(block: Block, how: &Read) -> Option<ThreadSnapshot> {
    read_block_in(block, Geometry::of(block), how)
}

/// [`read_block`] with the block's geometry given: a live block's, as
/// [`Block::validate`] checked it (its header may have changed since).
fn read_block_in(block: Block, g: Geometry, how: &Read) -> Option<ThreadSnapshot> {
    let to_ns = |t: u64| (t as f64 * how.ns_per_tick).round() as u64;
    let h = block.header();
    if h.epoch.load(Ordering::Acquire) != how.epoch || h.excluded.load(Ordering::Acquire) == 1 {
        return None;
    }
    let count = h.node_count.load(Ordering::Acquire).min(g.node_cap);
    let pending = block.pending_in(g.node_cap);
    let read_hist = |node: u32, which: usize| {
        if which == 0 || how.all_histograms {
            read_hist(block, &g, node, which, pending, how.page_ok)
        } else {
            Histogram::default()
        }
    };
    let mut cpu = Vec::new();
    let mut nodes = Vec::with_capacity(count as usize);
    let mut overflow_calls = 0;
    for i in 0..count {
        // SAFETY: i < node_count <= node_cap, of this block's geometry.
        let n = unsafe { block.node_in(&g, i) };
        let r = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let hist_total = read_hist(i, 0);
        // `calls` counts the untimed calls; each timed one is an entry of
        // the inclusive histogram.
        let timed_calls = hist_total.count();
        // Saturating: a hostile live block may hold any counts.
        let calls = r(&n.calls).saturating_add(timed_calls);
        let mut hist_alloc = read_hist(i, HIST_ALLOC);
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
            max_depth: if nested {
                n.rec_max.load(Ordering::Relaxed)
            } else {
                0
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
            hist_self: read_hist(i, 1),
            alloc_bytes: r(&n.alloc_bytes),
            alloc_count: r(&n.alloc_count),
            free_bytes: r(&n.free_bytes),
            free_count: r(&n.free_count),
            hist_alloc,
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
    // Read after every node counter: see `unattributed`.
    if let Some((top, moved)) = how.boundary_alloc.then(|| unattributed(block)).flatten() {
        if let Some(node) = nodes.get_mut(top as usize) {
            node.alloc_bytes = node.alloc_bytes.wrapping_add(moved[0]);
            node.alloc_count = node.alloc_count.wrapping_add(moved[1]);
            node.free_bytes = node.free_bytes.wrapping_add(moved[2]);
            node.free_count = node.free_count.wrapping_add(moved[3]);
        }
    }
    nodes.retain(|node| {
        node.calls != 0
            || node.cancelled != 0
            || node.polls != 0
            || node.alloc_count != 0
            || node.free_count != 0
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
pub(crate) fn unattributed(block: Block) -> Option<(u32, [u64; 4])> {
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

/// Histogram `which` of a node, with the thread's pending entries (see
/// `Header::pending`) added.
fn read_hist(
    block: Block,
    g: &Geometry,
    node: u32,
    which: usize,
    pending: [Option<u64>; 2],
    page_ok: &dyn Fn(usize) -> bool,
) -> Histogram {
    const PAGE: usize = 4096;
    let first = ((node as usize * HISTS + which) * BUCKETS) as u64;
    let off = g.off_hist + first as usize * 8;
    let mut counts = [0u64; BUCKETS];
    // Page by page: a page that may not be read holds zeros.
    let mut b = 0;
    while b < BUCKETS {
        let at = off + b * 8;
        let page_end = (at / PAGE + 1) * PAGE;
        let end = (b + (page_end - at) / 8).min(BUCKETS);
        if page_ok(at) {
            for (i, c) in counts.iter_mut().enumerate().take(end).skip(b) {
                // SAFETY: node < node_count <= node_cap, which < HISTS,
                // i < BUCKETS, of this block's geometry.
                *c = unsafe { block.bucket_in(g, node, which, i) }.load(Ordering::Relaxed);
            }
        }
        b = end;
    }
    for p in pending.into_iter().flatten() {
        if let Some(i) = p.checked_sub(first).filter(|&i| i < BUCKETS as u64) {
            counts[i as usize] = counts[i as usize].saturating_add(1);
        }
    }
    // The histogram's count is the sum of its buckets: a hostile live
    // block's counts are cut so that it fits a u64 (real counts always
    // do).
    let mut room = u64::MAX;
    for c in &mut counts {
        *c = (*c).min(room);
        room -= *c;
    }
    Histogram::from_dense(counts)
}

/// Reads a live session's block file that this process mapped read-only
/// at `base` (`len` bytes, the size the file had): the thread's tree,
/// exactly as the session's own snapshot reads it. `Ok(None)`: the block
/// belongs to another session generation (not set up yet) or to a
/// thread working for the profiler. `boundary_alloc`: the session's
/// `SessionHeader::alloc_feature`. `all_histograms: false` reads only
/// the inclusive-time histograms (calls and time percentiles), a third
/// of the work. `page_ok(offset)`: whether the page holding that byte
/// may be read (pages never written read as zero).
///
/// Only loads. Every index read from the file is checked against the
/// capacities, which are checked against `len`.
///
/// # Safety
/// `base..base+len` stays mapped and readable while this runs, 64-byte
/// aligned. (If the file shrinks meanwhile, reading past its end raises
/// SIGBUS: the caller handles that.)
pub unsafe fn read_live_block(
    base: *const u8,
    len: usize,
    epoch: u32,
    ns_per_tick: f64,
    boundary_alloc: bool,
    all_histograms: bool,
    page_ok: &dyn Fn(usize) -> bool,
) -> Result<Option<ThreadSnapshot>, String> {
    // SAFETY: per the caller.
    let (block, geometry) = unsafe { Block::validate(base, len) }?;
    let how = Read {
        epoch,
        ns_per_tick,
        boundary_alloc,
        all_histograms,
        page_ok,
    };
    // The checked geometry, not the header's fields: the file's owner
    // may rewrite them while this reads.
    Ok(read_block_in(block, geometry, &how))
}
