//! A session started by `#[perflens::main]`, in a build without `cpu` or
//! `http`.

#[perflens::measure]
fn work(n: u64) -> u64 {
    (0..n).fold(0, |a, b| a ^ b.wrapping_mul(0x9e37_79b9))
}

#[perflens::main]
fn main() {
    std::hint::black_box(work(std::hint::black_box(1000)));
}
