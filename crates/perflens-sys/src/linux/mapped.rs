//! A file mapped read-only and private (`mmap`), its pages given back
//! with `madvise(MADV_DONTNEED)`, parts read with `pread`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A file mapped read-only (private), unmapped on drop. The file stays
/// open so that parts of it can also be read without the mapping.
#[derive(Debug)]
pub struct MappedFile {
    ptr: *mut libc::c_void,
    len: usize,
    file: File,
}

// SAFETY: the mapping is read-only and owned by this value alone; reading
// it from any thread is as safe as reading a `&[u8]`.
unsafe impl Send for MappedFile {}
// SAFETY: see `Send`: shared access only reads.
unsafe impl Sync for MappedFile {}

impl MappedFile {
    /// Maps the file at `path`; `None` if it cannot be opened or mapped,
    /// or is empty.
    pub fn open(path: &Path) -> Option<MappedFile> {
        let file = File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a fresh read-only private mapping of an open file; the
        // result is checked. The file may change under us (a rebuilt
        // binary): a parser must bounds-check what it reads, and the
        // mapping stays valid memory even if the file is truncated, only
        // reads past the new end raise SIGBUS, the same risk every
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

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }

    /// Drops the mapping's pages from the process (they stay in the page
    /// cache): resident memory goes back to nothing for this file, and
    /// later reads fault pages back in. The mapping itself stays valid.
    pub fn release(&self) {
        // SAFETY: `ptr`/`len` are exactly the live mapping made in `open`.
        // It is private and read-only, so no page of it was ever written:
        // discarding its pages loses nothing, and reading them again gives
        // the file's bytes, as on first touch (with the same caveat as
        // mapping at all: a file rewritten in place can change them).
        unsafe { libc::madvise(self.ptr, self.len, libc::MADV_DONTNEED) };
    }

    /// Reads `buf.len()` bytes at offset `at` of the file with `pread`:
    /// copied from the page cache without mapping pages into the process,
    /// so nothing is added to its file-backed resident memory.
    pub fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, at)
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}
