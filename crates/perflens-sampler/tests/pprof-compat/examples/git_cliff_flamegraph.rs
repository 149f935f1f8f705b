//! Shape from orhun/git-cliff (git-cliff/src/profiler.rs): the guard lives
//! in an `Option<pprof::ProfilerGuard<'static>>` from a builder with a
//! blocklist; at the end the `Option` is handed over, a report built and a
//! flamegraph written.

fn start_profiling() -> Option<pprof::ProfilerGuard<'static>> {
    match pprof::ProfilerGuardBuilder::default()
        .frequency(1000)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
    {
        Ok(guard) => Some(guard),
        Err(e) => {
            eprintln!("failed to build profiler guard: {e}");
            None
        }
    }
}

fn finish_profiling(profiler_guard: Option<pprof::ProfilerGuard>) -> Result<(), String> {
    let report = profiler_guard
        .expect("the profiler started")
        .report()
        .build()
        .map_err(|e| e.to_string())?;
    let file = std::fs::File::create(pprof_compat::out_dir().join("flamegraph.svg"))
        .map_err(|e| e.to_string())?;
    report.flamegraph(file).map_err(|e| e.to_string())
}

fn main() {
    let guard = start_profiling();
    pprof_compat::burn_cpu(300);
    finish_profiling(guard).unwrap();
}
