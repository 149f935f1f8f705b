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
//!
//! # Recursion folding: contexts
//!
//! A frame on the shadow stack names a *context*, the state that decides
//! where its measured children go. For code without recursion a context
//! is just a path. A call to a function already on the stack (directly,
//! or through a cycle of measured functions) is folded: it is charged to
//! the path where that function is outermost, as a *nested* call (the
//! report counts its calls, self time and allocations, never its
//! inclusive time again). Folding makes the state of a frame more than
//! its path: below a folded `f` in `f -> g -> f`, a call to `g` must be
//! known to be nested too, although the frame's path is just `f`. Such
//! frames name an *alias* context: `ALIAS | index` into a second table,
//! holding the path its calls are charged to, whether they are nested,
//! and the set of functions open on the stack (each with the path where
//! it is outermost). Aliases are interned by that state, so a recursion
//! of any depth, or a cycle, cycles through a handful of contexts: paths
//! and contexts stay bounded, and so does every thread's tree.
//!
//! An alias whose open set is exactly its path's chain and that is not
//! nested would behave like the path itself, so it *is* the path: code
//! without recursion never creates an alias, and its path ids and tree
//! are the same as without folding.

use crate::callsite::{self, OVERFLOW_CALLSITE, ROOT_CALLSITE};
use crate::snapshot::PathInfo;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub use perflens_format::vocab::{OVERFLOW_PATH, ROOT_PATH};

/// Default maximum number of distinct paths in the process.
pub const DEFAULT_PATH_CAPACITY: u32 = 1 << 16;

static CAPACITY: AtomicU32 = AtomicU32::new(DEFAULT_PATH_CAPACITY);
static OVERFLOWED: AtomicU64 = AtomicU64::new(0);

/// Set in a context value that names an alias (see the module docs);
/// clear in one that names a path. Paths stay below `1 << 28`.
pub const ALIAS: u32 = 1 << 31;

/// Whether calls are folded (the default) or every depth of a recursion
/// gets a path of its own (`PERFLENS_RECURSION=expand`).
static FOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// An alias context: see the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Alias {
    /// The path calls in this context are charged to.
    path: u32,
    /// Whether they are nested calls of a function open further out.
    nested: bool,
    /// `(callsite, path where it is outermost)` for every function open
    /// on the stack, sorted by callsite.
    open: Vec<(u32, u32)>,
}

pub(crate) struct Table {
    paths: Vec<PathInfo>,
    index: HashMap<(u32, u32), u32>,
    aliases: Vec<Alias>,
    alias_index: HashMap<Alias, u32>,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// The locked table (held across `fork`, see `fork.rs`).
pub(crate) fn lock() -> std::sync::MutexGuard<'static, Option<Table>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

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
        aliases: Vec::new(),
        alias_index: HashMap::new(),
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

/// Sets whether recursion is folded (from the session's config).
pub(crate) fn set_fold(fold: bool) {
    FOLD.store(fold, Ordering::Relaxed);
}

/// Where a call of `callsite` made in context `parent` goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// The context of the new frame.
    pub context: u32,
    /// The path the call is charged to.
    pub path: u32,
    /// Whether the call is nested in a frame of the same function on
    /// the same path (a folded recursion).
    pub nested: bool,
}

impl Step {
    /// Everything that did not fit in a table.
    pub(crate) const OVERFLOW: Step = Step {
        context: OVERFLOW_PATH,
        path: OVERFLOW_PATH,
        nested: false,
    };
}

/// Where a call of `callsite` in context `parent` goes, registering new
/// paths and aliases. [`Step::OVERFLOW`] when a table is full or
/// `parent` is the overflow context (the overflow is counted).
pub(crate) fn step(parent: u32, callsite: u32) -> Step {
    if parent == OVERFLOW_PATH {
        OVERFLOWED.fetch_add(1, Ordering::Relaxed);
        return Step::OVERFLOW;
    }
    // Look the salt up before taking the table lock (never hold both).
    let salt = callsite::salt(callsite);
    let fold = FOLD.load(Ordering::Relaxed);
    let found = with_table(|t| {
        if !fold || parent & ALIAS == 0 && !t.on_chain(parent, callsite) {
            // The common case: a path under a path.
            let path = t.child(parent, callsite, salt)?;
            return Some(Step {
                context: path,
                path,
                nested: false,
            });
        }
        let mut open = t.open(parent)?;
        if let Some(&(_, outer)) = open.iter().find(|&&(c, _)| c == callsite) {
            let context = t.alias(Alias {
                path: outer,
                nested: true,
                open,
            })?;
            return Some(Step {
                context,
                path: outer,
                nested: true,
            });
        }
        let under = t.path_of(parent)?;
        let is_chain = open == t.chain(under)?;
        let path = t.child(under, callsite, salt)?;
        if is_chain {
            // Same state as the path itself: no alias needed.
            return Some(Step {
                context: path,
                path,
                nested: false,
            });
        }
        let at = open.partition_point(|&(c, _)| c < callsite);
        open.insert(at, (callsite, path));
        let context = t.alias(Alias {
            path,
            nested: false,
            open,
        })?;
        Some(Step {
            context,
            path,
            nested: false,
        })
    });
    found.unwrap_or_else(|| {
        OVERFLOWED.fetch_add(1, Ordering::Relaxed);
        Step::OVERFLOW
    })
}

