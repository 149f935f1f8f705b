//! In-process CPU sampling for Rust programs: an async-signal-safe
//! replacement for pprof-rs.
//!
//! Every thread of the process gets its own CPU-time sampling source: a
//! `perf_event` cpu-clock counter whose overflow signals that very thread,
//! or, where `perf_event_open` is refused, a POSIX timer on the thread's
//! CPU clock (each sample weighted by the thread's CPU time since its last
//! one, read from its CPU clock). The signal handler
//! allocates nothing, takes no lock and never calls the libgcc unwinder: it
//! walks the stack with framehop's allocation-free unwinder over unwind
//! tables loaded when the session starts, reading only the interrupted
//! thread's own stack, and stores the addresses in a per-thread ring that a
//! watcher thread drains. Symbolization (inlined frames, file and line,
//! Rust and C++ demangling) happens when a report is built.
//!
//! ```no_run
//! let guard = perflens_sampler::ProfilerGuardBuilder::default()
//!     .frequency(1000)
//!     .blocklist(&["libc", "libgcc", "pthread", "vdso"])
//!     .build()?;
//! // ... work ...
//! let report = guard.report().build()?;
//! report.flamegraph(std::fs::File::create("flamegraph.svg")?)?;
//! report.write_pprof(std::fs::File::create("profile.pb.gz")?)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! pprof-rs 0.15's API is kept name by name, so that a program switches
//! by one line of its Cargo.toml (`pprof = { package = "perflens-sampler",
//! ... }`, its feature list kept): [`Report`], [`ReportBuilder`],
//! [`UnresolvedReport`], `protos` (features `prost-codec`,
//! `protobuf-codec`), `criterion::PProfProfiler` (feature `criterion`),
//! [`Error`] and [`Result`]. [`ProfilerGuard::profile`] gives the full
//! [`CpuProfile`] a pprof-rs report cannot hold.
//!
//! Supported: Linux on x86_64 and aarch64. Elsewhere the crate builds and
//! [`ProfilerGuard::new`] returns [`SamplerError::Unsupported`], and so it
//! does on a build that uses perflens-sys's portable, `std`-only
//! implementation (`--cfg perflens_portable`), which has neither perf
//! events nor per-thread CPU timers. Every operating-system call but the
//! signal handler's goes through perflens-sys.

#![warn(missing_docs)]
#![cfg_attr(
    not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )),
    allow(dead_code, unused_imports)
)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod allocations;
mod arch;
#[cfg(feature = "_protobuf")]
mod codecs;
mod dwarf;
mod error;
mod modules;
mod profile;
mod report;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod sampler;
mod snapshot;
mod symbolize;

#[cfg(feature = "criterion")]
pub mod criterion;

#[doc(hidden)]
pub mod fuzzing;

use std::time::Duration;

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
use perflens_sys::thread::realtime_signal;

pub use error::SamplerError;
/// pprof-rs's name for [`SamplerError`].
pub type Error = SamplerError;
/// pprof-rs's `Result<T>`: `Result<T, Error>` (the error type can be
/// named, so the crate's own `Result<T, E>` still reads as usual).
pub type Result<T, E = Error> = std::result::Result<T, E>;
/// The pprof messages of [`Report::pprof`] and the codec's `Message`
/// trait: prost's (feature `prost-codec`).
#[cfg(all(feature = "prost-codec", not(feature = "protobuf-codec")))]
pub use codecs::prost_profile as protos;
/// The pprof messages of [`Report::pprof`] and the codec's `Message`
/// trait: rust-protobuf's (feature `protobuf-codec`).
#[cfg(feature = "protobuf-codec")]
pub use codecs::protobuf_profile as protos;
/// inferno's flamegraph module (its `Options`), as pprof-rs re-exports it.
pub use inferno::flamegraph;
pub use profile::{
    CpuProfile, CpuProfileBuilder, Frames, KERNEL_FRAME, ProfileTiming, SampleValue, Symbol,
    ThreadProfile,
};
pub use report::{
    Frame, MAX_DEPTH, MAX_THREAD_NAME, PprofReport, Report, ReportBuilder, ReportTiming,
    UnresolvedFrames, UnresolvedReport,
};
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub use sampler::{
    arm_current_thread, clear_charge_hook, clear_context_hook, in_signal_handler, late_signals,
    set_charge_hook, set_context_hook, set_watcher_start_hook,
};

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub use allocations::{allocation_walker, symbolize_allocation_stacks};

