//! Other processes, as far as the live files need them: when a process
//! started (so that a reader tells a session's process from a later one
//! that got its pid) and whether a pid is alive.
//!
//! - `start_time(pid) -> u64`: the process's start time in clock ticks
//!   after boot (Linux: field 22 of `/proc/<pid>/stat`; macOS: µs since
//!   the epoch, from `proc_pidinfo`), compared only with itself; 0 if
//!   unknown.
//! - `alive(pid) -> bool`: whether a process with that pid exists
//!   (Linux: `/proc/<pid>`; POSIX: `kill(pid, 0)`); `false` where unknown
//!   (the portable build, which has no live view to ask for).

pub use crate::imp::process::{alive, start_time};

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_alive_and_has_a_start_time() {
        let me = std::process::id();
        let known = crate::CAPABILITIES.live_view;
        assert_eq!(super::alive(me), known);
        assert_eq!(super::start_time(me) > 0, known);
        assert!(!super::alive(u32::MAX - 7));
        assert_eq!(super::start_time(u32::MAX - 7), 0);
    }
}
