//! Reading one histogram of a node: a scan by cache lines that stops as
//! soon as the node's own counters say nothing more can lie above, with
//! the thread's pending entries added where they fall.

use super::LINE;
use crate::block::{Block, Geometry, HISTS};
use crate::histogram::{BUCKETS, Histogram};
use std::sync::atomic::{AtomicU64, Ordering};

/// Histogram `which` of node `node` (see [`read_hist`]), bounded by what
/// the node's counters say its values add up to, and by `entries`.
///
/// # Safety
/// `node < node_cap` of this block's geometry `g`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn node_hist(
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
pub(super) struct Since<'a> {
    /// What the node's `total` grew by since that read's bound: at least
    /// what the entries not in `before` (but `again`'s) add up to.
    pub(super) grown: u64,
    /// The counts that read found, `(bucket, count)` ascending.
    pub(super) before: &'a [(u16, u64)],
    /// The bucket of the entry the thread had pending then, when it was
    /// this node's: in that read's bound, not in its counts, perhaps
    /// added since, wherever it lies.
    pub(super) again: Option<usize>,
}

/// What a histogram can hold at most, as far as its node's counters tell,
/// and what of it to keep.
#[derive(Clone, Copy)]
pub(super) struct Limit {
    /// The sum of its values (see [`read_hist`]).
    pub(super) sum: Option<u64>,
    /// The number of its entries.
    pub(super) entries: Option<u64>,
    /// Keep the buckets read (`false`: only count the entries).
    pub(super) keep: bool,
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
pub(super) fn read_hist(
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
