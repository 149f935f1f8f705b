//! Heap profiling (feature `heap`): a small service that keeps a cache,
//! leaks a little on every request by mistake, and churns through
//! buffers. The report's heap section shows what holds memory while it
//! runs and what was still live at exit: the leak, by its path.
//!
//! ```text
//! cargo run --release -p perflens --example heap --features heap
//! PERFLENS_HEAP_RATE=65536 PERFLENS_PPROF_HEAP=heap.pb.gz cargo run --release -p perflens --example heap --features heap
//! go tool pprof -sample_index=inuse_space -top heap.pb.gz
//! ```

use std::collections::HashMap;

/// One parsed record: its fields, kept in the cache.
#[perflens::measure]
fn parse(line: &str) -> Vec<String> {
    line.split(',').map(str::to_owned).collect()
}

/// A response buffer, freed when the request ends.
#[perflens::measure]
fn render(fields: &[String]) -> usize {
    let mut out = String::with_capacity(4096);
    for f in fields {
        out.push_str(f);
        out.push('\n');
    }
    out.len()
}

/// The bug: an audit record per request, pushed onto a list that nothing
/// ever reads or clears.
#[perflens::measure]
fn audit(log: &mut Vec<Vec<u8>>, id: u64) {
    let mut rec = vec![0u8; 512];
    rec[..8].copy_from_slice(&id.to_le_bytes());
    log.push(rec);
}

#[perflens::measure]
fn request(cache: &mut HashMap<u64, Vec<String>>, log: &mut Vec<Vec<u8>>, id: u64) -> usize {
    let key = id % 20_000;
    let fields = cache
        .entry(key)
        .or_insert_with(|| parse(&format!("{key},alpha,beta,gamma,delta,{}", key * 7)));
    let n = render(fields);
    audit(log, id);
    n
}

#[perflens::main]
fn main() {
    let mut cache = HashMap::new();
    // Leaked on purpose: the audit log outlives main.
    let log: &'static mut Vec<Vec<u8>> = Box::leak(Box::new(Vec::new()));
    let iters: u64 = std::env::var("PERFLENS_EXAMPLE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let mut bytes = 0;
    for id in 0..iters {
        bytes += request(&mut cache, log, id);
    }
    drop(cache);
    println!("served {iters} requests, {bytes} bytes");
}
