//! Shape of tikv/pprof-rs's own examples/profile_proto_with_protobuf_codec.rs:
//! `report.pprof()` as rust-protobuf's `Profile`, serialized with
//! `write_to_bytes` (through `pprof::protos::Message`) into `profile.pb`,
//! the report also printed with `{:?}`.

use pprof::protos::Message;
use std::fs::File;
use std::io::Write;

fn main() {
    let out = pprof_compat::out_dir();
    let guard = pprof::ProfilerGuard::new(100).unwrap();
    pprof_compat::burn_cpu(300);
    if let Ok(report) = guard.report().build() {
        let mut file = File::create(out.join("profile.pb")).unwrap();
        let profile = report.pprof().unwrap();
        let content = profile.write_to_bytes().unwrap();
        file.write_all(&content).unwrap();
        println!("report: {:?}", &report);
    };
}
