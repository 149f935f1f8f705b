//! CPU sampling for `#[perflens::main]` (feature `cpu`): samples every
//! thread's CPU time with `perflens-sampler`, attributes each sample to
//! the innermost measured function on the interrupted thread's shadow
//! stack (no symbol lookup, so inlined functions count too), adds the CPU
//! section to the report and writes `PERFLENS_PPROF`,
//! `PERFLENS_FLAMEGRAPH` and `PERFLENS_FOLDED` at the end.

use crate::settings;
use perflens_core::RawSnapshot;
use perflens_report::{CpuInput, CpuThreadInput, KernelTime, Report};
use perflens_sampler::{CpuSource, ProfilerGuard, ProfilerGuardBuilder};
use std::io::Write;
use std::sync::atomic::{AtomicI32, Ordering};

/// Default sampling frequency (`PERFLENS_CPU_HZ` overrides it).
pub const DEFAULT_HZ: u32 = 1000;

/// The process the running CPU session samples (0: none).
static SAMPLED_PID: AtomicI32 = AtomicI32::new(0);

/// Threads the profiler runs for itself whose samples are not the
/// program's (the HTTP server's): left out of the report's CPU section
/// and of the profiles served. The sampler samples every thread; their
/// samples are dropped when a report is made.
static OWN_THREADS: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// Leaves the calling thread's samples out of CPU reports.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn leave_out_current_thread() {
    let tid = perflens_sys::thread::tid();
    OWN_THREADS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(tid);
}

/// `profile` without the samples and threads of the profiler's own
/// threads.
pub(crate) fn without_own_threads(
    mut profile: perflens_sampler::CpuProfile,
) -> perflens_sampler::CpuProfile {
    let own = OWN_THREADS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if !own.is_empty() {
        profile.data.retain(|k, _| !own.contains(&k.thread_id));
        profile.threads.retain(|t| !own.contains(&t.tid));
    }
    profile
}

/// A running CPU sampler, or why there is none.
pub(crate) struct CpuSession {
    /// Shared with the HTTP server (feature `http`), which reads windows
    /// of it for `/debug/pprof/profile`; it gives its handle back before
    /// the session stops the sampler.
    guard: Result<std::sync::Arc<ProfilerGuard<'static>>, String>,
    frequency: u32,
}

impl CpuSession {
    /// Starts sampling every thread of the process. `use_env`: whether
    /// the `PERFLENS_CPU_*` variables apply (not for a session built with
    /// `ignore_env`).
    pub(crate) fn start(use_env: bool) -> CpuSession {
        let hz = use_env.then(|| settings::var("PERFLENS_CPU_HZ")).flatten();
        let frequency = match hz {
            Some(v) if !v.trim().is_empty() => match v.trim().parse::<u32>() {
                Ok(hz) if (1..=10_000).contains(&hz) => hz,
                _ => {
                    eprintln!(
                        "[perflens] PERFLENS_CPU_HZ={v} is not a whole number in 1..=10000; using {DEFAULT_HZ}."
                    );
                    DEFAULT_HZ
                }
            },
            _ => DEFAULT_HZ,
        };
        let builder = ProfilerGuardBuilder::default();
        let builder = if use_env {
            builder.env_reader(settings::var)
        } else {
            builder.ignore_env()
        };
        // The sampler's memory is the profiler's, not the program's.
        let _internal = perflens_core::Internal::enter();
        perflens_core::publish::cpu_sampling_starts();
        perflens_sampler::set_context_hook(perflens_core::sample_context);
        perflens_sampler::set_charge_hook(perflens_core::charge_sample);
        perflens_sampler::set_watcher_start_hook(perflens_core::exclude_current_thread);
        let guard = builder
            .frequency(frequency as i32)
            .blocklist(&["libc", "libgcc", "pthread", "vdso"])
            .build()
            .map(std::sync::Arc::new)
            .map_err(|e| e.to_string());
        match &guard {
            // Threads started from now on are armed at their first
            // measured call, not only at the watcher's next scan.
            Ok(_) => {
                SAMPLED_PID.store(std::process::id() as i32, Ordering::Relaxed);
                perflens_core::set_first_call_hook(Some(arm_thread));
            }
            Err(e) => eprintln!("[perflens] CPU sampling unavailable: {e}"),
        }
        CpuSession { guard, frequency }
    }

