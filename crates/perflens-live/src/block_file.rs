//! One thread's block file of a live session, mapped read-only, with
//! the pages the file holds known before any is read.

use super::*;

/// A block file, mapped.
pub(crate) struct BlockFile {
    pub(crate) name: Option<String>,
    pub(crate) map: Mapping,
    /// Pages of the file known to hold data, by page index.
    pub(crate) resident: std::cell::RefCell<Vec<bool>>,
    /// By chunk of [`CHUNK_PAGES`] pages: the read ([`LiveSession`]'s
    /// `reads`) that last asked the system which of its pages hold data.
    pub(crate) asked: std::cell::RefCell<Vec<u32>>,
    /// What the last read found of the block's inclusive-time
    /// histograms: the next reads only where they may have changed.
    pub(crate) memo: std::cell::RefCell<perflens_format::read::HistMemo>,
}

/// Pages asked about at once (see [`BlockFile::page_ok`]).
const CHUNK_PAGES: usize = 64;

impl BlockFile {
    /// Whether the page holding byte `off` may be read, in read number
    /// `read`. Only the pages the file holds are read (see
    /// `Mapping::resident`), and only where a read needs them: a page
    /// not known to hold data has its chunk of 64 pages asked about in
    /// one call, at most once a read (a chunk asked during this read
    /// whose page held no data then is not asked again until the next).
    /// A page that holds data keeps it, and most of a block's histogram
    /// pages are never written, nor needed (see `read_hist` in
    /// perflens-core). Asking page by page made a large session's first
    /// read 20,000 system calls.
    pub(crate) fn page_ok(&self, off: usize, read: u32) -> bool {
        let page = off / 4096;
        if off >= self.map.len() {
            return false;
        }
        let mut known = self.resident.borrow_mut();
        if known.get(page) == Some(&true) {
            return true;
        }
        let chunk = page / CHUNK_PAGES;
        let mut asked = self.asked.borrow_mut();
        if asked.len() <= chunk {
            asked.resize(chunk + 1, 0);
        }
        if asked[chunk] == read {
            return false;
        }
        asked[chunk] = read;
        let first = chunk * CHUNK_PAGES;
        let pages = self.map.resident(first * 4096, CHUNK_PAGES * 4096);
        if known.len() < first + pages.len() {
            known.resize(first + pages.len(), false);
        }
        for (k, r) in known[first..first + pages.len()].iter_mut().zip(pages) {
            *k |= r;
        }
        known.get(page) == Some(&true)
    }
}
