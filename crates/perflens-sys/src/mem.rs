//! Page-granular memory for the runtime's blocks and trace buffers,
//! straight from the operating system so that the profiler's own memory
//! never goes through (or is counted by) the program's global allocator.
//! On Unix: anonymous and shared file mappings, `madvise` to give pages
//! back. Elsewhere: page-aligned memory from the system allocator.

/// Maps `len` zeroed bytes, page-aligned. `None` on failure.
#[cfg(unix)]
pub fn map_zeroed(len: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping with no address hint has no
    // preconditions; the result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        Some(p as *mut u8)
    }
}

/// Maps the first `len` bytes of the file `fd` shared, readable and
/// writable (a live block: see perflens-core's `publish.rs`). `None` on
/// failure.
#[cfg(unix)]
pub fn map_shared(fd: libc::c_int, len: usize) -> Option<*mut u8> {
    // SAFETY: a shared mapping of an open file with no address hint; the
    // result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p as *mut u8)
}

/// Unmaps `len` bytes at `p`.
///
/// # Safety
/// `p..p+len` is a whole mapping nothing uses any more.
#[cfg(unix)]
pub unsafe fn unmap(p: *mut u8, len: usize) {
    // SAFETY: per the caller.
    unsafe { libc::munmap(p as *mut libc::c_void, len) };
}

/// Zeroes `len` bytes at `p`, returning whole pages to the OS. `shared`:
/// the range is a shared file mapping ([`map_shared`]), whose pages are
/// holes punched in the file; else a private one from [`map_zeroed`].
///
/// # Safety
/// `p..p+len` must lie inside one such mapping that no other thread
/// writes concurrently.
#[cfg(unix)]
pub unsafe fn zero(p: *mut u8, len: usize, shared: bool) {
    // MADV_DONTNEED would only drop this process's view of a shared
    // file's pages, not zero them: punch holes instead.
    #[cfg(target_os = "linux")]
    let advice = if shared {
        libc::MADV_REMOVE
    } else {
        libc::MADV_DONTNEED
    };
    // Elsewhere no advice is sure to zero pages (macOS's MADV_DONTNEED
    // may keep their bytes): they are zeroed by hand (a madvise that
    // fails does that below).
    #[cfg(not(target_os = "linux"))]
    let advice = {
        let _ = shared;
        -1
    };
    let page = 4096usize;
    let start = p as usize;
    let first = (start + page - 1) & !(page - 1);
    let end = start + len;
    let last = end & !(page - 1);
    if last > first {
        // SAFETY: caller guarantees the range; partial pages at the ends
        // are zeroed by hand below.
        unsafe {
            std::ptr::write_bytes(p, 0, first - start);
            // MADV_DONTNEED on a private anonymous mapping (MADV_REMOVE
            // on a shared one) makes the pages read back as zero and
            // frees them.
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
#[cfg(unix)]
pub unsafe fn release(p: *mut u8, len: usize) {
    // SAFETY: per the caller; MADV_DONTNEED on a private anonymous range
    // only drops its pages. Failure leaves them in place: nothing to do.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::madvise(p as *mut libc::c_void, len, libc::MADV_DONTNEED)
    };
    // Elsewhere a fresh anonymous mapping over the range replaces its
    // pages at once (a concurrent store lands on a new zero page).
    // SAFETY: per the caller, a whole-page range of our own mapping.
    #[cfg(not(target_os = "linux"))]
    unsafe {
        libc::mmap(
            p as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
}

/// The portable implementation: page-aligned memory from the system
/// allocator (never the program's global allocator, which may be the
/// counting one), zeroed by hand. No shared mappings, so no live view.
#[cfg(not(unix))]
mod portable {
    use std::alloc::{GlobalAlloc, Layout, System};

    fn layout(len: usize) -> Option<Layout> {
        Layout::from_size_align(len.max(1), 4096).ok()
    }

    /// Allocates `len` zeroed bytes, page-aligned. `None` on failure.
    pub fn map_zeroed(len: usize) -> Option<*mut u8> {
        // SAFETY: a non-zero size with a valid alignment.
        let p = unsafe { System.alloc_zeroed(layout(len)?) };
        (!p.is_null()).then_some(p)
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
}
#[cfg(not(unix))]
pub use portable::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_memory_is_zeroed_and_zeroes_again() {
        let len = 5 * 4096;
        let p = map_zeroed(len).expect("memory");
        assert_eq!(p as usize % 4096, 0);
        // SAFETY: `p..p+len` is ours; one thread.
        unsafe {
            let all = std::slice::from_raw_parts_mut(p, len);
            assert!(all.iter().all(|&b| b == 0));
            all.fill(0xab);
            // From mid-page to mid-page: partial pages by hand, the whole
            // ones given back.
            zero(p.add(100), 3 * 4096, false);
            let all = std::slice::from_raw_parts(p, len);
            assert!(all[..100].iter().all(|&b| b == 0xab));
            assert!(all[100..100 + 3 * 4096].iter().all(|&b| b == 0));
            assert!(all[100 + 3 * 4096..].iter().all(|&b| b == 0xab));
            // Released pages read back as zero (on Unix; elsewhere they
            // keep their bytes, which no caller relies on).
            release(p, 4096);
            #[cfg(unix)]
            assert!(std::slice::from_raw_parts(p, 4096).iter().all(|&b| b == 0));
            unmap(p, len);
        }
    }
}
