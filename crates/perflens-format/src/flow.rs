//! What a data-flow site's node holds: for each figure of a channel,
//! lock, wrapped future or wrapped stream site, the node counter that
//! carries it, and the figures read back from a site's nodes.
//!
//! A flow site (`perflens::channel!`, `perflens::sync`, `future!`,
//! `stream!`) records into ordinary calling-context nodes, one per thread
//! that uses it, so that its counters are per-thread plain stores and the
//! live view reads them with everything else. A node has the counters a
//! function needs (calls, polls, allocated bytes, ...), and a flow site
//! gives each of them another meaning. This module is the one place that
//! says which: the runtime writes through the constants below
//! (`perflens-core`'s `Node::counter`), and the report reads through the
//! figures types ([`ChannelFigures::add`] and the others), so the writer
//! and the readers cannot disagree about what `alloc_bytes` of a channel
//! node means. The node's bytes do not change: the shared-memory layout
//! and every saved report stay as they are.
//!
//! Every kind's histogram 0 (`hist_total`, with `timed_calls` entries
//! and their sum in `total_ns`) holds the kind's main duration: a
//! message's latency, a lock's hold, a future's wall time, the interval
//! between two items of a stream. A lock's histogram 1 (`hist_self`)
//! holds its waits.

use crate::histogram::Histogram;
use crate::snapshot::NodeSnapshot;

/// A node's 64-bit counter, named as the runtime's node names it (the
/// snapshot's field in brackets when it differs; durations are ticks in
/// the node and nanoseconds in the snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// `calls`.
    Calls,
    /// `total` (`total_ns`): the sum of histogram 0's entries.
    Total,
    /// `self_` (`self_ns`).
    Self_,
    /// `busy` (`busy_ns`).
    Busy,
    /// `polls`.
    Polls,
    /// `cancelled`.
    Cancelled,
    /// `cancelled_timed` (`timed_cancelled`).
    CancelledTimed,
    /// `cancelled_wall` (`cancelled_ns`).
    CancelledWall,
    /// `alloc_bytes`.
    AllocBytes,
    /// `alloc_count`.
    AllocCount,
    /// `free_bytes`.
    FreeBytes,
    /// `free_count`.
    FreeCount,
}

impl Counter {
    /// The counter's value in a snapshot's node.
    pub fn of(self, n: &NodeSnapshot) -> u64 {
        match self {
            Counter::Calls => n.calls,
            Counter::Total => n.total_ns,
            Counter::Self_ => n.self_ns,
            Counter::Busy => n.busy_ns,
            Counter::Polls => n.polls,
            Counter::Cancelled => n.cancelled,
            Counter::CancelledTimed => n.timed_cancelled,
            Counter::CancelledWall => n.cancelled_ns,
            Counter::AllocBytes => n.alloc_bytes,
            Counter::AllocCount => n.alloc_count,
            Counter::FreeBytes => n.free_bytes,
            Counter::FreeCount => n.free_count,
        }
    }
}

/// A node's 32-bit records, each kept as a maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peak {
    /// `rec_max` (`max_depth`).
    Max,
    /// `rec_open` (`capacity`).
    Open,
}

impl Peak {
    /// The record's value in a snapshot's node.
    pub fn of(self, n: &NodeSnapshot) -> u32 {
        match self {
            Peak::Max => n.max_depth,
            Peak::Open => n.capacity,
        }
    }
}

