//! `#[perflens::main(allocator = mimalloc::MiMalloc)]`
//! (`examples/custom_allocator.rs`, built by the test): the memory comes
//! from mimalloc and perflens counts it exactly.
// mimalloc is a dev-dependency on Linux only (see Cargo.toml).
#![cfg(all(feature = "alloc", target_os = "linux"))]

mod common;
use common::example;
use std::process::Command;

#[test]
fn a_custom_allocator_is_counted() {
    let json = std::env::temp_dir().join(format!("perflens-mimalloc-{}.json", std::process::id()));
    let out = Command::new(example("custom_allocator"))
        .env("PERFLENS_JSON", &json)
        .env("PERFLENS_FORMAT", "none")
        .output()
        .expect("run examples/custom_allocator");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("buffers come from mimalloc"), "{stderr}");
    let report = perflens::Report::from_json_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).ok();
    let fill = report.function("custom_allocator::fill").unwrap();
    // fill(1000 + i) for i in 0..10: one Vec<u64> of that capacity each.
    assert_eq!(fill.calls, 10);
    assert_eq!(fill.alloc.map(|a| a.count), Some(10));
    assert_eq!(fill.alloc.map(|a| a.bytes), Some(8 * (10 * 1000 + 45)));
    assert_eq!(
        fill.alloc.map(|a| a.free_bytes),
        Some(0),
        "the buffers are returned, not freed"
    );
}
