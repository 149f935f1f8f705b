//! `#[perflens::main(allocator = ...)]` declares the program's global
//! allocator: perflens' counting allocator around `System` with the
//! `alloc` feature, `System` itself without it.
#![deny(warnings)]

#[perflens::measure]
fn work(n: u64) -> usize {
    let v: Vec<u64> = (0..n).collect();
    v.len()
}

#[perflens::main(format = "none", allocator = std::alloc::System)]
fn main() {
    let mut total = 0;
    for _ in 0..10 {
        total += std::hint::black_box(work(100));
    }
    assert_eq!(total, 1_000);
}
