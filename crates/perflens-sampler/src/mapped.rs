//! A file mapped read-only, for the symbolizer and the DWARF reader: the
//! pages of an object file's debug sections are read where they lie,
//! without copying the file.

/// A file mapped read-only (private), unmapped on drop. The file stays
/// open so that parts of it can also be read without the mapping.
pub(crate) struct MappedFile {
    ptr: *mut libc::c_void,
    len: usize,
    file: std::fs::File,
}

impl MappedFile {
    pub(crate) fn open(path: &std::path::Path) -> Option<MappedFile> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh read-only private mapping of an open file; the
        // result is checked. The file may change under us (a rebuilt
        // binary): object's parser bounds-checks what it reads, and the
        // mapping stays valid memory even if the file is truncated only
        // in that reads past the new end raise SIGBUS, the same risk every
        // debugger and profiler reading mapped binaries takes.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        (ptr != libc::MAP_FAILED).then_some(MappedFile { ptr, len, file })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }

    /// Drops the mapping's pages from the process (they stay in the page
    /// cache): resident memory goes back to nothing for this file, and
    /// later reads fault pages back in. The mapping itself stays valid.
    pub(crate) fn release(&self) {
        // SAFETY: `ptr`/`len` are exactly the live mapping made in `open`.
        // It is private and read-only, so no page of it was ever written:
        // discarding its pages loses nothing, and reading them again gives
        // the file's bytes, as on first touch (with the same caveat as
        // mapping at all: a file rewritten in place can change them).
        unsafe { libc::madvise(self.ptr, self.len, libc::MADV_DONTNEED) };
    }

    /// The mapped file, still open: reading parts of it with `pread`
    /// copies them from the page cache without mapping pages into the
    /// process, so nothing is added to its file-backed RSS.
    pub(crate) fn file(&self) -> &std::fs::File {
        &self.file
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}
