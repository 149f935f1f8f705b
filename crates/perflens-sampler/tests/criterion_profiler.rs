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

/// pprof-rs's profiler, driven through criterion 0.8's trait: one file
/// per `Output`, in the benchmark's directory.
#[test]
fn pprof_profiler_writes_the_output_it_is_given() {
    use perflens_sampler::criterion::{Output, PProfProfiler};
    let _s = serial();
    let dir = std::env::temp_dir().join(format!("perflens-crit-pprof-{}", std::process::id()));
    let mut options = perflens_sampler::flamegraph::Options::default();
    options.title = "titled by the bench".into();
    let outputs = [
        ("svg", Output::Flamegraph(Some(options)), "flamegraph.svg"),
        ("pb", Output::Protobuf, "profile.pb"),
    ];
    for (id, output, file) in outputs {
        let bench_dir = dir.join(id);
        let mut p = PProfProfiler::new(1000, output);
        p.start_profiling(id, &bench_dir);
        busy_for(Duration::from_millis(50));
        p.stop_profiling(id, &bench_dir);
        let bytes = std::fs::read(bench_dir.join(file)).unwrap();
        let names: Vec<_> = std::fs::read_dir(&bench_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [file], "{id}: one file");
        if id == "svg" {
            let svg = String::from_utf8(bytes).unwrap();
            assert!(
                svg.contains(">titled by the bench<") && svg.contains("leaf_spin"),
                "{svg}"
            );
        } else {
            // Uncompressed profile.proto: its first field is a sample type.
            assert_eq!(bytes[0], 1 << 3 | 2, "profile.pb starts with field 1");
            assert!(bytes.windows(9).any(|w| w == b"leaf_spin"));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
