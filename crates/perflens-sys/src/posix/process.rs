//! Other processes with POSIX calls: whether one is alive (`kill(pid,
//! 0)`), and when it started, which each system tells its own way
//! (Linux: `/proc/<pid>/stat`, as `linux/process.rs` reads it; macOS:
//! `proc_pidinfo`).

/// Whether a process with this pid exists: `kill(pid, 0)` finds it
/// (`EPERM`: it exists but is another user's). A pid that is not a
/// process's (0, or past `pid_t`: `kill` would take it for a process
/// group) is not alive.
pub fn alive(pid: u32) -> bool {
    let Some(pid) = process_id(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 sends nothing and takes no pointers.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// `pid` as one process's id: positive and within `pid_t`.
fn process_id(pid: u32) -> Option<libc::pid_t> {
    libc::pid_t::try_from(pid).ok().filter(|&p| p > 0)
}

/// Linux's `/proc/<pid>/stat` reader (its `alive` is [`alive`] here).
#[cfg(target_os = "linux")]
#[path = "../linux/process.rs"]
#[allow(dead_code)]
mod procfs;

/// The process's start time in clock ticks after boot (field 22 of
/// `/proc/<pid>/stat`), 0 if unknown.
#[cfg(target_os = "linux")]
pub fn start_time(pid: u32) -> u64 {
    procfs::start_time(pid)
}

/// The process's start time in µs since the epoch (`proc_pidinfo` with
/// `PROC_PIDTBSDINFO`), 0 if unknown: compared only with itself, to
/// tell a session's process from a later one that got its pid.
#[cfg(target_os = "macos")]
pub fn start_time(pid: u32) -> u64 {
    let Some(pid) = process_id(pid) else {
        return 0;
    };
    // SAFETY: an all-zero proc_bsdinfo (integers and byte arrays) is a
    // valid out-value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: proc_pidinfo writes at most `size` bytes into `info`.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    if n != size {
        return 0;
    }
    info.pbi_start_tvsec
        .saturating_mul(1_000_000)
        .saturating_add(info.pbi_start_tvusec)
}
