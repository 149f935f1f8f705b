//! Shape from pyroscope-io/pyroscope-rs (its pprof backend,
//! pyroscope_backends/src/pprof.rs): a `#[derive(Default)]` backend struct
//! generic over the guard's lifetime, holding `Option<ProfilerGuardBuilder>`
//! and `Option<ProfilerGuard<'a>>`; initialize, then a report whose
//! `data` it turns into folded lines ("stack count"), then a new guard
//! for the next period.

use pprof::{ProfilerGuard, ProfilerGuardBuilder, Report};

#[derive(Default)]
pub struct Pprof<'a> {
    inner_builder: Option<ProfilerGuardBuilder>,
    guard: Option<ProfilerGuard<'a>>,
}

impl Pprof<'_> {
    fn initialize(&mut self, sample_rate: i32) -> Result<(), pprof::Error> {
        let profiler = ProfilerGuardBuilder::default().frequency(sample_rate);
        self.inner_builder = Some(profiler);
        self.guard = Some(self.inner_builder.clone().unwrap().build()?);
        Ok(())
    }

    fn report(&mut self) -> Result<Vec<u8>, pprof::Error> {
        let report = self.guard.as_ref().unwrap().report().build()?;
        let buffer = fold(&report);
        // Restart for the next period.
        self.guard = None;
        self.guard = Some(self.inner_builder.clone().unwrap().build()?);
        Ok(buffer)
    }
}

fn fold(report: &Report) -> Vec<u8> {
    let mut out = String::new();
    for (frames, count) in report.data.iter() {
        let stack: Vec<String> = frames
            .frames
            .iter()
            .rev()
            .map(|level| level.iter().map(|s| s.name()).collect::<Vec<_>>().join(";"))
            .collect();
        out.push_str(&format!("{} {}\n", stack.join(";"), count));
    }
    out.into_bytes()
}

fn main() {
    let out = pprof_compat::out_dir();
    let mut backend = Pprof::default();
    backend.initialize(100).unwrap();
    pprof_compat::burn_cpu(300);
    let first = backend.report().unwrap();
    pprof_compat::burn_cpu(100);
    let second = backend.report().unwrap();
    std::fs::write(out.join("period1.folded"), first).unwrap();
    std::fs::write(out.join("period2.folded"), second).unwrap();
}
