//! Test support (hidden from the docs): [`NestingCheck`], the global
//! allocator with which tests prove that the profiler's hooks allocate
//! nothing (the heap sampler's, and the allocation walker it calls).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::CountingAlloc;

thread_local! {
    /// Allocator calls under way on this thread (const, no destructor:
    /// reading it allocates nothing).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// perflens's counting allocator over `System`, inside a wrapper that
/// counts the allocator calls that begin while another is under way on
/// the same thread: an allocation made by a hook of the counting
/// allocator (which runs inside its call) is one.
pub struct NestingCheck {
    inner: CountingAlloc<System>,
    nested: AtomicU64,
}

impl NestingCheck {
    /// The allocator, for a `#[global_allocator]` static.
    pub const fn new() -> Self {
        NestingCheck {
            inner: CountingAlloc::new(System),
            nested: AtomicU64::new(0),
        }
    }

    /// Calls that began inside another since the last [`reset`](Self::reset).
    pub fn nested(&self) -> u64 {
        self.nested.load(Ordering::Relaxed)
    }

    /// Counts from 0 again.
    pub fn reset(&self) {
        self.nested.store(0, Ordering::Relaxed);
    }

    fn enter(&self) {
        DEPTH.with(|d| {
            if d.get() > 0 {
                self.nested.fetch_add(1, Ordering::Relaxed);
            }
            d.set(d.get() + 1);
        });
    }

    fn leave(&self) {
        DEPTH.with(|d| d.set(d.get() - 1));
    }
}

impl Default for NestingCheck {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every call is forwarded unchanged to the counting allocator;
// the depth is a const thread-local without a destructor.
unsafe impl GlobalAlloc for NestingCheck {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        self.enter();
        // SAFETY: forwarded unchanged.
        let p = unsafe { self.inner.alloc(l) };
        self.leave();
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        self.enter();
        // SAFETY: forwarded unchanged.
        let p = unsafe { self.inner.alloc_zeroed(l) };
        self.leave();
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        self.enter();
        // SAFETY: forwarded unchanged.
        let q = unsafe { self.inner.realloc(p, l, n) };
        self.leave();
        q
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        self.enter();
        // SAFETY: forwarded unchanged.
        unsafe { self.inner.dealloc(p, l) };
        self.leave();
    }
}
