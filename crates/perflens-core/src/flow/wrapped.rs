//! Futures and streams wrapped by `perflens::future!` and
//! `perflens::stream!`: what one records in its site's node (see the
//! tables in the module above).
//!
//! Both read the clock only where a figure needs it: a future at its
//! creation and around each poll, a stream at its creation and when it
//! yields an item. In count mode, with latency off or outside a session
//! they read none, and count.

use super::FlowSite;
use crate::block::bump;
use crate::clock;
use crate::frame;
use perflens_format::flow::{future, stream};

impl FlowSite {
    /// The clock for a wrapped future or stream made now (0 when not
    /// timed).
    #[inline]
    pub fn made(&'static self) -> u64 {
        self.clock()
    }

    /// A wrapped future's poll that began at `began` (a
    /// [`FlowSite::clock`] reading, 0 if not timed) just returned;
    /// `done`: with `Ready`, `created` its creation's clock (0 if not
    /// timed), `busy` its polls' time before this one. Returns the
    /// future's busy ticks with this poll.
    #[inline]
    pub fn future_polled(&'static self, began: u64, done: bool, created: u64, busy: u64) -> u64 {
        let Some((hot, n, node, timed)) = self.node() else {
            return busy;
        };
        bump(n.counter(future::POLLS), 1);
        let mut busy = busy;
        let now = if timed && began != 0 {
            let now = clock::now_with(hot.tsc());
            let this = now.saturating_sub(began);
            bump(n.counter(future::BUSY), this);
            busy = busy.wrapping_add(this);
            now
        } else {
            0
        };
        if done {
            if now != 0 && created != 0 {
                let wall = now.saturating_sub(created);
                bump(n.counter(future::WALL), wall);
                frame::hist_add(hot, node, 0, wall);
            } else {
                bump(n.counter(future::COMPLETED), 1);
            }
        }
        busy
    }

    /// A wrapped future made at `created` (clock, 0 if not timed) was
    /// dropped before it completed.
    pub fn future_cancelled(&'static self, created: u64) {
        let Some((hot, n, _, timed)) = self.node() else {
            return;
        };
        bump(n.counter(future::CANCELLED), 1);
        if timed && created != 0 {
            bump(n.counter(future::CANCELLED_TIMED), 1);
            bump(
                n.counter(future::CANCELLED_WALL),
                clock::now_with(hot.tsc()).saturating_sub(created),
            );
        }
    }

    /// A wrapped stream was made.
    pub fn stream_made(&'static self) {
        if let Some((_, n, _, _)) = self.node() {
            bump(n.counter(stream::CREATED), 1);
        }
    }

    /// A wrapped stream was polled: `Pending` (`item` None), or it
    /// yielded an item (`Some(last)`: the clock when it was made or
    /// yielded its previous item, 0 if not timed; `first`: this is its
    /// first item). Returns the clock to keep as its last item's (0 when
    /// not timed).
    #[inline]
    pub fn stream_polled(&'static self, item: Option<(u64, bool)>) -> u64 {
        let Some((hot, n, node, timed)) = self.node() else {
            return 0;
        };
        bump(n.counter(stream::POLLS), 1);
        let Some((last, first)) = item else {
            bump(n.counter(stream::PENDING_POLLS), 1);
            return 0;
        };
        bump(n.counter(stream::ITEMS), 1);
        if !timed || last == 0 {
            if !first {
                bump(n.counter(stream::INTERVALS), 1);
            }
            return 0;
        }
        let now = clock::now_with(hot.tsc()).max(1);
        let gap = now.saturating_sub(last);
        if first {
            bump(n.counter(stream::FIRST_ITEM), gap);
            bump(n.counter(stream::FIRST_ITEM_TIMED), 1);
        } else {
            bump(n.counter(stream::INTERVAL), gap);
            frame::hist_add(hot, node, 0, gap);
        }
        now
    }

    /// A wrapped stream's poll returned `Ready(None)`: it ended
    /// (`first`: for the first time, when the stream is counted as
    /// ended).
    pub fn stream_ended(&'static self, first: bool) {
        if let Some((_, n, _, _)) = self.node() {
            bump(n.counter(stream::POLLS), 1);
            if first {
                bump(n.counter(stream::ENDED), 1);
            }
        }
    }

    /// A wrapped stream was dropped before it ended.
    pub fn stream_dropped(&'static self) {
        if let Some((_, n, _, _)) = self.node() {
            bump(n.counter(stream::DROPPED), 1);
        }
    }
}
