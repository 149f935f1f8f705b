//! Linux's processes: `/proc/<pid>`.

/// Field 22 of `/proc/<pid>/stat`: the process's start time in clock
/// ticks after boot (0 if unknown).
pub fn start_time(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name (field 2) may hold spaces and parentheses: count
    // from the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Whether `/proc/<pid>` exists.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}
