//! The process-wide path table.
//!
//! A path is "this callsite, reached through that parent path". Threads
//! keep their own counters per path (see `block.rs`), but the identity of
//! a path is global, so a future created on one thread and polled on
//! another lands on the same path, and merging threads is summing nodes
//! with equal path index. The table is only touched when a thread meets a
//! path for the first time (once per path per thread), so a mutex is fine.
//!
//! Each path also carries a stable 64-bit id, a running hash of the
//! callsite salts along it (see `callsite.rs`), for reports to name paths
//! in a way that does not change between runs.

use crate::callsite::{self, OVERFLOW_CALLSITE, ROOT_CALLSITE};
use crate::snapshot::PathInfo;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Path index of the root.
pub const ROOT_PATH: u32 = 0;
/// Path index that collects calls which did not fit in a table.
pub const OVERFLOW_PATH: u32 = 1;

/// Default maximum number of distinct paths in the process.
pub const DEFAULT_PATH_CAPACITY: u32 = 1 << 16;

static CAPACITY: AtomicU32 = AtomicU32::new(DEFAULT_PATH_CAPACITY);
static OVERFLOWED: AtomicU64 = AtomicU64::new(0);

struct Table {
    paths: Vec<PathInfo>,
    index: HashMap<(u32, u32), u32>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn with_table<R>(f: impl FnOnce(&mut Table) -> R) -> R {
    let mut guard = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let table = guard.get_or_insert_with(|| Table {
        paths: vec![
            PathInfo {
                parent: ROOT_PATH,
                callsite: ROOT_CALLSITE,
                id: 0,
            },
            PathInfo {
                parent: ROOT_PATH,
                callsite: OVERFLOW_CALLSITE,
                id: mix(0, callsite::fnv1a(b"[overflow]")),
            },
        ],
        index: HashMap::new(),
    });
    f(table)
}

/// Combines a parent path id with a callsite salt.
pub const fn mix(parent: u64, salt: u64) -> u64 {
    (parent.rotate_left(23) ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Sets the capacity (takes effect for paths registered from now on).
pub(crate) fn set_capacity(cap: u32) {
    CAPACITY.store(cap.max(2), Ordering::Relaxed);
}

/// The current capacity.
pub(crate) fn capacity() -> u32 {
    CAPACITY.load(Ordering::Relaxed)
}

/// The path for `callsite` under `parent`, registering it if new.
/// Returns [`OVERFLOW_PATH`] when the table is full or `parent` is the
/// overflow path (and counts the overflow).
pub(crate) fn child(parent: u32, callsite: u32) -> u32 {
    if parent == OVERFLOW_PATH {
        OVERFLOWED.fetch_add(1, Ordering::Relaxed);
        return OVERFLOW_PATH;
    }
    // Look the salt up before taking the table lock (never hold both).
    let salt = callsite::salt(callsite);
    let found = with_table(|t| {
        if let Some(&p) = t.index.get(&(parent, callsite)) {
            return Some(p);
        }
        if t.paths.len() as u32 >= capacity() {
            return None;
        }
        let parent_id = t.paths.get(parent as usize).map_or(0, |p| p.id);
        let p = t.paths.len() as u32;
        t.paths.push(PathInfo {
            parent,
            callsite,
            id: mix(parent_id, salt),
        });
        t.index.insert((parent, callsite), p);
        Some(p)
    });
    found.unwrap_or_else(|| {
        OVERFLOWED.fetch_add(1, Ordering::Relaxed);
        OVERFLOW_PATH
    })
}

/// Every registered path, by index.
pub(crate) fn all() -> Vec<PathInfo> {
    with_table(|t| t.paths.clone())
}

/// How many path registrations were refused because the table was full.
pub(crate) fn overflowed() -> u64 {
    OVERFLOWED.load(Ordering::Relaxed)
}