/// A channel site. Histogram 0: the send-to-receive latency of the
/// messages that carried their send time (every message, or one in
/// `PERFLENS_FLOW_LATENCY` after a warm-up; none in count mode or with
/// latency off); [`RECEIVED`](channel::RECEIVED) counts all of them.
pub mod channel {
    use super::{Counter, Peak};
    /// Messages received.
    pub const RECEIVED: Counter = Counter::Calls;
    /// Messages sent.
    pub const SENT: Counter = Counter::Polls;
    /// Time senders waited on a full channel.
    pub const SEND_WAIT: Counter = Counter::Busy;
    /// Time receivers waited on an empty channel.
    pub const RECV_WAIT: Counter = Counter::Self_;
    /// Messages still queued when their channel was dropped.
    pub const DROPPED: Counter = Counter::Cancelled;
    /// Channels made.
    pub const CREATED: Counter = Counter::CancelledTimed;
    /// Senders made (clones too).
    pub const SENDERS_MADE: Counter = Counter::AllocBytes;
    /// Senders dropped.
    pub const SENDERS_DROPPED: Counter = Counter::AllocCount;
    /// Receivers made (clones too).
    pub const RECEIVERS_MADE: Counter = Counter::FreeBytes;
    /// Receivers dropped.
    pub const RECEIVERS_DROPPED: Counter = Counter::FreeCount;
    /// The most messages queued, seen right after a send (every send, or
    /// one in a few where reading the length costs a cache miss), or the
    /// capacity once a send found the channel full.
    pub const MAX_QUEUED: Peak = Peak::Max;
    /// The largest capacity of a channel made there, as
    /// [`encode_capacity`] writes it.
    pub const CAPACITY: Peak = Peak::Open;

    /// What [`CAPACITY`] holds for a channel of `capacity` messages
    /// (`None`: unbounded): 1 + the capacity, so that 0 is unbounded and
    /// a rendezvous channel (capacity 0) is 1; saturated at `u32::MAX`.
    pub fn encode_capacity(capacity: Option<usize>) -> u32 {
        capacity.map_or(0, |c| {
            u32::try_from(c.saturating_add(1)).unwrap_or(u32::MAX)
        })
    }

    /// The capacity [`encode_capacity`] wrote (`None`: unbounded).
    pub fn decode_capacity(code: u32) -> Option<u64> {
        u64::from(code).checked_sub(1)
    }
}

/// A lock site. An acquisition is recorded when its guard is dropped,
/// all of it at once. Histogram 0: the hold times (acquired to released)
/// of the timed acquisitions; histogram 1: the waits of the timed
/// acquisitions that had to wait, at most one per hold entry.
pub mod lock {
    use super::{Counter, Peak};
    /// Acquisitions released.
    pub const ACQUISITIONS: Counter = Counter::Calls;
    /// The sum of the timed holds (histogram 0).
    pub const HOLD: Counter = Counter::Total;
    /// The sum of the timed waits (histogram 1).
    pub const WAIT: Counter = Counter::Self_;
    /// Contended acquisitions: the first, non-blocking attempt failed
    /// (counted when it failed, on the waiting thread; a wait given up
    /// counts too).
    pub const CONTENDED: Counter = Counter::Polls;
    /// Shared (read) acquisitions among those released.
    pub const SHARED: Counter = Counter::Cancelled;
    /// The most waiters of one lock at once, seen as each began to wait.
    pub const MAX_WAITERS: Peak = Peak::Max;
}

/// A future wrapped by `perflens::future!`. Histogram 0: the wall time
/// (made to completed) of the timed futures that completed.
pub mod future {
    use super::Counter;
    /// Futures completed.
    pub const COMPLETED: Counter = Counter::Calls;
    /// The wall time of the timed futures that completed.
    pub const WALL: Counter = Counter::Total;
    /// Polls.
    pub const POLLS: Counter = Counter::Polls;
    /// Time inside their polls.
    pub const BUSY: Counter = Counter::Busy;
    /// Futures dropped before they completed.
    pub const CANCELLED: Counter = Counter::Cancelled;
    /// The timed ones among them.
    pub const CANCELLED_TIMED: Counter = Counter::CancelledTimed;
    /// Their wall time, made to dropped.
    pub const CANCELLED_WALL: Counter = Counter::CancelledWall;
}

