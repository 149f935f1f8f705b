//! Reading a block into a [`ThreadSnapshot`]: the one reader of block
//! memory, used by the session's own snapshots (the block is this
//! process's) and by the live reader in another process (the block is a
//! read-only mapping of a live session's file, see perflens-core's `live.rs`), so both
//! see exactly the same figures.

use crate::block::{Block, Geometry, HIST_ALLOC, HISTS, NESTED_NODE, OVERFLOW_NODE};
use crate::histogram::{BUCKETS, Histogram};
use crate::snapshot::{NodeSnapshot, ThreadSnapshot};
use std::sync::atomic::{AtomicU64, Ordering, fence};

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

/// Histogram `which` of node `node` (see [`read_hist`]), bounded by what
/// the node's counters say its values add up to, and by `entries`.
///
/// # Safety
/// `node < node_cap` of this block's geometry `g`.
#[allow(clippy::too_many_arguments)]
unsafe fn node_hist(
    block: Block,
    g: &Geometry,
    node: u32,
    which: usize,
    pending: [Option<u64>; 2],
    page_ok: &dyn Fn(usize) -> bool,
    entries: Option<u64>,
    keep: bool,
) -> (Histogram, usize, u64) {
    // SAFETY: per the caller.
    let n = unsafe { block.node_in(g, node) };
    let sum = match which {
        0 => Some(n.total.load(Ordering::Relaxed)),
        1 => Some(n.self_.load(Ordering::Relaxed)),
        _ => None,
    };
    read_hist(
        block,
        g,
        node,
        which,
        pending,
        page_ok,
        Limit { sum, entries, keep },
        None,
        None,
    )
}

/// What the last read of a node's inclusive-time histogram found, for a
/// scan that reads it again (see [`HistMemo`]).
struct Since<'a> {
    /// What the node's `total` grew by since that read's bound: at least
    /// what the entries not in `before` (but `again`'s) add up to.
    grown: u64,
    /// The counts that read found, `(bucket, count)` ascending.
    before: &'a [(u16, u64)],
    /// The bucket of the entry the thread had pending then, when it was
    /// this node's: in that read's bound, not in its counts, perhaps
    /// added since, wherever it lies.
    again: Option<usize>,
}

/// What a live reader keeps of a block's inclusive-time histograms from
/// one read to the next, so that a read scans a node's histogram only
/// where entries added since can lie: up to what the node's `total` grew
/// by, less the entries seen, instead of up to what its whole `total`
/// leaves once every entry was seen, a bound whose slack (each entry's
/// distance above its bucket's smallest value) grows with every call. In
/// the refresh benchmark (10,145 nodes), a read of a session that had
/// run an hour scanned 237,000 lines, one of a session that had just
/// started 114,000; with this, 75,000 and 68,000.
///
/// Why the counts above the scan are still what the last read found:
/// an entry is added to its histogram after its value was added to the
/// node's `total` (directly, or as the thread's pending entry, see
/// `Header::pending`, at its next timed exit). An entry the last read
/// did not count either has its value in what `total` grew by since
/// that read's bound, so the scan meets it (the scan stops only where
/// what is left of the growth is below a bucket's smallest value), or
/// its value was already in that bound: then it was the thread's
/// pending entry when that read noted it (after the bound, before the
/// scan), and is read again, wherever it lies. A node whose `total`
/// moved while it was read (an entry seen might not be in the bound,
/// and would have used up part of it) is read whole the next time; so
/// is every node once in [`FULL_EVERY`] reads, which bounds how long a
/// count can lag where this reasoning does not hold: a writer preempted
/// between adding to `total` and to the histogram (a few instructions),
/// a histogram page first written between the read's question of which
/// pages hold data and the node's bound, or a processor that makes
/// stores visible out of order (not x86_64).
#[derive(Debug, Default)]
pub struct HistMemo {
    /// The block's session generation and thread: another's are
    /// forgotten.
    of: Option<(u32, u32)>,
    /// Reads of the block so far.
    reads: u64,
    /// Cache lines of histograms the last read scanned.
    lines: u64,
    /// By node: what its last read found.
    nodes: Vec<NodeMemo>,
    /// The counts read, the nodes' runs one after another.
    pairs: Vec<(u16, u64)>,
    /// The read in progress's, swapped in when it ends.
    next_nodes: Vec<NodeMemo>,
    next_pairs: Vec<(u16, u64)>,
}

