//! Shape from ScuffleCloud/scuffle (crates/pprof/src/cpu.rs): a `Cpu`
//! newtype keeping a configured `pprof::ProfilerGuardBuilder` (cloned per
//! capture), a capture of a fixed duration encoded with
//! `pprof::protos::Message` and gzipped with flate2.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use pprof::protos::Message;

pub struct Cpu(pprof::ProfilerGuardBuilder);

impl Cpu {
    pub fn new<S: AsRef<str>>(frequency: i32, blocklist: &[S]) -> Self {
        Self(
            pprof::ProfilerGuardBuilder::default()
                .frequency(frequency)
                .blocklist(blocklist),
        )
    }

    pub fn capture(&self, work: impl FnOnce()) -> Result<Vec<u8>, String> {
        let profiler = self.0.clone().build().map_err(|e| e.to_string())?;
        work();
        let report = profiler.report().build().map_err(|e| e.to_string())?;
        let pprof = report.pprof().map_err(|e| e.to_string())?;
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&pprof.encode_to_vec())
            .map_err(|e| e.to_string())?;
        gz.finish().map_err(|e| e.to_string())
    }
}

fn main() {
    let out = pprof_compat::out_dir();
    let cpu = Cpu::new::<String>(1000, &[]);
    let capture = cpu
        .capture(|| {
            pprof_compat::burn_cpu(300);
        })
        .unwrap();
    std::fs::write(out.join("capture.pprof"), capture).unwrap();
}
