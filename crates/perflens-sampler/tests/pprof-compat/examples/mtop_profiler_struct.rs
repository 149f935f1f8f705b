//! Shape from 56quarters/mtop (mtop/src/profile.rs): a long-lived profiler
//! struct holding `ProfilerGuard<'static>`, built from `c_int` and slice
//! constants, whose `proto()` encodes a report with `pprof::protos::Message`
//! each time it is asked (reports taken more than once from one guard).

use pprof::protos::Message;
use pprof::{ProfilerGuard, ProfilerGuardBuilder};
use std::ffi::c_int;

const PROFILE_FREQUENCY_HZ: c_int = 999;
const PROFILE_BLOCK_LIST: &[&str] = &["libc", "libgcc", "pthread", "vdso"];

pub struct Profiler {
    guard: ProfilerGuard<'static>,
}

impl Profiler {
    pub fn new() -> Self {
        let guard = ProfilerGuardBuilder::default()
            .frequency(PROFILE_FREQUENCY_HZ)
            .blocklist(PROFILE_BLOCK_LIST)
            .build()
            .unwrap();
        Self { guard }
    }

    pub fn proto(&self) -> Result<Vec<u8>, String> {
        let profile = self
            .guard
            .report()
            .build()
            .map_err(|e| format!("report: {e}"))?
            .pprof()
            .map_err(|e| format!("pprof: {e}"))?;
        let mut buf = Vec::with_capacity(profile.encoded_len());
        profile
            .encode(&mut buf)
            .map_err(|e| format!("encode: {e}"))?;
        Ok(buf)
    }
}

fn main() {
    let out = pprof_compat::out_dir();
    let profiler = Profiler::new();
    pprof_compat::burn_cpu(150);
    let first = profiler.proto().unwrap();
    pprof_compat::burn_cpu(150);
    let second = profiler.proto().unwrap();
    std::fs::write(out.join("first.pb"), first).unwrap();
    std::fs::write(out.join("second.pb"), second).unwrap();
}