/// What one node's last read found (see [`HistMemo`]).
#[derive(Clone, Copy, Debug)]
struct NodeMemo {
    /// `total` when read, before the scan.
    bound: u64,
    /// The bucket of the thread's pending inclusive entry, noted after the
    /// bound and before the scan, when it was this node's; else
    /// `BUCKETS`.
    again: u16,
    /// `total` had not moved once the scan was over.
    settled: bool,
    /// The run of `pairs`.
    start: usize,
    len: usize,
}

/// One read in this many reads every node's histogram whole (see
/// [`HistMemo`]): node `i` in read `r` when `(i + r) % FULL_EVERY == 0`.
pub const FULL_EVERY: u64 = 32;

impl HistMemo {
    /// Starts a read of the block of session generation `epoch` and
    /// thread `thread`.
    fn begin(&mut self, epoch: u32, thread: u32) {
        if self.of != Some((epoch, thread)) {
            *self = HistMemo {
                of: Some((epoch, thread)),
                ..HistMemo::default()
            };
        }
        self.reads += 1;
        self.lines = 0;
        self.next_nodes.clear();
        self.next_pairs.clear();
    }

    /// Reads node `i`'s inclusive-time histogram (see [`read_hist`]),
    /// from what the last read found where it may, and keeps what this
    /// one finds for the next.
    ///
    /// # Safety
    /// `i < node_cap` of this block's geometry `g`.
    unsafe fn read_node(
        &mut self,
        block: Block,
        g: &Geometry,
        i: u32,
        pending: [Option<u64>; 2],
        page_ok: &dyn Fn(usize) -> bool,
        keep: bool,
    ) -> (Histogram, usize, u64) {
        // SAFETY: per the caller.
        let n = unsafe { block.node_in(g, i) };
        // The bound, then the pending entry, then the scan, then the
        // bound again (see the type's comment): in this order.
        let bound = n.total.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let first = (i as usize * HISTS) * BUCKETS;
        let noted = block.header().pending[0].load(Ordering::Relaxed);
        let again = (noted.checked_sub(first as u64))
            .filter(|&k| k < BUCKETS as u64)
            .map_or(BUCKETS as u16, |k| k as u16);
        fence(Ordering::Acquire);
        let last = self.nodes.get(i as usize).filter(|m| m.settled);
        let since = last
            .filter(|_| !(u64::from(i) + self.reads).is_multiple_of(FULL_EVERY))
            .and_then(|m| {
                Some(Since {
                    grown: bound.checked_sub(m.bound)?,
                    before: &self.pairs[m.start..][..m.len],
                    again: (usize::from(m.again) < BUCKETS).then_some(usize::from(m.again)),
                })
            });
        let start = self.next_pairs.len();
        let limit = Limit {
            sum: Some(bound),
            entries: None,
            keep,
        };
        let read = read_hist(
            block,
            g,
            i,
            0,
            pending,
            page_ok,
            limit,
            since.as_ref(),
            Some(&mut self.next_pairs),
        );
        fence(Ordering::Acquire);
        let settled = n.total.load(Ordering::Relaxed) == bound;
        self.next_nodes.push(NodeMemo {
            bound,
            again,
            settled,
            start,
            len: self.next_pairs.len() - start,
        });
        self.lines += read.1 as u64;
        read
    }

    /// Cache lines (of 8 buckets) of inclusive-time histograms the last
    /// read scanned.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Ends the read.
    fn end(&mut self) {
        std::mem::swap(&mut self.nodes, &mut self.next_nodes);
        std::mem::swap(&mut self.pairs, &mut self.next_pairs);
    }
}

/// What a histogram can hold at most, as far as its node's counters tell,
/// and what of it to keep.
#[derive(Clone, Copy)]
struct Limit {
    /// The sum of its values (see [`read_hist`]).
    sum: Option<u64>,
    /// The number of its entries.
    entries: Option<u64>,
    /// Keep the buckets read (`false`: only count the entries).
    keep: bool,
}