/// A stream wrapped by `perflens::stream!`. Histogram 0: the intervals
/// between two items of one stream that were timed.
pub mod stream {
    use super::Counter;
    /// Intervals between two items of one stream.
    pub const INTERVALS: Counter = Counter::Calls;
    /// The sum of the timed intervals.
    pub const INTERVAL: Counter = Counter::Total;
    /// Items.
    pub const ITEMS: Counter = Counter::AllocBytes;
    /// Polls.
    pub const POLLS: Counter = Counter::Polls;
    /// Polls that returned `Pending`.
    pub const PENDING_POLLS: Counter = Counter::AllocCount;
    /// Time from a stream's creation to its first item, summed over the
    /// streams it was timed for.
    pub const FIRST_ITEM: Counter = Counter::Self_;
    /// The streams [`FIRST_ITEM`] was timed for.
    pub const FIRST_ITEM_TIMED: Counter = Counter::FreeBytes;
    /// Streams made.
    pub const CREATED: Counter = Counter::FreeCount;
    /// Streams that ended (`Ready(None)`).
    pub const ENDED: Counter = Counter::CancelledTimed;
    /// Streams dropped before they ended.
    pub const DROPPED: Counter = Counter::Cancelled;
}

/// A channel site's figures, summed over its nodes (one per thread).
/// Counts saturate (a live block may hold any value); endpoints made and
/// dropped wrap, since they are made and dropped on any thread and only
/// their difference over all threads means something.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChannelFigures {
    /// Channels made.
    pub created: u64,
    /// Senders made and dropped.
    pub senders_made: u64,
    /// See `senders_made`.
    pub senders_dropped: u64,
    /// Receivers made and dropped.
    pub receivers_made: u64,
    /// See `receivers_made`.
    pub receivers_dropped: u64,
    /// Messages sent.
    pub sent: u64,
    /// Messages received.
    pub received: u64,
    /// Messages dropped with their channel.
    pub dropped: u64,
    /// Time senders waited on a full channel.
    pub send_wait_ns: u64,
    /// Time receivers waited on an empty channel.
    pub recv_wait_ns: u64,
    /// The most messages queued.
    pub max_queued: u64,
    /// The largest [`channel::encode_capacity`] of a channel made here.
    pub capacity_code: u32,
    /// Messages whose latency was measured, and the sum of those
    /// latencies.
    pub latency_count: u64,
    /// See `latency_count`.
    pub latency_total_ns: u64,
    /// Their latencies.
    pub latency: Histogram,
}

impl ChannelFigures {
    /// Adds a node of the site.
    pub fn add(&mut self, n: &NodeSnapshot) {
        use channel::*;
        self.created = self.created.saturating_add(CREATED.of(n));
        self.senders_made = self.senders_made.wrapping_add(SENDERS_MADE.of(n));
        self.senders_dropped = self.senders_dropped.wrapping_add(SENDERS_DROPPED.of(n));
        self.receivers_made = self.receivers_made.wrapping_add(RECEIVERS_MADE.of(n));
        self.receivers_dropped = self.receivers_dropped.wrapping_add(RECEIVERS_DROPPED.of(n));
        self.sent = self.sent.saturating_add(SENT.of(n));
        self.received = self.received.saturating_add(RECEIVED.of(n));
        self.dropped = self.dropped.saturating_add(DROPPED.of(n));
        self.send_wait_ns = self.send_wait_ns.saturating_add(SEND_WAIT.of(n));
        self.recv_wait_ns = self.recv_wait_ns.saturating_add(RECV_WAIT.of(n));
        self.max_queued = self.max_queued.max(u64::from(MAX_QUEUED.of(n)));
        self.capacity_code = self.capacity_code.max(CAPACITY.of(n));
        self.latency_count = self.latency_count.saturating_add(n.timed_calls);
        self.latency_total_ns = self.latency_total_ns.saturating_add(n.total_ns);
        self.latency.merge(&n.hist_total);
    }

    /// Whether the capacity is known: a channel was made here within the
    /// session (one made before it has its messages counted, not its
    /// making, so its capacity was never written).
    pub fn capacity_known(&self) -> bool {
        self.created != 0
    }

    /// The largest capacity of a channel made here; `None` when unbounded
    /// or not known ([`capacity_known`](Self::capacity_known)).
    pub fn capacity(&self) -> Option<u64> {
        channel::decode_capacity(self.capacity_code).filter(|_| self.capacity_known())
    }

    /// Senders alive (made less dropped, over all threads).
    pub fn senders(&self) -> u64 {
        self.senders_made.saturating_sub(self.senders_dropped)
    }

