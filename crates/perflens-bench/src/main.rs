//! Overhead of `#[perflens::measure]` against an uninstrumented twin and
//! against `#[hotpath::measure]`, in one process, interleaved.
//!
//! ```text
//! cargo run --release -p perflens-bench            # N = 10,000,000
//! cargo run --release -p perflens-bench -- 1000000 # another N
//! cargo run --release -p perflens-bench --features alloc  # with `alloc` on
//! ```
//!
//! Each round runs every variant once, on 1 thread and then on 2 threads
//! at once, in a fixed order; the table shows the median over rounds
//! (`PERFLENS_BENCH_ROUNDS`, default 5). "added" is computed per round,
//! the variant minus the uninstrumented twin measured in the same round,
//! and the table shows the median of those differences; the ratios ("vs
//! 2 rdtsc", "hotpath/this") are per round too, against the `rdtsc` cost
//! and the hotpath run of that round. RSS growth is read from
//! `/proc/self/status` after 1,000,000 calls and after N calls of the same
//! run (single-threaded runs of the first round).
//!
//! Both profilers get the same lifecycle: each run starts its own
//! profiler (a perflens `Session`, or a hotpath guard) before the threads
//! start and ends it after they are joined, outside the timed loop, so
//! neither carries state from one run into the next (a hotpath guard kept
//! for the whole process let its undrained backlog grow to gigabytes).
//!
//! With the `alloc` feature, perflens is built with allocation profiling
//! (each measured call notes the bytes allocated during it) and the
//! counting allocator is installed: what `alloc` adds to a call is the
//! difference between the "added" columns of the two builds.
//! "perflens timed, live" is the timed variant with the session published
//! in shared memory (`Session::builder().live(true)`, issue 12): the
//! line after each table gives its cost against the private session.
//! "perflens traced" is the timed variant in trace mode
//! (`SessionBuilder::trace`, issue 13) with a 1 MiB buffer, full from the
//! first 32,640 calls on (the flight recorder then takes its oldest
//! chunks back): the next line gives its cost against the timed one.
//! Then comes the cost of an await site that does not suspend, against
//! a bare `.await`, called by hand and made by the macro (see
//! `awaits.rs`), and last, per span, perflens's trace mode against
//! `tracing` with `tracing-chrome` 0.7 (see `tracing_cmp.rs`), and
//! the cost of an uncontended lock and unlock of a measured mutex against
//! std's and hotpath's (see `locks.rs`; `PERFLENS_BENCH_ONLY=locks` runs
//! only that comparison).
//! `PERFLENS_BENCH_ONLY=bare|timed|live|traced|count|sampled|hotpath|await|await-macro|await-bare|lock|lock-idle|lock-bare|lock-hotpath|lock-pl|lock-pl-bare|lock-rw-{read,write}[-bare]` runs one variant
//! on one thread, once, with the TSC clock (for instruction counts under
//! callgrind, whose CPUID hides the invariant-TSC bit);
//! `PERFLENS_BENCH_ONLY=trace-vs-tracing` runs only the last comparison,
//! with N spans.

mod awaits;
mod channels;
mod locks;
mod stats;
mod tracing_cmp;
mod tracing_layer;

#[cfg(feature = "alloc")]
#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Set by `PERFLENS_BENCH_ONLY`: sessions use the TSC clock even when the
/// CPU does not report it invariant (valgrind's CPUID does not), so that
/// instruction counts are those of the TSC path.
static FORCE_TSC: AtomicBool = AtomicBool::new(false);

#[inline(never)]
fn tiny_bare(x: u64) -> u64 {
    black_box(x).wrapping_mul(31) ^ 7
}

#[perflens::measure]
#[inline(never)]
fn tiny_perflens(x: u64) -> u64 {
    black_box(x).wrapping_mul(31) ^ 7
}

#[hotpath::measure]
#[inline(never)]
fn tiny_hotpath(x: u64) -> u64 {
    black_box(x).wrapping_mul(31) ^ 7
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Bare,
    Timed,
    TimedLive,
    Traced,
    Count,
    Sampled64,
    Hotpath,
}

