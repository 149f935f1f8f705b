//! What a live reader keeps of a block's inclusive-time histograms from
//! one read to the next ([`HistMemo`]), so that the next read scans only
//! where entries may have been added since.

use super::hist::{Limit, Since, read_hist};
use crate::block::{Block, Geometry, HISTS};
use crate::histogram::{BUCKETS, Histogram};
use std::sync::atomic::{Ordering, fence};

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
    pub(super) fn begin(&mut self, epoch: u32, thread: u32) {
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
    pub(super) unsafe fn read_node(
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
    pub(super) fn end(&mut self) {
        std::mem::swap(&mut self.nodes, &mut self.next_nodes);
        std::mem::swap(&mut self.pairs, &mut self.next_pairs);
    }
}
