//! Heap profiling (feature `heap`): the sampled in-use heap profile
//! against known live sets, leaks named at exit, frees on another thread,
//! exact figures when every allocation is sampled, and `go tool pprof`
//! reading the heap profile, from the file and over HTTP.
//!
//! Each scenario runs in a child process (this binary again), alone:
//! the sampling is per thread and deterministic for a seed, and no other
//! test's allocations mix in.
#![cfg(feature = "heap")]

mod common;

use perflens::{Report, Session};
use std::process::Command;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

const CHILD: &str = "PERFLENS_HEAP_TEST_CHILD";
/// Seeds the ground-truth workload runs with.
const SEEDS: u64 = 20;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// `n` blocks of `size` bytes, kept in `out` (reserved by the caller, so
/// that only the blocks are allocated here).
#[perflens::measure]
fn hold_1k(out: &mut Vec<Box<[u8]>>, n: usize) {
    out.extend((0..n).map(|i| vec![i as u8; 1024].into_boxed_slice()));
}

#[perflens::measure]
fn hold_64(out: &mut Vec<Box<[u8]>>, n: usize) {
    out.extend((0..n).map(|i| vec![i as u8; 64].into_boxed_slice()));
}

/// `n` blocks of 4 KiB, never freed.
#[perflens::measure]
fn leak_4k(n: usize) {
    for i in 0..n {
        std::mem::forget(vec![i as u8; 4096]);
    }
}

/// `n` blocks of 1 KiB, each freed at once.
#[perflens::measure]
fn churn_1k(n: usize) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let v = vec![i as u8; 1024];
        acc += u64::from(std::hint::black_box(&v)[7]);
    }
    acc
}

/// The workload's live sets: (1 KiB blocks, 64 B blocks, leaked 4 KiB
/// blocks, churned 1 KiB blocks).
struct Sizes {
    k1: usize,
    b64: usize,
    leak: usize,
    churn: usize,
}

const GROUND_TRUTH: Sizes = Sizes {
    k1: (64 * MIB / KIB) as usize,
    b64: (16 * MIB / 64) as usize,
    leak: (8 * MIB / (4 * KIB)) as usize,
    churn: (1024 * MIB / KIB) as usize,
};

const SMALL: Sizes = Sizes {
    k1: 1000,
    b64: 500,
    leak: 100,
    churn: 10_000,
};

/// The in-use estimate of the path ending in `function` (0 when it holds
/// nothing): (bytes, objects, samples).
fn inuse(report: &Report, function: &str) -> (u64, u64, u64) {
    let heap = report.heap.as_ref().expect("the report has a heap profile");
    (heap.inuse_paths.iter())
        .filter(|p| p.frames.last().is_some_and(|f| f.ends_with(function)))
        .fold((0, 0, 0), |a, p| {
            (a.0 + p.inuse_bytes, a.1 + p.inuse_objects, a.2 + p.samples)
        })
}

/// Runs the workload of `sizes` in a session sampling at `rate` with
/// `seed`; returns the report taken while the live sets are held
/// and the final one (after they were dropped; the leak stays).
fn workload(sizes: &Sizes, rate: u64, seed: u64) -> (Report, Report) {
    let mut held: Vec<Box<[u8]>> = Vec::with_capacity(sizes.k1 + sizes.b64);
    let session = Session::builder()
        .heap_rate(rate)
        .heap_seed(seed)
        .start()
        .unwrap();
    hold_1k(&mut held, sizes.k1);
    hold_64(&mut held, sizes.b64);
    leak_4k(sizes.leak);
    std::hint::black_box(churn_1k(sizes.churn));
    let during = session.snapshot();
    drop(held);
    let end = session.finish();
    (during, end)
}

