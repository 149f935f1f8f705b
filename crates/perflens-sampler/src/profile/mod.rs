//! Reports: symbolized, aggregated samples and their outputs (folded
//! stacks, flamegraph SVG, pprof protobuf).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, SystemTime};

use crate::modules::ModuleInfo;
use crate::snapshot::Snapshot;
use crate::symbolize::Symbolizer;
use crate::{CpuSource, SamplerError};
use perflens_format::proto::{Msg, Strings};

pub use crate::symbolize::Symbol;

/// One distinct stack of one thread (and context value). Its `Debug` is
/// pprof-rs's line: `FRAME: leaf -> FRAME: caller -> ... THREAD: name`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Frames {
    /// One entry per stack level, leaf first; each entry lists the inlined
    /// functions at that address, innermost first.
    pub frames: Vec<Vec<Symbol>>,
    /// Addresses of the levels in `frames` (leaf: the interrupted
    /// instruction; callers: return address minus one).
    pub addresses: Vec<u64>,
    /// Thread name at report time (or at exit).
    pub thread_name: String,
    /// Kernel thread id.
    pub thread_id: u64,
    /// Value returned by the context hook when the sample was taken.
    pub context: u64,
    /// Name of `context` given by the report's context namer, if any.
    pub context_name: Option<String>,
}

impl Frames {
    /// The thread's name, or `ThreadId(tid)` when it has none.
    pub fn thread_name_or_id(&self) -> String {
        if self.thread_name.is_empty() {
            format!("ThreadId({})", self.thread_id)
        } else {
            self.thread_name.clone()
        }
    }
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for level in &self.frames {
            f.write_str("FRAME: ")?;
            for s in level {
                write!(f, "{s} -> ")?;
            }
        }
        write!(f, "THREAD: {}", self.thread_name_or_id())?;
        if let Some(p) = &self.context_name {
            write!(f, " PATH: {p}")?;
        }
        Ok(())
    }
}

/// Samples and CPU time of one stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleValue {
    /// Samples taken.
    pub samples: u64,
    /// CPU time they represent, in nanoseconds.
    pub cpu_ns: u64,
}

/// Per-thread statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadProfile {
    /// Kernel thread id.
    pub tid: u64,
    /// Thread name.
    pub name: String,
    /// Sampling source used for the thread.
    pub source: CpuSource,
    /// Signal the samples arrived with: `SIGTRAP` when a perf event uses
    /// sigtrap delivery (the default where the kernel has it), else the
    /// configured real-time signal.
    pub signal: i32,
    /// The samples include kernel time: the thread used the timer source,
    /// or a perf event with the kernel included (see
    /// [`KernelMode`](crate::KernelMode)). A system call's time is then on
    /// the stack that made it.
    pub kernel_included: bool,
    /// Samples recorded.
    pub samples: u64,
    /// CPU time represented by the recorded samples.
    pub sampled_cpu_ns: u64,
    /// When the kernel was excluded (`kernel_included` false): the
    /// thread's CPU time that no sample stands for, `cpu_ns` minus the
    /// sampled and dropped samples' time. That is its kernel time, plus
    /// any user time whose overflows the kernel merged or skipped, give or
    /// take the sampling error of the user time. It is on no stack; the
    /// folded, flamegraph and pprof outputs show it as a `[kernel]` frame
    /// of its own. 0 when the kernel was included, except for a thread
    /// moved from a perf event that excluded it to the timer source
    /// ([`moved_to_timer`](Self::moved_to_timer)): the kernel time left
    /// on no sample before the move.
    pub kernel_ns: u64,
    /// CPU time the kernel accounted to the thread while it was armed.
    pub cpu_ns: u64,
    /// Samples dropped because the thread's buffer was full.
    pub dropped: u64,
    /// Samples whose stack could not be walked (only the leaf was kept),
    /// or was not: a sample that comes less than half a period after a
    /// walk that took more than half a period keeps its leaf only, so that
    /// a thread whose walks outlast its period (a deep stack in an
    /// unoptimized build at a high frequency) still runs.
    pub truncated: u64,
    /// Of the `truncated` samples, those taken while the thread's stack
    /// pointer was on none of its known stacks (its own stack, its current
    /// alternate signal stack), e.g. on a coroutine's stack: no stack
    /// memory is read for them.
    pub off_stack: u64,
    /// The thread exited during the session.
    pub exited: bool,
    /// The thread started on a perf event and was moved to the timer
    /// source (`source` is then [`CpuSource::Timer`]) because it switched
    /// often: a perf event costs every context switch, and on a server's
    /// I/O threads that came to a fifth more CPU. Only with
    /// [`SourcePreference::Auto`](crate::SourcePreference::Auto).
    pub moved_to_timer: bool,
    /// Samples of a thread on the timer source that the watcher asked for
    /// because the timer's own signal was late: the thread had run 20 ms
    /// and two periods of CPU time past its last sample. On a loaded
    /// machine the kernel was seen to hold a CPU timer's signal for up to
    /// 190 ms of the thread's CPU time; each such sample weighs the time
    /// since the one before, as every sample does.
    pub nudged: u64,
}