/// Histogram `which` of a node, with the thread's pending entries (see
/// `Header::pending`) added, how many cache lines its scan read, and its
/// count. `limit.keep: false` leaves the histogram empty and only counts.
///
/// `limit.sum`: an upper bound of the sum of the histogram's values, when the
/// node has one. Every timed call adds its duration to the node's `total`
/// (inclusive) and `self_` (exclusive) before its histogram entries are
/// added (or made pending), so those counters, read before the scan,
/// bound the values of every entry the scan can meet, except entries of
/// calls that end while it runs (which the next read counts). Buckets are
/// scanned from the smallest, and the scan stops at the first bucket
/// whose smallest value exceeds what the entries seen so far leave of
/// the bound: no entry can lie there or above. A node whose calls take
/// about the same time then costs a few cache lines, not its whole
/// histogram (15 KiB), which is what keeps a live reader's refresh of a
/// large session short. `limit.entries`: at most that many entries; the
/// scan also stops once it has seen them.
///
/// `since`: what the last read of this histogram found (a live reader
/// reading the same block again, see [`HistMemo`]); the scan then also
/// stops where no entry added since can lie, and takes the counts above
/// from that read. `out`: where to append the counts read, `(bucket,
/// count)` ascending, without the pending entries (for the next read's
/// `since`); the histogram returned is then a copy of them.
#[allow(clippy::too_many_arguments)]
fn read_hist(
    block: Block,
    g: &Geometry,
    node: u32,
    which: usize,
    pending: [Option<u64>; 2],
    page_ok: &dyn Fn(usize) -> bool,
    limit: Limit,
    since: Option<&Since<'_>>,
    out: Option<&mut Vec<(u16, u64)>>,
) -> (Histogram, usize, u64) {
    let keep = limit.keep;
    const PAGE: usize = 4096;
    const _: () = assert!(BUCKETS.is_multiple_of(LINE) && (BUCKETS * 8).is_multiple_of(64));
    let first = ((node as usize * HISTS + which) * BUCKETS) as u64;
    let off = g.off_hist + first as usize * 8;
    let mut left = limit.sum.unwrap_or(u64::MAX);
    // Entries still possible: the scan also stops when it has seen them
    // all.
    let mut more = limit.entries.unwrap_or(u64::MAX);
    // The histogram's count is the sum of its buckets: a hostile live
    // block's counts are cut so that it fits a u64 (real counts always
    // do).
    let mut room = u64::MAX;
    // Only the non-zero counters, line by line: a page that may not be
    // read holds zeros.
    let mut own = Vec::new();
    let remembered = out.is_some();
    let collect = keep || remembered;
    let pairs = match out {
        Some(out) => out,
        None => {
            own.reserve(if keep { 8 } else { 0 });
            &mut own
        }
    };
    let start = pairs.len();
    let mut b = 0;
    let mut lines = 0;
    // The buckets below `limit` are those whose smallest value is at
    // most `left` (bucket_bounds(b).0 <= left exactly when b <=
    // bucket_index(left)): found again only when a line holds entries,
    // not at every line.
    let limit_of = |left: u64| crate::histogram::bucket_index(left) + 1;
    // With `since`: what the entries added since the last read can add
    // up to at most, less those seen so far. The entries seen are at
    // least `seen` (each counter times its bucket's smallest value), of
    // which the last read's own entries in the buckets passed so far
    // (`before[..at_before]`) are `seen_before`: the new ones, the rest.
    let mut left_new = since.map(|s| s.grown);
    let (mut seen, mut seen_before, mut at_before) = (0u64, 0u64, 0);
    let limit_with =
        |left: u64, left_new: Option<u64>| limit_of(left).min(left_new.map_or(BUCKETS, limit_of));
    let mut limit = limit_with(left, left_new);
    while b < BUCKETS && more > 0 && b < limit {
        let at = off + b * 8;
        let page_end = (at / PAGE + 1) * PAGE;
        let end = (b + (page_end - at) / 8).min(BUCKETS);
        if !page_ok(at) {
            // Zeros: nothing seen, the bound is unchanged.
            b = end;
            continue;
        }
        while b < end && more > 0 && b < limit {
            // SAFETY: node < node_count <= node_cap, which < HISTS, of
            // this block's geometry, and b..b+LINE <= BUCKETS lie in one
            // readable page of the histogram area: histograms start on a
            // cache line (the area is page aligned and a histogram is 240
            // lines) and BUCKETS is a multiple of LINE, so a line never
            // crosses a page. Each counter is an aligned 8-byte word,
            // which the copy moves whole (no torn counter), where a
            // relaxed load per counter would be slower.
            let buf: [u64; LINE] = unsafe {
                let src =
                    block.bucket_in(g, node, which, b) as *const AtomicU64 as *const [u64; LINE];
                std::ptr::read(src)
            };
            b += LINE;
            lines += 1;
            // Most lines scanned are empty: skip them in one test.
            if buf.iter().fold(0, |acc, &c| acc | c) == 0 {
                continue;
            }
            let b = b - LINE;
            for (i, &c) in buf.iter().enumerate() {
                let c = c.min(room);
                if c != 0 {
                    room -= c;
                    if collect {
                        pairs.push(((b + i) as u16, c));
                    }
                    let low = crate::histogram::bucket_bounds(b + i).0;
                    left = left.saturating_sub(low.saturating_mul(c));
                    more = more.saturating_sub(c);
                    seen = seen.saturating_add(low.saturating_mul(c));
                }
            }
            if let Some(s) = since {
                let end = b + LINE;
                while let Some(&(k, n)) = s.before.get(at_before).filter(|p| (p.0 as usize) < end) {
                    let low = crate::histogram::bucket_bounds(k as usize).0;
                    seen_before = seen_before.saturating_add(low.saturating_mul(n));
                    at_before += 1;
                }
                // The entry pending then is in the last read's bound, not
                // in its counts: when it is here now, it is not one of
                // the new ones either.
                if let Some(a) = s.again.filter(|a| (b..end).contains(a)) {
                    let then = match s.before.binary_search_by_key(&a, |p| p.0 as usize) {
                        Ok(at) => s.before[at].1,
                        Err(_) => 0,
                    };
                    if buf[a - b] > then {
                        let low = crate::histogram::bucket_bounds(a).0;
                        seen_before = seen_before.saturating_add(low);
                    }
                }
                left_new = Some(s.grown.saturating_sub(seen.saturating_sub(seen_before)));
            }
            limit = limit_with(left, left_new);
        }
    }
    // The buckets from `b` up were not read: with `since`, no entry
    // added since the last read lies there (but the one pending then,
    // read again), so they hold what that read found.
    if let Some(s) = since.filter(|_| b < BUCKETS && more > 0) {
        let fresh = |k: usize| {
            let at = off + k * 8;
            if page_ok(at) {
                // SAFETY: k < BUCKETS, in this node's histogram, on a
                // readable page.
                unsafe { block.bucket_in(g, node, which, k) }.load(Ordering::Relaxed)
            } else {
                0
            }
        };
        let mut again = s.again.filter(|&k| k >= b && k < BUCKETS);
        let from = s.before.partition_point(|p| (p.0 as usize) < b);
        let mut push = |k: usize, c: u64, pairs: &mut Vec<(u16, u64)>| {
            let c = c.min(room);
            if c != 0 {
                room -= c;
                pairs.push((k as u16, c));
            }
        };
        for &(k, c) in &s.before[from..] {
            let k = k as usize;
            if let Some(a) = again.filter(|&a| a <= k) {
                again = None;
                if a < k {
                    push(a, fresh(a), pairs);
                } else {
                    push(k, c.max(fresh(k)), pairs);
                    continue;
                }
            }
            push(k, c, pairs);
        }
        if let Some(a) = again {
            push(a, fresh(a), pairs);
        }
    }
    let mut h = match (keep, remembered) {
        (false, _) => Histogram::default(),
        (true, false) => Histogram::from_sorted(std::mem::take(pairs)),
        (true, true) => Histogram::from_sorted(pairs[start..].to_vec()),
    };
    for p in pending.into_iter().flatten() {
        if let Some(i) = p.checked_sub(first).filter(|&i| i < BUCKETS as u64) {
            if room > 0 {
                room -= 1;
                if keep {
                    h.record(crate::histogram::bucket_value(i as usize));
                }
            }
        }
    }
    (h, lines, u64::MAX - room)
}

