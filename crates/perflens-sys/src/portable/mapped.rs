//! A file read into memory (the `std`-only build): the same bytes as a
//! mapping, copied once.

use std::io;
use std::path::Path;

/// A file's bytes, read once when opened.
#[derive(Debug)]
pub struct MappedFile {
    bytes: Box<[u8]>,
}

impl MappedFile {
    /// Reads the file at `path`; `None` if it cannot be read or is empty.
    pub fn open(path: &Path) -> Option<MappedFile> {
        let bytes = std::fs::read(path).ok()?.into_boxed_slice();
        (!bytes.is_empty()).then_some(MappedFile { bytes })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Nothing to give back: the bytes are the process's own memory,
    /// needed until the value is dropped.
    pub fn release(&self) {}

    /// Copies `buf.len()` bytes at offset `at` of the file.
    pub fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        let src = usize::try_from(at)
            .ok()
            .and_then(|at| self.bytes.get(at..at.checked_add(buf.len())?))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}