/// Session timing.
#[derive(Clone, Debug)]
pub struct ProfileTiming {
    /// Sampling frequency in Hz.
    pub frequency: u32,
    /// Sampling period in nanoseconds of CPU time.
    pub period_ns: u64,
    /// Wall-clock time the session started.
    pub start_time: SystemTime,
    /// Wall time covered.
    pub duration: Duration,
}

/// The frame that stands for kernel time on no stack in the folded,
/// flamegraph and pprof outputs.
pub const KERNEL_FRAME: &str = "[kernel]";

/// Width of one bucket of the handler-duration histogram.
pub(crate) const HANDLER_BUCKET_NS: u64 = 100;
/// Buckets: 0 to 25.5 µs in 100 ns steps, then one for longer.
pub(crate) const HANDLER_BUCKETS: usize = 256;

/// A symbolized profile.
#[derive(Clone, Debug)]
pub struct CpuProfile {
    /// Samples per distinct stack.
    pub data: HashMap<Frames, SampleValue>,
    /// Per-thread statistics (including exited threads).
    pub threads: Vec<ThreadProfile>,
    /// Timing.
    pub timing: ProfileTiming,
    /// CPU time used by the sampler's own watcher thread (not sampled).
    pub sampler_cpu_ns: u64,
    /// Wall time spent inside the signal handler's sampling path, summed
    /// over all samples (ns), and the number of handler runs.
    pub handler_ns: u64,
    /// Handler runs that found a session.
    pub handler_calls: u64,
    /// Handler durations: counts per 100 ns step (the last entry counts
    /// everything longer); see [`CpuProfile::handler_quantile_ns`].
    pub handler_hist: Vec<u64>,
    pub(crate) modules: Vec<ModuleInfo>,
}

type PostProcessor = Box<dyn Fn(&mut Frames)>;
type ContextNamer = Box<dyn Fn(u64) -> Option<String>>;

/// Builds a [`CpuProfile`]; obtained from [`ProfilerGuard::profile`](crate::ProfilerGuard::profile)
/// or [`ProfilerGuard::stop`](crate::ProfilerGuard::stop).
pub struct CpuProfileBuilder<'a> {
    source: ProfileSource<'a>,
    blocklist: Vec<String>,
    post: Option<PostProcessor>,
    namer: Option<ContextNamer>,
    /// Whether a long symbolization says how far it got on stderr.
    progress: bool,
}

pub(crate) enum ProfileSource<'a> {
    #[cfg_attr(
        not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )),
        allow(dead_code)
    )]
    Live(&'a crate::ProfilerGuard<'a>),
    Done(Box<Snapshot>),
}

impl<'a> CpuProfileBuilder<'a> {
    pub(crate) fn new(source: ProfileSource<'a>, blocklist: Vec<String>) -> Self {
        CpuProfileBuilder {
            source,
            blocklist,
            post: None,
            namer: None,
            progress: true,
        }
    }

    /// Prints no progress line on stderr while symbolizing (a server
    /// building profiles on request is not the program's to print).
    pub fn quiet(mut self) -> Self {
        self.progress = false;
        self
    }

    /// Called on every stack after symbolization (rename frames, merge
    /// threads by clearing `thread_name`, ...). Stacks equal after it are
    /// merged.
    pub fn frames_post_processor(mut self, f: impl Fn(&mut Frames) + 'static) -> Self {
        self.post = Some(Box::new(f));
        self
    }

