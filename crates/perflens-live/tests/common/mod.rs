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

/// The programs' session: CPU-sampled, published (the tests run them
/// with `PERFLENS_LIVE=1`).
pub fn live_session() -> perflens::Session {
    let session = perflens::Session::builder()
        .cpu_sampling(true)
        .start()
        .expect("a session");
    assert!(session.live_dir().is_some(), "PERFLENS_LIVE=1 publishes");
    session
}

/// `threads` workers named `w0`, `w1`, ... and the calling thread (as
/// worker `main_id`), all making requests until `until`.
pub fn run_workers(threads: u64, main_id: u64, until: Instant) -> u64 {
    let spawned: Vec<_> = (0..threads)
        .map(|id| {
            std::thread::Builder::new()
                .name(format!("w{id}"))
                .spawn(move || worker(id, until))
                .unwrap()
        })
        .collect();
    let mut acc = worker(main_id, until);
    for t in spawned {
        acc ^= t.join().unwrap();
    }
    acc
}