    /// The running sampler, for the HTTP server's profiles.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn guard(&self) -> Option<std::sync::Arc<ProfilerGuard<'static>>> {
        self.guard.as_ref().ok().cloned()
    }

    /// The sampling frequency, when sampling runs.
    pub(crate) fn frequency(&self) -> Option<u32> {
        self.guard.is_ok().then_some(self.frequency)
    }

    /// Stops sampling. Nothing after this is sampled.
    ///
    /// In a forked child that ends the session itself (a daemon under
    /// `#[perflens::main]`), the sampler is the parent's: its watcher
    /// thread does not exist here and must not be waited for. The child
    /// was never sampled, and its report says so.
    pub(crate) fn stop(self) -> StoppedCpu {
        let _internal = perflens_core::Internal::enter();
        perflens_core::set_first_call_hook(None);
        let forked = std::process::id() as i32 != SAMPLED_PID.load(Ordering::Relaxed);
        let builder = match self.guard {
            Ok(g) if forked => {
                std::mem::forget(g);
                Err("this process was forked from the sampled one; it was not sampled".into())
            }
            // The HTTP server, stopped first, has given its handle back.
            Ok(g) => std::sync::Arc::try_unwrap(g)
                .map(ProfilerGuard::stop)
                .map_err(|_| "the sampler was still in use when the session ended".to_string()),
            Err(e) => Err(e),
        };
        perflens_sampler::clear_context_hook();
        perflens_sampler::clear_charge_hook();
        StoppedCpu {
            builder,
            frequency: self.frequency,
        }
    }
}

/// Arms the calling thread for sampling (the first-call hook). An error
/// (say, more threads than the sampler has room for) is counted by the
/// sampler and shown in the report.
///
/// Not in a forked child: the sampler's watcher and locks belong to the
/// parent (a lock another parent thread held at the fork stays locked in
/// the child forever, and a child thread's first measured call would
/// wait for it), and nothing drains a child's samples.
fn arm_thread() {
    if std::process::id() as i32 != SAMPLED_PID.load(Ordering::Relaxed) {
        return;
    }
    let _ = perflens_sampler::arm_current_thread();
}

/// A stopped sampler whose samples are not symbolized yet.
pub(crate) struct StoppedCpu {
    builder: Result<perflens_sampler::CpuProfileBuilder<'static>, String>,
    frequency: u32,
}

impl StoppedCpu {
    /// Adds the CPU section to `report` (built from `snap`, whose paths
    /// the samples refer to) and writes the requested files. Never
    /// panics: problems are reported in the report and on stderr.
    /// Returns what it added.
    pub(crate) fn finish(self, snap: &RawSnapshot, report: &mut Report) -> CpuInput {
        let _internal = perflens_core::Internal::enter();
        let builder = match self.builder {
            Ok(b) => b,
            Err(why) => {
                let input = unavailable(self.frequency, why);
                report.add_cpu(snap, &input);
                return input;
            }
        };
        let names = path_names(snap);
        let built = builder
            .context_names(move |ctx| names.get(ctx as usize).cloned().flatten())
            .build();
        let profile = match built {
            Ok(p) => without_own_threads(p),
            Err(e) => {
                let input = unavailable(self.frequency, e.to_string());
                report.add_cpu(snap, &input);
                return input;
            }
        };
        let input = aggregate(&profile, self.frequency);
        report.add_cpu(snap, &input);
        write_files(&profile);
        input
    }
}

fn unavailable(frequency: u32, why: String) -> CpuInput {
    CpuInput {
        frequency_hz: frequency,
        source: format!("unavailable: {why}"),
        by_path: Vec::new(),
        outside_samples: 0,
        outside_cpu_ns: 0,
        threads: Vec::new(),
        dropped: 0,
        kernel: None,
        kernel_unattributed_ns: 0,
    }
}

/// `names[ctx]`: the instrumented path a context value stands for, as
/// row names joined by ` -> ` (context = path index + 1; 0 = none).
/// Await sites are left out, as the report's hot paths leave them out.
fn path_names(snap: &RawSnapshot) -> Vec<Option<String>> {
    let mut names = vec![None];
    for path in 0..snap.paths.len() as u32 {
        let frames: Vec<&str> = snap
            .frames(path)
            .into_iter()
            .filter_map(|c| snap.callsites.get(c as usize))
            .filter(|c| c.kind != perflens_core::CallsiteKind::Await)
            .map(|c| c.name.as_str())
            .collect();
        names.push((!frames.is_empty()).then(|| frames.join(" -> ")));
    }
    names
}

/// Sums the profile's samples by calling context.
fn aggregate(profile: &perflens_sampler::CpuProfile, frequency: u32) -> CpuInput {
    let mut by_path: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
    let (mut outside_samples, mut outside_cpu_ns) = (0, 0);
    for (frames, value) in &profile.data {
        if frames.context == 0 {
            outside_samples += value.samples;
            outside_cpu_ns += value.cpu_ns;
        } else {
            let e = by_path.entry((frames.context - 1) as u32).or_default();
            e.0 += value.samples;
            e.1 += value.cpu_ns;
        }
    }
    let source = source_name(&profile.threads);
    CpuInput {
        frequency_hz: frequency,
        source,
        by_path: by_path.into_iter().map(|(p, (s, ns))| (p, s, ns)).collect(),
        outside_samples,
        outside_cpu_ns,
        threads: profile
            .threads
            .iter()
            .map(|t| CpuThreadInput {
                tid: t.tid,
                name: (!t.name.is_empty()).then(|| t.name.clone()),
                samples: t.samples,
                cpu_ns: t.sampled_cpu_ns,
                dropped: t.dropped,
            })
            .collect(),
        dropped: profile.dropped_samples(),
        kernel: kernel_time(&profile.threads),
        kernel_unattributed_ns: profile.kernel_unattributed_ns(),
    }
}

