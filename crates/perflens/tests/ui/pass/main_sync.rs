//! `#[perflens::main]` with every option, on a `main` returning `Result`.
#![deny(warnings)]

#[perflens::measure]
fn work(n: u64) -> u64 {
    (0..n).sum()
}

#[perflens::main(percentiles = [50, 95, 99.9], limit = 5, format = "none", mode = "sampled", sample_every = 2)]
fn main() -> Result<(), std::num::ParseIntError> {
    let n: u64 = "100".parse()?;
    for _ in 0..10 {
        std::hint::black_box(work(n));
    }
    if n == 0 {
        return Ok(()); // early return keeps working
    }
    Ok(())
}
