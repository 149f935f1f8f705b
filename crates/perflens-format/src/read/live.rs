//! Reading a live session's block file that another process writes:
//! the whole tree ([`read_live_block`], [`read_live_block_again`]), or
//! only the exclusive-time histograms of the rows on screen, whole
//! ([`read_live_self_histograms`]) or a cache line at a time
//! ([`LiveSelfLines`]).

use super::{HistMemo, LINE, Read, node_hist, read_block_in};
use crate::block::{Block, Geometry, HISTS};
use crate::histogram::{BUCKETS, Histogram};
use crate::snapshot::ThreadSnapshot;
use std::sync::atomic::{AtomicU64, Ordering};

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
/// `nodes`: each node's index in the block
/// ([`crate::NodeSnapshot::index`]) and the timed calls its snapshot counted, which bounds its entries, so
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
