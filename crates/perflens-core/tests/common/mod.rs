//! What the live-session tests share.

/// Maps `path` read-only, whole; never unmapped (the tests end first).
pub fn map(path: &std::path::Path) -> (*const u8, usize) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a read-only shared mapping of a file we opened, checked
    // against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    (p as *const u8, len)
}
