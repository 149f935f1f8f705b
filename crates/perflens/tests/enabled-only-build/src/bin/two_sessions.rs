//! Two sessions, one after the other, both reading the environment: the
//! environment is the process's, so its warnings are printed once.

#[perflens::measure]
fn work(n: u64) -> u64 {
    (0..n).fold(0, |a, b| a ^ b.wrapping_mul(0x9e37_79b9))
}

fn main() {
    for _ in 0..2 {
        let session = perflens::Session::start().expect("start a session");
        std::hint::black_box(work(std::hint::black_box(1000)));
        let report = session.finish();
        assert!(report.functions.iter().any(|f| f.name.ends_with("work")));
    }
    eprintln!("two sessions ran");
}