impl Table {
    /// The path for `callsite` under path `parent`, registering it if
    /// new; `None` when the table is full.
    fn child(&mut self, parent: u32, callsite: u32, salt: u64) -> Option<u32> {
        if let Some(&p) = self.index.get(&(parent, callsite)) {
            return Some(p);
        }
        if self.paths.len() + self.aliases.len() >= capacity() as usize {
            return None;
        }
        let parent_id = self.paths.get(parent as usize).map_or(0, |p| p.id);
        let p = self.paths.len() as u32;
        let info = PathInfo {
            parent,
            callsite,
            id: mix(parent_id, salt),
        };
        publish(p, &info);
        self.paths.push(info);
        self.index.insert((parent, callsite), p);
        Some(p)
    }

    /// Interns an alias; `None` when the table is full.
    fn alias(&mut self, alias: Alias) -> Option<u32> {
        if let Some(&a) = self.alias_index.get(&alias) {
            return Some(a);
        }
        if self.paths.len() + self.aliases.len() >= capacity() as usize {
            return None;
        }
        let a = ALIAS | self.aliases.len() as u32;
        self.aliases.push(alias.clone());
        self.alias_index.insert(alias, a);
        Some(a)
    }

    /// The path a context charges its calls to.
    fn path_of(&self, context: u32) -> Option<u32> {
        if context & ALIAS == 0 {
            return Some(context);
        }
        self.aliases
            .get((context & !ALIAS) as usize)
            .map(|a| a.path)
    }

    /// The functions open in a context, each with the path where it is
    /// outermost, sorted by callsite.
    fn open(&self, context: u32) -> Option<Vec<(u32, u32)>> {
        if context & ALIAS == 0 {
            self.chain(context)
        } else {
            (self.aliases.get((context & !ALIAS) as usize)).map(|a| a.open.clone())
        }
    }

    /// `(callsite, path)` of every path from `path` up to the root,
    /// sorted by callsite.
    fn chain(&self, path: u32) -> Option<Vec<(u32, u32)>> {
        let mut out = Vec::new();
        let mut p = path;
        while p != ROOT_PATH {
            let info = self.paths.get(p as usize)?;
            out.push((info.callsite, p));
            p = info.parent;
        }
        out.sort_unstable();
        Some(out)
    }

    /// Whether `callsite` is on the chain of path `path`.
    fn on_chain(&self, path: u32, callsite: u32) -> bool {
        let mut p = path;
        while p != ROOT_PATH {
            let Some(info) = self.paths.get(p as usize) else {
                return false;
            };
            if info.callsite == callsite {
                return true;
            }
            p = info.parent;
        }
        false
    }
}

/// Appends path `index` to the live session's names (if one runs).
fn publish(index: u32, info: &PathInfo) {
    crate::hooks::emit(perflens_format::names::REC_PATH, |r| {
        r.extend_from_slice(&index.to_le_bytes());
        r.extend_from_slice(&info.parent.to_le_bytes());
        r.extend_from_slice(&info.callsite.to_le_bytes());
        r.extend_from_slice(&info.id.to_le_bytes());
    });
}

/// Appends every path registered so far to the live session's names.
pub(crate) fn publish_all() {
    with_table(|t| {
        for (i, info) in t.paths.iter().enumerate() {
            publish(i as u32, info);
        }
    });
}

/// Every registered path, by index.
pub(crate) fn all() -> Vec<PathInfo> {
    with_table(|t| t.paths.clone())
}

/// How many path registrations were refused because the table was full.
pub(crate) fn overflowed() -> u64 {
    OVERFLOWED.load(Ordering::Relaxed)
}
