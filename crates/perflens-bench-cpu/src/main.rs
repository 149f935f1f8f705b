//! CPU sampling overhead, perflens-sampler against pprof-rs 0.15: a
//! CPU-bound workload (a fixed amount of work per thread, about 1.5 s) on
//! 1 and 2 threads, with no profiler, perflens at 100 and 1000 Hz (and at
//! 1000 Hz with a real-time signal instead of perf's sigtrap delivery,
//! `perflens-rt`), and pprof-rs at 100 and 1000 Hz (its default unwinder).
//!
//! ```text
//! cargo run --release -p perflens-bench-cpu
//! ```
//!
//! Every run is a fresh child process (so RSS is the run's own), rounds
//! interleave the variants (`PERFLENS_BENCH_ROUNDS`, default 3), and the table
//! shows medians over rounds: wall-time overhead against the unprofiled
//! run of the same round, samples delivered against the CPU time the
//! threads used times the frequency, the signal handler's time per sample
//! (perflens measures it; pprof-rs does not expose it), and peak RSS added
//! over the unprofiled run of the same round.
#[path = "../../perflens-bench/src/stats.rs"]
mod stats;

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Profiler {
    None,
    Perflens,
    /// perflens with a real-time signal instead of perf's sigtrap.
    PerflensRt,
    Pprof,
}

impl Profiler {
    fn name(self) -> &'static str {
        match self {
            Profiler::None => "none",
            Profiler::Perflens => "perflens",
            Profiler::PerflensRt => "perflens-rt",
            Profiler::Pprof => "pprof-rs",
        }
    }
    fn parse(s: &str) -> Option<Profiler> {
        [
            Profiler::None,
            Profiler::Perflens,
            Profiler::PerflensRt,
            Profiler::Pprof,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }
}

/// Work units per thread (about 2 s on the build machine).
const WORK: u64 = 2_000_000_000;

fn work(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..WORK {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

fn thread_cpu_ns() -> u64 {
    perflens_sys::thread::own_cpu_ns().expect("the thread's CPU clock")
}

/// One measured run in this process; prints
/// `wall_ns cpu_ns samples handler_ns_per_sample peak_rss_kib`: the wall
/// time of the workload alone (the profiler already running), the CPU
/// time its threads used, and the samples of the whole session.
fn child(p: Profiler, hz: i32, threads: usize) {
    let mut wall = 0u64;
    let mut cpu = 0u64;
    let mut run = || {
        let start = Instant::now();
        cpu = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|i| {
                    s.spawn(move || {
                        black_box(work(i as u64));
                        thread_cpu_ns()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        wall = start.elapsed().as_nanos() as u64;
    };
    let (samples, handler) = match p {
        Profiler::None => {
            run();
            (0, 0.0)
        }
        Profiler::Perflens | Profiler::PerflensRt => {
            let mut builder = perflens_sampler::ProfilerGuardBuilder::default().frequency(hz);
            if p == Profiler::PerflensRt {
                let rt = perflens_sys::thread::realtime_signal(4).expect("real-time signals");
                builder = builder.signal(rt);
            }
            let guard = builder.build().expect("perflens sampler starts");
            run();
            let report = guard.stop().build().expect("perflens report");
            let median = report
                .handler_quantile_ns(0.5)
                .map_or(f64::NAN, |ns| ns as f64);
            (report.total_samples(), median)
        }
        Profiler::Pprof => {
            let guard = pprof::ProfilerGuardBuilder::default()
                .frequency(hz)
                .build()
                .expect("pprof-rs starts");
            run();
            let report = guard.report().build().expect("pprof-rs report");
            let n: isize = report.data.values().sum();
            (n as u64, f64::NAN)
        }
    };
    println!(
        "{wall} {cpu} {samples} {handler} {}",
        stats::status_kib("VmHWM")
    );
}

#[derive(Clone, Copy)]
struct Run {
    wall: f64,
    cpu: f64,
    samples: f64,
    handler: f64,
    rss: f64,
}

fn spawn(p: Profiler, hz: i32, threads: usize) -> Run {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["child", p.name(), &hz.to_string(), &threads.to_string()])
        .output()
        .expect("run a child");
    assert!(
        out.status.success(),
        "{} {hz} Hz {threads}T failed: {}",
        p.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(f64::NAN))
        .collect();
    Run {
        wall: v[0],
        cpu: v[1],
        samples: v[2],
        handler: v[3],
        rss: v[4],
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("child") {
        let p = Profiler::parse(&args[2]).expect("profiler name");
        child(p, args[3].parse().unwrap(), args[4].parse().unwrap());
        return;
    }
    let rounds: usize = stats::rounds(3);
    let variants: [(Profiler, i32); 6] = [
        (Profiler::None, 0),
        (Profiler::Perflens, 100),
        (Profiler::Perflens, 1000),
        (Profiler::PerflensRt, 1000),
        (Profiler::Pprof, 100),
        (Profiler::Pprof, 1000),
    ];
    eprintln!("perflens-bench-cpu: {rounds} rounds, threads 1 and 2, a child process per run");
    println!(
        "| {:<11} | {:>7} | {:>7} | {:>13} | {:>19} | {:>15} | {:>13} |",
        "profiler",
        "Hz",
        "threads",
        "wall overhead",
        "samples / expected",
        "handler median",
        "RSS added"
    );
    println!(
        "|{:-<13}|{:->9}|{:->9}|{:->15}|{:->21}|{:->17}|{:->15}|",
        "", "", "", "", "", "", ""
    );
    for threads in [1usize, 2] {
        let mut runs: Vec<Vec<Run>> = vec![Vec::new(); variants.len()];
        let mut overhead: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        for round in 0..rounds {
            let base = spawn(Profiler::None, 0, threads);
            for (i, &(p, hz)) in variants.iter().enumerate() {
                let r = if p == Profiler::None {
                    base
                } else {
                    spawn(p, hz, threads)
                };
                overhead[i].push((r.wall / base.wall - 1.0) * 100.0);
                runs[i].push(r);
            }
            eprintln!("  {threads} thread(s): round {}/{rounds} done", round + 1);
        }
        for (i, &(p, hz)) in variants.iter().enumerate() {
            if p == Profiler::None {
                continue;
            }
            let delivered = stats::median(
                runs[i]
                    .iter()
                    .map(|r| r.samples / (r.cpu / 1e9 * hz as f64) * 100.0)
                    .collect(),
            );
            let samples = stats::median(runs[i].iter().map(|r| r.samples).collect());
            let handler = stats::median(runs[i].iter().map(|r| r.handler).collect());
            let rss = stats::median(
                (runs[i].iter().zip(&runs[0]))
                    .map(|(r, base)| r.rss - base.rss)
                    .collect(),
            );
            let handler = if handler.is_nan() {
                "n/a".to_string()
            } else {
                format!("{:.2} µs", handler / 1000.0)
            };
            println!(
                "| {:<11} | {:>7} | {:>7} | {:>12.1}% | {:>9.0} = {:>5.1}% | {:>15} | {:>9.1} MiB |",
                p.name(),
                hz,
                threads,
                stats::median(overhead[i].clone()),
                samples,
                delivered,
                handler,
                rss / 1024.0
            );
        }
    }
}