/// Native stacks of allocations are taken only on Linux x86_64 and
/// aarch64 (see the Linux version).
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub fn allocation_walker() -> Result<fn(&mut [u64]) -> usize, SamplerError> {
    Err(SamplerError::Unsupported(
        "native stacks need Linux on x86_64 or aarch64",
    ))
}

/// Frames of allocation stacks: addresses only where no walker exists.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub fn symbolize_allocation_stacks(stacks: &[Vec<u64>]) -> Vec<Vec<Symbol>> {
    (stacks.iter())
        .map(|s| {
            (s.iter())
                .map(|a| Symbol::unknown(format!("{a:#x}")))
                .collect()
        })
        .collect()
}

use profile::ProfileSource;

/// The per-thread sampling source a thread used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuSource {
    /// `perf_event_open` software cpu-clock event, signal to the thread.
    PerfEvent,
    /// `timer_create` on the thread's CPU clock (`SIGEV_THREAD_ID`).
    Timer,
}

/// Which source to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SourcePreference {
    /// perf_event, falling back to the timer per thread.
    #[default]
    Auto,
    /// perf_event only (threads where it fails are not sampled).
    PerfEvent,
    /// The timer fallback only.
    Timer,
}

impl SourcePreference {
    /// From `PERFLENS_CPU_SOURCE` (`timer`, `perf`/`perf_event`, `auto`).
    pub fn from_env() -> Option<SourcePreference> {
        Self::parse(&std_env("PERFLENS_CPU_SOURCE")?)
    }

    /// From its name: `timer`, `perf`/`perf_event` or `auto`.
    pub fn parse(name: &str) -> Option<SourcePreference> {
        match name.trim() {
            "timer" => Some(SourcePreference::Timer),
            "perf" | "perf_event" => Some(SourcePreference::PerfEvent),
            "auto" => Some(SourcePreference::Auto),
            _ => None,
        }
    }
}

/// Whether a perf_event source counts and samples kernel mode
/// (`exclude_kernel` cleared) or user mode only.
///
/// A cpu-clock event counts all of the thread's CPU time either way, but
/// with the kernel excluded no overflow fires while the thread is in a
/// system call: the time the kernel spent for it cannot be put on the
/// stack that caused it. Included, the kernel raises the sample on the
/// thread's return to user space, where the stack (and a measured
/// function's shadow stack) is the caller's, so a system call's time goes
/// to the function that made it. Excluded, each sample stands for one
/// period of user CPU time, and the rest of the thread's CPU time is
/// reported apart as kernel time, never on a stack
/// ([`ThreadProfile::kernel_ns`]). The timer source always counts user and
/// kernel time and signals on the return to user space, like an included
/// kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KernelMode {
    /// Include the kernel where the process may (root, `CAP_PERFMON`, or
    /// `perf_event_paranoid` ≤ 1): tried first, and excluded for the rest
    /// of the session once the kernel refuses it.
    #[default]
    Auto,
    /// Include the kernel; a thread whose perf event the kernel refuses
    /// so is not sampled with perf_event (with [`SourcePreference::Auto`]
    /// it falls back to the timer, which counts kernel time too).
    Include,
    /// Exclude the kernel: user time on stacks, kernel time apart.
    Exclude,
}

impl KernelMode {
    /// From `PERFLENS_CPU_KERNEL` (`auto`, `include`, `exclude`).
    pub fn from_env() -> Option<KernelMode> {
        Self::parse(&std_env("PERFLENS_CPU_KERNEL")?)
    }

