//! Threads on the `std`-only build: no names, ids, stacks or CPU clocks
//! known, and no way to signal one thread.

use std::io;

/// The thread's name: unknown here.
pub fn name() -> Option<String> {
    None
}

/// The thread's id: unknown here (0).
#[inline]
pub fn tid() -> u64 {
    0
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
