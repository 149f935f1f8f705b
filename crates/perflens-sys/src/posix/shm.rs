//! The session files with POSIX calls, shared by the Linux and the POSIX
//! implementations: a private directory per user (`$XDG_RUNTIME_DIR`,
//! else on Linux tmpfs's `/dev/shm`, on macOS, which has no `/dev/shm`,
//! `$TMPDIR`), `mkdir`/`lstat`/`openat` with `O_EXCL|O_NOFOLLOW`,
//! `fstatvfs`, `unlinkat`, `pwrite`, and read-only shared mappings under
//! the SIGBUS guard (`bus_guard.rs`).

use super::bus_guard;
use crate::mem::Access;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// This process's effective user id.
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Where live sessions of this user are: `$XDG_RUNTIME_DIR/perflens`, or
/// `<shared_dir()>/perflens-<uid>` when that variable is unset or empty.
pub fn root() -> Option<PathBuf> {
    Some(
        match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => Path::new(&dir).join("perflens"),
            None => shared_dir().join(format!("perflens-{}", euid())),
        },
    )
}

/// Where a user's sessions go without `$XDG_RUNTIME_DIR`: Linux's tmpfs
/// for shared memory.
#[cfg(target_os = "linux")]
fn shared_dir() -> PathBuf {
    PathBuf::from("/dev/shm")
}

/// Where a user's sessions go without `$XDG_RUNTIME_DIR`: macOS has no
/// `/dev/shm`, so the user's temporary directory (`$TMPDIR`, a private
/// one under `/var/folders`), or `/tmp` when that is unset or empty.
#[cfg(not(target_os = "linux"))]
fn shared_dir() -> PathBuf {
    std::env::var_os("TMPDIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Creates the root if needed and checks it is a directory of ours that
/// nobody else can enter.
pub fn make_private_dir(root: &Path) -> Result<(), String> {
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
fn check_owner(st: &libc::stat, path: &Path) -> Result<(), String> {
    let me = euid();
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

/// One session's directory, created new (mode 0700) and held open: its
/// files are made and removed relative to it.
#[derive(Debug)]
pub struct SessionDir {
    fd: OwnedFd,
}

impl SessionDir {
    /// Creates the directory `dir`, which must not exist, and opens it
    /// (`O_NOFOLLOW`). If it cannot be opened, it is removed again.
    pub fn create(dir: &Path) -> Result<SessionDir, String> {
        let c = cstr(dir)?;
        // SAFETY: a NUL-terminated path.
        if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0 {
            return Err(errno_msg("cannot create", dir));
        }
        // SAFETY: as above.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let msg = errno_msg("cannot open", dir);
            let _ = std::fs::remove_dir_all(dir);
            return Err(msg);
        }
        // SAFETY: a descriptor we just opened and nothing else owns.
        Ok(SessionDir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Creates the new file `name` in the directory (`O_EXCL|O_NOFOLLOW`,
    /// mode 0600), open for reading and writing.
    pub fn create_exclusive(&self, name: &str) -> std::io::Result<File> {
        let c = CString::new(name)?;
        // SAFETY: a directory fd we own and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just opened and nothing else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Removes the file `name` from the directory.
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        let c = CString::new(name)?;
        // SAFETY: a directory fd we own and a NUL-terminated name.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The bytes free to this user on the directory's file system.
    pub fn free_space(&self) -> Option<u64> {
        // SAFETY: zeroed buffer filled by fstatvfs on an fd we own.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstatvfs(self.fd.as_raw_fd(), &mut st) } != 0 {
            return None;
        }
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
}

/// Writes all of `bytes` at `offset` of `file` (`pwrite`, retried when
/// interrupted).
pub fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

/// Reads into `buf` from `offset` of `file` (`pread`): the bytes read,
/// 0 at the end of the file.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// Opens `path` for reading (`O_NOFOLLOW`, non-blocking): a regular file
/// of this user, closed to group and others. Returns it with its size.
pub fn open_checked(path: &Path) -> Result<(File, u64), String> {
    let c = cstr(path)?;
    // SAFETY: a NUL-terminated path; the fd is owned by the File below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(errno_msg("cannot open", path));
    }
    // SAFETY: a descriptor we just opened and nothing else owns.
    let file = unsafe { File::from_raw_fd(fd) };
    // SAFETY: zeroed buffer filled by fstat on an fd we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(errno_msg("cannot stat", path));
    }
    check_owner(&st, path)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(format!("{} is not a regular file; refused", path.display()));
    }
    Ok((file, st.st_size as u64))
}

/// A file mapped read-only and shared, under the SIGBUS guard.
#[derive(Debug)]
pub struct ReadView {
    base: *const u8,
    len: usize,
    slot: usize,
}

// SAFETY: the mapping is read-only memory owned by this value.
unsafe impl Send for ReadView {}

impl ReadView {
    /// Maps the first `len` bytes of `file` read-only, shared, and has
    /// the guard watch them.
    pub fn map(file: &File, len: usize) -> std::io::Result<ReadView> {
        let slot = bus_guard::claim()?;
        let Some(p) = crate::imp::mem::map_shared(file, len, Access::Read) else {
            let e = std::io::Error::last_os_error();
            bus_guard::free(slot);
            return Err(e);
        };
        bus_guard::watch(slot, p as usize, len);
        Ok(ReadView { base: p, len, slot })
    }

    /// The mapped bytes' address.
    pub fn base(&self) -> *const u8 {
        self.base
    }

    /// The mapped length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether reading the view ever touched a page past the end of its
    /// file (the file shrank after it was mapped): the guard then put
    /// zeros there, which read as zeros from then on without faulting
    /// again, so every later read of it is suspect too.
    pub fn faulted(&self) -> bool {
        bus_guard::faulted(self.slot)
    }
}

impl Drop for ReadView {
    fn drop(&mut self) {
        // Unwatched first, so that the guard never patches a range that
        // may be reused by another mapping; the slot is free once the
        // mapping is gone.
        bus_guard::unwatch(self.slot);
        // SAFETY: our own mapping, no references into it outlive `self`.
        unsafe { crate::imp::mem::unmap(self.base as *mut u8, self.len) };
        bus_guard::free(self.slot);
    }
}

/// `what p: <the last OS error>`.
fn errno_msg(what: &str, p: &std::path::Path) -> String {
    format!(
        "{what} {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    )
}

/// `p` as a C string.
fn cstr(p: &std::path::Path) -> Result<std::ffi::CString, String> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{}: NUL in path", p.display()))
}
