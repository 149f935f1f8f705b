//! pprof-rs 0.15's report API, so that a program written for pprof-rs
//! builds unchanged on perflens-sampler (`pprof = { package =
//! "perflens-sampler", ... }`): [`ReportBuilder`] from
//! [`ProfilerGuard::report`], [`Report`] with `data` as sample counts per
//! stack, its `Debug` lines, flamegraphs and `pprof()`, and
//! [`UnresolvedReport`] with the raw addresses.
//!
//! A [`Report`] is exactly pprof-rs's: `data` and `timing`, which a
//! program may build, change or take apart, and its outputs are made from
//! them (each sample one period of CPU time, as pprof-rs counts). The full
//! profile (CPU time per stack, kernel time, per-thread figures) is
//! [`ProfilerGuard::profile`]'s. docs/migrating-from-pprof-rs.md says what
//! differs from pprof-rs and why.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::profile::{ProfileSource, ProfileTiming, SampleValue};
use crate::{CpuProfile, CpuProfileBuilder, Frames, ProfilerGuard, SamplerError};

/// Longest thread name an [`UnresolvedFrames`] holds, in bytes (Linux's
/// limit, 15 bytes and a NUL; pprof-rs's constant).
pub const MAX_THREAD_NAME: usize = 16;

/// The stack depth sampled by default (a builder's
/// [`max_depth`](crate::ProfilerGuardBuilder::max_depth)): 128, or 256
/// with the `large-depth` or `huge-depth` feature.
#[cfg(not(any(feature = "large-depth", feature = "huge-depth")))]
pub const MAX_DEPTH: usize = 128;
/// The stack depth sampled by default (a builder's
/// [`max_depth`](crate::ProfilerGuardBuilder::max_depth)): 128, or 256
/// with the `large-depth` or `huge-depth` feature.
#[cfg(any(feature = "large-depth", feature = "huge-depth"))]
pub const MAX_DEPTH: usize = 256;

type SharedPostProcessor = Arc<dyn Fn(&mut Frames) + Send + Sync>;

/// Builds [`Report`]s of a running session, as many as asked for; each
/// covers the session from its start. From [`ProfilerGuard::report`].
pub struct ReportBuilder<'a> {
    guard: &'a ProfilerGuard<'a>,
    post: Option<SharedPostProcessor>,
}

/// When a report's samples were taken.
#[derive(Clone, Debug)]
pub struct ReportTiming {
    /// Sampling frequency in Hz.
    pub frequency: i32,
    /// When sampling started.
    pub start_time: SystemTime,
    /// Time from the start to the report.
    pub duration: Duration,
}

/// Frequency 0, the Unix epoch, no time.
impl Default for ReportTiming {
    fn default() -> Self {
        ReportTiming {
            frequency: 0,
            start_time: SystemTime::UNIX_EPOCH,
            duration: Duration::ZERO,
        }
    }
}

/// pprof-rs's name for [`PprofReport`], which programs switched over by
/// one line of Cargo.toml name (`pprof::Report`).
pub use self::PprofReport as Report;

/// A symbolized report: samples per stack (pprof-rs's `Report`, under
/// its own name in this workspace, where the report is perflens's).
pub struct PprofReport {
    /// Samples taken per distinct stack (and thread).
    pub data: HashMap<Frames, isize>,
    /// When the samples were taken.
    pub timing: ReportTiming,
}

/// A report whose stacks are addresses, not yet symbolized.
pub struct UnresolvedReport {
    /// Samples taken per distinct stack (and thread).
    pub data: HashMap<UnresolvedFrames, isize>,
    /// When the samples were taken.
    pub timing: ReportTiming,
}

/// One level of an unresolved stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    ip: u64,
}

impl Frame {
    /// The instruction address: the interrupted instruction at the leaf,
    /// the return address in callers (as a backtrace gives it).
    pub fn ip(&self) -> *mut std::ffi::c_void {
        self.ip as usize as *mut std::ffi::c_void
    }
}

/// One distinct unresolved stack of one thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnresolvedFrames {
    /// Stack levels, leaf first.
    pub frames: Vec<Frame>,
    /// The thread's name, as bytes, NUL-padded.
    pub thread_name: [u8; MAX_THREAD_NAME],
    /// Bytes of `thread_name` in use.
    pub thread_name_length: usize,
    /// Kernel thread id.
    pub thread_id: u64,
    /// Samples are counted per stack, not stamped one by one: the time
    /// the session started (pprof-rs: the first sample's time).
    pub sample_timestamp: SystemTime,
}

impl<'a> ReportBuilder<'a> {
    pub(crate) fn new(guard: &'a ProfilerGuard<'a>) -> Self {
        ReportBuilder { guard, post: None }
    }

    /// Called on every stack after symbolization (rename frames, merge
    /// threads by rewriting `thread_name`, ...); stacks equal after it are
    /// merged.
    pub fn frames_post_processor<T>(&mut self, frames_post_processor: T) -> &mut Self
    where
        T: Fn(&mut Frames) + Send + Sync + 'static,
    {
        self.post = Some(Arc::new(frames_post_processor));
        self
    }

    /// The full profile behind a [`Report`], with this builder's post
    /// processor.
    fn cpu_profile(&self) -> Result<CpuProfile, SamplerError> {
        let mut b = CpuProfileBuilder::new(
            ProfileSource::Live(self.guard),
            self.guard.blocklist.clone(),
        );
        if let Some(p) = &self.post {
            let p = Arc::clone(p);
            b = b.frames_post_processor(move |f| p(f));
        }
        b.build()
    }

    /// Symbolizes the samples so far; sampling goes on.
    pub fn build(&self) -> Result<Report, SamplerError> {
        Ok(Report::from_profile(&self.cpu_profile()?))
    }

