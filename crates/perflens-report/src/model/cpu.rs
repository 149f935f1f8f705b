//! The CPU figures: per function, per thread, and the session's summary.

use super::*;

/// The CPU figures of a function row ([`FunctionRow::cpu`]) or of a hot
/// path's last frame ([`HotPath::cpu`]). Either every figure is there or none
/// is: [`Report::add_cpu`] sets them all on every row and hot path when
/// sampling was available, and none otherwise.
///
/// In the JSON they are fields of the row or path itself, each named as
/// here with `cpu_` in front, and are all left out without CPU samples. A
/// row or path read from JSON without any of them has no CPU figures
/// (`None`); one with only some of them is an invalid report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// CPU samples taken while a frame of this function (a path: its last
    /// frame) was the innermost measured frame of the interrupted thread
    /// (exclusive), summed over every frame. 0 for a function that was
    /// never sampled.
    #[serde(rename = "cpu_samples")]
    pub samples: u64,
    /// CPU time those samples stand for (exclusive), in ns.
    #[serde(rename = "cpu_ns")]
    pub ns: u64,
    /// CPU time of every sample taken while this function was anywhere on
    /// the interrupted thread's stack of measured frames (inclusive). Each
    /// sample counts once, however many frames of the function (recursion)
    /// were on the stack. A path: the samples taken in its last frame's
    /// subtree of the calling-context tree (the frame and every callee
    /// below it, completed or not).
    #[serde(rename = "cpu_incl_ns")]
    pub incl_ns: u64,
}

/// The CPU sampling summary of a session: what the sampler saw, inside
/// measured functions or not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// Sampling frequency per thread, in samples per second of CPU time.
    pub frequency_hz: u32,
    /// Where samples came from: `"perf_event"`, `"timer"` (or another
    /// sampler-defined name), or `"unavailable: <reason>"` when no sampling
    /// took place; then every count is 0 and `threads` is empty.
    pub source: String,
    /// Samples taken, inside measured functions or not.
    pub samples: u64,
    /// CPU time the samples stand for, in ns, inside measured functions or
    /// not.
    pub cpu_ns: u64,
    /// Samples taken while no measured function was running on the
    /// interrupted thread (included in `samples`).
    pub outside_samples: u64,
    /// CPU time of those samples (included in `cpu_ns`).
    pub outside_cpu_ns: u64,
    /// Samples lost because a buffer was full, over all threads (not in
    /// `samples`).
    pub dropped: u64,
    /// Per sampled thread, in the sampler's order.
    pub threads: Vec<CpuThreadRow>,
    /// Where the kernel time of the sampled threads went (`None`: the
    /// sampler did not say, as before this field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelTime>,
    /// CPU time of the threads whose samples excluded the kernel that no
    /// sample stands for, in ns: their kernel time, plus user time whose
    /// overflows the kernel merged or skipped. Not in `cpu_ns`, and in no
    /// row. Present when `kernel` is `not_attributed` or `partly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_unattributed_ns: Option<u64>,
}

/// Where the kernel time (system calls, page faults) of sampled threads
/// went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelTime {
    /// In the samples: each system call's time is on the function that
    /// made it (perf_event with the kernel included, or the timer source).
    Attributed,
    /// Left out of the samples (perf_event with the kernel excluded): the
    /// samples stand for user time only, and the rest is
    /// [`CpuSummary::kernel_unattributed_ns`].
    NotAttributed,
    /// Attributed on some threads, not on others.
    Partly,
}

impl CpuSummary {
    /// True when samples were taken (`source` does not start with
    /// `"unavailable"`).
    pub fn is_available(&self) -> bool {
        self.unavailable_reason().is_none()
    }

    /// Why sampling was unavailable: the text after `"unavailable:"` in
    /// `source`, trimmed (possibly empty); `None` when it was available.
    pub fn unavailable_reason(&self) -> Option<&str> {
        let rest = self.source.strip_prefix("unavailable")?;
        Some(rest.strip_prefix(':').unwrap_or(rest).trim())
    }

    /// `outside_cpu_ns` as a percentage of `cpu_ns` (`None` when `cpu_ns`
    /// is 0).
    pub fn outside_percent(&self) -> Option<f64> {
        percent_of(self.outside_cpu_ns, self.cpu_ns)
    }
}

/// One sampled thread, as the sampler reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuThreadRow {
    /// OS thread id.
    pub tid: u64,
    /// Thread name, if any.
    pub name: Option<String>,
    /// Samples taken on this thread.
    pub samples: u64,
    /// CPU time of this thread's samples, in ns.
    pub cpu_ns: u64,
    /// Samples of this thread lost because its buffer was full.
    pub dropped: u64,
}
