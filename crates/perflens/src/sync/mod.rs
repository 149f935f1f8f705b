//! Locks measured with their own types' behaviour.
//!
//! `perflens::sync::Mutex` and `RwLock` (and the `parking_lot` and
//! `tokio` flavours) are the originals with the same constructors,
//! methods, guards, errors and traits; with the `enabled` feature off
//! they are the original types themselves (aliases), so code that names
//! them compiles both ways:
//!
//! | feature | module | wraps |
//! |---|---|---|
//! | `flow-std` | `perflens::sync` | `std::sync::{Mutex, RwLock}` |
//! | `flow-parking-lot` | `perflens::sync::parking_lot` | `parking_lot::{Mutex, RwLock}` |
//! | `flow-tokio` | `perflens::sync::tokio` | `tokio::sync::{Mutex, RwLock}` |
//!
//! ```
//! # #[cfg(feature = "flow-std")] {
//! use perflens::sync::Mutex;
//! static JOBS: Mutex<Vec<u32>> = perflens::lock!(Mutex::new(Vec::new()), label = "jobs");
//! JOBS.lock().unwrap().push(1);
//! let m = Mutex::new(0); // its row: this file:line:col
//! *m.lock().unwrap() += 1;
//! # }
//! ```
//!
//! # A lock's row
//!
//! Each lock remembers where its `new` was called (`#[track_caller]`,
//! a `&'static Location`, const: a measured lock can be a `static`) and
//! an optional label (`perflens::lock!(expr, label = "name")`). All the
//! locks of one label, or else made at one place, are one row. A lock
//! finds its row's site in a process-wide map the first time it is
//! used, and keeps it; nothing is registered when it is made.
//!
//! # What is counted
//!
//! Per row, summed over its locks and the threads that used them:
//! acquisitions, of them shared (read) ones, contended acquisitions (the
//! first, non-blocking attempt failed), the wait of each contended
//! acquisition and the hold of each acquisition (their histograms: p50,
//! p99, max), and the most waiters of one lock at once. An acquisition is
//! recorded when its guard is dropped (after the lock is free), in the
//! thread's own block; the only shared write added is the lock's waiter
//! count, on the contended path. `PERFLENS_FLOW_LATENCY=0` or count mode:
//! counts only, no clock read.
//!
//! # What changes
//!
//! A lock is larger: its place, label, row and waiter count (40 bytes),
//! and for std's `Mutex` the holder's std guard and acquisition time
//! (built of a `std::sync::Mutex<()>` and the value beside it, so that
//! its guard is one pointer). Other guards carry their acquisition (16
//! bytes). A blocking acquisition first tries once without blocking,
//! which is what the originals do first anyway.
//!
//! # Cost
//!
//! An uncontended `lock()` and unlock of the std `Mutex` reads the clock
//! twice (acquired, released) and adds one table probe and a few plain
//! stores at release; with no session running it adds a load and a test
//! (see `perflens-bench`, `PERFLENS_BENCH_ONLY=locks`).

#[cfg(all(
    feature = "enabled",
    any(
        feature = "flow-std",
        feature = "flow-parking-lot",
        feature = "flow-tokio"
    )
))]
mod kernel;
#[cfg(feature = "flow-std")]
mod std;
#[cfg(feature = "flow-std")]
pub use self::std::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
#[cfg(feature = "flow-std")]
pub use ::std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

#[cfg(feature = "flow-parking-lot")]
pub mod parking_lot;

#[cfg(feature = "flow-tokio")]
pub mod tokio;

/// Names a measured lock's row: `perflens::lock!(Mutex::new(v), label =
/// "name")` is `Mutex::new(v)` whose row is `name` (const: usable in a
/// `static`). With `enabled` off it is the constructor call itself.
#[cfg(feature = "enabled")]
#[macro_export]
macro_rules! lock {
    ($new:expr, label = $label:expr $(,)?) => {
        $new.with_label($label)
    };
    ($new:expr $(,)?) => {
        $new
    };
}

/// Names a measured lock's row (with `enabled` off: the constructor call
/// itself).
#[cfg(not(feature = "enabled"))]
#[macro_export]
macro_rules! lock {
    ($new:expr, label = $label:expr $(,)?) => {{
        let _: &'static str = $label;
        $new
    }};
    ($new:expr $(,)?) => {
        $new
    };
}
