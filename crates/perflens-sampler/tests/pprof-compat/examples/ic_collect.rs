//! Shape from dfinity/ic (rs/http_endpoints/async_utils or its pprof
//! collector): `collect(duration, frequency) -> Result<Report,
//! pprof::Error>` with `?` on `ProfilerGuard::new`, a thread-name post
//! processor, then `profile()` encoding the report's `pprof()`.

use pprof::protos::Message;
use pprof::{ProfilerGuard, Report};

fn extract_thread_name(thread_name: &str) -> String {
    thread_name
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '-')
        .to_string()
}

pub fn collect(frequency: i32) -> Result<Report, pprof::Error> {
    let guard = ProfilerGuard::new(frequency)?;
    let t = std::thread::Builder::new()
        .name("ic-worker-7".into())
        .spawn(|| pprof_compat::burn_cpu(300))
        .unwrap();
    t.join().unwrap();
    guard
        .report()
        .frames_post_processor(move |frames| {
            frames.thread_name = extract_thread_name(&frames.thread_name);
        })
        .build()
}

pub fn profile(frequency: i32) -> pprof::Result<Vec<u8>> {
    let report = collect(frequency)?;
    let mut body = Vec::new();
    report.pprof()?.encode(&mut body).expect("a Vec has room");
    Ok(body)
}

fn main() {
    let out = pprof_compat::out_dir();
    std::fs::write(out.join("ic.pb"), profile(250).unwrap()).unwrap();
}