const VARIANTS: [Variant; 7] = [
    Variant::Bare,
    Variant::Timed,
    Variant::TimedLive,
    Variant::Traced,
    Variant::Count,
    Variant::Sampled64,
    Variant::Hotpath,
];

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Bare => "uninstrumented",
            Variant::Timed => "perflens timed",
            Variant::TimedLive => "perflens timed, live",
            Variant::Traced => "perflens traced",
            Variant::Count => "perflens count-only",
            Variant::Sampled64 => "perflens sampled 1/64",
            Variant::Hotpath => "hotpath 0.30 measure",
        }
    }

    /// Its name for `PERFLENS_BENCH_ONLY`.
    fn key(self) -> &'static str {
        match self {
            Variant::Bare => "bare",
            Variant::Timed => "timed",
            Variant::TimedLive => "live",
            Variant::Traced => "traced",
            Variant::Count => "count",
            Variant::Sampled64 => "sampled",
            Variant::Hotpath => "hotpath",
        }
    }

    fn mode(self) -> Option<perflens::Mode> {
        match self {
            Variant::Timed | Variant::TimedLive | Variant::Traced => Some(perflens::Mode::Timed),
            Variant::Count => Some(perflens::Mode::Count),
            Variant::Sampled64 => Some(perflens::Mode::Sampled { every: 64 }),
            _ => None,
        }
    }
}

/// Runs `n` calls of the variant's function; returns ns per call and the
/// RSS growth (KiB) between call 1,000,000 and call `n`.
fn run_calls(v: Variant, n: u64) -> (f64, i64) {
    let f: fn(u64) -> u64 = match v {
        Variant::Bare => tiny_bare,
        Variant::Hotpath => tiny_hotpath,
        _ => tiny_perflens,
    };
    let mark = 1_000_000.min(n);
    let start = Instant::now();
    let mut acc = 0u64;
    for i in 0..mark {
        acc = acc.wrapping_add(f(i));
    }
    let rss_at_mark = stats::status_kib("VmRSS");
    for i in mark..n {
        acc = acc.wrapping_add(f(i));
    }
    let elapsed = start.elapsed();
    black_box(acc);
    let growth = stats::status_kib("VmRSS") as i64 - rss_at_mark as i64;
    (elapsed.as_nanos() as f64 / n as f64, growth)
}

/// Runs the variant on `threads` threads at once; returns the mean ns per
/// call per thread and the RSS growth of thread 0's run.
fn run(v: Variant, n: u64, threads: usize) -> (f64, i64) {
    let session = v.mode().map(|mode| {
        let builder = perflens::Session::builder()
            .ignore_env()
            .mode(mode)
            .live(v == Variant::TimedLive);
        // A 1 MiB buffer: full after 32,640 calls, so the runs measure
        // the flight recorder taking its oldest chunks back, and the
        // file written at the end stays small.
        let builder = match v {
            Variant::Traced => builder.trace(trace_file()).trace_buffer(1 << 20),
            _ => builder,
        };
        let builder = if FORCE_TSC.load(Ordering::Relaxed) {
            builder.clock(perflens::ClockSource::Tsc)
        } else {
            builder
        };
        let session = builder.start().expect("no other session");
        assert_eq!(
            session.live_dir().is_some(),
            v == Variant::TimedLive,
            "the live variant publishes (and only it)"
        );
        session
    });
    let hotpath = (v == Variant::Hotpath).then(|| {
        hotpath::HotpathGuardBuilder::new("perflens-bench")
            .format(hotpath::Format::None)
            .build()
    });
    let barrier = Barrier::new(threads);
    let results: Vec<(f64, i64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    run_calls(v, n)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    if let Some(session) = session {
        let report = session.finish();
        let calls: u64 = report.functions.iter().map(|f| f.calls).sum();
        assert_eq!(calls, n * threads as u64, "perflens must count every call");
    }
    if v == Variant::Traced {
        let _ = std::fs::remove_file(trace_file());
    }
    // Drains what hotpath has not processed yet and builds its report.
    drop(hotpath);
    let mean = results.iter().map(|r| r.0).sum::<f64>() / threads as f64;
    (mean, results[0].1)
}

/// Where the traced variant's trace goes (removed after each run).
fn trace_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("perflens-bench-{}.pftrace", std::process::id()))
}

/// ns per `rdtsc` on each of `threads` threads at once (mean).
fn rdtsc_ns(n: u64, threads: usize) -> f64 {
    let barrier = Barrier::new(threads);
    let per: Vec<f64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    rdtsc_loop(n)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    per.iter().sum::<f64>() / threads as f64
}

