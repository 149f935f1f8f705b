//! Locks: a [`LockSite`] per lock, the [`FlowSite`] of its row (found
//! lazily), and what an acquisition records in the thread's node (see
//! the table in the module above).
//!
//! The fast path of an uncontended acquisition is: the lock's own
//! non-blocking attempt, one clock read ([`lock_clock`]) kept with the
//! guard, and at release one clock read, the lock's site (a load), the
//! thread's node (a table probe), a few plain stores and the histogram
//! entries left pending (as a timed call's). Nothing shared is written
//! but the lock itself; the waiter count is touched only when the first
//! attempt failed. With no session running, each side is a load and a
//! test.

use super::{FlowKind, FlowSite, max32};
use crate::block::{self, HISTS, Node, bump};
use crate::clock;
use crate::frame;
use crate::histogram::{BUCKETS, bucket_index};
use crate::hot::{self, FAST_COUNT, Hot};
use perflens_format::flow::lock;
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
        let _internal = crate::hot::Internal::enter();
        // A label names one row wherever its locks are made.
        let key = if self.label.is_empty() {
            ("", self.at.file(), self.at.line(), self.at.column())
        } else {
            (self.label, "", 0, 0)
        };
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
            bump(n.counter(lock::CONTENDED), 1);
            max32(n.peak(lock::MAX_WAITERS), now);
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
    let hot = unsafe { &*hot::hot() };
    let hot = if hot::is_current(hot) {
        hot
    } else {
        if !hot::session_running() {
            return 0;
        }
        match super::hot_slow() {
            Some(hot) => hot,
            None => return 0,
        }
    };
    if hot.fast != FAST_COUNT && super::latency() {
        clock::now_with(hot.tsc()).max(1)
    } else {
        0
    }
}

impl FlowSite {
    /// This thread's node for the site when it records in the running
    /// session: [`FlowSite::node`] without the timing decision (the
    /// clock reads made it).
    #[inline(always)]
    fn lock_node(&'static self) -> Option<(&'static Hot, &'static Node, u32)> {
        // SAFETY: owner thread; the reference is used by this call only.
        let hot: &'static Hot = unsafe { &*hot::hot() };
        let hot = if hot::is_current(hot) {
            hot
        } else if hot::session_running() {
            super::hot_slow()?
        } else {
            return None;
        };
        let np = match frame::find(hot, 0, self.cs.tagged()) {
            Some(np) => np,
            None => frame::resolve(hot, 0, self.id()).np,
        };
        Some((hot, frame::node(hot, np.node), np.node))
    }

    /// A lock of this site acquired as `held` was released (the lock is
    /// free already); `shared`: a read lock. `release` is the clock read
    /// just before the lock was freed ([`lock_clock`]).
    #[inline(always)]
    pub fn lock_released(&'static self, held: Held, release: u64, shared: bool) {
        let Some((hot, n, node)) = self.lock_node() else {
            return;
        };
        if shared {
            bump(n.counter(lock::SHARED), 1);
        }
        // Both clock reads were made in a session that times (see
        // `lock_clock`).
        if held.acquired != 0 && release != 0 {
            let hold = release.saturating_sub(held.acquired);
            // A hold's histogram entry counts as an acquisition.
            bump(n.counter(lock::HOLD), hold);
            if held.waited != 0 {
                bump(n.counter(lock::WAIT), held.waited);
            }
            // SAFETY: `hot` is this thread's state in the running
            // session, `node` its node.
            unsafe { hist_defer(hot, node, hold, held.waited) };
        } else {
            bump(n.counter(lock::ACQUISITIONS), 1);
        }
    }
}

/// Adds an acquisition's hold (histogram 0) and wait (histogram 1, if
/// any) to its node one timed record late, in the header's pending slots
/// as a timed call's (see `frame::hist_defer`: the buckets depend on the
/// clock just read, and an increment at such an address is slow).
///
/// # Safety
/// `hot` is the current thread's state in the running session, `node <
/// node_cap`.
#[inline(always)]
unsafe fn hist_defer(hot: &Hot, node: u32, hold: u64, wait: u64) {
    // SAFETY: the header sits before frame 0 of this thread's block.
    let h = unsafe { &*block::header_of(hot.frames) };
    let pending = &h.pending;
    let (a, b) = (
        pending[0].load(Ordering::Relaxed),
        pending[1].load(Ordering::Relaxed),
    );
    // SAFETY: pending entries are histogram elements or the sink, all
    // inside the area.
    unsafe {
        bump(&*hot.hist.add(a as usize), 1);
        bump(&*hot.hist.add(b as usize), 1);
    }
    let base = node as usize * HISTS * BUCKETS;
    pending[0].store((base + bucket_index(hold)) as u64, Ordering::Relaxed);
    let second = if wait != 0 {
        (base + BUCKETS + bucket_index(wait)) as u64
    } else {
        block::Layout::sink(h.node_cap)
    };
    pending[1].store(second, Ordering::Relaxed);
}

/// What a guard's drop calls.
impl LockSite {
    /// The lock was freed: records the acquisition `held` (the guard
    /// kept it), `release` the [`lock_clock`] read just before the lock
    /// was freed; `shared`: a read lock.
    #[inline(always)]
    pub fn released(&self, held: Held, release: u64, shared: bool) {
        // No session: nothing to record, and no site to find (one load).
        if held.acquired == 0 && !hot::session_running() {
            return;
        }
        self.site().lock_released(held, release, shared);
    }
}
