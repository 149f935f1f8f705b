//! Shape from aptos-labs/aptos-core (its node's CPU profiling handler),
//! with pprof-rs's `protobuf-codec`: `pprof::ProfilerGuard::new(frequency)`
//! with errors formatted by `{e:?}`, a post processor that drops frames
//! (`frames.frames.retain(...)` on `Symbol::name()`), and the profile
//! written with rust-protobuf's `write_to_vec`.

use pprof::protos::Message;

fn frames_post_processor() -> impl Fn(&mut pprof::Frames) {
    move |frames| {
        // Keep no frame of the standard library's thread start-up.
        frames
            .frames
            .retain(|frame| !frame.iter().any(|s| s.name().starts_with("std::sys::")));
    }
}

fn cpu_profile(frequency: i32, use_proto: bool) -> Result<Vec<u8>, String> {
    let guard = pprof::ProfilerGuard::new(frequency)
        .map_err(|e| format!("Failed to start cpu profiling: {e:?}."))?;
    pprof_compat::burn_cpu(300);
    let mut body = Vec::new();
    let report = guard
        .report()
        .frames_post_processor(frames_post_processor())
        .build()
        .map_err(|e| format!("Failed to generate cpu profiling report: {e:?}."))?;
    if use_proto {
        report
            .pprof()
            .map_err(|e| format!("Failed to generate proto report: {e:?}."))?
            .write_to_vec(&mut body)
            .map_err(|e| format!("Failed to serialize proto report: {e:?}."))?;
    } else {
        report
            .flamegraph(&mut body)
            .map_err(|e| format!("Failed to generate flamegraph: {e:?}."))?;
    }
    Ok(body)
}

fn main() {
    let out = pprof_compat::out_dir();
    std::fs::write(out.join("aptos.pb"), cpu_profile(100, true).unwrap()).unwrap();
}
