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
//! # What a channel site's node counts
//!
//! | node field | snapshot field | meaning |
//! |---|---|---|
//! | `calls`, histogram 0, `total` | `calls`, `timed_calls`, `hist_total`, `total_ns` | messages received; those with a timestamp are histogram entries of their send-to-receive latency, the others (latency off, count mode) counted in `calls` |
//! | `polls` | `polls` | messages sent |
//! | `busy` | `busy_ns` | time senders waited on a full channel |
//! | `self_` | `self_ns` | time receivers waited on an empty channel |
//! | `cancelled` | `cancelled` | messages still queued when their channel was dropped |
//! | `cancelled_timed` | `timed_cancelled` | channels created |
//! | `alloc_bytes`, `alloc_count` | same | senders created (clones too), senders dropped |
//! | `free_bytes`, `free_count` | same | receivers created, receivers dropped |
//! | `rec_max` | `max_depth` | the most messages queued, seen right after a send (every send, or one in [`QUEUE_SAMPLE`] per thread where reading the length costs a cache miss), or the capacity once a send found the channel full |
//! | `rec_open` | `capacity` | 1 + the largest capacity of a channel made there (0: unbounded) |
//!
//! Waits are timed in timed and sampled modes; count mode reads no
//! clock (no latency, no waits), and neither does a site made with
//! `latency = false` or a session with `PERFLENS_FLOW_LATENCY=0`.
//!
//! # What a lock site's node counts
//!
//! A lock's site is its label, or else the place its constructor was
//! called (see [`LockSite`]). An acquisition is recorded when its guard
//! is dropped, on the thread that drops it (an async guard may move),
//! all of it at once, so its two histogram entries are on one node and
//! the hold's comes first.
//!
//! | node field | snapshot field | meaning |
//! |---|---|---|
//! | `calls`, histogram 0, `total` | `calls`, `timed_calls`, `hist_total`, `total_ns` | acquisitions released; the timed ones are histogram entries of their hold time (acquired to released), the others (count mode, latency off, a session that started while held) counted in `calls` |
//! | `self_`, histogram 1 | `self_ns`, `hist_self` | the wait of the timed acquisitions that had to wait (first attempt failed to acquired); one entry per such acquisition, at most one per hold entry |
//! | `polls` | `polls` | contended acquisitions: the first, non-blocking attempt failed (counted when it failed, on the waiting thread; a wait given up counts too) |
//! | `cancelled` | `cancelled` | shared (read) acquisitions among the acquisitions released |
//! | `rec_max` | `max_depth` | the most waiters of one lock at once, seen as each began to wait |
//!
//! Hold and wait times are timed in timed and sampled modes (every
//! acquisition: a lock is no function, it is not sampled); count mode
//! and `PERFLENS_FLOW_LATENCY=0` read no clock.
//!
//! # What a wrapped future's site counts (`perflens::future!`)
//!
//! | node field | snapshot field | meaning |
//! |---|---|---|
//! | `calls`, histogram 0, `total` | `calls`, `timed_calls`, `hist_total`, `total_ns` | futures completed; the timed ones are histogram entries of their wall time (made to completed) |
//! | `polls` | `polls` | polls |
//! | `busy` | `busy_ns` | time inside their polls |
//! | `cancelled`, `cancelled_timed`, `cancelled_wall` | `cancelled`, `timed_cancelled`, `cancelled_ns` | futures dropped before they completed, the timed ones among them, and their wall time |
//!
//! # What a wrapped stream's site counts (`perflens::stream!`)
//!
//! | node field | snapshot field | meaning |
//! |---|---|---|
//! | `calls`, histogram 0, `total` | `calls`, `timed_calls`, `hist_total`, `total_ns` | intervals between two items of one stream; the timed ones are histogram entries |
//! | `alloc_bytes` | `alloc_bytes` | items |
//! | `polls`, `alloc_count` | `polls`, `alloc_count` | polls, and those that returned `Pending` |
//! | `self_`, `free_bytes` | `self_ns`, `free_bytes` | time from a stream's creation to its first item, summed, and the streams it was timed for |
//! | `free_count` | `free_count` | streams made |
//! | `cancelled_timed`, `cancelled` | `timed_cancelled`, `cancelled` | streams that ended (`Ready(None)`), and streams dropped before they ended |

