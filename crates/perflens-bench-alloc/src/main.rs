//! Cost of counting allocations: a function that allocates and frees a
//! 128-byte `Vec` 1000 times per call, with no profiler, under perflens
//! (`alloc` feature, session recording) and under hotpath 0.30
//! (`hotpath-alloc`), on 1 thread and on every core at once; and, for
//! scale, the floor of any counting hook: one thread-local add per
//! allocation and per free, attributed to nothing. With `--features
//! heap`, also perflens sampling the heap at the default rate of 512 KiB
//! and at 64 KiB and 4 KiB (each sample with its native stack), and at
//! 4 KiB without the stacks; the `alloc` row is then the heap feature
//! compiled in with sampling off, and the heap rows' "over alloc" is
//! what sampling adds to it, paired per round.
//!
//! ```text
//! cargo run --release -p perflens-bench-alloc                   # 20,000 calls per thread
//! cargo run --release -p perflens-bench-alloc -- 5000           # another count
//! cargo run --release -p perflens-bench-alloc --features heap   # and the heap rows
//! ```
//!
//! One process can have only one global allocator, so this one dispatches
//! on a mode switched between runs: the system allocator directly,
//! perflens's counting allocator, or hotpath's; every variant pays the
//! same dispatch. Rounds interleave the variants (`PERFLENS_BENCH_ROUNDS`, default
//! 5) and the tables show medians. "added per pair" is computed per
//! round, the variant minus the uninstrumented run of the same round
//! divided by 1000 pairs, and the table shows the median of those;
//! "over floor" is the same against the floor variant of the round.
//! "scaling" is per-thread throughput with all threads busy over the
//! 1-thread figure of the same round, and "vs bare" that ratio over the
//! uninstrumented run's: 1.00 means the profiler adds no contention
//! between threads.
//!
//! Both profilers get the same lifecycle: each run starts its own (a
//! perflens `Session`, or a hotpath guard) and ends it after the threads
//! are joined, outside the timed loop.
#[path = "../../perflens-bench/src/stats.rs"]
#[allow(dead_code)] // not every bench uses every helper
mod stats;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

const PAIRS_PER_CALL: u64 = 1000;

static MODE: AtomicU8 = AtomicU8::new(0);
static PERFLENS: perflens::CountingAlloc = perflens::CountingAlloc::new(System);
static HOTPATH: hotpath::CountingAllocator = hotpath::CountingAllocator::new();

thread_local! {
    /// The floor variant's one counter.
    static FLOOR_BYTES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The cheapest counting hook there is, for scale: one thread-local add
/// after each allocation and before each free, attributed to nothing.
struct Floor;

// SAFETY: forwards to `System` unchanged; the counter is thread-local and
// never allocates.
unsafe impl GlobalAlloc for Floor {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            FLOOR_BYTES.with(|c| c.set(c.get().wrapping_add(l.size() as u64)));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        FLOOR_BYTES.with(|c| c.set(c.get().wrapping_sub(l.size() as u64)));
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(p, l) }
    }
}

/// Routes to the allocator of the variant being measured.
struct Dispatch;

