//! Shape from bytebeamio/rumqtt (benchmarks/parsers/common.rs): a helper
//! taking the guard by value with its lifetime elided
//! (`guard: ProfilerGuard`), writing the encoded profile under a name.

use pprof::{protos::Message, ProfilerGuard};
use std::fs::File;
use std::io::Write;

pub fn profile(name: &str, guard: ProfilerGuard) {
    if let Ok(report) = guard.report().build() {
        let mut file = File::create(name).unwrap();
        let profile = report.pprof().unwrap();
        let mut content = Vec::new();
        profile.encode(&mut content).unwrap();
        file.write_all(&content).unwrap();
    };
}

fn main() {
    let out = pprof_compat::out_dir();
    let guard = pprof::ProfilerGuard::new(100).unwrap();
    pprof_compat::burn_cpu(300);
    profile(out.join("rumqtt.pb").to_str().unwrap(), guard);
}
