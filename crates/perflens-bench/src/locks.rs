//! Cost of a measured lock (issue 14: an uncontended lock and unlock
//! adds at most 15 ns).
//!
//! One thread locks and unlocks one mutex `n` times, incrementing the
//! value under the lock: a bare `std::sync::Mutex`, a
//! `perflens::sync::Mutex` in a timed session (TSC clock) and outside
//! any session, and hotpath 0.30's `mutex!` wrapper of a std mutex under
//! a hotpath guard; then a bare `parking_lot::Mutex` and std `RwLock`
//! (read, write) against measured ones. Each round runs all of them, bare first; the results
//! are the medians over rounds of the per-round ns per lock+unlock, of
//! the differences with bare, and of the ratios.

use std::hint::black_box;
use std::time::Instant;

/// How the lock of a run is made.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// `std::sync::Mutex`.
    Bare,
    /// `perflens::sync::Mutex`, in a timed session.
    Perflens,
    /// `perflens::sync::Mutex`, with no session running.
    PerflensIdle,
    /// `hotpath::mutex!(std::sync::Mutex::new(..))` under a guard.
    Hotpath,
    /// `parking_lot::Mutex`.
    ParkingLotBare,
    /// `perflens::sync::parking_lot::Mutex`, in a timed session.
    ParkingLot,
    /// `std::sync::RwLock`, written.
    RwWriteBare,
    /// `perflens::sync::RwLock`, written, in a timed session.
    RwWrite,
    /// `std::sync::RwLock`, read.
    RwReadBare,
    /// `perflens::sync::RwLock`, read, in a timed session.
    RwRead,
}

