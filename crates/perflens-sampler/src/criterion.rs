//! Criterion [`Profiler`]s (feature `criterion`): sample each benchmark
//! while criterion runs it with `--profile-time`, and write the profile
//! into the benchmark's output directory. [`PerflensProfiler`] writes
//! `flamegraph.svg` and `profile.pb.gz`; [`PProfProfiler`] is pprof-rs's,
//! writing `flamegraph.svg` or an uncompressed `profile.pb` as its
//! [`Output`] says. Both implement the `Profiler` trait of criterion 0.8
//! and of criterion 0.5 (the version pprof-rs 0.15 works with), so either
//! criterion's `with_profiler` takes them.
//!
//! ```ignore
//! use criterion::{criterion_group, criterion_main, Criterion};
//! use perflens_sampler::criterion::PerflensProfiler;
//!
//! fn config() -> Criterion {
//!     Criterion::default().with_profiler(PerflensProfiler::new(1000))
//! }
//! criterion_group! { name = benches; config = config(); targets = my_bench }
//! criterion_main!(benches);
//! ```
//! then `cargo bench --bench my_bench -- --profile-time 5`.

use std::fs::File;
use std::io::Write;
use std::marker::PhantomData;
use std::path::Path;

pub use criterion::profiler::Profiler;

use crate::flamegraph::Options as FlamegraphOptions;
use crate::{ProfilerGuard, ProfilerGuardBuilder};

/// Profiles each benchmark; writes a flamegraph and a pprof file for it.
pub struct PerflensProfiler {
    builder: ProfilerGuardBuilder,
    active: Option<ProfilerGuard<'static>>,
}

impl PerflensProfiler {
    /// Sampling at `frequency` Hz with default settings.
    pub fn new(frequency: i32) -> Self {
        Self::with_builder(ProfilerGuardBuilder::default().frequency(frequency))
    }

    /// Sampling with a configured builder.
    pub fn with_builder(builder: ProfilerGuardBuilder) -> Self {
        PerflensProfiler {
            builder,
            active: None,
        }
    }
}

impl PerflensProfiler {
    fn start(&mut self, benchmark_id: &str) {
        self.active = started(benchmark_id, self.builder.clone().build());
    }

    fn stop(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        write_profile(benchmark_id, benchmark_dir, self.active.take(), |report| {
            report.flamegraph(File::create(benchmark_dir.join("flamegraph.svg"))?)?;
            report.write_pprof(File::create(benchmark_dir.join("profile.pb.gz"))?)
        });
    }
}

/// The guard of a benchmark's sampling, or `None` (said on stderr).
fn started<'a>(
    benchmark_id: &str,
    guard: Result<ProfilerGuard<'a>, crate::SamplerError>,
) -> Option<ProfilerGuard<'a>> {
    guard
        .map_err(|e| eprintln!("perflens-sampler: cannot profile {benchmark_id}: {e}"))
        .ok()
}

/// Stops `guard` (if sampling started) and lets `write` write its
/// profile into `benchmark_dir` (made first); a failure is said on
/// stderr, never fails the benchmark.
fn write_profile(
    benchmark_id: &str,
    benchmark_dir: &Path,
    guard: Option<ProfilerGuard<'_>>,
    write: impl FnOnce(&crate::CpuProfile) -> Result<(), crate::SamplerError>,
) {
    let Some(guard) = guard else { return };
    let result = guard.stop().build().and_then(|report| {
        std::fs::create_dir_all(benchmark_dir)?;
        write(&report)
    });
    if let Err(e) = result {
        eprintln!("perflens-sampler: cannot write the profile of {benchmark_id}: {e}");
    }
}

/// What [`PProfProfiler`] writes into each benchmark's directory.
#[allow(clippy::large_enum_variant)]
pub enum Output<'a> {
    /// `flamegraph.svg`, with these inferno options (default: a CPU
    /// flamegraph, widths in µs of CPU time).
    Flamegraph(Option<FlamegraphOptions<'a>>),
    /// `profile.pb`: the uncompressed `profile.proto` bytes (`go tool
    /// pprof` reads them).
    Protobuf,
    /// Only there to use the lifetime (pprof-rs's variant); never made.
    #[doc(hidden)]
    #[deprecated(note = "carries the lifetime only; not an output")]
    _Phantom(PhantomData<&'a ()>),
}

/// pprof-rs's criterion profiler: samples each benchmark at `frequency` Hz
/// and writes one [`Output`].
pub struct PProfProfiler<'a, 'b> {
    frequency: i32,
    output: Output<'b>,
    active: Option<ProfilerGuard<'a>>,
}

impl<'b> PProfProfiler<'_, 'b> {
    /// Sampling at `frequency` Hz, writing `output`.
    pub fn new(frequency: i32, output: Output<'b>) -> Self {
        PProfProfiler {
            frequency,
            output,
            active: None,
        }
    }

    fn start(&mut self, benchmark_id: &str) {
        self.active = started(benchmark_id, ProfilerGuard::new(self.frequency));
    }

    fn stop(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        let output = &mut self.output;
        write_profile(benchmark_id, benchmark_dir, self.active.take(), |report| {
            #[allow(deprecated)]
            match output {
                Output::Flamegraph(None) => {
                    report.flamegraph(File::create(benchmark_dir.join("flamegraph.svg"))?)?
                }
                Output::Flamegraph(Some(opts)) => report.flamegraph_with_options(
                    File::create(benchmark_dir.join("flamegraph.svg"))?,
                    opts,
                )?,
                Output::Protobuf => File::create(benchmark_dir.join("profile.pb"))?
                    .write_all(&report.pprof_proto())?,
                Output::_Phantom(_) => {}
            }
            Ok(())
        });
    }
}

/// Both profilers under both criterion versions' `Profiler` traits.
macro_rules! profiler_impls {
    ($($profiler:ty => $($trait_:ident)::+;)*) => {$(
        impl $($trait_)::+ for $profiler {
            fn start_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
                self.start(benchmark_id);
            }

            fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
                self.stop(benchmark_id, benchmark_dir);
            }
        }
    )*};
}

profiler_impls! {
    PerflensProfiler => criterion::profiler::Profiler;
    PerflensProfiler => criterion05::profiler::Profiler;
    PProfProfiler<'_, '_> => criterion::profiler::Profiler;
    PProfProfiler<'_, '_> => criterion05::profiler::Profiler;
}
