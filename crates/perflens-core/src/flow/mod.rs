//! Data flow: channels, streams, futures and locks, counted per site.
//!
//! A [`FlowSite`] is one `perflens::channel!` (or `stream!`, `future!`,
//! lock constructor, or a probe a library made) in the source: a
//! `static` the macro writes. Its row in the report is its label, or
//! else `file:line:col`. Every channel made there adds to the same row.
//!
//! # Where the counters live
//!
//! With the other per-thread data: each thread that uses a site has a
//! node for it in its block, under the root context, found like a
//! function's node (a table probe), written only by that thread with
//! plain stores. So no counter is a shared cache line that producers and
//! consumers fight over, the live view reads them as it reads the rest,
//! and a row is the sum over threads, as a function's is. The calling
//! context tree, hot paths, function tables and thread call counts leave
//! these nodes out (their callsite's kind is [`CallsiteKind::Flow`]).
//!
//! A channel's message latency rides with the message (a timestamp the
//! sender puts beside it, see `perflens::flow`); the receiver records it.
//!
//! # What a site's node counts
//!
//! `perflens_format::flow` is the one map from each figure of a channel,
//! lock, wrapped future or stream site to the node counter that holds it;
//! the writers here go through its constants (`node.counter(channel::SENT)`),
//! and the report reads the same constants back.
//!
//! A channel's waits and latencies are timed in timed and sampled modes;
//! count mode reads no clock (no latency, no waits), and neither does a
//! site made with `latency = false` or a session with
//! `PERFLENS_FLOW_LATENCY=0`. A channel's queue maximum is seen right
//! after a send (every send, or where reading the length costs a cache
//! miss, each of a thread's first [`QUEUE_WARMUP`] then one in
//! [`QUEUE_SAMPLE`]), or is the capacity once a send found the channel
//! full.
//!
//! A lock's site is its label, or else the place its constructor was
//! called (see [`LockSite`]). An acquisition is recorded when its guard
//! is dropped, on the thread that drops it (an async guard may move),
//! all of it at once, so its two histogram entries are on one node and
//! the hold's comes first. Hold and wait times are timed in timed and
//! sampled modes (every acquisition: a lock is no function, it is not
//! sampled); count mode and `PERFLENS_FLOW_LATENCY=0` read no clock.

use crate::block::{Node, bump};
use crate::callsite::{Callsite, located};
use crate::clock;
use crate::frame;
use crate::hot::{self, FAST_COUNT, Hot};
use crate::snapshot::CallsiteKind;
use perflens_format::flow::{Counter, channel};
use std::sync::atomic::{AtomicU32, Ordering};

mod lock;
mod wrapped;
pub use lock::{Held, LockSite, Waiting, lock_clock};

pub use perflens_format::vocab::FlowKind;

/// [`FlowSite::sent_sampled`] asks for the queue's length after each of a
/// thread's first [`QUEUE_WARMUP`] sends at a site, then once in this
/// many.
pub const QUEUE_SAMPLE: u64 = 64;

/// See [`QUEUE_SAMPLE`].
pub const QUEUE_WARMUP: u64 = 256;

/// The flow site a thread used last: the site's address, the epoch of
/// the thread's block then, and the site's node in it (index and
/// address).
#[derive(Clone, Copy)]
struct Last {
    site: usize,
    epoch: u32,
    index: u32,
    node: *const Node,
}

const NO_LAST: Last = Last {
    site: 0,
    epoch: 0,
    index: 0,
    node: std::ptr::null(),
};

thread_local! {
    /// The flow site this thread used last, and its node. Valid while the
    /// epoch it was found in is the running session's: a thread keeps its
    /// block for the whole session, a block is unmapped only after its
    /// session ended or at its thread's exit (which clears this, see
    /// [`forget_last`]), and a new session has another epoch.
    static LAST: std::cell::Cell<Last> = const { std::cell::Cell::new(NO_LAST) };
}

/// By default one message in this many is stamped with its send time (per
/// sending thread and site, after [`LATENCY_WARMUP`]): see
/// [`FlowSite::stamp`].
pub const DEFAULT_LATENCY_EVERY: u32 = 8;