    /// The samples so far as addresses (no symbolization); sampling goes
    /// on. Blocklisted modules are not removed here, and the post
    /// processor is not run (it takes symbolized [`Frames`]).
    pub fn build_unresolved(&self) -> Result<UnresolvedReport, SamplerError> {
        let snap = self.guard.snapshot()?;
        let mut data: HashMap<UnresolvedFrames, isize> = HashMap::new();
        for (k, v) in &snap.samples {
            let name = (snap.threads.iter())
                .find(|t| t.tid == k.tid)
                .map_or_else(String::new, |t| t.name.clone());
            let mut thread_name = [0u8; MAX_THREAD_NAME];
            // Whole characters only, and room for the NUL.
            let mut len = name.len().min(MAX_THREAD_NAME - 1);
            while !name.is_char_boundary(len) {
                len -= 1;
            }
            thread_name[..len].copy_from_slice(&name.as_bytes()[..len]);
            let frames = UnresolvedFrames {
                frames: k.stack.iter().map(|&ip| Frame { ip }).collect(),
                thread_name,
                thread_name_length: len,
                thread_id: k.tid as u64,
                sample_timestamp: snap.started_wall,
            };
            *data.entry(frames).or_default() += v.count as isize;
        }
        Ok(UnresolvedReport {
            data,
            timing: ReportTiming {
                frequency: snap.frequency as i32,
                start_time: snap.started_wall,
                duration: snap.duration,
            },
        })
    }
}

impl Report {
    /// The report of a profile: its sample counts per stack.
    pub fn from_profile(profile: &CpuProfile) -> Report {
        let data = (profile.data.iter())
            .filter(|(_, v)| v.samples > 0)
            .map(|(k, v)| (k.clone(), v.samples as isize))
            .collect();
        let timing = ReportTiming {
            frequency: profile.timing.frequency as i32,
            start_time: profile.timing.start_time,
            duration: profile.timing.duration,
        };
        Report { data, timing }
    }

    /// The report as a profile of its own, for the outputs: each sample
    /// one sampling period of CPU time, no per-thread figures.
    fn as_profile(&self) -> CpuProfile {
        let period_ns = match self.timing.frequency {
            f if f > 0 => 1_000_000_000 / f as u64,
            _ => 0,
        };
        let data = (self.data.iter())
            .filter(|(_, c)| **c > 0)
            .map(|(k, &c)| {
                let samples = c as u64;
                let v = SampleValue {
                    samples,
                    cpu_ns: samples * period_ns,
                };
                (k.clone(), v)
            })
            .collect();
        CpuProfile {
            data,
            threads: Vec::new(),
            timing: ProfileTiming {
                frequency: self.timing.frequency.max(0) as u32,
                period_ns,
                start_time: self.timing.start_time,
                duration: self.timing.duration,
            },
            sampler_cpu_ns: 0,
            handler_ns: 0,
            handler_calls: 0,
            handler_hist: Vec::new(),
            modules: Vec::new(),
        }
    }

    /// Writes a flamegraph SVG; widths are CPU time in µs (samples times
    /// the sampling period).
    pub fn flamegraph<W: Write>(&self, writer: W) -> Result<(), SamplerError> {
        self.as_profile().flamegraph(writer)
    }

    /// Writes a flamegraph SVG with inferno's options.
    pub fn flamegraph_with_options<W: Write>(
        &self,
        writer: W,
        options: &mut inferno::flamegraph::Options<'_>,
    ) -> Result<(), SamplerError> {
        self.as_profile().flamegraph_with_options(writer, options)
    }

    /// The report as the codec's pprof `Profile` (features `prost-codec`
    /// or `protobuf-codec`); encode it with the codec's `Message` trait
    /// ([`protos::Message`](crate::protos::Message)). Values: samples, and
    /// CPU nanoseconds (samples times the sampling period); labels: the
    /// thread's name and id.
    #[cfg(feature = "_protobuf")]
    pub fn pprof(&self) -> Result<crate::protos::Profile, SamplerError> {
        crate::codecs::to_protos(&self.as_profile())
    }

    /// The gzipped `profile.proto` bytes `go tool pprof` reads (any
    /// features).
    pub fn write_pprof<W: Write>(&self, writer: W) -> Result<(), SamplerError> {
        self.as_profile().write_pprof(writer)
    }
}

/// One line per stack: `FRAME: leaf -> FRAME: caller -> ... THREAD: name
/// count`, as pprof-rs prints a report.
impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (frames, count) in sorted(&self.data) {
            writeln!(f, "{frames:?} {count}")?;
        }
        Ok(())
    }
}

/// Folded stacks, root first (`thread;root;...;leaf samples`), one line
/// per stack, sorted: what flamegraph tools read.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines: Vec<String> = (self.data.iter())
            .map(|(frames, count)| {
                let mut parts = vec![frames.thread_name_or_id()];
                for level in frames.frames.iter().rev() {
                    parts.extend(level.iter().rev().map(|s| s.name.replace(';', ":")));
                }
                format!("{} {count}", parts.join(";"))
            })
            .collect();
        lines.sort();
        for l in lines {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}

/// Stacks by count, most first, then by their text (a stable order).
fn sorted(data: &HashMap<Frames, isize>) -> Vec<(&Frames, isize)> {
    let mut v: Vec<(&Frames, isize, String)> = (data.iter())
        .map(|(k, &c)| (k, c, format!("{k:?}")))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.cmp(&b.2)));
    v.into_iter().map(|(k, c, _)| (k, c)).collect()
}

impl fmt::Debug for UnresolvedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (frames, count) in &self.data {
            writeln!(f, "{frames:?} {count}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