    /// Receivers alive.
    pub fn receivers(&self) -> u64 {
        self.receivers_made.saturating_sub(self.receivers_dropped)
    }

    /// Messages queued now: sent, less received, less dropped.
    pub fn queued(&self) -> u64 {
        (self.sent.saturating_sub(self.received)).saturating_sub(self.dropped)
    }
}

/// A lock site's figures, summed over its nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LockFigures {
    /// Acquisitions released.
    pub acquisitions: u64,
    /// Shared (read) acquisitions among them.
    pub shared: u64,
    /// Contended acquisitions.
    pub contended: u64,
    /// The most waiters of one lock at once.
    pub max_waiters: u64,
    /// Timed holds, their sum and their histogram.
    pub hold_count: u64,
    /// See `hold_count`.
    pub hold_ns: u64,
    /// See `hold_count`.
    pub hold: Histogram,
    /// The sum of the timed waits, and their histogram (its count is the
    /// number of timed waits).
    pub wait_ns: u64,
    /// See `wait_ns`.
    pub wait: Histogram,
}

impl LockFigures {
    /// Adds a node of the site.
    pub fn add(&mut self, n: &NodeSnapshot) {
        use lock::*;
        self.acquisitions = self.acquisitions.saturating_add(ACQUISITIONS.of(n));
        self.shared = self.shared.saturating_add(SHARED.of(n));
        self.contended = self.contended.saturating_add(CONTENDED.of(n));
        self.max_waiters = self.max_waiters.max(u64::from(MAX_WAITERS.of(n)));
        self.hold_count = self.hold_count.saturating_add(n.timed_calls);
        self.hold_ns = self.hold_ns.saturating_add(HOLD.of(n));
        self.hold.merge(&n.hist_total);
        self.wait_ns = self.wait_ns.saturating_add(WAIT.of(n));
        self.wait.merge(&n.hist_self);
    }
}

/// A wrapped future site's figures, summed over its nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FutureFigures {
    /// Futures completed.
    pub completed: u64,
    /// Timed completed futures, and the sum of their wall times.
    pub completed_timed: u64,
    /// See `completed_timed`.
    pub completed_wall_ns: u64,
    /// Futures dropped before completing.
    pub cancelled: u64,
    /// Timed cancelled futures, and the sum of their wall times.
    pub cancelled_timed: u64,
    /// See `cancelled_timed`.
    pub cancelled_wall_ns: u64,
    /// Polls.
    pub polls: u64,
    /// Time inside the polls.
    pub busy_ns: u64,
    /// The wall times of the timed completed futures.
    pub wall: Histogram,
}

impl FutureFigures {
    /// Adds a node of the site.
    pub fn add(&mut self, n: &NodeSnapshot) {
        use future::*;
        self.completed = self.completed.saturating_add(COMPLETED.of(n));
        self.completed_timed = self.completed_timed.saturating_add(n.timed_calls);
        self.completed_wall_ns = self.completed_wall_ns.saturating_add(WALL.of(n));
        self.cancelled = self.cancelled.saturating_add(CANCELLED.of(n));
        self.cancelled_timed = self.cancelled_timed.saturating_add(CANCELLED_TIMED.of(n));
        self.cancelled_wall_ns = self.cancelled_wall_ns.saturating_add(CANCELLED_WALL.of(n));
        self.polls = self.polls.saturating_add(POLLS.of(n));
        self.busy_ns = self.busy_ns.saturating_add(BUSY.of(n));
        self.wall.merge(&n.hist_total);
    }

    /// The wall time of every timed future, completed or cancelled.
    pub fn wall_ns(&self) -> u64 {
        self.completed_wall_ns
            .saturating_add(self.cancelled_wall_ns)
    }

    /// Their wait: wall time less polls (0 when no future was timed).
    pub fn wait_ns(&self) -> u64 {
        if self.completed_timed != 0 || self.cancelled_timed != 0 {
            self.wall_ns().saturating_sub(self.busy_ns)
        } else {
            0
        }
    }
}

