//! The private directory that holds this user's live sessions: where it
//! is, creating it, and the checks that refuse a directory or file that
//! is not this user's or that others may open. The session's writer
//! (perflens-core) and its readers (perflens-live) use the same checks.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Where live sessions of this user are: `$XDG_RUNTIME_DIR/perflens`, or
/// `/dev/shm/perflens-<uid>` when that variable is unset or empty.
pub fn root() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => Path::new(&dir).join("perflens"),
        // SAFETY: geteuid has no preconditions.
        None => PathBuf::from(format!("/dev/shm/perflens-{}", unsafe { libc::geteuid() })),
    }
}

/// `p` as a C string.
pub fn cstr(p: &Path) -> Result<CString, String> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

/// `what p: <the last OS error>`.
pub fn errno_msg(what: &str, p: &Path) -> String {
    format!(
        "{what} {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    )
}

/// Creates the root if needed and checks it is a directory of ours that
/// nobody else can enter.
pub fn ensure_root(root: &Path) -> Result<(), String> {
    let c = cstr(root)?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0
        && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
    {
        return Err(errno_msg("cannot create", root));
    }
    check_private_dir(root)
}

/// Refuses `dir` unless it is a real directory (not a symlink) owned by
/// this user with no access for group or others.
pub fn check_private_dir(dir: &Path) -> Result<(), String> {
    let c = cstr(dir)?;
    // SAFETY: zeroed stat buffer filled by lstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and buffer.
    if unsafe { libc::lstat(c.as_ptr(), &mut st) } != 0 {
        return Err(errno_msg("cannot stat", dir));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(format!("{} is not a directory; refused", dir.display()));
    }
    check_owner(&st, dir)
}

/// Refuses a file or directory (`st`, of `path`) that is not this
/// user's, or that group or others may access.
pub fn check_owner(st: &libc::stat, path: &Path) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if st.st_uid != me {
        return Err(format!(
            "{} belongs to uid {}, not {me}; refused",
            path.display(),
            st.st_uid
        ));
    }
    if st.st_mode & 0o077 != 0 {
        return Err(format!(
            "{} has mode {:o}: open to group or others; refused",
            path.display(),
            st.st_mode & 0o777
        ));
    }
    Ok(())
}

/// Opens a new file `name` in `dir_fd` (`O_EXCL|O_NOFOLLOW`, mode 0600).
pub fn create_file(dir_fd: libc::c_int, name: &str) -> Option<libc::c_int> {
    let c = CString::new(name).ok()?;
    // SAFETY: a directory fd we own and a NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir_fd,
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    (fd >= 0).then_some(fd)
}

/// Field 22 of `/proc/<pid>/stat`: the process's start time in clock
/// ticks after boot (0 if unknown).
pub fn proc_start_time(pid: u32) -> u64 {
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
