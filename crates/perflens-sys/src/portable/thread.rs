//! Threads on the `std`-only build: the name `std` gave a thread and an
//! id of this process's own; no stacks or CPU clocks known, and no way
//! to signal one thread.

use std::cell::Cell;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// The thread's name, as `std` knows it: `"main"` for the main thread,
/// the name given to `std::thread::Builder`, `None` for an unnamed one
/// (the Linux build reads the OS name, which is the same for these).
pub fn name() -> Option<String> {
    std::thread::current().name().map(str::to_string)
}

/// The last id given by [`tid`].
static LAST_TID: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// The calling thread's id, 0 until [`tid`] first gives one. No
    /// destructor: a thread's TLS destructors can still ask.
    static TID: Cell<u64> = const { Cell::new(0) };
}

/// The thread's id: `std` has no OS id, so a number of this process's own,
/// 1 for the first thread that asks, then 2, 3, ... in the order threads
/// first ask; never 0 and never reused, so a report's rows keep threads
/// apart (it is not the id another tool shows for the thread).
#[inline]
pub fn tid() -> u64 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(LAST_TID.fetch_add(1, Ordering::Relaxed) + 1);
        }
        t.get()
    })
}

/// The calling thread's stack: unknown here.
pub fn stack_bounds() -> Option<(u64, u64)> {
    None
}

/// The size of the calling thread's stack: unknown here.
pub fn stack_size() -> Option<usize> {
    None
}

/// A thread's CPU time: no per-thread CPU clock here.
pub fn cpu_ns(_tid: i32) -> Option<u64> {
    None
}

/// The calling thread's CPU time: no per-thread CPU clock here.
#[inline]
pub fn own_cpu_ns() -> Option<u64> {
    None
}

/// Fails: no thread can be signalled here.
pub fn signal(_tid: i32, _sig: i32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no signals to one thread on this platform",
    ))
}

/// Unknown here: false (no thread id is ever known).
pub fn alive(_tid: i32) -> bool {
    false
}

/// No real-time signals here.
pub fn realtime_signal(_n: i32) -> Option<i32> {
    None
}

/// Unknown here.
pub fn main_stack_limit() -> Option<u64> {
    None
}
