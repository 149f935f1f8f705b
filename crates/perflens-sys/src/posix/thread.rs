//! Threads with POSIX calls: the OS's name of the calling thread
//! (`pthread_getname_np`) and its id as other tools show it (Linux:
//! `gettid`; macOS: `pthread_threadid_np`). Stacks, per-thread CPU
//! clocks and signals to one thread serve only CPU sampling, which this
//! implementation does not have: those answers are the `std`-only
//! build's (unknown, nothing sent).

pub use super::std_thread::{
    alive, cpu_ns, main_stack_limit, own_cpu_ns, realtime_signal, signal, stack_bounds, stack_size,
};

/// The thread's name: its OS-level name (Rust names spawned threads there
/// too, cut to 15 bytes on Linux), with the main thread called `main` as
/// in `std`; `None` if it cannot be read or is empty.
pub fn name() -> Option<String> {
    if is_main_thread() {
        return Some("main".to_string());
    }
    let mut buf = [0u8; 64];
    // SAFETY: pthread_getname_np writes at most `buf.len()` bytes,
    // NUL-terminated, into the buffer we pass, for the calling thread.
    let rc = unsafe {
        libc::pthread_getname_np(libc::pthread_self(), buf.as_mut_ptr().cast(), buf.len())
    };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..len]).into_owned()).filter(|n| !n.is_empty())
}

/// Whether the calling thread is the process's first (Linux: its id is
/// the process's).
#[cfg(target_os = "linux")]
fn is_main_thread() -> bool {
    // SAFETY: getpid and gettid have no preconditions.
    unsafe { libc::getpid() == libc::gettid() }
}

/// Whether the calling thread is the process's first.
#[cfg(target_os = "macos")]
fn is_main_thread() -> bool {
    // SAFETY: pthread_main_np has no preconditions.
    unsafe { libc::pthread_main_np() == 1 }
}

/// The thread's id as the kernel knows it (`gettid`). Async-signal-safe.
#[cfg(target_os = "linux")]
#[inline]
pub fn tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// The thread's system-wide id (`pthread_threadid_np`: what Instruments
/// and `lldb` show). Async-signal-safe.
#[cfg(target_os = "macos")]
#[inline]
pub fn tid() -> u64 {
    let mut id = 0u64;
    // SAFETY: the calling thread, and a valid out-pointer.
    unsafe { libc::pthread_threadid_np(libc::pthread_self(), &mut id) };
    id
}
