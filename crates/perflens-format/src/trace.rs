//! The timeline's events, as trace mode records them (see
//! `perflens_core::trace` for how they are written) and the trace
//! writers read them.

/// A measured sync call began (`arg`: its node).
pub const SPAN_BEGIN: u8 = 1;
/// A measured sync call ended (`arg`: its node).
pub const SPAN_END: u8 = 2;
/// A measured future was created (`arg`: its callsite id; `ids`: its
/// id and the id of the future being polled where it was made, 0 for
/// none).
pub const FUT_NEW: u8 = 3;
/// A poll of a measured future began (`arg`: the future's node; `ids`:
/// its id, 0).
pub const POLL_BEGIN: u8 = 4;
/// A poll of a measured future ended (`arg`: its node; `flags`:
/// [`READY`] when the future completed).
pub const POLL_END: u8 = 5;
/// [`POLL_END`]'s flag: the poll returned `Ready`.
pub const READY: u8 = 1;
/// A measured future was dropped before it completed (`arg`: its
/// callsite id; `ids`: its id, 0).
pub const FUT_DROP: u8 = 6;
/// An await site's await suspended for the first time (written then,
/// with the ticks of its first poll's begin; `arg`: the site's callsite
/// id; `ids`: the await's id, the id of the future that awaits, 0 for
/// none).
pub const AWAIT_BEGIN: u8 = 7;
/// That await completed (`arg`: the site's callsite id; `ids`: its id,
/// the ticks it spent suspended, as its site's wait counts them).
pub const AWAIT_END: u8 = 8;
/// That await was dropped while suspended (`arg`, `ids`: as
/// [`AWAIT_END`]).
pub const AWAIT_DROP: u8 = 9;

/// One event, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Clock ticks, as the aggregates count them.
    pub ticks: u64,
    /// [`SPAN_BEGIN`], [`SPAN_END`], [`FUT_NEW`], [`POLL_BEGIN`],
    /// [`POLL_END`], [`FUT_DROP`].
    pub kind: u8,
    /// Kind-specific flags.
    pub flags: u8,
    /// Kind-specific: a node index of the thread's block.
    pub arg: u32,
    /// Two-slot kinds' ids (zero for one-slot kinds).
    pub ids: [u64; 2],
}

impl TraceEvent {
    /// An event of `kind` at `ticks` about `arg`, with `ids` for the
    /// two-slot kinds (`[0, 0]` for the others) and no flags.
    #[inline(always)]
    pub const fn new(kind: u8, arg: u32, ticks: u64, ids: [u64; 2]) -> TraceEvent {
        TraceEvent {
            ticks,
            kind,
            flags: 0,
            arg,
            ids,
        }
    }
}

/// One thread's events, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadTrace {
    /// The thread's index (its block's `thread_index`, as in
    /// [`ThreadSnapshot::index`](crate::snapshot::ThreadSnapshot)).
    pub index: u32,
    pub events: Vec<TraceEvent>,
    /// Events of this thread the flight recorder dropped to make room.
    pub dropped: u64,
    /// The ticks of the last event dropped (0: none).
    pub dropped_until_ticks: u64,
    /// The path of each node of the thread's block (index = node: an
    /// event's `arg`), to name its events.
    pub node_paths: Vec<u32>,
}

/// A session's trace, taken at its end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawTrace {
    /// The buffer's size.
    pub buffer_bytes: usize,
    /// The clock's ticks when the session started: a timeline's zero.
    pub start_ticks: u64,
    /// The clock's ticks when it ended.
    pub end_ticks: u64,
    /// The threads that wrote events, by index.
    pub threads: Vec<ThreadTrace>,
    /// Events dropped because no chunk could be taken at all (more
    /// threads writing at once than the buffer has chunks).
    pub dropped_without_room: u64,
}

impl RawTrace {
    /// All events kept.
    pub fn events(&self) -> usize {
        self.threads.iter().map(|t| t.events.len()).sum()
    }

    /// All events dropped.
    pub fn dropped(&self) -> u64 {
        (self.threads.iter().map(|t| t.dropped)).sum::<u64>() + self.dropped_without_room
    }
}
