//! Threads as the operating system knows them: the calling thread's name,
//! id and stack, any thread's CPU clock, signalling one thread, and the
//! main thread's stack limit. The runtime calls the first ones from
//! inside the allocator, so none uses `std::thread::current()` (which
//! may panic while thread-locals are being destroyed); the CPU sampler
//! calls [`tid`] and [`own_cpu_ns`] from its signal handler, so those are
//! async-signal-safe.
//!
//! Entry points (the same in `linux/thread.rs`, `posix/thread.rs` and
//! `portable/thread.rs`): [`name`], [`tid`], [`stack_size`],
//! [`stack_bounds`], [`cpu_ns`], [`own_cpu_ns`], [`signal`], [`alive`],
//! [`realtime_signal`], [`main_stack_limit`]. The
//! POSIX implementation knows the OS's names and ids only; the portable
//! one knows `std`'s names and ids of its own; neither knows stacks or
//! CPU clocks (`None`, false) nor signals one thread.

pub use crate::imp::thread::*;

#[cfg(test)]
mod tests;
