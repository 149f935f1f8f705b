//! Page-granular memory for the runtime's blocks and trace buffers,
//! straight from the operating system so that the profiler's own memory
//! never goes through (or is counted by) the program's global allocator;
//! shared mappings of the live session's files; which pages of a mapping
//! are resident; moving a private copy over a mapping; and the C
//! allocator's thresholds for `perflens top`.
//!
//! On Linux: anonymous and shared file mappings, `madvise` to give pages
//! back, `mincore`, `mremap`, glibc's `mallopt`. POSIX (macOS): the same
//! mappings, fresh zero pages mapped over a range to give it back (macOS's
//! `madvise` does not zero), shared files zeroed by hand, `mincore`, a
//! private copy moved by mapping anew and copying (no `mremap`).
//! Portable: page-aligned memory from the system allocator, zeroed by
//! hand; no shared mappings (so no live view), nothing resident to ask,
//! nothing to move.
//!
//! The entry points, the same in all three:
//! - `map_zeroed(len) -> Option<*mut u8>`: `len` zeroed bytes,
//!   page-aligned;
//! - `map_shared(&File, len, Access) -> Option<*mut u8>`: the first `len`
//!   bytes of a file, shared ([`Access`]);
//! - `unsafe unmap(p, len)`: gives back either kind;
//! - `unsafe zero(p, len, shared)`: zeroes a range, returning whole pages
//!   to the system (for a shared mapping, punching holes in its file);
//! - `unsafe release(p, len)`: gives whole pages back while other threads
//!   may still store into them (they read back as zero where
//!   [`crate::Capabilities::page_release`]);
//! - `unsafe resident(p, len) -> Option<Vec<bool>>`: which pages of a
//!   mapping hold data (`None`: cannot tell);
//! - `unsafe remap_private(copy, at, len) -> bool`: moves the private
//!   mapping `copy` over the mapping at `at`, atomically;
//! - `keep_freed_memory()`: makes the C allocator keep freed memory
//!   instead of returning it to the system at once.

/// How a shared mapping may be accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only (a reader of a live session).
    Read,
    /// Readable and writable, with no swap reserved (a live session's
    /// writer: see perflens-core's `publish.rs`).
    ReadWrite,
}

/// The size of a page, as the runtime lays out its blocks.
pub const PAGE: usize = 4096;

pub use crate::imp::mem::{
    keep_freed_memory, map_shared, map_zeroed, release, remap_private, resident, unmap, zero,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_memory_is_zeroed_and_zeroes_again() {
        let len = 5 * PAGE;
        let p = map_zeroed(len).expect("memory");
        assert_eq!(p as usize % PAGE, 0);
        // SAFETY: `p..p+len` is ours; one thread.
        unsafe {
            let all = std::slice::from_raw_parts_mut(p, len);
            assert!(all.iter().all(|&b| b == 0));
            all.fill(0xab);
            // From mid-page to mid-page: partial pages by hand, the whole
            // ones given back.
            zero(p.add(100), 3 * PAGE, false);
            let all = std::slice::from_raw_parts(p, len);
            assert!(all[..100].iter().all(|&b| b == 0xab));
            assert!(all[100..100 + 3 * PAGE].iter().all(|&b| b == 0));
            assert!(all[100 + 3 * PAGE..].iter().all(|&b| b == 0xab));
            // Released pages read back as zero where the platform gives
            // pages back; elsewhere they keep their bytes, which no
            // caller relies on.
            release(p, PAGE);
            let zeroed = std::slice::from_raw_parts(p, PAGE).iter().all(|&b| b == 0);
            assert_eq!(zeroed, crate::CAPABILITIES.page_release);
            unmap(p, len);
        }
    }

    #[test]
    fn resident_pages_and_a_private_copy_moved_over_a_mapping() {
        let len = 4 * PAGE;
        let a = map_zeroed(len).expect("memory");
        let b = map_zeroed(len).expect("memory");
        // SAFETY: both ranges are ours; one thread.
        unsafe {
            // Pages 0 and 2 touched, 1 and 3 never.
            *a = 1;
            *a.add(2 * PAGE) = 3;
            let r = resident(a, len);
            if crate::CAPABILITIES.live_view {
                assert_eq!(r, Some(vec![true, false, true, false]));
            } else {
                assert_eq!(r, None);
            }
            *b = 7;
            let moved = remap_private(b, a, len);
            assert_eq!(moved, crate::CAPABILITIES.live_view);
            if moved {
                // `a` now holds `b`'s pages, and `b` is gone.
                assert_eq!(*a, 7);
                assert_eq!(*a.add(2 * PAGE), 0);
            } else {
                unmap(b, len);
            }
            unmap(a, len);
        }
    }

    #[test]
    fn a_shared_mapping_sees_the_files_bytes_or_is_not_available() {
        let path = std::env::temp_dir().join(format!("perflens-sys-mem-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("a temporary file");
        let _ = std::fs::remove_file(&path);
        file.set_len(2 * PAGE as u64).unwrap();
        let w = map_shared(&file, 2 * PAGE, Access::ReadWrite);
        assert_eq!(w.is_some(), crate::CAPABILITIES.live_view);
        let Some(w) = w else {
            assert!(map_shared(&file, 2 * PAGE, Access::Read).is_none());
            return;
        };
        let r = map_shared(&file, 2 * PAGE, Access::Read).expect("a read-only mapping");
        // SAFETY: two mappings of the same two pages; one thread.
        unsafe {
            *w.add(PAGE + 5) = 42;
            assert_eq!(*r.add(PAGE + 5), 42);
            // Zeroing a shared range punches a hole in the file.
            zero(w.add(PAGE), PAGE, true);
            assert_eq!(*r.add(PAGE + 5), 0);
            unmap(w, 2 * PAGE);
            unmap(r, 2 * PAGE);
        }
    }
}