// SAFETY: each call goes to exactly one of three allocators that all get
// their memory from `System`, so a block may be freed by a different one
// than allocated it (only their counters differ); arguments are forwarded
// unchanged.
unsafe impl GlobalAlloc for Dispatch {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe {
            match MODE.load(Ordering::Relaxed) {
                0 => System.alloc(l),
                1 => PERFLENS.alloc(l),
                2 => HOTPATH.alloc(l),
                _ => Floor.alloc(l),
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe {
            match MODE.load(Ordering::Relaxed) {
                0 => System.dealloc(p, l),
                1 => PERFLENS.dealloc(p, l),
                2 => HOTPATH.dealloc(p, l),
                _ => Floor.dealloc(p, l),
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe {
            match MODE.load(Ordering::Relaxed) {
                0 => System.alloc_zeroed(l),
                1 => PERFLENS.alloc_zeroed(l),
                2 => HOTPATH.alloc_zeroed(l),
                _ => Floor.alloc_zeroed(l),
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe {
            match MODE.load(Ordering::Relaxed) {
                0 => System.realloc(p, l, n),
                1 => PERFLENS.realloc(p, l, n),
                2 => HOTPATH.realloc(p, l, n),
                _ => Floor.realloc(p, l, n),
            }
        }
    }
}

#[global_allocator]
static GLOBAL: Dispatch = Dispatch;

/// The loop every variant runs: one function, so that all of them execute
/// the same loop code at the same address and differ only in the
/// allocator they dispatch to (inlined into each variant, the loops were
/// placed differently, and that alone moved a variant by 0.5 ns a pair).
#[inline(never)]
fn churn() -> u64 {
    let mut acc = 0u64;
    for i in 0..PAIRS_PER_CALL {
        let mut v: Vec<u8> = Vec::with_capacity(128);
        v.push(i as u8);
        acc = acc.wrapping_add(black_box(&v).as_ptr() as u64);
    }
    acc
}

#[inline(never)]
fn churn_bare() -> u64 {
    churn()
}

#[perflens::measure]
#[inline(never)]
fn churn_perflens() -> u64 {
    churn()
}

#[hotpath::measure]
#[inline(never)]
fn churn_hotpath() -> u64 {
    churn()
}

#[derive(Clone, Copy, PartialEq, Eq)]
// The heap variants run only with `--features heap`.
#[cfg_attr(not(feature = "heap"), allow(dead_code))]
enum Variant {
    Bare,
    Perflens,
    Heap,
    Heap64k,
    Heap4k,
    Heap4kNoStacks,
    Hotpath,
    Floor,
}

const VARIANTS: &[Variant] = &[
    Variant::Bare,
    Variant::Perflens,
    #[cfg(feature = "heap")]
    Variant::Heap,
    #[cfg(feature = "heap")]
    Variant::Heap64k,
    #[cfg(feature = "heap")]
    Variant::Heap4k,
    #[cfg(feature = "heap")]
    Variant::Heap4kNoStacks,
    Variant::Hotpath,
    Variant::Floor,
];

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Bare => "no profiler",
            Variant::Perflens => "perflens alloc",
            Variant::Heap => "perflens heap 512 KiB",
            Variant::Heap64k => "perflens heap 64 KiB",
            Variant::Heap4k => "perflens heap 4 KiB",
            Variant::Heap4kNoStacks => "heap 4 KiB, no stacks",
            Variant::Hotpath => "hotpath 0.30 alloc",
            Variant::Floor => "floor: 1 TLS counter",
        }
    }
}

/// ns per call on each thread, `threads` threads at once.
fn run(v: Variant, calls: u64, threads: usize) -> Vec<f64> {
    let f: fn() -> u64 = match v {
        Variant::Bare => churn_bare,
        Variant::Perflens
        | Variant::Heap
        | Variant::Heap64k
        | Variant::Heap4k
        | Variant::Heap4kNoStacks => churn_perflens,
        Variant::Hotpath => churn_hotpath,
        Variant::Floor => churn_bare,
    };
    let heap_rate = match v {
        Variant::Heap => Some(512 << 10),
        Variant::Heap64k => Some(64 << 10),
        Variant::Heap4k | Variant::Heap4kNoStacks => Some(4 << 10),
        Variant::Perflens => Some(0),
        _ => None,
    };
    let session = heap_rate.map(|rate| {
        let builder = perflens::Session::builder().ignore_env();
        #[cfg(feature = "heap")]
        let builder = (builder.heap_rate(rate)).heap_stacks(v != Variant::Heap4kNoStacks);
        #[cfg(not(feature = "heap"))]
        let _ = rate;
        builder.start().expect("no other session")
    });
    let hotpath = (v == Variant::Hotpath).then(|| {
        hotpath::HotpathGuardBuilder::new("perflens-bench-alloc")
            .format(hotpath::Format::None)
            .build()
    });
    // The allocator the dispatch routes to (every perflens variant uses
    // perflens's).
    let mode = match v {
        Variant::Bare => 0,
        Variant::Perflens
        | Variant::Heap
        | Variant::Heap64k
        | Variant::Heap4k
        | Variant::Heap4kNoStacks => 1,
        Variant::Hotpath => 2,
        Variant::Floor => 3,
    };
    MODE.store(mode, Ordering::SeqCst);
    let barrier = Barrier::new(threads);
    let per_thread: Vec<f64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    let mut acc = 0u64;
                    for _ in 0..calls {
                        acc = acc.wrapping_add(f());
                    }
                    black_box(acc);
                    start.elapsed().as_nanos() as f64 / calls as f64
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    MODE.store(0, Ordering::SeqCst);
    // Drains what hotpath has not processed yet and builds its report.
    drop(hotpath);
    if let Some(session) = session {
        let snap = session.raw_snapshot();
        drop(session.finish());
        let pairs: u64 = snap
            .threads
            .iter()
            .flat_map(|t| &t.nodes)
            .filter(|n| n.calls > 0)
            .map(|n| n.alloc_count)
            .sum();
        assert_eq!(
            pairs,
            calls * threads as u64 * PAIRS_PER_CALL,
            "perflens must count every allocation"
        );
    }
    per_thread
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn main() {
    let calls: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let rounds: usize = stats::rounds(5);
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut counts = vec![1usize, 2];
    if cores > 2 {
        counts.push(cores);
    }
    // `PERFLENS_BENCH_ONLY=perflens` (or `bare`, `heap`, `heap-64k`, `heap-4k`, `heap-4k-no-stacks`, `hotpath`, `floor`) runs one variant on one
    // thread, once: for instruction counts under callgrind.
    if let Ok(only) = std::env::var("PERFLENS_BENCH_ONLY") {
        let v = match only.as_str() {
            "bare" => Variant::Bare,
            "perflens" => Variant::Perflens,
            #[cfg(feature = "heap")]
            "heap" => Variant::Heap,
            #[cfg(feature = "heap")]
            "heap-64k" => Variant::Heap64k,
            #[cfg(feature = "heap")]
            "heap-4k" => Variant::Heap4k,
            #[cfg(feature = "heap")]
            "heap-4k-no-stacks" => Variant::Heap4kNoStacks,
            "hotpath" => Variant::Hotpath,
            "floor" => Variant::Floor,
            other => {
                eprintln!(
                    "PERFLENS_BENCH_ONLY: expected bare, perflens, heap, heap-64k, heap-4k, \
                     heap-4k-no-stacks, hotpath \
                     or floor, got {other:?}"
                );
                std::process::exit(2);
            }
        };
        println!("{} ns per call", mean(&run(v, calls, 1)));
        return;
    }
    eprintln!(
        "perflens-bench-alloc: {calls} calls per thread x {PAIRS_PER_CALL} malloc+free pairs, \
         threads {counts:?}, {rounds} rounds, variants interleaved"
    );
    // ns per call: [thread count][variant] over rounds (mean over threads).
    let mut ns = vec![vec![Vec::new(); VARIANTS.len()]; counts.len()];
    for round in 0..rounds {
        for (ti, &threads) in counts.iter().enumerate() {
            for (vi, &v) in VARIANTS.iter().enumerate() {
                ns[ti][vi].push(mean(&run(v, calls, threads)));
            }
        }
        eprintln!("  round {}/{rounds} done", round + 1);
    }
    let ns = &ns;
    let per_round = |f: &dyn Fn(usize) -> f64| stats::median((0..rounds).map(f).collect());
    let pairs = PAIRS_PER_CALL as f64;
    let floor = VARIANTS.iter().position(|&v| v == Variant::Floor).unwrap();
    println!(
        "| {:<21} | {:>7} | {:>12} | {:>16} | {:>10} | {:>10} | {:>8} | {:>8} |",
        "variant",
        "threads",
        "ns per pair",
        "added per pair",
        "over floor",
        "over alloc",
        "scaling",
        "vs bare"
    );
    println!(
        "|{:-<23}|{:->9}|{:->14}|{:->18}|{:->12}|{:->12}|{:->10}|{:->10}|",
        "", "", "", "", "", "", "", ""
    );
    let alloc = VARIANTS
        .iter()
        .position(|&v| v == Variant::Perflens)
        .unwrap();
    for (ti, &threads) in counts.iter().enumerate() {
        for (vi, &v) in VARIANTS.iter().enumerate() {
            let per_pair = stats::median(ns[ti][vi].clone()) / pairs;
            let added_col = if v == Variant::Bare {
                "-".to_string()
            } else {
                let added = per_round(&|r| (ns[ti][vi][r] - ns[ti][0][r]) / pairs);
                format!("{added:.2} ns")
            };
            // What a profiler adds beyond the floor's one counter, paired
            // per round like "added", so that drift between rounds cancels.
            let over_floor = if v == Variant::Bare || v == Variant::Floor {
                "-".to_string()
            } else {
                let over = per_round(&|r| (ns[ti][vi][r] - ns[ti][floor][r]) / pairs);
                format!("{over:.2} ns")
            };
            // What heap sampling adds to the alloc row, paired per round.
            let over_alloc = if matches!(
                v,
                Variant::Heap | Variant::Heap64k | Variant::Heap4k | Variant::Heap4kNoStacks
            ) {
                let over = per_round(&|r| (ns[ti][vi][r] - ns[ti][alloc][r]) / pairs);
                format!("{over:.2} ns")
            } else {
                "-".to_string()
            };
            // Per-thread throughput relative to this variant on 1 thread,
            // in the same round.
            let scaling = |vi: usize, r: usize| ns[0][vi][r] / ns[ti][vi][r];
            println!(
                "| {:<21} | {:>7} | {:>9.2} ns | {:>16} | {:>10} | {:>10} | {:>8.2} | {:>8.2} |",
                v.label(),
                threads,
                per_pair,
                added_col,
                over_floor,
                over_alloc,
                per_round(&|r| scaling(vi, r)),
                per_round(&|r| scaling(vi, r) / scaling(0, r))
            );
        }
    }
}
