//! Memory with POSIX calls only: anonymous and shared file mappings
//! (`pages.rs`, shared with Linux); pages given back by mapping fresh
//! zero pages over them (`mmap` with `MAP_FIXED`: macOS's `madvise`
//! neither zeroes private pages nor punches holes in a file, and POSIX
//! has no call that does); `mincore`; no `mremap`, so a private copy is
//! moved over a mapping by mapping anew there and copying the copy's
//! resident pages. Pages are the system's (16 KiB on Apple silicon),
//! which may be larger than the runtime's [`PAGE`]: only whole system
//! pages are given back, the rest is zeroed by hand.

use crate::mem::PAGE;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use super::pages::{keep_freed_memory, map_shared, map_zeroed, unmap};

/// The shared files' zeroing by hand, skipping pages that already read
/// as zero: the `std`-only build's `zero`. Its allocator-backed memory
/// is not used here.
#[path = "../portable/mem.rs"]
#[allow(dead_code)]
mod by_hand;

/// The system's page size (`sysconf`), read once; [`PAGE`] if it cannot
/// be read.
fn os_page() -> usize {
    static SIZE: AtomicUsize = AtomicUsize::new(0);
    match SIZE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no memory preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let n = usize::try_from(n)
                .ok()
                .filter(|n| n.is_power_of_two())
                .unwrap_or(PAGE);
            SIZE.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// The whole system pages inside `p..p+len`, as `(first, last)`
/// addresses (`first == last`: none).
fn whole_pages(p: *mut u8, len: usize) -> (usize, usize) {
    let page = os_page();
    let first = (p as usize).next_multiple_of(page);
    let last = ((p as usize + len) & !(page - 1)).max(first);
    (first, last)
}

/// Maps fresh zero pages (private, anonymous) over `len` bytes at `at`,
/// whole system pages: what was there is gone, the memory goes back to
/// the system. `false` if the system refused (then nothing changed).
///
/// # Safety
/// `at..at+len` lies inside this process's own mappings, and nothing
/// relies on its bytes any more.
unsafe fn fresh_pages(at: usize, len: usize) -> bool {
    // SAFETY: per the caller; MAP_FIXED replaces only the given range.
    let p = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    p != libc::MAP_FAILED
}

/// Zeroes `len` bytes at `p`. `shared`: the range is a shared file
/// mapping ([`map_shared`]), zeroed by hand where it does not already
/// read as zero (no hole punching in POSIX); else a private one from
/// [`map_zeroed`], whose whole system pages are mapped anew (zero, and
/// given back) and the rest zeroed by hand.
///
/// # Safety
/// `p..p+len` must lie inside one such mapping that no other thread
/// writes concurrently.
pub unsafe fn zero(p: *mut u8, len: usize, shared: bool) {
    let (first, last) = whole_pages(p, len);
    // SAFETY: per the caller: the range is ours and unshared; a fresh
    // mapping covers only whole pages inside it.
    unsafe {
        if shared || last == first || !fresh_pages(first, last - first) {
            by_hand::zero(p, len, shared);
            return;
        }
        std::ptr::write_bytes(p, 0, first - p as usize);
        std::ptr::write_bytes(last as *mut u8, 0, p as usize + len - last);
    }
}

/// Gives the whole system pages of `len` bytes at `p` (a private mapping
/// from [`map_zeroed`]) back to the system: they read back as zero.
/// Other threads may still store into the range (with atomics): a store
/// lands on the old page or a fresh zero one, never outside the mapping.
/// Parts of a larger system page keep their bytes.
///
/// # Safety
/// `p..p+len` lies inside one mapping from [`map_zeroed`], page-aligned.
pub unsafe fn release(p: *mut u8, len: usize) {
    let (first, last) = whole_pages(p, len);
    if last > first {
        // SAFETY: per the caller; failure leaves the pages in place.
        unsafe { fresh_pages(first, last - first) };
    }
}

/// Which [`PAGE`]s of `len` bytes at `p` are resident (for a shared file
/// mapping: hold data), as `mincore` tells for the system pages that hold
/// them. One bool per page; `None` if the system cannot tell.
///
/// # Safety
/// `p` is page-aligned and `p..p+len` lies inside one mapping.
pub unsafe fn resident(p: *const u8, len: usize) -> Option<Vec<bool>> {
    let page = os_page();
    let start = p as usize & !(page - 1);
    let skip = p as usize - start;
    let mut v = vec![0u8; (skip + len).div_ceil(page)];
    // SAFETY: per the caller, `start` is the system page holding `p` and
    // `start..p+len` is mapped; `v` has a byte per system page.
    let ok = unsafe {
        libc::mincore(
            start as *mut libc::c_void,
            skip + len,
            v.as_mut_ptr().cast(),
        )
    };
    (ok == 0).then(|| {
        (0..len.div_ceil(PAGE))
            .map(|i| v[(skip + i * PAGE) / page] & 1 != 0)
            .collect()
    })
}

/// Moves the private mapping `copy` (`len` bytes from [`map_zeroed`])
/// to `at` (a forked child's private copy of a shared block): there is
/// no `mremap` in POSIX, so fresh private pages are mapped at `at`, the
/// copy's resident pages copied into them (the others are zero) and the
/// copy unmapped. `false` if no pages could be mapped: then both stay as
/// they were.
///
/// # Safety
/// `copy..copy+len` and `at..at+len` are whole mappings that do not
/// overlap, and nothing uses `at` while it is replaced.
pub unsafe fn remap_private(copy: *mut u8, at: *mut u8, len: usize) -> bool {
    // SAFETY: per the caller: `at..at+len` is a whole mapping (so whole
    // system pages) that nothing uses; `copy` is another one, read then
    // unmapped.
    unsafe {
        let held = resident(copy, len);
        if !fresh_pages(at as usize, len) {
            return false;
        }
        for i in 0..len.div_ceil(PAGE) {
            if held.as_ref().is_none_or(|r| r[i]) {
                let n = PAGE.min(len - i * PAGE);
                std::ptr::copy_nonoverlapping(copy.add(i * PAGE), at.add(i * PAGE), n);
            }
        }
        unmap(copy, len);
    }
    true
}