use crate::block::{Node, bump};
use crate::callsite::{Callsite, UNREGISTERED};
use crate::clock;
use crate::frame;
use crate::snapshot::CallsiteKind;
use crate::thread::{self, FAST_COUNT, Hot};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

mod lock;
mod wrapped;
pub use lock::{Held, LockSite, Waiting, lock_clock};

/// What a flow site measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowKind {
    /// A channel: messages sent and received.
    Channel,
    /// A stream: items polled out of it.
    Stream,
    /// A future wrapped by `perflens::future!`.
    Future,
    /// A mutex or read-write lock.
    Lock,
}

/// [`FlowSite::sent_sampled`] asks for the queue's length once in this
/// many sends per thread.
pub const QUEUE_SAMPLE: u64 = 8;

thread_local! {
    /// The flow site this thread used last, the epoch of its block then,
    /// and its node.
    static LAST: std::cell::Cell<(usize, u32, u32)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// Whether message latency is measured at all (`PERFLENS_FLOW_LATENCY`).
static LATENCY: AtomicBool = AtomicBool::new(true);

/// Turns the timestamps carried with messages on or off for the whole
/// process (`PERFLENS_FLOW_LATENCY=0`: counts only, no clock read).
pub fn set_latency(on: bool) {
    LATENCY.store(on, Ordering::Relaxed);
}

/// Whether message latency is measured (see [`set_latency`]).
pub fn latency() -> bool {
    LATENCY.load(Ordering::Relaxed)
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

/// The `here` of a flow site's callsite: never called (sites are named by
/// their label or place).
fn no_here() -> &'static str {
    ""
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
            cs: Callsite::new("", no_here),
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

    /// The registered callsite id, registering on first use.
    #[inline(always)]
    fn id(&'static self) -> u32 {
        let t = self.cs.tagged();
        if t != UNREGISTERED {
            t & !crate::block::TAG
        } else {
            self.register()
        }
    }

    #[cold]
    #[inline(never)]
    fn register(&'static self) -> u32 {
        let name = {
            let _internal = crate::alloc::Internal::enter();
            if self.label.is_empty() {
                format!("{}:{}:{}", self.file, self.line, self.column)
            } else {
                self.label.to_string()
            }
        };
        self.cs.register_flow(name, CallsiteKind::Flow(self.kind))
    }

    /// This thread's node for the site, when it records in the running
    /// session, and whether it may read the clock for it.
    #[inline(always)]
    pub(crate) fn node(&'static self) -> Option<(&'static Hot, &'static Node, u32, bool)> {
        // SAFETY: owner thread; the reference is used by this call only,
        // which does not call out while holding it.
        let hot: &'static Hot = unsafe { &*thread::hot() };
        let hot = if thread::is_current(hot) {
            hot
        } else {
            hot_slow()?
        };
        // A thread sending or receiving in a loop uses one site: its node
        // is remembered, with the block's epoch (a new session's block
        // has other nodes).
        let me = self as *const FlowSite as usize;
        let (site, epoch, node) = LAST.get();
        let node = if site == me && epoch == hot.epoch {
            node
        } else {
            self.find_node(hot)
        };
        let timed = self.latency && hot.fast != FAST_COUNT && latency();
        Some((hot, frame::node(hot, node), node, timed))
    }

    /// This thread's node for the site, found in its table (or made),
    /// and remembered as the last one used.
    #[inline(never)]
    fn find_node(&'static self, hot: &Hot) -> u32 {
        let np = match frame::find(hot, 0, self.cs.tagged()) {
            Some(np) => np,
            None => frame::resolve(hot, 0, self.id()).np,
        };
        LAST.set((self as *const FlowSite as usize, hot.epoch, np.node));
        np.node
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
        bump(&n.cancelled_timed, 1);
        // 0 is unbounded; a rendezvous channel (capacity 0) is 1.
        let cap = capacity.map_or(0, |c| {
            u32::try_from(c.saturating_add(1)).unwrap_or(u32::MAX)
        });
        max32(&n.rec_open, cap);
    }

    /// A channel made here can now hold `capacity` messages, more than
    /// when it was made (a `futures` mpsc channel holds its buffer and one
    /// message per sender: each clone adds one).
    pub fn capacity_at_least(&'static self, capacity: usize) {
        if let Some((_, n, _, _)) = self.node() {
            let cap = u32::try_from(capacity.saturating_add(1)).unwrap_or(u32::MAX);
            max32(&n.rec_open, cap);
        }
    }

    /// `n` senders were made (a channel's first, or clones), or dropped
    /// (`n` negative).
    pub fn senders(&'static self, n: i64) {
        if let Some((_, node, _, _)) = self.node() {
            endpoints(&node.alloc_bytes, &node.alloc_count, n);
        }
    }

    /// `n` receivers were made, or dropped (`n` negative).
    pub fn receivers(&'static self, n: i64) {
        if let Some((_, node, _, _)) = self.node() {
            endpoints(&node.free_bytes, &node.free_count, n);
        }
    }

    /// A message was sent; `queued`: the messages in the channel right
    /// after, if known.
    #[inline]
    pub fn sent(&'static self, queued: Option<usize>) {
        let Some((_, n, _, _)) = self.node() else {
            return;
        };
        bump(&n.polls, 1);
        if let Some(q) = queued {
            max32(&n.rec_max, u32::try_from(q).unwrap_or(u32::MAX));
        }
    }

    /// A message was sent into a channel that can tell how many messages
    /// it holds: `queued` is asked right after the first send of each
    /// [`QUEUE_SAMPLE`] on this thread (reading a length touches the
    /// receivers' cache line: one miss a message would cost more than the
    /// rest of the send's bookkeeping). A channel that fills up says so
    /// with [`FlowSite::found_full`], which makes the maximum exact then.
    #[inline]
    pub fn sent_sampled(&'static self, queued: impl FnOnce() -> usize) {
        let Some((_, n, _, _)) = self.node() else {
            return;
        };
        let sent = n.polls.load(Ordering::Relaxed);
        n.polls.store(sent.wrapping_add(1), Ordering::Relaxed);
        if sent % QUEUE_SAMPLE == 0 {
            max32(&n.rec_max, u32::try_from(queued()).unwrap_or(u32::MAX));
        }
    }

    /// A send found the channel full, of `capacity` messages.
    #[inline]
    pub fn found_full(&'static self, capacity: usize) {
        if let Some((_, n, _, _)) = self.node() {
            max32(&n.rec_max, u32::try_from(capacity).unwrap_or(u32::MAX));
        }
    }

    /// `n` messages were sent at once (a broadcast value sent to `n`
    /// receivers counts one per receiver); `queued` as for
    /// [`FlowSite::sent`].
    pub fn sent_n(&'static self, n: u64, queued: Option<usize>) {
        let Some((_, node, _, _)) = self.node() else {
            return;
        };
        bump(&node.polls, n);
        if let Some(q) = queued {
            max32(&node.rec_max, u32::try_from(q).unwrap_or(u32::MAX));
        }
    }

    /// A message was received; `stamp`: the [`FlowSite::clock`] its
    /// sender read, or 0.
    #[inline]
    pub fn received(&'static self, stamp: u64) {
        let Some((hot, n, node, timed)) = self.node() else {
            return;
        };
        if stamp != 0 && timed {
            let latency = clock::now_with(hot.tsc()).saturating_sub(stamp);
            bump(&n.total, latency);
            frame::hist_add(hot, node, 0, latency);
        } else {
            bump(&n.calls, 1);
        }
    }

    /// A sender waited for room since `since` (a [`FlowSite::clock`]
    /// reading; nothing when 0).
    pub fn send_waited(&'static self, since: u64) {
        self.waited(since, |n| &n.busy);
    }

    /// A receiver waited for a message since `since` (as above).
    pub fn recv_waited(&'static self, since: u64) {
        self.waited(since, |n| &n.self_);
    }

    fn waited(&'static self, since: u64, field: fn(&Node) -> &std::sync::atomic::AtomicU64) {
        if since == 0 {
            return;
        }
        if let Some((hot, n, _, true)) = self.node() {
            bump(field(n), clock::now_with(hot.tsc()).saturating_sub(since));
        }
    }

    /// `n` messages were still queued when their channel was dropped.
    pub fn dropped_in_queue(&'static self, n: u64) {
        if let Some((_, node, _, _)) = self.node() {
            bump(&node.cancelled, n);
        }
    }
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
    thread::active().or_else(thread::prepare).map(|h| &*h)
}