fn rdtsc_loop(n: u64) -> f64 {
    let start = Instant::now();
    let mut acc = 0u64;
    for _ in 0..n {
        // SAFETY: rdtsc has no preconditions on x86_64.
        acc = acc.wrapping_add(unsafe { core::arch::x86_64::_rdtsc() });
    }
    black_box(acc);
    start.elapsed().as_nanos() as f64 / n as f64
}

/// Median over rounds of `f(round)`.
fn per_round(rounds: usize, f: impl Fn(usize) -> f64) -> f64 {
    stats::median((0..rounds).map(f).collect())
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let rounds: usize = stats::rounds(5);

    if let Ok(only) = std::env::var("PERFLENS_BENCH_ONLY") {
        let kind = match only.as_str() {
            "await" => Some(awaits::Kind::Site),
            "await-macro" => Some(awaits::Kind::Macro),
            "await-bare" => Some(awaits::Kind::Bare),
            _ => None,
        };
        if let Some(kind) = kind {
            println!("{:.2} ns per await", awaits::run(kind, n, true));
            return;
        }
        let lock = match only.as_str() {
            "lock" => Some(locks::Kind::Perflens),
            "lock-idle" => Some(locks::Kind::PerflensIdle),
            "lock-bare" => Some(locks::Kind::Bare),
            "lock-hotpath" => Some(locks::Kind::Hotpath),
            "lock-pl-bare" => Some(locks::Kind::ParkingLotBare),
            "lock-pl" => Some(locks::Kind::ParkingLot),
            "lock-rw-write-bare" => Some(locks::Kind::RwWriteBare),
            "lock-rw-write" => Some(locks::Kind::RwWrite),
            "lock-rw-read-bare" => Some(locks::Kind::RwReadBare),
            "lock-rw-read" => Some(locks::Kind::RwRead),
            _ => None,
        };
        if let Some(kind) = lock {
            println!("{:.2} ns per lock+unlock", locks::run(kind, n));
            return;
        }
        if only == "channels" {
            channels::report(n, rounds);
            return;
        }
        let channel = match only.as_str() {
            "channel-bare" => Some(channels::Kind::Bare),
            "channel" => Some(channels::Kind::Perflens),
            "channel-every" => Some(channels::Kind::Every),
            "channel-counts" => Some(channels::Kind::Counts),
            "channel-hotpath" => Some(channels::Kind::Hotpath),
            _ => None,
        };
        if let Some(kind) = channel {
            // PERFLENS_BENCH_BACKEND (crossbeam, std, tokio) and
            // PERFLENS_BENCH_PRODUCERS (0: one thread sends and receives).
            let backend = match std::env::var("PERFLENS_BENCH_BACKEND").as_deref() {
                Ok("std") => channels::Backend::Std,
                Ok("tokio") => channels::Backend::Tokio,
                Ok("crossbeam") | Err(_) => channels::Backend::Crossbeam,
                Ok(other) => {
                    eprintln!(
                        "PERFLENS_BENCH_BACKEND: expected crossbeam, std or tokio, got {other:?}"
                    );
                    std::process::exit(2);
                }
            };
            let producers = match std::env::var("PERFLENS_BENCH_PRODUCERS") {
                Ok(p) => p.parse().unwrap_or_else(|_| {
                    eprintln!("PERFLENS_BENCH_PRODUCERS: expected a number, got {p:?}");
                    std::process::exit(2);
                }),
                Err(_) => 1,
            };
            let ns = channels::run(backend, kind, n, producers);
            println!("{ns:.2} ns per message ({backend:?}, {producers} producers)");
            return;
        }
        if only == "locks" {
            locks::report(n, rounds);
            return;
        }
        if only == "tracing-layer" {
            tracing_layer::report(n, rounds);
            return;
        }
        if only == "trace-vs-tracing" {
            tracing_cmp::report(n, rounds);
            return;
        }
        let Some(&v) = VARIANTS.iter().find(|v| v.key() == only) else {
            let keys: Vec<&str> = VARIANTS.iter().map(|v| v.key()).collect();
            eprintln!(
                "PERFLENS_BENCH_ONLY: expected one of {keys:?}, \"await\", \"await-macro\" or \"await-bare\", got {only:?}"
            );
            std::process::exit(2);
        };
        FORCE_TSC.store(true, Ordering::Relaxed);
        println!("{:.2} ns per call", run(v, n, 1).0);
        return;
    }

    let alloc = if cfg!(feature = "alloc") {
        "alloc on (counting allocator installed)"
    } else {
        "alloc off"
    };
    eprintln!(
        "perflens-bench: N = {n} calls per thread, {rounds} rounds, variants interleaved, {alloc}"
    );
    // ns[threads-1][variant][round]
    let mut ns: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); VARIANTS.len()]; 2];
    let mut rss: Vec<i64> = vec![0; VARIANTS.len()];
    let mut rdtsc: Vec<Vec<f64>> = vec![Vec::new(); 2];
    for round in 0..rounds {
        for threads in [1usize, 2] {
            rdtsc[threads - 1].push(rdtsc_ns(n, threads));
            for (i, &v) in VARIANTS.iter().enumerate() {
                let (t, growth) = run(v, n, threads);
                ns[threads - 1][i].push(t);
                if round == 0 && threads == 1 {
                    rss[i] = growth;
                }
            }
        }
        eprintln!("  round {}/{rounds} done", round + 1);
    }

    let hot = VARIANTS
        .iter()
        .position(|&v| v == Variant::Hotpath)
        .unwrap();
    for threads in [1usize, 2] {
        let ns = &ns[threads - 1];
        let rdtsc = &rdtsc[threads - 1];
        println!(
            "one rdtsc on {threads} thread(s): {:.2} ns (two: {:.2} ns)",
            stats::median(rdtsc.clone()),
            2.0 * stats::median(rdtsc.clone())
        );
        // Variant minus the uninstrumented run, in round r.
        let added = |i: usize, r: usize| ns[i][r] - ns[0][r];
        println!("{threads} thread(s), N = {n} per thread, {alloc}");
        println!(
            "| {:<22} | {:>8} | {:>8} | {:>12} | {:>14} | {:>16} |",
            "variant", "ns/call", "added", "vs 2 rdtsc", "hotpath/this", "RSS 1M->N (KiB)"
        );
        println!(
            "|{:-<24}|{:->10}|{:->10}|{:->14}|{:->16}|{:->18}|",
            "", "", "", "", "", ""
        );
        for (i, &v) in VARIANTS.iter().enumerate() {
            let vs_rdtsc = if v == Variant::Bare {
                "-".to_string()
            } else {
                let x = per_round(rounds, |r| added(i, r) / (2.0 * rdtsc[r]));
                format!("{x:.2}x")
            };
            let vs_hot = match v {
                Variant::Bare | Variant::Hotpath => "-".to_string(),
                _ => {
                    let x = per_round(rounds, |r| added(hot, r) / added(i, r).max(0.01));
                    format!("{x:.1}x")
                }
            };
            let rss_col = if threads == 1 {
                rss[i].to_string()
            } else {
                "-".to_string()
            };
            println!(
                "| {:<22} | {:>8.2} | {:>8.2} | {:>12} | {:>14} | {:>16} |",
                v.label(),
                stats::median(ns[i].clone()),
                per_round(rounds, |r| added(i, r)),
                vs_rdtsc,
                vs_hot,
                rss_col
            );
        }
        let (timed, live, traced) = (1, 2, 3);
        println!(
            "live on / off, {threads} thread(s): timed call added {:.2} vs {:.2} ns, ratio {:.3} (median of per-round ratios; ns/call ratio {:.3})",
            per_round(rounds, |r| added(live, r)),
            per_round(rounds, |r| added(timed, r)),
            per_round(rounds, |r| added(live, r) / added(timed, r).max(0.01)),
            per_round(rounds, |r| ns[live][r] / ns[timed][r]),
        );
        println!(
            "trace on / off, {threads} thread(s): timed call added {:.2} vs {:.2} ns, ratio {:.2} (median of per-round ratios)",
            per_round(rounds, |r| added(traced, r)),
            per_round(rounds, |r| added(timed, r)),
            per_round(rounds, |r| added(traced, r) / added(timed, r).max(0.01)),
        );
        println!();
    }
    awaits::report(n, rounds);
    locks::report(n, rounds);
    // A message crosses threads: a tenth of N.
    channels::report((n / 10).max(1), rounds);
    // tracing-chrome's writer keeps every event until it is written: a
    // tenth of N (at most a million spans) keeps its file and memory
    // modest.
    tracing_cmp::report((n / 10).clamp(1, 1_000_000), rounds);
}
