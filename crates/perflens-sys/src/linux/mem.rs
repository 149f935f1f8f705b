//! Linux's memory: anonymous and shared file mappings and glibc's
//! `mallopt` (`posix/pages.rs`, shared with the POSIX implementation),
//! `madvise` to give pages back (`MADV_REMOVE` punches holes in a shared
//! file, `MADV_DONTNEED` drops private pages), `mincore`, `mremap`.

use crate::mem::PAGE;

pub use super::pages::{keep_freed_memory, map_shared, map_zeroed, unmap};

/// Zeroes `len` bytes at `p`, returning whole pages to the OS. `shared`:
/// the range is a shared file mapping ([`map_shared`]), whose pages are
/// holes punched in the file; else a private one from [`map_zeroed`].
///
/// # Safety
/// `p..p+len` must lie inside one such mapping that no other thread
/// writes concurrently.
pub unsafe fn zero(p: *mut u8, len: usize, shared: bool) {
    // MADV_DONTNEED would only drop this process's view of a shared
    // file's pages, not zero them: punch holes instead.
    let advice = if shared {
        libc::MADV_REMOVE
    } else {
        libc::MADV_DONTNEED
    };
    let start = p as usize;
    let first = (start + PAGE - 1) & !(PAGE - 1);
    let end = start + len;
    let last = end & !(PAGE - 1);
    if last > first {
        // SAFETY: caller guarantees the range; partial pages at the ends
        // are zeroed by hand.
        unsafe {
            std::ptr::write_bytes(p, 0, first - start);
            // MADV_DONTNEED on a private anonymous mapping (MADV_REMOVE
            // on a shared one) makes the pages read back as zero and
            // frees them; if it fails, they are zeroed by hand.
            if libc::madvise(first as *mut libc::c_void, last - first, advice) != 0 {
                std::ptr::write_bytes(first as *mut u8, 0, last - first);
            }
            std::ptr::write_bytes(last as *mut u8, 0, end - last);
        }
    } else {
        // SAFETY: caller guarantees the range.
        unsafe { std::ptr::write_bytes(p, 0, len) };
    }
}

/// Gives the pages of `len` bytes at `p` (whole pages of a private
/// mapping from [`map_zeroed`]) back to the system: they read back as
/// zero. Unlike [`zero`], other threads may still store into the range
/// (with atomics): a store lands on a fresh zero page, never outside the
/// mapping.
///
/// # Safety
/// `p..p+len` lies inside one mapping from [`map_zeroed`], page-aligned.
pub unsafe fn release(p: *mut u8, len: usize) {
    // SAFETY: per the caller; MADV_DONTNEED on a private anonymous range
    // only drops its pages. Failure leaves them in place: nothing to do.
    unsafe { libc::madvise(p as *mut libc::c_void, len, libc::MADV_DONTNEED) };
}

/// Which pages of `len` bytes at `p` are resident (for a shared file
/// mapping: hold data; a never-written page of a tmpfs file has none).
/// One bool per page; `None` if the system cannot tell.
///
/// # Safety
/// `p` is page-aligned and `p..p+len` lies inside one mapping.
pub unsafe fn resident(p: *const u8, len: usize) -> Option<Vec<bool>> {
    let mut v = vec![0u8; len.div_ceil(PAGE)];
    // SAFETY: per the caller; `v` has a byte per page.
    let ok = unsafe { libc::mincore(p as *mut libc::c_void, len, v.as_mut_ptr()) } == 0;
    ok.then(|| v.into_iter().map(|b| b & 1 != 0).collect())
}

/// Moves the private mapping `copy` (`len` bytes from [`map_zeroed`])
/// to `at`, replacing the mapping there atomically (a forked child's
/// private copy of a shared block). `false` if it could not: then both
/// stay as they were.
///
/// # Safety
/// `copy..copy+len` and `at..at+len` are whole mappings that do not
/// overlap, and nothing uses `at` while it is replaced.
pub unsafe fn remap_private(copy: *mut u8, at: *mut u8, len: usize) -> bool {
    // SAFETY: per the caller; the kernel unmaps what was at `at`.
    let moved = unsafe {
        libc::mremap(
            copy as *mut libc::c_void,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            at as *mut libc::c_void,
        )
    };
    moved != libc::MAP_FAILED
}
