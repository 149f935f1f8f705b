//! The Linux implementation of every mechanism: the one perflens was
//! built on, with everything on (see [`CAPABILITIES`]). Each file has the
//! entry points of its twin in `portable/`.

pub mod barrier;
mod bus_guard;
pub mod clock;
pub mod cpu_timer;
pub mod fork;
pub mod mapped;
pub mod mem;
pub mod modules;
pub mod perf;
pub mod proc;
pub mod process;
pub mod shm;
pub mod signal;
pub mod thread;

use crate::Capabilities;

/// Linux has every capability.
pub const CAPABILITIES: Capabilities = Capabilities {
    platform: "linux",
    live_view: true,
    stop_signals: true,
    cpu_sampling: true,
    process_barrier: true,
    fork_handling: true,
    page_release: true,
};

/// `what p: <the last OS error>`.
pub(crate) fn errno_msg(what: &str, p: &std::path::Path) -> String {
    format!(
        "{what} {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    )
}

/// `p` as a C string.
pub(crate) fn cstr(p: &std::path::Path) -> Result<std::ffi::CString, String> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{}: NUL in path", p.display()))
}
