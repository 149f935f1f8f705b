//! No live session files here: `std` has no shared mappings, so there is
//! no live view. [`root`] is `None`, and every entry point that would
//! make, open or map a session's file says the live view is not
//! available on this platform.

use super::unsupported;
use std::fs::File;
use std::path::{Path, PathBuf};

const NO_LIVE_VIEW: &str = "the live view";

fn refused() -> String {
    unsupported(NO_LIVE_VIEW).to_string()
}

/// No live view: `None`.
pub fn root() -> Option<PathBuf> {
    None
}

/// No live view: an error.
pub fn make_private_dir(_root: &Path) -> Result<(), String> {
    Err(refused())
}

/// No positioned reads in portable `std`: an error (no session file is
/// ever opened here to read).
pub fn read_at(_file: &File, _buf: &mut [u8], _offset: u64) -> std::io::Result<usize> {
    Err(unsupported("a positioned read"))
}

/// No live view: an error (nothing here could be checked private).
pub fn check_private_dir(_dir: &Path) -> Result<(), String> {
    Err(refused())
}

/// A session's directory: never made here.
#[derive(Debug)]
pub struct SessionDir {
    _none: (),
}

impl SessionDir {
    /// No live view: an error.
    pub fn create(_dir: &Path) -> Result<SessionDir, String> {
        Err(refused())
    }

    /// No live view: an error.
    pub fn create_exclusive(&self, _name: &str) -> std::io::Result<File> {
        Err(unsupported(NO_LIVE_VIEW))
    }

    /// No live view: an error.
    pub fn remove(&self, _name: &str) -> std::io::Result<()> {
        Err(unsupported(NO_LIVE_VIEW))
    }

    /// Unknown: `None`.
    pub fn free_space(&self) -> Option<u64> {
        None
    }
}

/// No positioned writes in portable `std`: an error.
pub fn write_all_at(_file: &File, _bytes: &[u8], _offset: u64) -> std::io::Result<()> {
    Err(unsupported("a positioned write"))
}

/// No live view: an error (nothing here could be checked private).
pub fn open_checked(_path: &Path) -> Result<(File, u64), String> {
    Err(refused())
}

/// A read-only view of a file: never made here (no shared mappings).
#[derive(Debug)]
pub struct ReadView {
    _none: (),
}

impl ReadView {
    /// No shared mappings: an error.
    pub fn map(_file: &File, _len: usize) -> std::io::Result<ReadView> {
        Err(unsupported("a shared mapping"))
    }

    /// Never reached (no view is made): null.
    pub fn base(&self) -> *const u8 {
        std::ptr::null()
    }

    /// Never reached (no view is made): 0.
    pub fn len(&self) -> usize {
        0
    }

    /// Never reached (no view is made): `true`.
    pub fn is_empty(&self) -> bool {
        true
    }

    /// Never reached (no view is made): `false`.
    pub fn faulted(&self) -> bool {
        false
    }
}
