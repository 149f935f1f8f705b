//! Read-only mappings of a live session's files, and the guard that keeps
//! a file shrinking under the reader from killing it.
//!
//! A file is opened with `O_NOFOLLOW`, checked (a regular file of this
//! user, no access for group or others, at least as large as the reader
//! needs) and mapped `PROT_READ`, `MAP_SHARED`: the reader sees the
//! writer's stores as they happen and can write nothing back.
//!
//! The writer never shrinks its files, but anyone who can write them can
//! (the same user), and touching a mapped page past the end of the file
//! raises SIGBUS. While mappings exist, the reader's process has a SIGBUS
//! handler that, for an address inside one of them, maps a page of zeros
//! over the faulting page and returns: the read is retried and gets
//! zeros, the mapping is marked as faulted, and every later read of it is
//! an error ("changed size while being read": the patched pages read as
//! zeros from then on without faulting again). A SIGBUS at any other address
//! gets the disposition the process had before (by default, the process
//! dies as it would have).
//!
//! The system calls (open, fstat, mmap, mincore, the guard's handler)
//! are `perflens_sys::shm::{open_checked, ReadView}` and
//! `perflens_sys::mem::resident`; a platform without a live view opens
//! nothing here.

use perflens_sys::mem::PAGE;
use perflens_sys::shm::{ReadView, open_checked};
use std::path::Path;

/// A file of a live session, mapped read-only.
pub struct Mapping {
    view: ReadView,
}

impl Mapping {
    /// Opens and maps `path`: a regular file of this user, mode 0600 or
    /// stricter, of at least `min_len` bytes. The whole file is mapped.
    pub fn open(path: &Path, min_len: usize) -> Result<Mapping, String> {
        let (file, len) = open_checked(path)?;
        let len = len as usize;
        if len < min_len.max(1) {
            return Err(format!(
                "{} is {len} bytes, less than the {} it must hold: truncated",
                path.display(),
                min_len.max(1)
            ));
        }
        // The mapping (if any) keeps the file, which closes here.
        let view =
            ReadView::map(&file, len).map_err(|e| format!("cannot map {}: {e}", path.display()))?;
        Ok(Mapping { view })
    }

    /// The mapped bytes' address.
    pub fn base(&self) -> *const u8 {
        self.view.base()
    }

    /// The mapped length (the file's size when it was mapped).
    pub fn len(&self) -> usize {
        self.view.len()
    }

    /// Whether reading this mapping ever touched a page past the end of
    /// its file (the file shrank after it was mapped): the guard then
    /// put zeros there, and what is read from it is not the file's.
    pub fn faulted(&self) -> bool {
        self.view.faulted()
    }

    /// Whether the mapping is empty (never: files are checked).
    pub fn is_empty(&self) -> bool {
        self.view.is_empty()
    }

    /// Which pages of `[from, from + len)` (offsets into the file) hold
    /// data: one bool per page, false for pages the file system has no
    /// data for (never written, read as zeros). Reading a never-written
    /// page of a tmpfs file through a mapping would make the file system
    /// allocate it, so readers look here first. On error, every page.
    pub fn resident(&self, from: usize, len: usize) -> Vec<bool> {
        let from = from.min(self.len()) & !(PAGE - 1);
        let len = len.min(self.len() - from);
        // SAFETY: `[base + from, + len)` lies inside our mapping, page
        // aligned at the start.
        unsafe { perflens_sys::mem::resident(self.base().add(from), len) }
            .unwrap_or_else(|| vec![true; len.div_ceil(PAGE)])
    }
}
