//! The counting global allocator.
//!
//! `#[perflens::main]` installs it by itself with the `alloc` feature.
//! Programs that use a `Session` instead install it by
//! hand; the same line compiles with perflens off, where the type simply
//! forwards to the allocator it wraps:
//!
//! ```
//! #[global_allocator]
//! static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);
//! # fn main() {}
//! ```
//!
//! While a session records, each allocation and free is charged to the
//! innermost measured function of the thread that makes it (for futures:
//! the future being polled), and to per-thread live and peak counters.
//! With the `alloc` feature the charge is made when that function's call
//! begins or ends (or it calls another measured function), not by the
//! allocator; a snapshot adds what each thread allocated since its last
//! such boundary to the function then innermost on that thread, so it is
//! exact for threads that are not running while it is taken (see
//! docs/allocations.md).

#[cfg(feature = "enabled")]
pub use perflens_core::CountingAlloc;

/// What a thread allocated and freed inside [`count`].
#[cfg(feature = "alloc")]
pub use perflens_core::AllocCount;

/// Counts exactly what the current thread allocates and frees while a
/// closure runs, with or without a session, in parallel tests too:
///
/// ```
/// #[global_allocator]
/// static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);
///
/// fn parse(s: &str) -> usize {
///     s.split(',').count()
/// }
///
/// # fn main() {
/// let (fields, n) = perflens::alloc::count(|| parse("a,b,c"));
/// assert_eq!(fields, 3);
/// assert_eq!(n.allocations, 0, "parse allocates nothing");
/// let (v, n) = perflens::alloc::count(|| vec![0u8; 100]);
/// assert_eq!((n.allocations, n.allocated_bytes, n.frees), (1, 100, 0));
/// drop(v);
/// # }
/// ```
///
/// See [`perflens_core::count_allocations`] for nesting, sessions and
/// what it costs.
#[cfg(feature = "alloc")]
pub fn count<R>(f: impl FnOnce() -> R) -> (R, AllocCount) {
    perflens_core::count_allocations(f)
}

/// One measured function's share of a [`count_by_function`] scope: its
/// calls, and what they allocated and freed (inclusive).
#[cfg(feature = "alloc")]
pub use perflens_core::FunctionAllocs;

/// [`count`], with the measured functions called inside broken down (each
/// one's calls and what they allocated, inclusive of what they called),
/// by bytes allocated:
///
/// ```
/// #[global_allocator]
/// static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);
///
/// #[perflens::measure]
/// fn field(s: &str) -> String {
///     s.to_uppercase()
/// }
///
/// # fn main() {
/// let (_, n, functions) = perflens::alloc::count_by_function(|| {
///     "a,b,c".split(',').map(field).collect::<Vec<_>>()
/// });
/// assert_eq!(n.allocations, 4); // three strings and the vector
/// assert!(functions[0].name.ends_with("field"));
/// assert_eq!((functions[0].calls, functions[0].count.allocations), (3, 3));
/// # }
/// ```
///
/// The breakdown is of sync measured functions on a thread no session
/// records (a recorded thread's calls go to its session, and the list is
/// empty); see [`perflens_core::count_allocations_by_function`].
#[cfg(feature = "alloc")]
pub fn count_by_function<R>(f: impl FnOnce() -> R) -> (R, AllocCount, Vec<FunctionAllocs>) {
    perflens_core::count_allocations_by_function(f)
}

/// Runs `f` and panics if it allocated on this thread, saying what
/// allocated (by measured function) at the caller's line: the test of
/// "this allocates nothing".
///
/// ```
/// #[global_allocator]
/// static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);
///
/// # fn main() {
/// let n = perflens::alloc::assert_allocates_nothing(|| "a,b,c".split(',').count());
/// assert_eq!(n, 3);
/// # }
/// ```
#[cfg(feature = "alloc")]
#[track_caller]
pub fn assert_allocates_nothing<R>(f: impl FnOnce() -> R) -> R {
    assert_allocations_at_most(0, f)
}

/// Runs `f` and panics if it made more than `max` allocations on this
/// thread, saying what allocated (by measured function).
#[cfg(feature = "alloc")]
#[track_caller]
pub fn assert_allocations_at_most<R>(max: u64, f: impl FnOnce() -> R) -> R {
    let (r, n, functions) = count_by_function(f);
    if n.allocations > max {
        panic!(
            "expected at most {max} allocations, got {}{}",
            describe(&n),
            breakdown(&functions)
        );
    }
    r
}

/// Runs `f` and panics unless the measured function whose name ends with
/// `function` was called in it and made at most `max` allocations per
/// call on average (inclusive of what it called): "this path makes at
/// most 2 allocations per call".
///
/// ```
/// #[global_allocator]
/// static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);
///
/// #[perflens::measure]
/// fn label(i: u32) -> String {
///     format!("item {i}")
/// }
///
/// # fn main() {
/// perflens::alloc::assert_allocations_per_call_at_most("label", 1, || {
///     (0..10).map(label).count()
/// });
/// # }
/// ```
#[cfg(feature = "alloc")]
#[track_caller]
pub fn assert_allocations_per_call_at_most<R>(
    function: &str,
    max: u64,
    f: impl FnOnce() -> R,
) -> R {
    let (r, n, functions) = count_by_function(f);
    let Some(row) = functions
        .iter()
        .find(|r| r.name == function || r.name.ends_with(&format!("::{function}")))
    else {
        panic!(
            "{function} was not called (as a measured function, on this thread) in the closure, \
             which made {}{}",
            describe(&n),
            breakdown(&functions)
        );
    };
    let per_call = row.count.allocations as f64 / row.calls as f64;
    if per_call > max as f64 {
        panic!(
            "expected at most {max} allocations per call of {}, got {per_call:.2} ({} in {} calls){}",
            row.name,
            row.count.allocations,
            row.calls,
            breakdown(&functions)
        );
    }
    r
}

#[cfg(feature = "alloc")]
fn describe(n: &AllocCount) -> String {
    format!(
        "{} allocations ({} bytes) and {} frees",
        n.allocations, n.allocated_bytes, n.frees
    )
}

#[cfg(feature = "alloc")]
fn breakdown(functions: &[FunctionAllocs]) -> String {
    let mut out = String::new();
    for f in functions {
        out.push_str(&format!(
            "\n  {}: {} calls, {} allocations ({} bytes), inclusive",
            f.name, f.calls, f.count.allocations, f.count.allocated_bytes
        ));
    }
    if functions.is_empty() {
        out.push_str("\n  (no measured function was called)");
    }
    out
}

#[cfg(not(feature = "enabled"))]
mod off {
    use std::alloc::{GlobalAlloc, Layout, System};

    /// With perflens off: forwards every call to the wrapped allocator.
    pub struct CountingAlloc<A = System> {
        inner: A,
    }

    impl<A> CountingAlloc<A> {
        /// Wraps `inner`.
        pub const fn new(inner: A) -> Self {
            CountingAlloc { inner }
        }
    }

    // SAFETY: every method forwards to `inner` unchanged.
    unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded unchanged (the caller's contract).
            unsafe { self.inner.alloc(layout) }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded unchanged.
            unsafe { self.inner.alloc_zeroed(layout) }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded unchanged.
            unsafe { self.inner.dealloc(ptr, layout) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: forwarded unchanged.
            unsafe { self.inner.realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(not(feature = "enabled"))]
pub use off::CountingAlloc;
