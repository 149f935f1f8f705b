//! Portable memory: page-aligned memory from the system allocator (never
//! the program's global allocator, which may be the counting one),
//! zeroed by hand. No shared mappings, so no live view; nothing resident
//! to ask and no mapping to move.

use crate::mem::{Access, PAGE};
use std::alloc::{GlobalAlloc, Layout, System};

fn layout(len: usize) -> Option<Layout> {
    Layout::from_size_align(len.max(1), PAGE).ok()
}

/// Allocates `len` zeroed bytes, page-aligned. `None` on failure.
pub fn map_zeroed(len: usize) -> Option<*mut u8> {
    // SAFETY: a non-zero size with a valid alignment.
    let p = unsafe { System.alloc_zeroed(layout(len)?) };
    (!p.is_null()).then_some(p)
}

/// No shared mappings here: `None`.
pub fn map_shared(_file: &std::fs::File, _len: usize, _access: Access) -> Option<*mut u8> {
    None
}

/// Frees `len` bytes at `p`.
///
/// # Safety
/// `p` came from [`map_zeroed`] with this `len`, and nothing uses it.
pub unsafe fn unmap(p: *mut u8, len: usize) {
    if let Some(l) = layout(len) {
        // SAFETY: per the caller, allocated with this layout.
        unsafe { System.dealloc(p, l) };
    }
}

/// Zeroes `len` bytes at `p` (`shared` cannot be true here).
///
/// # Safety
/// `p..p+len` lies inside one allocation that no other thread writes.
pub unsafe fn zero(p: *mut u8, len: usize, _shared: bool) {
    // SAFETY: per the caller.
    unsafe { std::ptr::write_bytes(p, 0, len) };
}

/// Nothing to give back without page mappings: the memory stays.
///
/// # Safety
/// None beyond the range being allocated.
pub unsafe fn release(_p: *mut u8, _len: usize) {}

/// Cannot tell: `None`.
///
/// # Safety
/// None.
pub unsafe fn resident(_p: *const u8, _len: usize) -> Option<Vec<bool>> {
    None
}

/// No mapping to move: `false`, both stay as they were.
///
/// # Safety
/// None.
pub unsafe fn remap_private(_copy: *mut u8, _at: *mut u8, _len: usize) -> bool {
    false
}

/// `std` sets no allocator thresholds: nothing to do.
pub fn keep_freed_memory() {}