/// Each thread stamps every one of its first this many messages of a
/// site, so that a channel that carries few messages has the latency of
/// each of them.
pub const LATENCY_WARMUP: u64 = 256;

/// One message in this many is stamped (`PERFLENS_FLOW_LATENCY`); 0: no
/// clock is read for flows at all (counts only).
static LATENCY_EVERY: AtomicU32 = AtomicU32::new(DEFAULT_LATENCY_EVERY);

/// Sets, for the whole process, how many messages of each thread and
/// site share one timestamp: 1 stamps every message, `n` one in `n` (after
/// each thread's first [`LATENCY_WARMUP`]), 0 none, and then no clock is
/// read for channels, streams, futures or locks at all
/// (`PERFLENS_FLOW_LATENCY`).
pub fn set_latency_every(n: u32) {
    LATENCY_EVERY.store(n, Ordering::Relaxed);
}

/// See [`set_latency_every`].
#[inline]
pub fn latency_every() -> u32 {
    LATENCY_EVERY.load(Ordering::Relaxed)
}

/// Whether flows read the clock at all (see [`set_latency_every`]).
#[inline]
pub fn latency() -> bool {
    latency_every() != 0
}

/// Forgets the site this thread used last: called when the thread's block
/// is given up (at thread exit), so nothing is recorded into it after.
pub(crate) fn forget_last() {
    LAST.set(NO_LAST);
}

/// One place in the source that makes channels (or streams, futures,
/// locks), or one kind of primitive a library reports through the probe
/// API. Made in a `static` by the macros, or by hand with [`FlowSite::new`].
pub struct FlowSite {
    cs: Callsite,
    kind: FlowKind,
    label: &'static str,
    file: &'static str,
    line: u32,
    column: u32,
    latency: bool,
}

impl FlowSite {
    /// A site of `kind` named `label`, or, if `label` is empty,
    /// `file:line:column`. `latency: false` makes its channels read no
    /// clock (counts only).
    pub const fn new(
        kind: FlowKind,
        label: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
        latency: bool,
    ) -> FlowSite {
        FlowSite {
            cs: Callsite::named_by_owner(),
            kind,
            label,
            file,
            line,
            column,
            latency,
        }
    }

    /// What the site measures.
    pub fn kind(&self) -> FlowKind {
        self.kind
    }

    /// The registered callsite id, registering on first use (as its
    /// label, else as `file:line:col`).
    #[inline(always)]
    fn id(&'static self) -> u32 {
        self.cs.id_or(|| {
            let name = if self.label.is_empty() {
                located(self.file, self.line, self.column)
            } else {
                self.label.to_string()
            };
            (name, CallsiteKind::Flow(self.kind), None)
        })
    }

