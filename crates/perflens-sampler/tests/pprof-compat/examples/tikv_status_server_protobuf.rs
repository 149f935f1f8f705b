//! Shape from tikv/tikv (components/server/src/status_server/profile.rs)
//! with pprof-rs's `protobuf-codec`: an `on_end` closure taking
//! `pprof::ProfilerGuard<'static>`, a thread-name post processor, and
//! `report.pprof()?.write_to_vec(&mut body)` (rust-protobuf's `Message`),
//! or a flamegraph.

use pprof::protos::Message;

fn extract_thread_name(thread_name: &str) -> String {
    thread_name
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '-')
        .to_string()
}

fn main() {
    let out = pprof_compat::out_dir();
    let on_start = || {
        pprof::ProfilerGuard::new(99).map_err(|e| format!("pprof::ProfilerGuard::new fail: {e}"))
    };
    let on_end =
        move |guard: pprof::ProfilerGuard<'static>, protobuf: bool| -> Result<Vec<u8>, String> {
            let report = guard
                .report()
                .frames_post_processor(move |frames| {
                    let name = extract_thread_name(&frames.thread_name);
                    frames.thread_name = name;
                })
                .build()
                .map_err(|e| format!("create cpu profiling report fail: {e}"))?;
            let mut body = Vec::new();
            if protobuf {
                let profile = report
                    .pprof()
                    .map_err(|e| format!("generate pprof fail: {e}"))?;
                profile
                    .write_to_vec(&mut body)
                    .map_err(|e| format!("encode pprof into bytes fail: {e}"))?;
            } else {
                report
                    .flamegraph(&mut body)
                    .map_err(|e| format!("generate flamegraph fail: {e}"))?;
            }
            Ok(body)
        };
    let guard = on_start().unwrap();
    std::thread::Builder::new()
        .name("sched-worker-2".into())
        .spawn(|| pprof_compat::burn_cpu(300))
        .unwrap()
        .join()
        .unwrap();
    std::fs::write(out.join("tikv.pb"), on_end(guard, true).unwrap()).unwrap();
    let guard = on_start().unwrap();
    pprof_compat::burn_cpu(200);
    std::fs::write(out.join("tikv.svg"), on_end(guard, false).unwrap()).unwrap();
}
