//! A criterion [`Profiler`] (feature
//! `criterion`): samples each benchmark while criterion runs it with
//! `--profile-time`, and writes `flamegraph.svg` and `profile.pb.gz` into
//! the benchmark's output directory.
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
use std::path::Path;

pub use criterion::profiler::Profiler;

use crate::{ProfilerGuard, ProfilerGuardBuilder};

/// Profiles each benchmark; writes a flamegraph and a pprof file for it.
pub struct PerflensProfiler {
    builder: ProfilerGuardBuilder,
    active: Option<ProfilerGuard>,
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

impl Profiler for PerflensProfiler {
    fn start_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
        match self.builder.clone().build() {
            Ok(g) => self.active = Some(g),
            Err(e) => eprintln!("perflens-sampler: cannot profile {benchmark_id}: {e}"),
        }
    }

    fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        let Some(guard) = self.active.take() else {
            return;
        };
        let result = (|| -> Result<(), crate::SamplerError> {
            let report = guard.stop().build()?;
            std::fs::create_dir_all(benchmark_dir)?;
            report.flamegraph(File::create(benchmark_dir.join("flamegraph.svg"))?)?;
            report.write_pprof(File::create(benchmark_dir.join("profile.pb.gz"))?)?;
            Ok(())
        })();
        if let Err(e) = result {
            eprintln!("perflens-sampler: cannot write the profile of {benchmark_id}: {e}");
        }
    }
}