    /// Maps a context value (from the context hook) to a name; the pprof
    /// output labels samples with it (`perflens_path`).
    pub fn context_names(mut self, f: impl Fn(u64) -> Option<String> + 'static) -> Self {
        self.namer = Some(Box::new(f));
        self
    }

    /// Symbolizes and aggregates.
    pub fn build(self) -> Result<CpuProfile, SamplerError> {
        let snap = match self.source {
            ProfileSource::Live(g) => g.snapshot()?,
            ProfileSource::Done(s) => *s,
        };
        let threads: HashMap<i32, &crate::snapshot::ThreadEntry> =
            snap.threads.iter().map(|t| (t.tid, t)).collect();
        // Unique addresses.
        let mut uniq: HashSet<(u64, bool)> = HashSet::new();
        for (k, _) in &snap.samples {
            for (i, &a) in k.stack.iter().enumerate() {
                uniq.insert((a, i > 0));
            }
        }
        let mut uniq: Vec<(u64, bool)> = uniq.into_iter().collect();
        uniq.sort_unstable();
        let mut sym = Symbolizer::new(&snap.modules);
        let table = sym.symbolize_all(&uniq, self.progress);
        let blocked: Vec<bool> = snap
            .modules
            .iter()
            .map(|m| {
                let short = m.name.rsplit('/').next().unwrap_or(&m.name);
                self.blocklist.iter().any(|b| short.contains(b.as_str()))
            })
            .collect();
        let mut data: HashMap<Frames, SampleValue> = HashMap::new();
        for (k, v) in &snap.samples {
            let mut levels: Vec<(u64, bool)> = k
                .stack
                .iter()
                .enumerate()
                .map(|(i, &a)| (a, i > 0))
                .collect();
            // Blocklisted modules: drop their frames at the leaf end (the
            // time goes to the first caller outside them), keep the sample.
            while levels.len() > 1
                && sym
                    .module_of(levels[0].0)
                    .is_some_and(|m| blocked.get(m).copied().unwrap_or(false))
            {
                levels.remove(0);
            }
            let t = threads.get(&k.tid);
            let mut frames = Frames {
                frames: levels
                    .iter()
                    .map(|l| table.get(l).cloned().unwrap_or_default())
                    .collect(),
                addresses: levels
                    .iter()
                    .map(|&(a, ret)| if ret { a.saturating_sub(1) } else { a })
                    .collect(),
                thread_name: t.map_or_else(|| format!("thread-{}", k.tid), |t| t.name.clone()),
                thread_id: k.tid as u64,
                context: k.context,
                context_name: self.namer.as_ref().and_then(|f| f(k.context)),
            };
            if let Some(p) = &self.post {
                p(&mut frames);
            }
            let e = data.entry(frames).or_default();
            e.samples += v.count;
            e.cpu_ns += v.weight_ns;
        }
        let threads = snap
            .threads
            .iter()
            .map(|t| ThreadProfile {
                tid: t.tid as u64,
                name: t.name.clone(),
                source: t.source,
                signal: t.signal,
                kernel_included: t.kernel,
                samples: t.samples,
                sampled_cpu_ns: t.sampled_ns,
                kernel_ns: if t.kernel {
                    t.kernel_unsampled_ns
                } else {
                    t.cpu_ns.saturating_sub(t.sampled_ns + t.dropped_ns)
                },
                cpu_ns: t.cpu_ns,
                dropped: t.dropped,
                truncated: t.truncated,
                off_stack: t.off_stack,
                exited: t.exited,
                moved_to_timer: t.moved_to_timer,
                nudged: t.nudged,
            })
            .collect();
        Ok(CpuProfile {
            data,
            threads,
            timing: ProfileTiming {
                frequency: snap.frequency,
                period_ns: snap.period_ns,
                start_time: snap.started_wall,
                duration: snap.duration,
            },
            sampler_cpu_ns: snap.sampler_cpu_ns,
            handler_ns: snap.handler_ns,
            handler_calls: snap.handler_calls,
            handler_hist: snap.handler_hist,
            modules: snap.modules,
        })
    }
}

fn folded_name(s: &Symbol) -> String {
    s.name.replace(';', ":")
}