/// A wrapped stream site's figures, summed over its nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamFigures {
    /// Streams made.
    pub created: u64,
    /// Items.
    pub items: u64,
    /// Polls, and those that returned `Pending`.
    pub polls: u64,
    /// See `polls`.
    pub pending_polls: u64,
    /// Streams that ended, and those dropped before they ended.
    pub ended: u64,
    /// See `ended`.
    pub dropped: u64,
    /// Streams whose first item was timed, and the sum of those times.
    pub first_item_count: u64,
    /// See `first_item_count`.
    pub first_item_ns: u64,
    /// The sum of the timed intervals between items, and their histogram
    /// (its count is the number of timed intervals).
    pub interval_ns: u64,
    /// See `interval_ns`.
    pub interval: Histogram,
}

impl StreamFigures {
    /// Adds a node of the site.
    pub fn add(&mut self, n: &NodeSnapshot) {
        use stream::*;
        self.created = self.created.wrapping_add(CREATED.of(n));
        self.items = self.items.wrapping_add(ITEMS.of(n));
        self.polls = self.polls.saturating_add(POLLS.of(n));
        self.pending_polls = self.pending_polls.wrapping_add(PENDING_POLLS.of(n));
        self.ended = self.ended.saturating_add(ENDED.of(n));
        self.dropped = self.dropped.saturating_add(DROPPED.of(n));
        self.first_item_count = self.first_item_count.wrapping_add(FIRST_ITEM_TIMED.of(n));
        self.first_item_ns = self.first_item_ns.saturating_add(FIRST_ITEM.of(n));
        self.interval_ns = self.interval_ns.saturating_add(INTERVAL.of(n));
        self.interval.merge(&n.hist_total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_round_trip_with_unbounded_and_rendezvous_apart() {
        assert_eq!(channel::encode_capacity(None), 0);
        assert_eq!(channel::decode_capacity(0), None);
        assert_eq!(channel::encode_capacity(Some(0)), 1);
        assert_eq!(channel::decode_capacity(1), Some(0));
        assert_eq!(
            channel::decode_capacity(channel::encode_capacity(Some(4))),
            Some(4)
        );
        assert_eq!(channel::encode_capacity(Some(usize::MAX)), u32::MAX);
    }

    #[test]
    fn a_channel_node_reads_back_as_what_each_counter_means() {
        let n = NodeSnapshot {
            calls: 7,
            polls: 10,
            busy_ns: 500,
            self_ns: 300,
            cancelled: 1,
            timed_cancelled: 2,
            alloc_bytes: 3,
            alloc_count: 1,
            free_bytes: 2,
            free_count: 1,
            max_depth: 4,
            capacity: channel::encode_capacity(Some(4)),
            timed_calls: 5,
            total_ns: 900,
            ..NodeSnapshot::default()
        };
        let mut f = ChannelFigures::default();
        f.add(&n);
        assert_eq!(
            (f.created, f.sent, f.received, f.dropped, f.queued()),
            (2, 10, 7, 1, 2)
        );
        assert_eq!((f.senders(), f.receivers()), (2, 1));
        assert_eq!(
            (f.send_wait_ns, f.recv_wait_ns, f.max_queued),
            (500, 300, 4)
        );
        assert_eq!((f.capacity(), f.capacity_known()), (Some(4), true));
        assert_eq!((f.latency_count, f.latency_total_ns), (5, 900));
        // A channel made before the session: its capacity is not known,
        // whatever the node holds.
        let mut before = ChannelFigures::default();
        before.add(&NodeSnapshot {
            polls: 3,
            ..NodeSnapshot::default()
        });
        assert_eq!((before.capacity(), before.capacity_known()), (None, false));
    }

    #[test]
    fn endpoints_made_on_one_thread_and_dropped_on_another_sum_right() {
        // Thread A made 2 senders; thread B dropped both: B's node alone
        // would read -2, the sum reads 0.
        let a = NodeSnapshot {
            alloc_bytes: 2,
            ..NodeSnapshot::default()
        };
        let b = NodeSnapshot {
            alloc_count: 2,
            ..NodeSnapshot::default()
        };
        let mut f = ChannelFigures::default();
        f.add(&b);
        f.add(&a);
        assert_eq!(f.senders(), 0);
    }
}