/// What a live reader knows of the session a block belongs to (its
/// `SessionHeader`), and how much of the block it wants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LiveBlockRead {
    /// The session's generation: blocks of another are not read.
    pub epoch: u32,
    /// Nanoseconds per clock tick.
    pub ns_per_tick: f64,
    /// `SessionHeader::alloc_feature`.
    pub boundary_alloc: bool,
    /// `false`: only the inclusive-time histograms (calls and time
    /// percentiles), a third of the work.
    pub all_histograms: bool,
    /// `true`: the inclusive-time histograms are only counted (the timed
    /// calls), and left empty (a view without time percentiles).
    pub total_counts_only: bool,
    /// `SessionHeader::alloc_installed`.
    pub alloc_counted: bool,
}

/// Reads a live session's block file that this process mapped read-only
/// at `base` (`len` bytes, the size the file had): the thread's tree,
/// exactly as the session's own snapshot reads it. `Ok(None)`: the block
/// belongs to another session generation (not set up yet) or to a
/// thread working for the profiler. `page_ok(offset)`: whether the page
/// holding that byte may be read (pages never written read as zero).
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
    live: &LiveBlockRead,
    page_ok: &dyn Fn(usize) -> bool,
) -> Result<Option<ThreadSnapshot>, String> {
    // SAFETY: per the caller.
    unsafe { read_live_block_again(base, len, live, page_ok, None) }
}

