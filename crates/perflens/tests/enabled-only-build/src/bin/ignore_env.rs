//! A session built with `ignore_env()`: it reads no `PERFLENS_*`
//! variable, so it warns about none.

#[perflens::measure]
fn work(n: u64) -> u64 {
    (0..n).fold(0, |a, b| a ^ b.wrapping_mul(0x9e37_79b9))
}

fn main() {
    let session = perflens::Session::builder()
        .ignore_env()
        .start()
        .expect("start a session");
    std::hint::black_box(work(std::hint::black_box(1000)));
    drop(session.finish());
}
