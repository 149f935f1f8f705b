//! Shape from getsentry/sentry-rust (sentry-core/src/profiling.rs): a
//! newtype around `pprof::ProfilerGuard<'static>`, an unresolved report
//! whose stacks are instruction addresses, thread names as bytes with a
//! length, sample times against the report's start.

use std::time::SystemTime;

struct ProfilerGuard(pprof::ProfilerGuard<'static>);

fn get_profile_from_report(rep: &pprof::UnresolvedReport) -> Vec<String> {
    let mut lines = Vec::new();
    for sample in rep.data.keys() {
        let frames: Vec<String> = sample
            .frames
            .iter()
            .map(|f| format!("{:p}", f.ip()))
            .collect();
        let thread_name =
            String::from_utf8_lossy(&sample.thread_name[0..sample.thread_name_length]).into_owned();
        let nanos = sample
            .sample_timestamp
            .duration_since(rep.timing.start_time)
            .unwrap()
            .as_nanos() as u64;
        lines.push(format!(
            "thread={thread_name} tid={} frames={} first={} nanos={nanos}",
            sample.thread_id,
            frames.len(),
            frames[0]
        ));
    }
    let start = rep
        .timing
        .start_time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    lines.push(format!(
        "start_secs={} duration_nanos={} samples={}",
        start.as_secs(),
        rep.timing.duration.as_nanos(),
        rep.data.values().sum::<isize>()
    ));
    lines
}

fn main() {
    let out = pprof_compat::out_dir();
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(100)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
        .map(ProfilerGuard)
        .unwrap();
    std::thread::Builder::new()
        .name("sentry-worker".into())
        .spawn(|| pprof_compat::burn_cpu(300))
        .unwrap()
        .join()
        .unwrap();
    let report = guard.0.report().build_unresolved().unwrap();
    std::fs::write(
        out.join("unresolved.txt"),
        get_profile_from_report(&report).join("\n"),
    )
    .unwrap();
}