#[test]
fn heap_child() {
    let Ok(scenario) = std::env::var(CHILD) else {
        return;
    };
    match scenario.as_str() {
        "ground-truth" => {
            // The workload once per seed; each estimate is checked against
            // the spread its sample count implies, and the mean of the
            // seeds against the bound.
            let rate: u64 = std::env::var("HEAP_RATE").unwrap().parse().unwrap();
            let bound: f64 = std::env::var("HEAP_BOUND").unwrap().parse().unwrap();
            let sets = [
                ("::hold_1k", GROUND_TRUTH.k1, 1024u64),
                ("::hold_64", GROUND_TRUTH.b64, 64),
                ("::leak_4k", GROUND_TRUTH.leak, 4096),
            ];
            let mut errors = vec![Vec::new(); sets.len()];
            for seed in 1..=SEEDS {
                let (during, end) = workload(&GROUND_TRUTH, rate, seed);
                let heap = during.heap.as_ref().unwrap();
                assert_eq!((heap.rate_bytes, heap.dropped), (rate, 0));
                for (i, &(f, n, size)) in sets.iter().enumerate() {
                    let truth = n as u64 * size;
                    let got = inuse(&during, f).0;
                    let err = got as f64 / truth as f64 - 1.0;
                    // The relative standard deviation of the estimate: its
                    // sample count is binomial.
                    let p = -(-(size as f64) / rate as f64).exp_m1();
                    let sigma = ((1.0 - p) / (n as f64 * p)).sqrt();
                    assert!(
                        err.abs() <= 4.0 * sigma,
                        "seed {seed}: {f} estimated {got} B, truth {truth} B: {:+.1}% is more \
                         than 4 standard deviations ({:.1}%)",
                        err * 100.0,
                        sigma * 100.0
                    );
                    errors[i].push(err);
                }
                let churn = inuse(&during, "::churn_1k").0;
                assert!(churn < MIB, "seed {seed}: churn {churn} B in use");
                // At the end only the leak is live.
                let end_heap = end.heap.as_ref().unwrap();
                let names: Vec<String> = (end_heap.inuse_paths.iter())
                    .filter(|p| p.inuse_bytes >= MIB)
                    .map(|p| p.frames.join(" -> "))
                    .collect();
                assert!(
                    names.len() == 1 && names[0].ends_with("::leak_4k"),
                    "seed {seed}: {names:?}"
                );
            }
            for (i, &(f, _, _)) in sets.iter().enumerate() {
                let e = &errors[i];
                let mean = e.iter().sum::<f64>() / e.len() as f64;
                let (lo, hi) = e
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
                let within = e.iter().filter(|x| x.abs() <= bound).count();
                println!(
                    "{f}: mean {:+.1}%, from {:+.1}% to {:+.1}%, {within} of {SEEDS} within {:.0}%",
                    mean * 100.0,
                    lo * 100.0,
                    hi * 100.0,
                    bound * 100.0
                );
                assert!(mean.abs() <= bound, "{f}: mean error {mean}");
            }
        }
        "exact" => {
            // Rate 1: every allocation is sampled, and each stands for one.
            let (during, end) = workload(&SMALL, 1, 1);
            let heap = during.heap.as_ref().unwrap();
            assert_eq!(heap.rate_bytes, 1);
            assert_eq!(inuse(&during, "::hold_1k"), (1000 * KIB, 1000, 1000));
            assert_eq!(inuse(&during, "::hold_64"), (500 * 64, 500, 500));
            assert_eq!(inuse(&during, "::leak_4k"), (100 * 4 * KIB, 100, 100));
            assert_eq!(inuse(&during, "::churn_1k"), (0, 0, 0));
            // Beside the estimates, the exact totals of each path.
            let p = (heap.inuse_paths.iter())
                .find(|p| p.frames.last().unwrap().ends_with("::hold_1k"))
                .unwrap();
            assert_eq!((p.alloc_bytes, p.alloc_objects), (1000 * KIB, 1000));
            assert_eq!(inuse(&end, "::hold_1k"), (0, 0, 0));
            assert_eq!(inuse(&end, "::hold_64"), (0, 0, 0));
            assert_eq!(inuse(&end, "::leak_4k"), (100 * 4 * KIB, 100, 100));
            // Native stacks: every sample kept one, and each live set is
            // found, exactly, under the stacks that run through its
            // function, whose innermost frame (below the allocator's) is
            // that function or a closure of it.
            assert_eq!(heap.stacks_dropped, 0);
            let by_stack = |r: &Report, f: &str| -> (u64, u64) {
                (r.heap.as_ref().unwrap().inuse_stacks.iter())
                    .filter(|s| s.frames.last().is_some_and(|leaf| leaf.contains(f)))
                    .fold((0, 0), |(b, o), s| (b + s.inuse_bytes, o + s.inuse_objects))
            };
            assert_eq!(by_stack(&during, "hold_1k"), (1000 * KIB, 1000));
            assert_eq!(by_stack(&during, "hold_64"), (500 * 64, 500));
            assert_eq!(by_stack(&during, "leak_4k"), (100 * 4 * KIB, 100));
            assert_eq!(by_stack(&end, "leak_4k"), (100 * 4 * KIB, 100));
            let leak = (end.heap.as_ref().unwrap().inuse_stacks.iter())
                .find(|s| s.frames.last().is_some_and(|leaf| leaf.contains("leak_4k")))
                .unwrap();
            assert!(
                leak.path.last().unwrap().ends_with("::leak_4k")
                    && leak.frames.iter().any(|f| f.ends_with("::heap_child")),
                "the leak's stack runs down to the test, on its measured path: {leak:?}"
            );
            // The table names the leak, with its path.
            let mut table = Vec::new();
            perflens::write_table(&end, &mut table).unwrap();
            let table = String::from_utf8(table).unwrap();
            let section = table
                .split("Still live at exit (by path)")
                .nth(1)
                .unwrap_or_else(|| panic!("no Still live at exit section:\n{table}"));
            // The rest of the title line, the rule, then the first row.
            let first = section.lines().nth(2).unwrap();
            assert!(
                first.contains("leak_4k") && first.contains("400.00 KiB"),
                "{first}\n{table}"
            );
            // And its allocation site, from the native stacks.
            let sites = table
                .split("Still live at exit (by allocation site)")
                .nth(1)
                .unwrap_or_else(|| panic!("no allocation sites:\n{table}"));
            let first = sites.lines().nth(2).unwrap();
            assert!(
                first.contains("leak_4k") && first.contains("400.00 KiB"),
                "{first}\n{table}"
            );
        }
        "other-thread" => {
            // Blocks allocated on one thread and freed on another leave
            // nothing in use.
            #[perflens::measure]
            fn produce(n: usize) -> Vec<Vec<u8>> {
                (0..n).map(|i| vec![i as u8; 1000]).collect()
            }
            let session = Session::builder().heap_rate(1).start().unwrap();
            let (tx, rx) = std::sync::mpsc::channel::<Vec<Vec<u8>>>();
            let consumer = std::thread::spawn(move || {
                for batch in rx {
                    drop(batch);
                }
            });
            for _ in 0..50 {
                tx.send(produce(20)).unwrap();
            }
            drop(tx);
            consumer.join().unwrap();
            let report = session.finish();
            let heap = report.heap.as_ref().unwrap();
            assert!(
                heap.sampled >= 50 * 21,
                "every allocation sampled: {heap:?}"
            );
            assert_eq!(inuse(&report, "::produce"), (0, 0, 0), "{heap:?}");
            let function = (report.functions.iter())
                .find(|f| f.name.ends_with("::produce"))
                .unwrap();
            assert_eq!(function.alloc.unwrap().count, 50 * 21);
        }
        "pprof" => {
            // The live sets held, then freed but for the leak: over HTTP
            // while they are held, in PERFLENS_PPROF_HEAP at the end.
            let mut held: Vec<Box<[u8]>> = Vec::with_capacity(GROUND_TRUTH.k1 + GROUND_TRUTH.b64);
            let builder = Session::builder().heap_rate(64 * KIB);
            #[cfg(feature = "http")]
            let builder = builder.http("127.0.0.1:0");
            let session = builder.start().unwrap();
            hold_1k(&mut held, GROUND_TRUTH.k1);
            hold_64(&mut held, GROUND_TRUTH.b64);
            leak_4k(GROUND_TRUTH.leak);
            #[cfg(feature = "http")]
            {
                let url = format!("http://{}/debug/pprof/heap", session.http_addr().unwrap());
                let top = pprof_top(&url);
                assert!(top.contains("hold_1k"), "top row {top}");
                println!("over HTTP, inuse_space's top row: {top}");
            }
            drop(held);
            session.finish();
        }
        other => panic!("unknown scenario {other}"),
    }
}

