//! Cost of a measured channel per message (issue 14: send plus receive
//! adds at most half of what hotpath's `channel!` adds, with latency on;
//! counts only, at most 5 ns).
//!
//! One thread sends each of `n` `u64`s through a channel of 1024 and
//! receives it (the bookkeeping per message alone), then 1 and 2 producer
//! threads send `n` in all to this thread, which receives them (the
//! hand-off between cores; noisy on a shared 2-core machine). Variants:
//! the bare channel; perflens's `channel!` in a timed session with the
//! default latency sampling (one message in 8 of each sending thread
//! carries its send time, after its first 256), with every message timed
//! (`PERFLENS_FLOW_LATENCY=1`), and with `latency = false` (counts only);
//! and hotpath 0.30's `channel!` under a hotpath guard (which times every
//! message), for crossbeam, std mpsc and tokio's mpsc (tasks on a
//! two-worker runtime). Each round runs every variant of a backend, bare
//! first; the results are medians over rounds of the ns per message and
//! of the per-round differences with bare.

use std::hint::black_box;
use std::time::Instant;

/// How the channel of a run is made.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bare,
    /// The default: one message in 8 of each thread carries its send
    /// time (after each thread's first 256).
    Perflens,
    /// Every message carries its send time (`PERFLENS_FLOW_LATENCY=1`).
    Every,
    /// `latency = false`: no clock.
    Counts,
    Hotpath,
}

const KINDS: [Kind; 5] = [
    Kind::Bare,
    Kind::Perflens,
    Kind::Every,
    Kind::Counts,
    Kind::Hotpath,
];

/// The channel's backend.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Backend {
    Crossbeam,
    Std,
    /// tokio's bounded mpsc, producers and consumer tasks on a two-worker
    /// runtime.
    Tokio,
}

/// As `pump!`, for tokio's mpsc: the producers are tasks, the consumer
/// awaits in `block_on`.
macro_rules! pump_async {
    ($make:expr, $n:expr, $producers:expr) => {{
        let (n, producers): (u64, u64) = ($n, $producers);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let (tx, mut rx) = $make;
        let start = Instant::now();
        let sum = rt.block_on(async move {
            if producers == 0 {
                let mut sum = 0u64;
                for i in 0..n {
                    tx.send(black_box(i)).await.unwrap();
                    sum = sum.wrapping_add(rx.recv().await.unwrap());
                }
                return sum;
            }
            for p in 0..producers {
                let tx = tx.clone();
                let share = n / producers + u64::from(p < n % producers);
                tokio::spawn(async move {
                    for i in 0..share {
                        tx.send(black_box(i)).await.unwrap();
                    }
                });
            }
            drop(tx);
            let mut sum = 0u64;
            for _ in 0..n {
                sum = sum.wrapping_add(rx.recv().await.unwrap());
            }
            sum
        });
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        black_box(sum);
        ns
    }};
}