/// `n` write (or read) acquisitions of a std-like `RwLock` made by `new`.
macro_rules! rw_loop {
    ($new:expr, $n:expr, $write:expr) => {{
        let m = $new;
        let start = Instant::now();
        if $write {
            for i in 0..$n {
                *black_box(&m).write().unwrap() += i;
            }
        } else {
            for _ in 0..$n {
                black_box(*black_box(&m).read().unwrap());
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / $n as f64;
        black_box(m.into_inner().unwrap());
        ns
    }};
}

fn bare(n: u64) -> f64 {
    let m = std::sync::Mutex::new(0u64);
    let start = Instant::now();
    for i in 0..n {
        *black_box(&m).lock().unwrap() += i;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    black_box(m.into_inner().unwrap());
    ns
}

fn measured(n: u64) -> f64 {
    let m = perflens::lock!(perflens::sync::Mutex::new(0u64), label = "bench::lock");
    let start = Instant::now();
    for i in 0..n {
        *black_box(&m).lock().unwrap() += i;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    black_box(m.into_inner().unwrap());
    ns
}

fn hotpath_lock(n: u64) -> f64 {
    let m = hotpath::mutex!(std::sync::Mutex::new(0u64));
    let start = Instant::now();
    for i in 0..n {
        *black_box(&m).lock().unwrap() += i;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    black_box(m.into_inner().unwrap());
    ns
}

fn pl_bare(n: u64) -> f64 {
    let m = parking_lot::Mutex::new(0u64);
    let start = Instant::now();
    for i in 0..n {
        *black_box(&m).lock() += i;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    black_box(m.into_inner());
    ns
}

fn pl_measured(n: u64) -> f64 {
    let m = perflens::lock!(
        perflens::sync::parking_lot::Mutex::new(0u64),
        label = "bench::lock"
    );
    let start = Instant::now();
    for i in 0..n {
        *black_box(&m).lock() += i;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    black_box(m.into_inner());
    ns
}

/// ns per lock+unlock of `n` of `kind`. The perflens run checks that
/// its session counted and timed every acquisition.
pub fn run(kind: Kind, n: u64) -> f64 {
    match kind {
        Kind::Bare => bare(n),
        Kind::ParkingLotBare => pl_bare(n),
        Kind::RwWriteBare => rw_loop!(std::sync::RwLock::new(0u64), n, true),
        Kind::RwReadBare => rw_loop!(std::sync::RwLock::new(0u64), n, false),
        Kind::RwWrite | Kind::RwRead => {
            let session = perflens::Session::builder()
                .ignore_env()
                .mode(perflens::Mode::Timed)
                .clock(perflens::ClockSource::Tsc)
                .start()
                .expect("no other session");
            let ns = rw_loop!(
                perflens::lock!(perflens::sync::RwLock::new(0u64), label = "bench::lock"),
                n,
                kind == Kind::RwWrite
            );
            let report = session.finish();
            let row = (report.locks.iter().find(|r| r.name == "bench::lock"))
                .expect("the lock has a row");
            assert_eq!(row.acquisitions, n, "perflens must count every acquisition");
            ns
        }
        Kind::PerflensIdle => measured(n),
        Kind::Perflens | Kind::ParkingLot => {
            let session = perflens::Session::builder()
                .ignore_env()
                .mode(perflens::Mode::Timed)
                .clock(perflens::ClockSource::Tsc)
                .start()
                .expect("no other session");
            let ns = if kind == Kind::Perflens {
                measured(n)
            } else {
                pl_measured(n)
            };
            let report = session.finish();
            let row = (report.locks.iter().find(|r| r.name == "bench::lock"))
                .expect("the lock has a row");
            assert_eq!(row.acquisitions, n, "perflens must count every acquisition");
            assert_eq!(row.hold_count, n, "and time every hold");
            ns
        }
        Kind::Hotpath => {
            let guard = hotpath::HotpathGuardBuilder::new("perflens-bench-locks")
                .format(hotpath::Format::None)
                .build();
            let ns = hotpath_lock(n);
            drop(guard);
            ns
        }
    }
}

/// Prints the per-round medians.
pub fn report(n: u64, rounds: usize) {
    let kinds = [
        Kind::Bare,
        Kind::Perflens,
        Kind::PerflensIdle,
        Kind::Hotpath,
        Kind::ParkingLotBare,
        Kind::ParkingLot,
        Kind::RwReadBare,
        Kind::RwRead,
        Kind::RwWriteBare,
        Kind::RwWrite,
    ];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..rounds {
        for (i, &k) in kinds.iter().enumerate() {
            ns[i].push(run(k, n));
        }
    }
    let med = |i: usize| crate::stats::median(ns[i].clone());
    let added =
        |i: usize| crate::stats::median(ns[i].iter().zip(&ns[0]).map(|(x, b)| x - b).collect());
    let ratio = |i: usize, j: usize| {
        crate::stats::median(ns[i].iter().zip(&ns[j]).map(|(x, b)| x / b).collect())
    };
    println!(
        "uncontended lock+unlock, 1 thread, N = {n}: std Mutex {:.2} ns; perflens::sync::Mutex timed {:.2} ns (added {:.2} ns, x{:.2}; goal <= 15 ns added), no session {:.2} ns (added {:.2} ns); hotpath 0.30 mutex! {:.2} ns (added {:.2} ns, hotpath/perflens x{:.2}) (medians over rounds)",
        med(0),
        med(1),
        added(1),
        ratio(1, 0),
        med(2),
        added(2),
        med(3),
        added(3),
        ratio(3, 1),
    );
    let vs = |i: usize, j: usize| {
        crate::stats::median(ns[i].iter().zip(&ns[j]).map(|(x, b)| x - b).collect())
    };
    println!(
        "uncontended, 1 thread, N = {n}, perflens timed against the original: parking_lot Mutex {:.2} -> {:.2} ns (added {:.2} ns); std RwLock read {:.2} -> {:.2} ns (added {:.2} ns), write {:.2} -> {:.2} ns (added {:.2} ns) (medians over rounds)",
        med(4),
        med(5),
        vs(5, 4),
        med(6),
        med(7),
        vs(7, 6),
        med(8),
        med(9),
        vs(9, 8),
    );
}