impl CpuProfile {
    /// The `q` quantile (0..=1) of the signal handler's duration, as the
    /// upper end of its 100 ns step; `None` if the handler never ran.
    pub fn handler_quantile_ns(&self, q: f64) -> Option<u64> {
        let total: u64 = self.handler_hist.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.handler_hist.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some((i as u64 + 1) * HANDLER_BUCKET_NS);
            }
        }
        None
    }

    /// Total samples.
    pub fn total_samples(&self) -> u64 {
        self.data.values().map(|v| v.samples).sum()
    }

    /// Total sampled CPU time in nanoseconds.
    pub fn total_cpu_ns(&self) -> u64 {
        self.data.values().map(|v| v.cpu_ns).sum()
    }

    /// What was sampled after `earlier`, a report of the same session
    /// built before this one: the samples of each stack, and each
    /// thread's counters, minus `earlier`'s; the time from `earlier`'s
    /// end to this report's. For a profile of a window of a session that
    /// goes on (an HTTP `/debug/pprof/profile?seconds=N` while the
    /// program samples itself).
    pub fn since(&self, earlier: &CpuProfile) -> CpuProfile {
        let mut data = HashMap::new();
        for (k, v) in &self.data {
            let before = earlier.data.get(k).copied().unwrap_or_default();
            let d = SampleValue {
                samples: v.samples.saturating_sub(before.samples),
                cpu_ns: v.cpu_ns.saturating_sub(before.cpu_ns),
            };
            if d.samples > 0 || d.cpu_ns > 0 {
                data.insert(k.clone(), d);
            }
        }
        let threads = (self.threads.iter())
            .map(|t| {
                let Some(b) = earlier.threads.iter().find(|b| b.tid == t.tid) else {
                    return t.clone();
                };
                ThreadProfile {
                    samples: t.samples.saturating_sub(b.samples),
                    sampled_cpu_ns: t.sampled_cpu_ns.saturating_sub(b.sampled_cpu_ns),
                    kernel_ns: t.kernel_ns.saturating_sub(b.kernel_ns),
                    cpu_ns: t.cpu_ns.saturating_sub(b.cpu_ns),
                    dropped: t.dropped.saturating_sub(b.dropped),
                    truncated: t.truncated.saturating_sub(b.truncated),
                    off_stack: t.off_stack.saturating_sub(b.off_stack),
                    ..t.clone()
                }
            })
            .collect();
        let start = earlier.timing.start_time + earlier.timing.duration;
        CpuProfile {
            data,
            threads,
            timing: ProfileTiming {
                start_time: start,
                duration: self.timing.duration.saturating_sub(earlier.timing.duration),
                ..self.timing.clone()
            },
            sampler_cpu_ns: self.sampler_cpu_ns.saturating_sub(earlier.sampler_cpu_ns),
            handler_ns: self.handler_ns.saturating_sub(earlier.handler_ns),
            handler_calls: self.handler_calls.saturating_sub(earlier.handler_calls),
            handler_hist: (self.handler_hist.iter().enumerate())
                .map(|(i, c)| c.saturating_sub(earlier.handler_hist.get(i).copied().unwrap_or(0)))
                .collect(),
            modules: self.modules.clone(),
        }
    }

    /// Samples dropped (full buffers) over all threads.
    pub fn dropped_samples(&self) -> u64 {
        self.threads.iter().map(|t| t.dropped).sum()
    }

    /// CPU time of the threads that excluded the kernel that no sample
    /// stands for (the sum of [`ThreadProfile::kernel_ns`]): on no stack.
    pub fn kernel_unattributed_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.kernel_ns).sum()
    }

    /// One `[kernel]` stack per thread with [`ThreadProfile::kernel_ns`]
    /// (no samples, its CPU time), for the outputs that show kernel time
    /// apart. Never part of [`CpuProfile::data`]: it is not sampled time.
    fn kernel_entries(&self) -> Vec<(Frames, SampleValue)> {
        (self.threads.iter())
            .filter(|t| t.kernel_ns > 0)
            .map(|t| {
                let frames = Frames {
                    frames: vec![vec![Symbol::unknown(KERNEL_FRAME.to_string())]],
                    addresses: vec![0],
                    thread_name: t.name.clone(),
                    thread_id: t.tid,
                    context: 0,
                    context_name: None,
                };
                let value = SampleValue {
                    samples: 0,
                    cpu_ns: t.kernel_ns,
                };
                (frames, value)
            })
            .collect()
    }
}

mod output;

#[cfg(test)]
mod tests;