/// The function of the first row of `go tool pprof -top` on `profile`
/// (a file or a URL) by `inuse_space`: the innermost frame of the native
/// stacks below the allocator's (the function that asked for the
/// memory, or a closure of it).
fn pprof_top(profile: &str) -> String {
    let text = common::go_pprof_top("inuse_space", profile);
    // After the header line "      flat  flat%   sum%        cum   cum%".
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"));
    lines.next();
    let row = lines.next().unwrap_or_else(|| panic!("no rows:\n{text}"));
    row.split_whitespace().last().unwrap().to_string()
}

/// Runs scenario `name` in a child with `env`; fails with its output.
fn run(name: &str, env: &[(&str, &str)]) -> String {
    let mut cmd: Command = common::rerun_self("heap_child");
    cmd.env(CHILD, name);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "scenario {name}:\n{text}");
    text
}

#[test]
fn live_sets_are_estimated_within_10_percent_at_a_64_kib_rate() {
    let out = run(
        "ground-truth",
        &[("HEAP_RATE", "65536"), ("HEAP_BOUND", "0.10")],
    );
    eprintln!("{out}");
}

#[test]
fn live_sets_are_estimated_within_25_percent_at_the_default_rate() {
    let rate = (512 * KIB).to_string();
    let out = run(
        "ground-truth",
        &[("HEAP_RATE", &rate), ("HEAP_BOUND", "0.25")],
    );
    eprintln!("{out}");
}

#[test]
fn every_allocation_sampled_gives_exact_figures_and_names_the_leak() {
    run("exact", &[]);
}

#[test]
fn a_block_freed_on_another_thread_is_not_in_use() {
    run("other-thread", &[]);
}

#[test]
fn go_tool_pprof_reads_the_heap_profile_and_its_top_row_is_the_largest_live_set() {
    let file = std::env::temp_dir().join(format!("perflens-heap-{}.pb.gz", std::process::id()));
    let out = run("pprof", &[("PERFLENS_PPROF_HEAP", file.to_str().unwrap())]);
    assert!(out.contains("pprof heap profile written to"), "{out}");
    // At the end only the leak is live.
    let top = pprof_top(file.to_str().unwrap());
    std::fs::remove_file(&file).ok();
    assert!(top.contains("leak_4k"), "top row {top}");
}
