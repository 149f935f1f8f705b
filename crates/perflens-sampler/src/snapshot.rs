//! Plain data copied out of a session for reports (portable).

use std::time::{Duration, SystemTime};

use crate::CpuSource;
use crate::modules::ModuleInfo;

/// Per-thread accounting kept after the thread exits.
#[derive(Clone, Debug)]
pub(crate) struct ThreadEntry {
    pub tid: i32,
    pub name: String,
    pub source: CpuSource,
    pub signal: i32,
    /// The samples include kernel time (timer, or perf with the kernel
    /// included); false: user time only, the rest is kernel time.
    pub kernel: bool,
    pub samples: u64,
    pub sampled_ns: u64,
    pub cpu_ns: u64,
    pub dropped: u64,
    pub dropped_ns: u64,
    pub truncated: u64,
    pub off_stack: u64,
    pub exited: bool,
    pub(crate) slot: Option<usize>,
    pub(crate) cpu_at_arm: u64,
    pub(crate) armed_pass: u64,
    /// Started on a perf event and moved to the timer source because it
    /// switched often (see `sampler/moves.rs`).
    pub moved_to_timer: bool,
    /// A moved thread's CPU time that its perf event, excluding the
    /// kernel, left on no sample before the move.
    pub kernel_unsampled_ns: u64,
    /// Signals the watcher sent a timer-sampled thread whose timer's
    /// signal was late (see `SamplerState::nudge_if_late`).
    pub nudged: u64,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct SampleKey {
    pub tid: i32,
    pub context: u64,
    pub stack: Box<[u64]>,
}

#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct SampleValue {
    pub count: u64,
    pub weight_ns: u64,
}

/// A consistent copy of the session's data (for reports).
pub(crate) struct Snapshot {
    pub samples: Vec<(SampleKey, SampleValue)>,
    pub threads: Vec<ThreadEntry>,
    pub modules: Vec<ModuleInfo>,
    pub frequency: u32,
    pub period_ns: u64,
    pub started_wall: SystemTime,
    pub duration: Duration,
    pub sampler_cpu_ns: u64,
    pub handler_ns: u64,
    pub handler_calls: u64,
    pub handler_hist: Vec<u64>,
}
