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
