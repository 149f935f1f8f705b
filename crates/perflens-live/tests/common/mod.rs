//! The measured workload of the live reader's test programs (each test
//! binary runs itself again as the program).

use std::time::Instant;

#[perflens::measure]
pub fn parse(n: u64) -> u64 {
    let v: Vec<u64> = (0..n).collect();
    std::hint::black_box(v.iter().sum())
}

#[perflens::measure]
pub fn spin(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
    }
    x
}

#[perflens::measure]
pub fn request(i: u64) -> u64 {
    parse(64 + i % 64) + spin(20_000)
}

/// Requests until `until`.
#[perflens::measure]
pub fn worker(id: u64, until: Instant) -> u64 {
    let mut acc = 0;
    let mut i = id;
    while Instant::now() < until {
        acc ^= request(i);
        i += 1;
    }
    acc
}