    /// From its name: `auto`, `include` or `exclude`.
    pub fn parse(name: &str) -> Option<KernelMode> {
        match name.trim() {
            "auto" => Some(KernelMode::Auto),
            "include" => Some(KernelMode::Include),
            "exclude" => Some(KernelMode::Exclude),
            _ => None,
        }
    }
}

/// Reads a `PERFLENS_CPU_*` variable for [`ProfilerGuardBuilder`]: its
/// value, or `None` when it is unset or blank. The sampler alone reads
/// the process's environment ([`std_env`]); perflens's session hands it
/// its own reader ([`ProfilerGuardBuilder::env_reader`]), the one place
/// perflens reads its settings.
pub type EnvReader = fn(&'static str) -> Option<String>;

/// The process's environment, an empty or blank variable unset: the
/// [`EnvReader`] a builder starts with.
pub fn std_env(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `PERFLENS_CPU_SIGNAL`: a signal number, or `SIGRTMIN+n`.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn signal_from_env(read: EnvReader) -> Result<Option<i32>, SamplerError> {
    let Some(v) = read("PERFLENS_CPU_SIGNAL") else {
        return Ok(None);
    };
    let v = v.trim();
    let parsed = match v.strip_prefix("SIGRTMIN") {
        Some("") => realtime_signal(0),
        Some(rest) => rest
            .strip_prefix('+')
            .and_then(|n| n.parse::<i32>().ok())
            .and_then(realtime_signal),
        None => v.parse::<i32>().ok(),
    };
    match parsed {
        Some(sig) if (1..64).contains(&sig) => Ok(Some(sig)),
        _ => Err(SamplerError::InvalidConfig(format!(
            "PERFLENS_CPU_SIGNAL={v:?}: expected a signal number or SIGRTMIN+n"
        ))),
    }
}

/// Configures and starts a profiling session (pprof-rs style).
#[derive(Clone, Debug)]
pub struct ProfilerGuardBuilder {
    frequency: i32,
    blocklist: Vec<String>,
    source: Option<SourcePreference>,
    kernel: Option<KernelMode>,
    signal: Option<i32>,
    max_threads: usize,
    buffer_bytes: usize,
    max_depth: usize,
    rescan: Duration,
    env: Option<EnvReader>,
}

impl Default for ProfilerGuardBuilder {
    fn default() -> Self {
        ProfilerGuardBuilder {
            frequency: 99,
            blocklist: Vec::new(),
            source: None,
            kernel: None,
            signal: None,
            max_threads: 1024,
            buffer_bytes: 256 * 1024,
            max_depth: MAX_DEPTH,
            rescan: Duration::from_millis(10),
            env: Some(std_env),
        }
    }
}

impl ProfilerGuardBuilder {
    /// Samples per second of CPU time per thread (default 99).
    pub fn frequency(mut self, frequency: i32) -> Self {
        self.frequency = frequency;
        self
    }

    /// Modules (file name substrings) whose frames are removed from the
    /// leaf end of stacks in reports; their CPU time goes to the first
    /// caller outside them. (pprof-rs drops such samples; here the sample
    /// is kept so CPU totals stay exact.)
    pub fn blocklist<T: AsRef<str>>(mut self, blocklist: &[T]) -> Self {
        self.blocklist = blocklist.iter().map(|s| s.as_ref().to_string()).collect();
        self
    }

    /// Sampling source. Default: `PERFLENS_CPU_SOURCE` if set, else
    /// [`SourcePreference::Auto`].
    pub fn source(mut self, source: SourcePreference) -> Self {
        self.source = Some(source);
        self
    }

    /// Whether perf events sample kernel mode (see [`KernelMode`]).
    /// Default: `PERFLENS_CPU_KERNEL` if set, else [`KernelMode::Auto`].
    pub fn kernel(mut self, kernel: KernelMode) -> Self {
        self.kernel = Some(kernel);
        self
    }

    /// Real-time signal to use instead of the default delivery.
    ///
    /// By default a perf event signals its thread with `SIGTRAP` through
    /// the kernel's `sigtrap` mechanism (Linux 5.13+; about half the kernel
    /// cost per sample of a real-time signal) and the timer fallback uses
    /// `SIGRTMIN + 4`. SIGTRAP is not used when a debugger is attached at
    /// start or the program handles SIGTRAP itself; a breakpoint's SIGTRAP
    /// still has its usual effect. Setting a signal here uses it for every
    /// thread. `PERFLENS_CPU_SIGNAL` (a number or `SIGRTMIN+n`) does the
    /// same from the environment.
    pub fn signal(mut self, signal: i32) -> Self {
        self.signal = Some(signal);
        self
    }

    /// Most threads sampled at once (default 1024).
    pub fn max_threads(mut self, n: usize) -> Self {
        self.max_threads = n;
        self
    }

    /// Sample buffer per thread in bytes (default 256 KiB, drained every
    /// rescan; samples that do not fit are counted as dropped).
    pub fn buffer_bytes(mut self, n: usize) -> Self {
        self.buffer_bytes = n;
        self
    }

    /// Most frames per stack (default [`MAX_DEPTH`], 128 or with the
    /// `large-depth` or `huge-depth` feature 256; at most 256).
    pub fn max_depth(mut self, n: usize) -> Self {
        self.max_depth = n;
        self
    }

    /// How often the watcher looks for new and exited threads and drains
    /// buffers (default 10 ms).
    pub fn rescan_interval(mut self, d: Duration) -> Self {
        self.rescan = d;
        self
    }

    /// Do not read `PERFLENS_CPU_SOURCE`, `PERFLENS_CPU_KERNEL` or
    /// `PERFLENS_CPU_SIGNAL`: what is not set here takes its default.
    pub fn ignore_env(mut self) -> Self {
        self.env = None;
        self
    }

    /// Reads `PERFLENS_CPU_SOURCE`, `PERFLENS_CPU_KERNEL` and
    /// `PERFLENS_CPU_SIGNAL` through `read` instead of from the process's
    /// environment ([`std_env`]), for a program that reads its settings
    /// in one place.
    pub fn env_reader(mut self, read: EnvReader) -> Self {
        self.env = Some(read);
        self
    }

    /// Starts sampling every thread of the process.
    pub fn build(self) -> Result<ProfilerGuard<'static>> {
        ProfilerGuard::start(self)
    }
}

/// A running profiling session. Sampling stops when it is dropped (or with
/// [`ProfilerGuard::stop`]). The lifetime is pprof-rs's, so that a
/// `ProfilerGuard<'static>` field builds; [`ProfilerGuardBuilder::build`]
/// gives a `'static` one.
pub struct ProfilerGuard<'a> {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    running: Option<sampler::Running>,
    blocklist: Vec<String>,
    _lifetime: std::marker::PhantomData<&'a ()>,
}

