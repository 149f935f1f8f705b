//! Shape of tikv/pprof-rs's own examples/profile_proto_with_prost.rs: a
//! guard from `ProfilerGuard::new`, the report printed with `{:?}`, then
//! `pprof()` encoded with prost's `Message` (re-exported as
//! `pprof::protos::Message`) into `profile.pb`.

use pprof::protos::Message;
use std::fs::File;
use std::io::Write;

fn main() {
    let out = pprof_compat::out_dir();
    let guard = pprof::ProfilerGuard::new(100).unwrap();
    pprof_compat::burn_cpu(300);
    match guard.report().build() {
        Ok(report) => {
            let mut file = File::create(out.join("profile.pb")).unwrap();
            let profile = report.pprof().unwrap();
            let mut content = Vec::new();
            profile.encode(&mut content).unwrap();
            file.write_all(&content).unwrap();
            println!("report: {:?}", &report);
        }
        Err(_) => panic!("no report"),
    };
}
