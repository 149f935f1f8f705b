//! What the live-session tests share.

/// The session's live directory. Where the platform has a live view it
/// must be published; where it has none (the portable build:
/// `perflens_sys::CAPABILITIES.live_view` false) it must not be, and the
/// caller ends its test there, after finishing the session (which
/// records as usual).
pub fn published(rec: &perflens_core::Recording) -> Option<std::path::PathBuf> {
    let dir = rec.live_dir().map(std::path::Path::to_path_buf);
    assert_eq!(
        dir.is_some(),
        perflens_sys::CAPABILITIES.live_view,
        "published exactly where there is a live view"
    );
    dir
}

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
