//! `/proc/self` on Linux: `exe`, `maps`, `task/` and its `comm` and
//! `status` files, `status`, `clear_refs`.

use std::path::PathBuf;

use crate::proc::{MapsEntry, parse_maps_line};

/// The running executable's path (`/proc/self/exe`).
pub fn exe() -> Option<PathBuf> {
    std::fs::read_link("/proc/self/exe").ok()
}

/// The process's mappings, in the order `/proc/self/maps` lists them
/// (by address); empty if it cannot be read.
pub fn maps() -> Vec<MapsEntry> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_default()
        .lines()
        .filter_map(parse_maps_line)
        .collect()
}

/// The ids of the process's threads (`/proc/self/task`), sorted. A
/// directory read is not an atomic snapshot: a thread that starts or
/// exits meanwhile may be listed or not.
pub fn threads() -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc/self/task") {
        for e in rd.flatten() {
            if let Some(t) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) {
                out.push(t);
            }
        }
    }
    out.sort_unstable();
    out
}

/// Thread `tid`'s OS name (`comm`: what Rust sets for a named thread, cut
/// to 15 bytes), `None` if the thread is gone.
pub fn thread_name(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Thread `tid`'s voluntary context switches so far (the times it
/// waited), `None` if the thread is gone.
pub fn voluntary_switches(tid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The value of field `name` in `/proc/self/status` (`TracerPid`,
/// `VmRSS`, ...), trimmed, with its unit if it has one.
pub fn status_field(name: &str) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// Resets the process's peak resident set (`VmHWM`) to its current one
/// (`clear_refs` 5); false if the kernel does not allow it.
pub fn clear_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
