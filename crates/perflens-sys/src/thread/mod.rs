//! Threads as the operating system knows them: the calling thread's name,
//! id and stack, any thread's CPU clock, signalling one thread, and the
//! main thread's stack limit. The runtime calls the first ones from
//! inside the allocator, so none uses `std::thread::current()` (which
//! may panic while thread-locals are being destroyed); the CPU sampler
//! calls [`tid`] and [`own_cpu_ns`] from its signal handler, so those are
//! async-signal-safe.
//!
//! Entry points (the same in `linux.rs` and `portable.rs`): [`name`],
//! [`tid`], [`stack_size`], [`stack_bounds`], [`cpu_ns`], [`own_cpu_ns`],
//! [`signal`], [`alive`], [`realtime_signal`], [`main_stack_limit`]. The
//! portable implementation knows no names, ids, stacks or CPU clocks
//! (`None`, 0, false) and signals nothing.

#[cfg(all(target_os = "linux", not(perflens_portable)))]
mod linux;
/// The clock id of a thread's CPU clock, for the CPU timers.
#[cfg(all(target_os = "linux", not(perflens_portable)))]
pub(crate) use linux::cpu_clock_id;
#[cfg(all(target_os = "linux", not(perflens_portable)))]
pub use linux::*;

#[cfg(any(not(target_os = "linux"), perflens_portable))]
mod portable;
#[cfg(any(not(target_os = "linux"), perflens_portable))]
pub use portable::*;

#[cfg(test)]
mod tests;