impl ProfilerGuard<'static> {
    /// Starts sampling at `frequency` Hz with default settings.
    pub fn new(frequency: i32) -> Result<ProfilerGuard<'static>> {
        ProfilerGuardBuilder::default().frequency(frequency).build()
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    fn start(b: ProfilerGuardBuilder) -> Result<ProfilerGuard<'static>> {
        if let Some(why) = sampler::unavailable() {
            return Err(SamplerError::Unsupported(why));
        }
        if b.frequency <= 0 {
            return Err(SamplerError::InvalidConfig(format!(
                "frequency must be positive, got {}",
                b.frequency
            )));
        }
        let signal = match b.signal {
            Some(sig) => Some(sig),
            None => b.env.map(signal_from_env).transpose()?.flatten(),
        };
        let cfg = sampler::SamplerOptions {
            frequency: b.frequency as u32,
            source: b
                .source
                .or_else(|| SourcePreference::parse(&b.env?("PERFLENS_CPU_SOURCE")?))
                .unwrap_or_default(),
            kernel: (b.kernel)
                .or_else(|| KernelMode::parse(&b.env?("PERFLENS_CPU_KERNEL")?))
                .unwrap_or_default(),
            signal: match signal.or_else(|| realtime_signal(4)) {
                Some(sig) => sig,
                None => return Err(SamplerError::Unsupported("no real-time signals")),
            },
            trap: signal.is_none(),
            max_threads: b.max_threads,
            ring_words: b.buffer_bytes / 8,
            max_depth: b.max_depth.clamp(1, sampler::MAX_DEPTH),
            rescan: b.rescan,
        };
        Ok(ProfilerGuard {
            running: Some(sampler::Running::start(cfg)?),
            blocklist: b.blocklist,
            _lifetime: std::marker::PhantomData,
        })
    }

    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    fn start(b: ProfilerGuardBuilder) -> Result<ProfilerGuard<'static>> {
        let _ = b;
        Err(SamplerError::Unsupported(
            "the sampler supports Linux on x86_64 and aarch64 only",
        ))
    }
}