    /// This thread's node for the site when it is the site the thread
    /// used last in the running session: two thread-local loads and one
    /// of the session's epoch, no table probe. A thread sending or
    /// receiving in a loop uses one site.
    #[inline(always)]
    fn last_node(&'static self) -> Option<&'static Node> {
        let last = LAST.get();
        if last.site == self as *const FlowSite as usize
            && last.epoch == hot::EPOCH.load(Ordering::Relaxed)
        {
            // SAFETY: `find_node` stored a node of this thread's block,
            // whose epoch was `last.epoch`; that epoch is still the
            // running session's, so the block is still this thread's and
            // mapped (see `LAST`), and only this thread writes the node.
            Some(unsafe { &*last.node })
        } else {
            None
        }
    }

    /// This thread's node for the site, when it records in the running
    /// session (found or made), and whether it may read the clock for it.
    #[inline(always)]
    pub(crate) fn node(&'static self) -> Option<(&'static Hot, &'static Node, u32, bool)> {
        // SAFETY: owner thread; the reference is used by this call only,
        // which does not call out while holding it.
        let hot: &'static Hot = unsafe { &*hot::hot() };
        let hot = if hot::is_current(hot) {
            hot
        } else {
            hot_slow()?
        };
        let last = LAST.get();
        let node = if last.site == self as *const FlowSite as usize && last.epoch == hot.epoch {
            last.index
        } else {
            self.find_node(hot)
        };
        Some((hot, frame::node(hot, node), node, self.timed_in(hot)))
    }

    /// Whether the site reads the clock on a thread in this state.
    #[inline(always)]
    fn timed_in(&self, hot: &Hot) -> bool {
        self.latency && hot.fast != FAST_COUNT && latency()
    }

    /// This thread's node for the site, as [`FlowSite::node`], out of line
    /// (the path after [`FlowSite::last_node`] missed).
    #[inline(never)]
    fn node_slow(&'static self) -> Option<&'static Node> {
        self.node().map(|(_, n, _, _)| n)
    }

    /// This thread's node for the site, found in its table (or made),
    /// and remembered as the last one used.
    #[inline(never)]
    fn find_node(&'static self, hot: &Hot) -> u32 {
        let np = match frame::find(hot, 0, self.cs.tagged()) {
            Some(np) => np,
            None => {
                let np = frame::resolve(hot, 0, self.id()).np;
                // A new node: its first message is stamped (see `stamp`).
                frame::node(hot, np.node)
                    .countdown
                    .store(0, Ordering::Relaxed);
                np
            }
        };
        LAST.set(Last {
            site: self as *const FlowSite as usize,
            epoch: hot.epoch,
            index: np.node,
            node: frame::node(hot, np.node),
        });
        np.node
    }

    /// The send time a message carries, or 0. When the session times
    /// flows, each thread stamps every message of its first
    /// [`LATENCY_WARMUP`] at this site, then one in [`latency_every`]
    /// (the gaps between two stamped messages drawn at random around it,
    /// so a periodic pattern of messages is not sampled in step); the
    /// others cost a countdown and carry 0, and their receivers read no
    /// clock. Messages sent and received are counted exactly either way.
    #[inline(always)]
    pub fn stamp(&'static self) -> u64 {
        if let Some(n) = self.last_node() {
            let c = n.countdown.load(Ordering::Relaxed);
            if c != 0 {
                n.countdown.store(c - 1, Ordering::Relaxed);
                return 0;
            }
        }
        self.stamp_slow()
    }

    #[inline(never)]
    fn stamp_slow(&'static self) -> u64 {
        let Some((hot, n, _, timed)) = self.node() else {
            return 0;
        };
        let c = n.countdown.load(Ordering::Relaxed);
        if c != 0 {
            // Found through the table: not the site used last.
            n.countdown.store(c - 1, Ordering::Relaxed);
            return 0;
        }
        let every = latency_every();
        if !timed || every == 0 {
            // Not timed in this session: the countdown never runs out in
            // practice (four billion messages of this thread).
            n.countdown.store(u32::MAX, Ordering::Relaxed);
            return 0;
        }
        let now = clock::now_with(hot.tsc()).max(1);
        let gap = if n.counter(channel::SENT).load(Ordering::Relaxed) < LATENCY_WARMUP {
            0
        } else {
            next_gap(now, every)
        };
        n.countdown.store(gap, Ordering::Relaxed);
        now
    }

    /// The clock, when this site's waits and latencies are timed in the
    /// running session; else 0 (which marks "not timed").
    #[inline(always)]
    pub fn clock(&'static self) -> u64 {
        match self.node() {
            Some((hot, _, _, true)) => clock::now_with(hot.tsc()).max(1),
            _ => 0,
        }
    }

    /// A channel was made here, of `capacity` (`None`: unbounded).
    pub fn created(&'static self, capacity: Option<usize>) {
        let Some((_, n, _, _)) = self.node() else {
            return;
        };
        bump(n.counter(channel::CREATED), 1);
        max32(
            n.peak(channel::CAPACITY),
            channel::encode_capacity(capacity),
        );
    }

    /// A channel made here can now hold `capacity` messages, more than
    /// when it was made (a `futures` mpsc channel holds its buffer and one
    /// message per sender: each clone adds one).
    pub fn capacity_at_least(&'static self, capacity: usize) {
        if let Some((_, n, _, _)) = self.node() {
            max32(
                n.peak(channel::CAPACITY),
                channel::encode_capacity(Some(capacity)),
            );
        }
    }

    /// `n` senders were made (a channel's first, or clones), or dropped
    /// (`n` negative).
    pub fn senders(&'static self, n: i64) {
        if let Some((_, node, _, _)) = self.node() {
            endpoints(
                node.counter(channel::SENDERS_MADE),
                node.counter(channel::SENDERS_DROPPED),
                n,
            );
        }
    }

    /// `n` receivers were made, or dropped (`n` negative).
    pub fn receivers(&'static self, n: i64) {
        if let Some((_, node, _, _)) = self.node() {
            endpoints(
                node.counter(channel::RECEIVERS_MADE),
                node.counter(channel::RECEIVERS_DROPPED),
                n,
            );
        }
    }

    /// A message was sent; `queued`: the messages in the channel right
    /// after, if known.
    #[inline(always)]
    pub fn sent(&'static self, queued: Option<usize>) {
        let Some(n) = self.last_node().or_else(|| self.node_slow()) else {
            return;
        };
        bump(n.counter(channel::SENT), 1);
        if let Some(q) = queued {
            max32(
                n.peak(channel::MAX_QUEUED),
                u32::try_from(q).unwrap_or(u32::MAX),
            );
        }
    }

    /// A message was sent into a channel that can tell how many messages
    /// it holds: `queued` is asked right after each of this thread's
    /// first [`QUEUE_WARMUP`] sends at the site, then after one in
    /// [`QUEUE_SAMPLE`] (reading a length touches the receivers' cache
    /// line: a miss, which one send in 8 made the larger part of a
    /// measured send's cost between two cores). A channel that fills up
    /// says so with [`FlowSite::found_full`], which makes the maximum
    /// exact then.
    #[inline(always)]
    pub fn sent_sampled(&'static self, queued: impl FnOnce() -> usize) {
        let Some(n) = self.last_node().or_else(|| self.node_slow()) else {
            return;
        };
        let sent_here = n.counter(channel::SENT);
        let sent = sent_here.load(Ordering::Relaxed);
        sent_here.store(sent.wrapping_add(1), Ordering::Relaxed);
        if sent < QUEUE_WARMUP || sent % QUEUE_SAMPLE == 0 {
            max32(
                n.peak(channel::MAX_QUEUED),
                u32::try_from(queued()).unwrap_or(u32::MAX),
            );
        }
    }

    /// A send found the channel full, of `capacity` messages.
    #[inline]
    pub fn found_full(&'static self, capacity: usize) {
        if let Some((_, n, _, _)) = self.node() {
            max32(
                n.peak(channel::MAX_QUEUED),
                u32::try_from(capacity).unwrap_or(u32::MAX),
            );
        }
    }

    /// `n` messages were sent at once (a broadcast value sent to `n`
    /// receivers counts one per receiver); `queued` as for
    /// [`FlowSite::sent`].
    pub fn sent_n(&'static self, n: u64, queued: Option<usize>) {
        let Some((_, node, _, _)) = self.node() else {
            return;
        };
        bump(node.counter(channel::SENT), n);
        if let Some(q) = queued {
            max32(
                node.peak(channel::MAX_QUEUED),
                u32::try_from(q).unwrap_or(u32::MAX),
            );
        }
    }

    /// A message was received; `stamp`: the [`FlowSite::stamp`] it
    /// carries (or a [`FlowSite::clock`] reading), or 0.
    #[inline(always)]
    pub fn received(&'static self, stamp: u64) {
        if stamp == 0
            && let Some(n) = self.last_node()
        {
            bump(n.counter(channel::RECEIVED), 1);
            return;
        }
        self.received_slow(stamp);
    }

    #[inline(never)]
    fn received_slow(&'static self, stamp: u64) {
        let Some((hot, n, node, timed)) = self.node() else {
            return;
        };
        if stamp != 0 && timed {
            let latency = clock::now_with(hot.tsc()).saturating_sub(stamp);
            // A histogram entry counts as a message received.
            bump(n.counter(Counter::Total), latency);
            frame::hist_add(hot, node, 0, latency);
        } else {
            bump(n.counter(channel::RECEIVED), 1);
        }
    }

    /// A sender waited for room since `since` (a [`FlowSite::clock`]
    /// reading; nothing when 0).
    pub fn send_waited(&'static self, since: u64) {
        self.waited(since, channel::SEND_WAIT);
    }

    /// A receiver waited for a message since `since` (as above).
    pub fn recv_waited(&'static self, since: u64) {
        self.waited(since, channel::RECV_WAIT);
    }

    fn waited(&'static self, since: u64, slot: Counter) {
        if since == 0 {
            return;
        }
        if let Some((hot, n, _, true)) = self.node() {
            bump(
                n.counter(slot),
                clock::now_with(hot.tsc()).saturating_sub(since),
            );
        }
    }

    /// `n` messages were still queued when their channel was dropped.
    pub fn dropped_in_queue(&'static self, n: u64) {
        if let Some((_, node, _, _)) = self.node() {
            bump(node.counter(channel::DROPPED), n);
        }
    }
}

/// How many messages to leave unstamped after one stamped at `now` when
/// one in `every` is stamped: the next stamped message is `lo..=lo +
/// span` messages on, `lo` half of `every` (rounded up) and the span
/// twice the rest, so `every` on average. The draw mixes the clock's bits
/// (its low bits may move in steps).
fn next_gap(now: u64, every: u32) -> u32 {
    if every <= 1 {
        return 0;
    }
    let lo = every.div_ceil(2);
    let span = 2 * (every - lo);
    let draw = (now ^ (now >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33;
    lo - 1 + (draw % (u64::from(span) + 1)) as u32
}

/// Adds `n` made (positive) or dropped (negative) endpoints.
fn endpoints(made: &std::sync::atomic::AtomicU64, dropped: &std::sync::atomic::AtomicU64, n: i64) {
    if n >= 0 {
        bump(made, n as u64);
    } else {
        bump(dropped, n.unsigned_abs());
    }
}

/// Raises a single-writer maximum.
#[inline(always)]
pub(crate) fn max32(c: &AtomicU32, v: u32) {
    if v > c.load(Ordering::Relaxed) {
        c.store(v, Ordering::Relaxed);
    }
}

/// The current thread's hot state when it records in the running
/// session, preparing the thread's block if needed.
#[cold]
#[inline(never)]
fn hot_slow() -> Option<&'static Hot> {
    hot::active().or_else(hot::prepare).map(|h| &*h)
}

#[cfg(test)]
mod tests {
    use super::next_gap;

    /// The gaps between stamped messages average `every` (a message in
    /// `every` stamped), reach both ends of their range, and never skip
    /// more than the range allows, whatever the clock's low bits do.
    #[test]
    fn stamped_messages_are_one_in_every_on_average() {
        for every in [1u32, 2, 3, 8, 16, 100] {
            let lo = every.div_ceil(2);
            let hi = lo + 2 * (every - lo);
            for step in [1u64, 8, 37, 1000] {
                let mut seen = std::collections::BTreeSet::new();
                let mut sum = 0u64;
                let draws = 100_000u64;
                for k in 0..draws {
                    // Messages from one stamped to the next.
                    let apart = next_gap(1_000_000 + k * step, every) + 1;
                    assert!(
                        (lo.max(1)..=hi.max(1)).contains(&apart),
                        "{apart} for {every}"
                    );
                    seen.insert(apart);
                    sum += u64::from(apart);
                }
                let mean = sum as f64 / draws as f64;
                assert!(
                    (mean - f64::from(every)).abs() < 0.02 * f64::from(every),
                    "mean {mean} for one in {every} (clock step {step})"
                );
                assert_eq!(
                    seen.len() as u32,
                    hi.max(1) - lo.max(1) + 1,
                    "every gap drawn"
                );
            }
        }
    }
}
