//! Memory both the Linux and the POSIX implementations take the same
//! way: anonymous private mappings (`mmap`, `MAP_NORESERVE`), shared
//! mappings of a file, `munmap`, and glibc's `mallopt` thresholds (no
//! other C library has them). The rest of each one's `mem.rs` (giving
//! pages back, which pages are resident, moving a mapping) differs.

use crate::mem::Access;

/// Maps `len` zeroed bytes, page-aligned. `None` on failure.
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
    (p != libc::MAP_FAILED).then_some(p as *mut u8)
}

/// Maps the first `len` bytes of `file` shared. `None` on failure.
pub fn map_shared(file: &std::fs::File, len: usize, access: Access) -> Option<*mut u8> {
    use std::os::fd::AsRawFd;
    let (prot, flags) = match access {
        Access::Read => (libc::PROT_READ, libc::MAP_SHARED),
        Access::ReadWrite => (
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
        ),
    };
    // SAFETY: a shared mapping of an open file with no address hint; the
    // result is checked against MAP_FAILED. The mapping keeps the file.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, file.as_raw_fd(), 0) };
    (p != libc::MAP_FAILED).then_some(p as *mut u8)
}

/// Unmaps `len` bytes at `p`.
///
/// # Safety
/// `p..p+len` is a whole mapping nothing uses any more.
pub unsafe fn unmap(p: *mut u8, len: usize) {
    // SAFETY: per the caller.
    unsafe { libc::munmap(p as *mut libc::c_void, len) };
}

/// Makes glibc's allocator keep freed memory: large blocks come from the
/// heap rather than a fresh mapping each (below 64 MiB), and the top of
/// the heap goes back to the kernel only past 256 MiB. Other C libraries:
/// nothing to set.
#[cfg(target_env = "gnu")]
pub fn keep_freed_memory() {
    // SAFETY: mallopt only changes two of the allocator's thresholds,
    // and may be called at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Other C libraries (musl): no thresholds to set.
#[cfg(not(target_env = "gnu"))]
pub fn keep_freed_memory() {}
