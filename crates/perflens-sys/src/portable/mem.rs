//! Portable memory: page-aligned memory from the system allocator (never
//! the program's global allocator, which may be the counting one),
//! zeroed by hand. No shared mappings, so no live view; nothing resident
//! to ask and no mapping to move.

use crate::mem::{Access, PAGE};
use std::alloc::{GlobalAlloc, Layout, System};

/// Where the allocation's own pointer is kept: the word just below the
/// page-aligned address handed out.
const HEAD: usize = size_of::<*mut u8>();

/// The allocation behind `len` page-aligned bytes: a page more (and the
/// head), at a pointer's alignment, which every system allocator gives.
/// Asking `System` for page alignment itself would make it zero every
/// byte by hand (an over-aligned `alloc_zeroed` is `alloc` and a fill),
/// committing the whole range at once; a plain zeroed allocation of this
/// size comes from the system already zeroed and is committed only as it
/// is touched.
fn layout(len: usize) -> Option<Layout> {
    Layout::from_size_align(len.checked_add(PAGE + HEAD)?, HEAD).ok()
}

/// Allocates `len` zeroed bytes, page-aligned. `None` on failure.
pub fn map_zeroed(len: usize) -> Option<*mut u8> {
    let layout = layout(len)?;
    // SAFETY: a non-zero size with a valid alignment.
    let raw = unsafe { System.alloc_zeroed(layout) };
    if raw.is_null() {
        return None;
    }
    let aligned = (raw as usize + HEAD).next_multiple_of(PAGE);
    let p = raw.wrapping_add(aligned - raw as usize);
    // SAFETY: `aligned - HEAD >= raw` and `aligned + len <= raw + len +
    // PAGE + HEAD`: the head and the range lie inside the allocation.
    unsafe { (p.sub(HEAD) as *mut *mut u8).write_unaligned(raw) };
    Some(p)
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
        // SAFETY: per the caller: the head below `p` holds the
        // allocation, made with this layout.
        unsafe { System.dealloc((p.sub(HEAD) as *const *mut u8).read_unaligned(), l) };
    }
}

/// A page of zeros, which [`zero`] compares each page with.
static ZEROS: [u8; PAGE] = [0; PAGE];

/// Zeroes `len` bytes at `p` (`shared` cannot be true here), page by
/// page, leaving alone the pages that already read as zero: a page never
/// touched stays uncommitted (a block reset at each session would
/// otherwise commit the whole block), and reading costs less than
/// writing. The comparison is a slice equality, which is `memcmp` even in
/// an unoptimized build (a byte loop there took minutes for a thousand
/// threads' blocks).
///
/// # Safety
/// `p..p+len` lies inside one allocation that no other thread writes.
pub unsafe fn zero(p: *mut u8, len: usize, _shared: bool) {
    let mut at = 0;
    while at < len {
        let n = (PAGE - (p as usize + at) % PAGE).min(len - at);
        // SAFETY: per the caller, `p + at .. + n` is ours and unshared.
        let page = unsafe { std::slice::from_raw_parts_mut(p.add(at), n) };
        if *page != ZEROS[..n] {
            page.fill(0);
        }
        at += n;
    }
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
