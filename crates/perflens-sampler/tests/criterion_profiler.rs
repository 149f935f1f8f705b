//! The criterion profiler writes a flamegraph and a pprof file per
//! benchmark (driven here the way criterion drives it).
// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#![cfg(all(
    feature = "criterion",
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod common;
use common::*;
use perflens_sampler::criterion::{PerflensProfiler, Profiler};
use std::time::Duration;

#[test]
fn writes_flamegraph_and_pprof_per_benchmark() {
    let _s = serial();
    let dir = std::env::temp_dir().join(format!("perflens-crit-{}", std::process::id()));
    let mut p = PerflensProfiler::new(1000);
    for id in ["a", "b"] {
        let bench_dir = dir.join(id);
        p.start_profiling(id, &bench_dir);
        busy_for(Duration::from_millis(50));
        p.stop_profiling(id, &bench_dir);
        let svg = std::fs::read_to_string(bench_dir.join("flamegraph.svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("leaf_spin"), "{id}");
        let pb = std::fs::read(bench_dir.join("profile.pb.gz")).unwrap();
        assert_eq!(&pb[..2], &[0x1f, 0x8b], "{id}: gzip");
    }
    std::fs::remove_dir_all(&dir).ok();
}