/// [`read_live_block`], for a reader that reads the block again and
/// again: `memo` keeps what each read found of its inclusive-time
/// histograms, so that the next scans only where they may have changed
/// (see [`HistMemo`]). The snapshot is the same as without it (up to the
/// calls that end while it reads, as ever).
///
/// # Safety
/// As [`read_live_block`].
pub unsafe fn read_live_block_again(
    base: *const u8,
    len: usize,
    live: &LiveBlockRead,
    page_ok: &dyn Fn(usize) -> bool,
    memo: Option<&mut HistMemo>,
) -> Result<Option<ThreadSnapshot>, String> {
    // SAFETY: per the caller.
    let (block, geometry) = unsafe { Block::validate(base, len) }?;
    let how = Read {
        epoch: live.epoch,
        ns_per_tick: live.ns_per_tick,
        boundary_alloc: live.boundary_alloc,
        all_histograms: live.all_histograms,
        total_counts_only: live.total_counts_only,
        alloc_counted: live.alloc_counted,
        page_ok,
    };
    // The checked geometry, not the header's fields: the file's owner
    // may rewrite them while this reads.
    Ok(read_block_in(block, geometry, &how, memo))
}

/// The exclusive-time histograms of some nodes of a live session's block
/// file mapped at `base` (`len` bytes), read after the rest of the block
/// was read without them ([`LiveBlockRead::all_histograms`] false): for a
/// view that shows their percentiles only for the rows on screen.
/// `nodes`: each node's index in the block ([`NodeSnapshot::index`]) and
/// the timed calls its snapshot counted, which bounds its entries, so
/// that the histogram agrees with the rest of that snapshot (calls that
/// ended since are left out). A node past the block's count reads as
/// empty; `Ok(None)` when the block no longer belongs to `live`'s
/// session generation.
///
/// # Safety
/// As [`read_live_block`].
pub unsafe fn read_live_self_histograms(
    base: *const u8,
    len: usize,
    live: &LiveBlockRead,
    page_ok: &dyn Fn(usize) -> bool,
    nodes: &[(u32, u64)],
) -> Result<Option<Vec<Histogram>>, String> {
    // SAFETY: per the caller.
    let Some(LiveSelfLines {
        block,
        g,
        count,
        pending,
        ..
    }) = (unsafe { LiveSelfLines::open(base, len, live, page_ok) })?
    else {
        return Ok(None);
    };
    let hists = (nodes.iter())
        .map(|&(node, entries)| {
            if node >= count {
                return Histogram::default();
            }
            // SAFETY: node < node_count <= node_cap, of the checked
            // geometry.
            unsafe { node_hist(block, &g, node, 1, pending, page_ok, Some(entries), true) }.0
        })
        .collect();
    Ok(Some(hists))
}

