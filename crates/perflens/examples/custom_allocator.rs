//! `#[perflens::main(allocator = ...)]` with mimalloc: perflens counts
//! what mimalloc serves.
//!
//! ```text
//! cargo run --release -p perflens --example custom_allocator --features alloc
//! ```
//!
//! It checks that the memory really comes from mimalloc and exits with an
//! error if not; the JSON report (`PERFLENS_JSON`) carries the counts.

#[cfg(target_os = "linux")]
use std::hint::black_box;

#[cfg(target_os = "linux")]
#[perflens::measure]
fn fill(n: usize) -> Vec<u64> {
    let mut v = Vec::with_capacity(n);
    v.extend(0..n as u64);
    v
}

#[cfg(target_os = "linux")]
#[perflens::main(allocator = mimalloc::MiMalloc)]
fn main() {
    let mut kept = Vec::new();
    for i in 0..10 {
        kept.push(black_box(fill(1000 + i)));
    }
    let p = kept[0].as_ptr() as *const std::ffi::c_void;
    // SAFETY: mi_is_in_heap_region only inspects the address.
    let from_mimalloc = unsafe { libmimalloc_sys::mi_is_in_heap_region(p) };
    if !from_mimalloc {
        eprintln!("custom_allocator: the buffers did not come from mimalloc");
        std::process::exit(1);
    }
    eprintln!("custom_allocator: buffers come from mimalloc");
}

/// mimalloc is a dev-dependency on Linux only (its C build needs the
/// target's C compiler, which the cross-target checks do not have).
#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("custom_allocator: this example is built with mimalloc on Linux only");
}
