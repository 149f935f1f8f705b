//! The `session` file of a live session: the header a session's process
//! maps shared and a reader maps read-only (who, how, the state, the
//! names file's committed length and the figures only known at the end),
//! and the names records' framing (re-exported from [`crate::names`]).
//! perflens-core's `live.rs` writes it; perflens-live reads it.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64};

/// "PLLIVE01": the session header's magic.
pub const SESSION_MAGIC: u64 = u64::from_le_bytes(*b"PLLIVE01");
/// Version of the session header and names format (the blocks have their
/// own, [`crate::block::LAYOUT_VERSION`]; a reader checks both).
///
/// v2: callsite kind code 3 (an await site) and [`REC_AWAIT`] records.
pub const SESSION_VERSION: u32 = 2;
/// Bytes of program name kept in the header.
pub const PROGRAM_BYTES: usize = 256;

/// [`SessionHeader::state`]: the session records.
pub const STATE_RUNNING: u32 = 1;
/// [`SessionHeader::state`]: the session has ended; everything is final.
pub const STATE_FINISHED: u32 = 2;

pub use crate::names::{
    EXTRA_CPU, REC_AWAIT, REC_CALLSITE, REC_EXTRA, REC_HEAD, REC_PATH, REC_THREAD,
};

/// The `session` file. Written by the session's process only; every
/// field a reader may see change is an atomic.
#[repr(C, align(64))]
pub struct SessionHeader {
    pub magic: u64,
    pub version: u32,
    pub header_size: u32,
    /// [`crate::block::LAYOUT_VERSION`] of the blocks.
    pub block_layout: u32,
    pub pid: u32,
    /// The process's start time (field 22 of `/proc/<pid>/stat`, clock
    /// ticks after boot): with the pid, tells this process from a later
    /// one that got the same pid.
    pub proc_start: u64,
    /// Wall-clock start of the session, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// Session generation (see `thread.rs`); blocks of this session
    /// carry it.
    pub epoch: u32,
    /// `block::MODE_*`.
    pub mode: u32,
    pub sample_every: u32,
    pub sample_warmup: u32,
    /// 0: TSC, 1: `Instant`.
    pub clock: u32,
    pub path_capacity: u32,
    /// The TSC at the clock's calibration anchor, and `CLOCK_MONOTONIC`
    /// (ns) at that moment: a reader on this machine calibrates ticks
    /// against them as the program does (see
    /// `clock::ns_per_tick_since`). Unused with the `Instant` clock.
    pub anchor_tsc: u64,
    pub anchor_mono_ns: u64,
    pub program_len: u32,
    /// 1 when the writer charges allocations at frame boundaries
    /// (perflens-core's `alloc` feature): readers must then add what
    /// each thread moved since its last boundary.
    pub alloc_feature: u32,
    /// 1 once the counting allocator is installed.
    pub alloc_installed: AtomicU32,
    /// CPU sampling frequency in Hz, 0 while no CPU sampler runs.
    pub cpu_hz: AtomicU32,
    /// [`STATE_RUNNING`] or [`STATE_FINISHED`].
    pub state: AtomicU32,
    /// Committed bytes of the names file.
    pub names_len: AtomicU64,
    /// Records that could not be appended (the file system was full):
    /// the names a reader has are incomplete.
    pub names_lost: AtomicU64,
    /// Threads that got private memory instead of a block file.
    pub unpublished_threads: AtomicU64,
    /// CPU samples (and their ns) taken on threads without a block of
    /// this session: outside any measured function.
    pub outside_samples: AtomicU64,
    pub outside_cpu_ns: AtomicU64,
    // Final figures, written when the session ends.
    /// `f64` bits: nanoseconds per tick of the final snapshot.
    pub ns_per_tick: AtomicU64,
    pub elapsed_ns: AtomicU64,
    pub overflow_paths: AtomicU64,
    pub unrecorded_calls: AtomicU64,
    pub alloc_live_bytes: AtomicI64,
    pub alloc_peak_bytes: AtomicU64,
    pub program: [u8; PROGRAM_BYTES],
}

/// Size of the `session` file.
pub const SESSION_FILE_BYTES: usize = size_of::<SessionHeader>().next_multiple_of(4096);
