//! Page-granular memory for blocks, straight from the OS so that the
//! profiler's own memory never goes through (or is counted by) the
//! program's global allocator.

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
/// writable (a live block: see `publish.rs`). `None` on failure.
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
    let advice = if shared {
        libc::MADV_REMOVE
    } else {
        libc::MADV_DONTNEED
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
    unsafe { libc::madvise(p as *mut libc::c_void, len, libc::MADV_DONTNEED) };
}

#[cfg(not(unix))]
pub unsafe fn release(_p: *mut u8, _len: usize) {}

#[cfg(not(unix))]
pub fn map_zeroed(len: usize) -> Option<*mut u8> {
    let layout = std::alloc::Layout::from_size_align(len, 4096).ok()?;
    // SAFETY: non-zero size (blocks are never empty).
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() { None } else { Some(p) }
}

#[cfg(not(unix))]
pub unsafe fn zero(p: *mut u8, len: usize, _shared: bool) {
    // SAFETY: caller guarantees the range.
    unsafe { std::ptr::write_bytes(p, 0, len) };
}