impl<'a> ProfilerGuard<'a> {
    /// A pprof-rs report of the samples so far (sample counts per stack);
    /// sampling goes on, and more reports can be taken.
    pub fn report(&self) -> ReportBuilder<'_> {
        ReportBuilder::new(self)
    }

    /// The full profile of the samples so far (CPU time per stack,
    /// per-thread figures); sampling goes on.
    pub fn profile(&self) -> CpuProfileBuilder<'_> {
        CpuProfileBuilder::new(ProfileSource::Live(self), self.blocklist.clone())
    }

    /// Stops sampling and returns a builder for the final report (thread
    /// CPU times then cover exactly the sampled interval).
    pub fn stop(self) -> CpuProfileBuilder<'static> {
        let blocklist = self.blocklist.clone();
        let snap = self.stop_snapshot();
        CpuProfileBuilder::new(ProfileSource::Done(Box::new(snap)), blocklist)
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    fn stop_snapshot(mut self) -> snapshot::Snapshot {
        match self.running.take() {
            Some(r) => r.stop(),
            None => unreachable!("a guard always holds a session"),
        }
    }

    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    fn stop_snapshot(self) -> snapshot::Snapshot {
        unreachable!("no guard exists on unsupported targets")
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    pub(crate) fn snapshot(&self) -> Result<snapshot::Snapshot, SamplerError> {
        match &self.running {
            Some(r) => Ok(r.session().snapshot()),
            None => Err(SamplerError::InvalidConfig(
                "session already stopped".into(),
            )),
        }
    }

    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    pub(crate) fn snapshot(&self) -> Result<snapshot::Snapshot, SamplerError> {
        Err(SamplerError::Unsupported(
            "the sampler supports Linux on x86_64 and aarch64 only",
        ))
    }
}

/// No-op stand-ins on unsupported targets, so callers need no `cfg`.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod unsupported {
    /// Unsupported target: never arms anything.
    pub fn arm_current_thread() -> Result<bool, crate::SamplerError> {
        Ok(false)
    }
    /// Unsupported target: stored nowhere.
    pub fn set_context_hook(_f: fn() -> u64) {}
    /// Unsupported target: no-op.
    pub fn clear_context_hook() {}
    /// Unsupported target: stored nowhere.
    pub fn set_charge_hook(_f: fn(u64)) {}
    /// Unsupported target: no-op.
    pub fn clear_charge_hook() {}
    /// Unsupported target: there is no watcher thread.
    pub fn set_watcher_start_hook(_f: fn()) {}
    /// Unsupported target: always false.
    pub fn in_signal_handler() -> bool {
        false
    }
    /// Unsupported target: always 0.
    pub fn late_signals() -> u64 {
        0
    }
}
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub use unsupported::*;