/// A live session's block file, checked once, whose exclusive-time
/// histograms are read a cache line at a time: for a reader that needs
/// only low quantiles of a frame's calling contexts merged (see
/// `perflens_live::LiveSession::self_quantile_histograms`), which reads
/// them in step, line by line, and stops where the merged count reaches
/// the rank it needs, instead of reading each one to its largest value.
pub struct LiveSelfLines<'a> {
    block: Block,
    g: Geometry,
    count: u32,
    pending: [Option<u64>; 2],
    page_ok: &'a dyn Fn(usize) -> bool,
    /// The last page asked about, and the answer (lines are read in
    /// order: a node's next line is on the same page, most of the time).
    last_page: std::cell::Cell<Option<(usize, bool)>>,
}

/// Lines (of 8 buckets) in a histogram.
pub const HIST_LINES: usize = BUCKETS / LINE;

impl<'a> LiveSelfLines<'a> {
    /// Checks the block file mapped at `base` (`len` bytes); `Ok(None)`
    /// when it no longer belongs to `live`'s session generation.
    ///
    /// # Safety
    /// As [`read_live_block`], for as long as the value lives.
    pub unsafe fn open(
        base: *const u8,
        len: usize,
        live: &LiveBlockRead,
        page_ok: &'a dyn Fn(usize) -> bool,
    ) -> Result<Option<LiveSelfLines<'a>>, String> {
        // SAFETY: per the caller.
        let (block, g) = unsafe { Block::validate(base, len) }?;
        let h = block.header();
        if h.epoch.load(Ordering::Acquire) != live.epoch {
            return Ok(None);
        }
        let count = h.node_count.load(Ordering::Acquire).min(g.node_cap);
        let pending = block.pending_in(g.node_cap);
        Ok(Some(LiveSelfLines {
            block,
            g,
            count,
            pending,
            page_ok,
            last_page: std::cell::Cell::new(None),
        }))
    }

    /// Line `line` (buckets `8 * line ..`) of node `node`'s exclusive-time
    /// histogram, with the thread's pending entry added where it falls:
    /// zeros for a node past the block's count, a line past the end, or
    /// a page the file does not hold.
    pub fn line(&self, node: u32, line: usize) -> [u64; LINE] {
        let mut out = [0u64; LINE];
        if node >= self.count || line >= HIST_LINES {
            return out;
        }
        let b = line * LINE;
        let first = ((node as usize * HISTS + 1) * BUCKETS) as u64;
        let off = self.g.off_hist + (first as usize + b) * 8;
        let page = off / 4096;
        let ok = match self.last_page.get() {
            Some((p, ok)) if p == page => ok,
            _ => {
                let ok = (self.page_ok)(off);
                self.last_page.set(Some((page, ok)));
                ok
            }
        };
        if ok {
            // SAFETY: node < node_count <= node_cap of the checked
            // geometry, histogram 1 < HISTS, b + LINE <= BUCKETS.
            let at = unsafe { self.block.bucket_in(&self.g, node, 1, b) };
            // SAFETY: as in `read_hist`: a whole line of aligned 8-byte
            // counters on one readable page of the histogram area.
            out = unsafe { std::ptr::read(at as *const AtomicU64 as *const [u64; LINE]) };
        }
        for p in self.pending.into_iter().flatten() {
            if let Some(i) = p.checked_sub(first).filter(|&i| i < BUCKETS as u64) {
                let i = i as usize;
                if i / LINE == line {
                    out[i % LINE] = out[i % LINE].saturating_add(1);
                }
            }
        }
        out
    }
}
