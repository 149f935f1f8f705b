//! The data-flow rows: channels, futures, streams and locks.

use super::*;

/// One channel site: every channel made at one `perflens::channel!` (or
/// reported through one probe), summed over its channels and threads.
///
/// Counts are exact. Durations are ns; latency and waits are measured in
/// timed and sampled modes alike (never scaled), and are 0 in count
/// mode or with latency off (`PERFLENS_FLOW_LATENCY=0`, `latency =
/// false`), where no clock is read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelRow {
    /// The site's label, or `file:line:col` of the macro.
    pub name: String,
    /// Channels made.
    pub created: u64,
    /// Senders alive now (made, clones included, minus dropped).
    pub senders: u64,
    /// Receivers alive now.
    pub receivers: u64,
    /// Messages sent (accepted by the channel).
    pub sent: u64,
    /// Messages received.
    pub received: u64,
    /// Messages still queued when their channel was dropped.
    pub dropped: u64,
    /// Messages queued now: `sent - received - dropped`.
    pub queued: u64,
    /// The most messages queued at once: the capacity once a send found
    /// the channel full, else the longest queue seen right after a send
    /// (each of a thread's first 256 sends at the site, then one in 64,
    /// where reading a channel's length costs a cache miss; every send
    /// for a probe that passes it).
    pub max_queued: u64,
    /// The largest capacity of a channel made here; `None` for unbounded
    /// channels, or when the capacity is not known (see
    /// [`ChannelRow::capacity_known`]).
    pub capacity: Option<u64>,
    /// Whether `capacity` is known: false when the report holds no
    /// channel made here (`created` is 0: the channels were made before
    /// the session started, or their creation could not be recorded),
    /// and then `capacity` is `None` without meaning unbounded. Reports
    /// written before this field existed lack it, and read as known.
    #[serde(default = "known")]
    pub capacity_known: bool,
    /// Time senders waited for room in a full channel, summed.
    pub send_wait_ns: u64,
    /// Time receivers waited for a message in an empty channel, summed.
    pub recv_wait_ns: u64,
    /// Messages whose send-to-receive latency was measured: each sending
    /// thread's first 256 at the site, then one in
    /// `PERFLENS_FLOW_LATENCY` (8 by default) at random; every message
    /// with `PERFLENS_FLOW_LATENCY=1`. The latency fields describe these.
    pub latency_count: u64,
    /// Their mean latency.
    pub latency_mean_ns: u64,
    /// Median send-to-receive latency.
    pub latency_p50_ns: u64,
    /// 99th percentile of the send-to-receive latency.
    pub latency_p99_ns: u64,
    /// The slowest message's latency (the histogram's resolution).
    pub latency_max_ns: u64,
}

/// One `perflens::future!` site: every future wrapped there, summed over
/// threads. Durations are ns, never scaled; 0 in count mode or with
/// `PERFLENS_FLOW_LATENCY=0`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FutureRow {
    /// The site's label, or `file:line:col` of the macro.
    pub name: String,
    /// Futures that completed (returned `Ready`).
    pub completed: u64,
    /// Futures dropped before they completed.
    pub cancelled: u64,
    /// Polls.
    pub polls: u64,
    /// Time inside their polls.
    pub busy_ns: u64,
    /// Their wall time (made to completed or dropped) less `busy_ns`: the
    /// time they spent waiting.
    pub wait_ns: u64,
    /// Their wall time, completed and cancelled ones.
    pub wall_ns: u64,
    /// Median wall time of a completed future.
    pub wall_p50_ns: u64,
    /// 99th percentile of the wall time of a completed future.
    pub wall_p99_ns: u64,
}

/// One `perflens::stream!` site: every stream wrapped there, summed over
/// threads. Durations are ns, never scaled; 0 in count mode or with
/// `PERFLENS_FLOW_LATENCY=0`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    /// The site's label, or `file:line:col` of the macro.
    pub name: String,
    /// Streams made.
    pub created: u64,
    /// Items they yielded.
    pub items: u64,
    /// Polls.
    pub polls: u64,
    /// Polls that returned `Pending`.
    pub pending_polls: u64,
    /// Streams that ended (returned `Ready(None)`).
    pub ended: u64,
    /// Streams dropped before they ended.
    pub dropped: u64,
    /// Streams whose time to the first item was measured.
    pub first_item_count: u64,
    /// Mean time from a stream's creation to its first item.
    pub first_item_mean_ns: u64,
    /// Intervals between two items of a stream that were measured.
    pub interval_count: u64,
    /// Their mean.
    pub interval_mean_ns: u64,
    /// Median interval between items.
    pub interval_p50_ns: u64,
    /// 99th percentile of the interval between items.
    pub interval_p99_ns: u64,
    /// The longest interval (to the histogram's resolution).
    pub interval_max_ns: u64,
}

/// One lock site: every measured lock of one label (or made at one
/// place, `perflens::sync`), summed over its locks and threads.
///
/// Counts are exact. Durations are ns, measured for every acquisition in
/// timed and sampled modes alike (never scaled); 0 in count mode or with
/// `PERFLENS_FLOW_LATENCY=0`, where no clock is read. An acquisition is
/// counted when its guard is dropped; a contended one when its first
/// attempt failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LockRow {
    /// The lock's label, or `file:line:col` of its constructor's call.
    pub name: String,
    /// Acquisitions (their guards dropped), read and write.
    pub acquisitions: u64,
    /// Shared (read) acquisitions among them.
    pub shared: u64,
    /// Acquisitions whose first, non-blocking attempt failed: they waited
    /// (a timed wait that gave up counts too).
    pub contended: u64,
    /// The most threads (or tasks) waiting for one lock at once.
    pub max_waiters: u64,
    /// Acquisitions whose hold time was measured.
    pub hold_count: u64,
    /// Their hold times (acquired to released), summed.
    pub hold_ns: u64,
    /// Their mean hold time.
    pub hold_mean_ns: u64,
    /// Median hold time.
    pub hold_p50_ns: u64,
    /// 99th percentile of the hold time.
    pub hold_p99_ns: u64,
    /// The longest hold (the histogram's resolution).
    pub hold_max_ns: u64,
    /// Contended acquisitions whose wait was measured.
    pub wait_count: u64,
    /// Their waits (first attempt to acquired), summed.
    pub wait_ns: u64,
    /// Their mean wait.
    pub wait_mean_ns: u64,
    /// Median wait of a contended acquisition.
    pub wait_p50_ns: u64,
    /// 99th percentile of the wait of a contended acquisition.
    pub wait_p99_ns: u64,
    /// The longest wait.
    pub wait_max_ns: u64,
}
