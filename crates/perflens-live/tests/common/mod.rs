//! The measured workload of the live reader's test programs (each test
//! binary runs itself again as the program).

use std::time::{Duration, Instant};

/// The CPU time the program has used at least before its workers stop,
/// whatever the wall clock says: the tests check figures that need CPU
/// (over 100 samples at 1000 Hz, more than ten requests), and a program
/// that ran its wall-clock time on a loaded machine may have had little
/// of it.
pub const MIN_CPU: Duration = Duration::from_millis(300);

/// CPU time used by this process so far (every thread).
pub fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_PROCESS_CPUTIME_ID");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

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

/// Requests until `until` (or, when [`STOP_FILE`] names a file, until
/// that file exists, `until` being then only a cap), and until the
/// process has used [`MIN_CPU`].
#[perflens::measure]
pub fn worker(id: u64, until: Instant) -> u64 {
    let mut acc = 0;
    let mut i = id;
    let mut stopped = false;
    while (Instant::now() < until && !stopped) || process_cpu() < MIN_CPU {
        acc ^= request(i);
        i += 1;
        if i.is_multiple_of(16) {
            stopped = stop_file_exists();
        }
    }
    acc
}

/// The environment variable that names a test's stop file: a program run
/// with it works until the test creates the file, so that a test which
/// reads the program while it runs is bounded by what it reads, not by a
/// wall-clock time that a slow machine (or qemu) may spend elsewhere.
pub const STOP_FILE: &str = "LIVE_TEST_STOP_FILE";

fn stop_file_exists() -> bool {
    static PATH: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    PATH.get_or_init(|| std::env::var_os(STOP_FILE).map(Into::into))
        .as_ref()
        .is_some_and(|p| p.exists())
}

/// Whether the tests run under qemu-user (`scripts/test --aarch64` sets
/// `TEST_UNDER_QEMU`). A test whose subject qemu-user does not emulate
/// calls this with why, which it prints, and checks what it can instead.
#[allow(dead_code)]
pub fn under_qemu(why: &str) -> bool {
    let qemu = std::env::var_os("TEST_UNDER_QEMU").is_some();
    if qemu {
        eprintln!("under qemu-user, not checked: {why}");
    }
    qemu
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
/// worker `main_id`), all making requests until `until` (and
/// [`MIN_CPU`]).
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
