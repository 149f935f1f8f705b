//! Locks: a [`LockSite`] per lock, the [`FlowSite`] of its row (found
//! lazily), and what an acquisition records in the thread's node (see
//! the table in the module above).
//!
//! The fast path of an uncontended acquisition is: the lock's own
//! non-blocking attempt, one clock read ([`lock_clock`]) kept in the
//! guard, and at release one clock read, the lock's site (a load), the
//! thread's node (a table probe) and three plain stores. Nothing shared
//! is written but the lock itself; the waiter count is touched only when
//! the first attempt failed.

use super::{FlowKind, FlowSite, latency, max32};
use crate::block::bump;
use crate::clock;
use crate::frame;
use crate::thread::{self, FAST_COUNT};
use std::collections::HashMap;
use std::panic::Location;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// What every measured lock carries: where it was made (or its label),
/// its row's [`FlowSite`] once it was used in a session, and how many
/// threads (or tasks) wait for it now.
pub struct LockSite {
    label: &'static str,
    at: &'static Location<'static>,
    site: AtomicPtr<FlowSite>,
    waiters: AtomicU32,
}

impl LockSite {
    /// A lock made at `at`, named `label` (`""`: named `file:line:col`
    /// of `at`). Const, so that a measured lock can be a `static`.
    pub const fn new(label: &'static str, at: &'static Location<'static>) -> LockSite {
        LockSite {
            label,
            at,
            site: AtomicPtr::new(ptr::null_mut()),
            waiters: AtomicU32::new(0),
        }
    }

    /// Names the lock `label` (before it is used).
    pub const fn set_label(&mut self, label: &'static str) {
        self.label = label;
    }

    /// The row's site: every lock of one label (or made at one place)
    /// shares it. Found in a process-wide map on the lock's first use.
    #[inline(always)]
    pub fn site(&self) -> &'static FlowSite {
        let p = self.site.load(Ordering::Acquire);
        if p.is_null() {
            self.find_site()
        } else {
            // SAFETY: only pointers to leaked (never freed) sites are
            // stored.
            unsafe { &*p }
        }
    }

    #[cold]
    #[inline(never)]
    fn find_site(&self) -> &'static FlowSite {
        type Key = (&'static str, &'static str, u32, u32);
        static SITES: std::sync::Mutex<Option<HashMap<Key, &'static FlowSite>>> =
            std::sync::Mutex::new(None);
        let _internal = crate::alloc::Internal::enter();
        let key = (self.label, self.at.file(), self.at.line(), self.at.column());
        let mut map = SITES.lock().unwrap_or_else(|e| e.into_inner());
        let site: &'static FlowSite = map
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert_with(|| {
                Box::leak(Box::new(FlowSite::new(
                    FlowKind::Lock,
                    key.0,
                    key.1,
                    key.2,
                    key.3,
                    true,
                )))
            });
        self.site
            .store(ptr::from_ref(site).cast_mut(), Ordering::Release);
        site
    }

    /// The name of the lock's row.
    pub fn name(&self) -> String {
        if self.label.is_empty() {
            format!("{}:{}:{}", self.at.file(), self.at.line(), self.at.column())
        } else {
            self.label.to_string()
        }
    }

    /// The first attempt failed: one more waiter (until [`Waiting`] is
    /// dropped), counted as a contended acquisition on this thread's
    /// node with the waiters now. Returns the clock when waits are timed
    /// (else 0).
    #[cold]
    #[inline(never)]
    pub fn contended(&self) -> Waiting<'_> {
        let now = self
            .waiters
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let site = self.site();
        let mut since = 0;
        if let Some((hot, n, _, timed)) = site.node() {
            bump(&n.polls, 1);
            max32(&n.rec_max, now);
            if timed {
                since = clock::now_with(hot.tsc()).max(1);
            }
        }
        Waiting { lock: self, since }
    }

    /// Threads (or tasks) waiting for the lock now.
    pub fn waiters(&self) -> u32 {
        self.waiters.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for LockSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// A waiter of a contended lock; dropped when it got the lock (or gave
/// up: a timeout, a cancelled future).
pub struct Waiting<'a> {
    lock: &'a LockSite,
    since: u64,
}

impl Waiting<'_> {
    /// The lock was acquired: its guard's [`Held`], with the wait.
    #[inline]
    pub fn acquired(self) -> Held {
        if self.since == 0 {
            return Held::UNTIMED;
        }
        let now = lock_clock();
        Held {
            acquired: now,
            waited: if now == 0 {
                0
            } else {
                now.saturating_sub(self.since).max(1)
            },
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.lock.waiters.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a guard keeps of its acquisition: when it was acquired and how
/// long it waited (clock ticks; 0: not timed, or no wait).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    acquired: u64,
    waited: u64,
}

impl Held {
    /// An acquisition that is counted but not timed.
    pub const UNTIMED: Held = Held {
        acquired: 0,
        waited: 0,
    };

    /// An uncontended acquisition, now.
    #[inline(always)]
    pub fn now() -> Held {
        Held {
            acquired: lock_clock(),
            waited: 0,
        }
    }
}

/// The clock when this thread records in a session that times (not count
/// mode, latency on), else 0: no table probe, only the thread's state.
#[inline(always)]
pub fn lock_clock() -> u64 {
    // SAFETY: owner thread; the reference is used by this call only.
    let hot = unsafe { &*thread::hot() };
    let hot = if thread::is_current(hot) {
        hot
    } else {
        match super::hot_slow() {
            Some(hot) => hot,
            None => return 0,
        }
    };
    if hot.fast != FAST_COUNT && latency() {
        clock::now_with(hot.tsc()).max(1)
    } else {
        0
    }
}

impl FlowSite {
    /// A lock of this site acquired as `held` was released (the lock is
    /// free already); `shared`: a read lock. `release` is the clock read
    /// just before the lock was freed ([`lock_clock`]).
    #[inline(always)]
    pub fn lock_released(&'static self, held: Held, release: u64, shared: bool) {
        let Some((hot, n, node, timed)) = self.node() else {
            return;
        };
        if shared {
            bump(&n.cancelled, 1);
        }
        if held.acquired != 0 && release != 0 && timed {
            let hold = release.saturating_sub(held.acquired);
            bump(&n.total, hold);
            frame::hist_add(hot, node, 0, hold);
            if held.waited != 0 {
                bump(&n.self_, held.waited);
                frame::hist_add(hot, node, 1, held.waited);
            }
        } else {
            bump(&n.calls, 1);
        }
    }
}

/// A guard's record: the lock's site and the acquisition, written at
/// release ([`LockSite::release`]).
impl LockSite {
    /// The guard of an acquisition `held` is dropping: reads the clock
    /// (before the caller frees the lock) and returns what
    /// [`LockSite::released`] needs after.
    #[inline(always)]
    pub fn releasing(&self) -> u64 {
        lock_clock()
    }

    /// The lock was freed: records the acquisition.
    #[inline(always)]
    pub fn released(&self, held: Held, release: u64, shared: bool) {
        self.site().lock_released(held, release, shared);
    }
}