/// Where the samples came from: `perf_event`, `timer`, `perf_event and
/// timer`, or, when the sampler moved threads that switch often from
/// their perf events to the timer source, `perf_event, timer on N of M
/// threads that switch often`.
fn source_name(threads: &[perflens_sampler::ThreadProfile]) -> String {
    let moved = threads.iter().filter(|t| t.moved_to_timer).count();
    let perf = (threads.iter())
        .filter(|t| t.source == CpuSource::PerfEvent)
        .count();
    let timer = threads.len() - perf;
    match (perf, timer, moved) {
        (_, 0, _) => "perf_event".to_string(),
        (0, _, 0) => "timer".to_string(),
        (_, _, 0) => "perf_event and timer".to_string(),
        (_, _, m) => format!(
            "perf_event, timer on {m} of {} threads that switch often",
            threads.len()
        ),
    }
}

/// Where the threads' kernel time went: on the samples (timer, or perf
/// with the kernel included), apart (perf with the kernel excluded), or
/// some of each (also a thread whose perf event excluded it until it was
/// moved to the timer source). `None` when no thread was sampled.
fn kernel_time(threads: &[perflens_sampler::ThreadProfile]) -> Option<KernelTime> {
    let all = threads.len();
    let attributed = (threads.iter())
        .filter(|t| t.kernel_included && t.kernel_ns == 0)
        .count();
    let excluded = threads.iter().filter(|t| !t.kernel_included).count();
    if all == 0 {
        None
    } else if attributed == all {
        Some(KernelTime::Attributed)
    } else if excluded == all {
        Some(KernelTime::NotAttributed)
    } else {
        Some(KernelTime::Partly)
    }
}

/// Writes `PERFLENS_PPROF`, `PERFLENS_FLAMEGRAPH`,
/// `PERFLENS_FLAMEGRAPH_PATHS` and `PERFLENS_FOLDED`.
fn write_files(profile: &perflens_sampler::CpuProfile) {
    type Writer = fn(&perflens_sampler::CpuProfile, &mut std::fs::File) -> Result<(), String>;
    let outputs: [(&str, Writer); 4] = [
        ("PERFLENS_PPROF", |p, f| {
            p.write_pprof(f).map_err(|e| e.to_string())
        }),
        ("PERFLENS_FLAMEGRAPH", |p, f| {
            p.flamegraph(f).map_err(|e| e.to_string())
        }),
        ("PERFLENS_FLAMEGRAPH_PATHS", |p, f| {
            p.flamegraph_by_path(f).map_err(|e| e.to_string())
        }),
        ("PERFLENS_FOLDED", |p, f| {
            p.write_folded(f).map_err(|e| e.to_string())
        }),
    ];
    let mut err = std::io::stderr().lock();
    for (var, write) in outputs {
        let Some(path) = settings::var_os(var) else {
            continue;
        };
        let res = std::fs::File::create(&path)
            .map_err(|e| e.to_string())
            .and_then(|mut f| write(profile, &mut f));
        let _ = match res {
            Ok(()) => writeln!(
                err,
                "[perflens] {var}: written to {}",
                path.to_string_lossy()
            ),
            Err(e) => writeln!(
                err,
                "[perflens] could not write {var}={}: {e}",
                path.to_string_lossy()
            ),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::path_names;
    use perflens_core::snapshot::*;

    #[test]
    fn await_sites_are_not_frames_of_a_context() {
        let site = |name: &str, kind| CallsiteInfo {
            name: name.into(),
            kind,
        };
        let path = |parent, callsite| PathInfo {
            parent,
            callsite,
            id: 0,
        };
        let snap = RawSnapshot {
            mode: Mode::Timed,
            sample_warmup: 0,
            clock: ClockSource::Instant,
            ns_per_tick: 1.0,
            elapsed_ns: 0,
            finished: true,
            callsites: vec![
                site("[root]", CallsiteKind::Internal),
                site("[overflow]", CallsiteKind::Internal),
                site("app::a", CallsiteKind::Async),
                site("src/a.rs:3:9", CallsiteKind::Await),
                site("app::b", CallsiteKind::Sync),
            ],
            paths: vec![path(0, 0), path(0, 1), path(0, 2), path(2, 3), path(3, 4)],
            threads: Vec::new(),
            path_capacity: 1024,
            overflow_paths: 0,
            unrecorded_calls: 0,
            alloc: None,
            heap: None,
        };
        let names = path_names(&snap);
        assert_eq!(names[3 + 1].as_deref(), Some("app::a"));
        assert_eq!(names[4 + 1].as_deref(), Some("app::a -> app::b"));
    }
}