/// Sends `n` messages from `producers` threads through the endpoints
/// `$make` returns, receives them here; ns per message.
macro_rules! pump {
    ($make:expr, $n:expr, $producers:expr) => {{
        let (n, producers): (u64, u64) = ($n, $producers);
        let (tx, rx) = $make;
        let start = Instant::now();
        // No producer thread: this thread sends each message and receives
        // it (the bookkeeping alone, no thread handing off).
        let same = producers == 0;
        let producers = producers.max(1);
        if same {
            let mut sum = 0u64;
            for i in 0..n {
                tx.send(black_box(i)).unwrap();
                sum = sum.wrapping_add(rx.recv().unwrap());
            }
            black_box(sum);
        }
        let threads: Vec<_> = (0..producers * u64::from(!same))
            .map(|p| {
                let tx = tx.clone();
                let share = n / producers + u64::from(p < n % producers);
                std::thread::spawn(move || {
                    for i in 0..share {
                        tx.send(black_box(i)).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let mut sum = 0u64;
        for _ in 0..n * u64::from(!same) {
            sum = sum.wrapping_add(rx.recv().unwrap());
        }
        for t in threads {
            t.join().unwrap();
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        black_box(sum);
        ns
    }};
}

fn bare(backend: Backend, n: u64, producers: u64) -> f64 {
    match backend {
        Backend::Crossbeam => pump!(crossbeam_channel::bounded::<u64>(1024), n, producers),
        Backend::Std => pump!(std::sync::mpsc::sync_channel::<u64>(1024), n, producers),
        Backend::Tokio => pump_async!(tokio::sync::mpsc::channel::<u64>(1024), n, producers),
    }
}

/// `every`: one message in this many carries its send time (with
/// `latency`).
fn measured(backend: Backend, n: u64, producers: u64, latency: bool, every: u32) -> f64 {
    let session = perflens::Session::builder()
        .ignore_env()
        .mode(perflens::Mode::Timed)
        .clock(perflens::ClockSource::Tsc)
        .flow_latency(every)
        .start()
        .expect("no other session");
    let ns = match (backend, latency) {
        (Backend::Crossbeam, true) => pump!(
            perflens::channel!(crossbeam_channel::bounded::<u64>(1024), label = "bench"),
            n,
            producers
        ),
        (Backend::Crossbeam, false) => pump!(
            perflens::channel!(
                crossbeam_channel::bounded::<u64>(1024),
                label = "bench",
                latency = false
            ),
            n,
            producers
        ),
        (Backend::Std, true) => pump!(
            perflens::channel!(std::sync::mpsc::sync_channel::<u64>(1024), label = "bench"),
            n,
            producers
        ),
        (Backend::Std, false) => pump!(
            perflens::channel!(
                std::sync::mpsc::sync_channel::<u64>(1024),
                label = "bench",
                latency = false
            ),
            n,
            producers
        ),
        (Backend::Tokio, true) => pump_async!(
            perflens::channel!(tokio::sync::mpsc::channel::<u64>(1024), label = "bench"),
            n,
            producers
        ),
        (Backend::Tokio, false) => pump_async!(
            perflens::channel!(
                tokio::sync::mpsc::channel::<u64>(1024),
                label = "bench",
                latency = false
            ),
            n,
            producers
        ),
    };
    let report = session.finish();
    let row = (report.channels.iter().find(|r| r.name == "bench")).expect("the channel's row");
    assert_eq!(
        (row.sent, row.received),
        (n, n),
        "perflens must count every message"
    );
    match (latency, every) {
        (false, _) => assert_eq!(row.latency_count, 0, "no clock: no latency"),
        (true, 1) => assert_eq!(row.latency_count, n, "every message timed"),
        (true, every) => {
            // Each sending thread times its first 256, then one in `every`.
            let threads = producers.max(1);
            let warm = (256 * threads).min(n);
            let expected = warm + (n - warm) / u64::from(every);
            let (lo, hi) = (expected * 9 / 10, expected * 11 / 10 + 1);
            assert!(
                (lo..=hi).contains(&row.latency_count),
                "{} messages timed, expected about {expected}",
                row.latency_count
            );
        }
    }
    ns
}

fn hotpath(backend: Backend, n: u64, producers: u64) -> f64 {
    let guard = hotpath::HotpathGuardBuilder::new("perflens-bench-channels")
        .format(hotpath::Format::None)
        .build();
    let ns = match backend {
        Backend::Crossbeam => pump!(
            hotpath::channel!(crossbeam_channel::bounded::<u64>(1024)),
            n,
            producers
        ),
        Backend::Std => pump!(
            hotpath::channel!(std::sync::mpsc::sync_channel::<u64>(1024), capacity = 1024),
            n,
            producers
        ),
        Backend::Tokio => pump_async!(
            hotpath::channel!(tokio::sync::mpsc::channel::<u64>(1024)),
            n,
            producers
        ),
    };
    drop(guard);
    ns
}

/// ns per message of one run.
pub fn run(backend: Backend, kind: Kind, n: u64, producers: u64) -> f64 {
    match kind {
        Kind::Bare => bare(backend, n, producers),
        Kind::Perflens => measured(backend, n, producers, true, 8),
        Kind::Every => measured(backend, n, producers, true, 1),
        Kind::Counts => measured(backend, n, producers, false, 8),
        Kind::Hotpath => hotpath(backend, n, producers),
    }
}

/// Prints, per backend and number of producers, the medians.
pub fn report(n: u64, rounds: usize) {
    println!(
        "| channel, N = {n} messages | bare ns/msg | perflens added (latency of 1 in 8) | every message timed, added | counts only added | hotpath added | hotpath/perflens | hotpath/perflens, every message |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (backend, name) in [
        (Backend::Crossbeam, "crossbeam"),
        (Backend::Std, "std mpsc"),
        (Backend::Tokio, "tokio mpsc"),
    ] {
        for producers in [0, 1, 2] {
            let mut ns: Vec<Vec<f64>> = vec![Vec::new(); KINDS.len()];
            for _ in 0..rounds {
                for (i, &k) in KINDS.iter().enumerate() {
                    ns[i].push(run(backend, k, n, producers));
                }
            }
            let added =
                |i: usize| -> Vec<f64> { ns[i].iter().zip(&ns[0]).map(|(x, b)| x - b).collect() };
            // hotpath's added cost over perflens's; "-" when perflens's is
            // not above zero (no ratio to take: it ran as fast as bare).
            let ratio = |p: usize| {
                if crate::stats::median(added(p)) <= 0.0 {
                    return "-".to_string();
                }
                let r = crate::stats::median(
                    added(4)
                        .iter()
                        .zip(added(p))
                        .map(|(h, p)| h / p.max(0.01))
                        .collect(),
                );
                format!("{r:.1}x")
            };
            let who = match producers {
                0 => "1 thread sends and receives".to_string(),
                1 => "1 producer".to_string(),
                p => format!("{p} producers"),
            };
            println!(
                "| {name}, {who} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |",
                crate::stats::median(ns[0].clone()),
                crate::stats::median(added(1)),
                crate::stats::median(added(2)),
                crate::stats::median(added(3)),
                crate::stats::median(added(4)),
                ratio(1),
                ratio(2),
            );
        }
    }
}
