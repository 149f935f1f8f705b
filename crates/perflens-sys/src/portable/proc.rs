//! No `/proc` (the `std`-only build): the executable from `std`, nothing
//! else.

use std::path::PathBuf;

use crate::proc::MapsEntry;

/// The running executable's path, as `std::env::current_exe` finds it.
pub fn exe() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

/// No mappings known here.
pub fn maps() -> Vec<MapsEntry> {
    Vec::new()
}

/// No threads known here.
pub fn threads() -> Vec<i32> {
    Vec::new()
}

/// No thread names here.
pub fn thread_name(_tid: i32) -> Option<String> {
    None
}

/// No context switch counts here.
pub fn voluntary_switches(_tid: i32) -> Option<u64> {
    None
}

/// No status fields here.
pub fn status_field(_name: &str) -> Option<String> {
    None
}

/// No peak resident set to reset here.
pub fn clear_peak_rss() -> bool {
    false
}
