//! Hand-made snapshots with known numbers.
//!
//! `ns_per_tick` is 1.0, so histogram ticks are nanoseconds, and the
//! builder records each node's histograms as `timed_calls` equal values
//! (`total / timed_calls`, `self / timed_calls`) unless a test overrides
//! them.
#![allow(dead_code)]

pub mod schema;

use std::collections::HashMap;

use perflens_core::histogram::Histogram;
use perflens_core::snapshot::{
    AllocSummary, CallsiteInfo, CallsiteKind, ClockSource, Mode, NodeSnapshot, PathInfo,
    RawSnapshot, ThreadSnapshot,
};
use perflens_report::{CpuInput, CpuThreadInput, Report, write_json, write_table};

/// The JSON report as text.
pub fn json(report: &Report) -> String {
    let mut out = Vec::new();
    write_json(report, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The terminal tables as text.
pub fn table(report: &Report) -> String {
    let mut out = Vec::new();
    write_table(report, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

pub struct SnapBuilder {
    pub snap: RawSnapshot,
    /// Current callsite of each name.
    callsite_of: HashMap<String, u32>,
    /// Path of each (parent, callsite).
    path_of: HashMap<(u32, u32), u32>,
}

impl SnapBuilder {
    /// Root and overflow callsites and paths, no threads, 1 s elapsed.
    pub fn new(mode: Mode) -> SnapBuilder {
        let internal = |name: &str| CallsiteInfo {
            name: name.into(),
            kind: CallsiteKind::Internal,
        };
        SnapBuilder {
            snap: RawSnapshot {
                mode,
                sample_warmup: 0,
                clock: ClockSource::Tsc,
                ns_per_tick: 1.0,
                elapsed_ns: 1_000_000_000,
                finished: true,
                callsites: vec![internal("[root]"), internal("[overflow]")],
                paths: vec![
                    PathInfo {
                        parent: 0,
                        callsite: 0,
                        id: 0,
                    },
                    PathInfo {
                        parent: 0,
                        callsite: 1,
                        id: 1,
                    },
                ],
                threads: Vec::new(),
                path_capacity: 4096,
                overflow_paths: 0,
                unrecorded_calls: 0,
                alloc: None,
                heap: None,
            },
            callsite_of: HashMap::new(),
            path_of: HashMap::new(),
        }
    }

    /// A new callsite; later paths through `name` use it.
    pub fn callsite(&mut self, name: &str, kind: CallsiteKind) -> u32 {
        self.snap.callsites.push(CallsiteInfo {
            name: name.into(),
            kind,
        });
        let id = self.snap.callsites.len() as u32 - 1;
        self.callsite_of.insert(name.into(), id);
        id
    }

    /// The path index of a chain of names, created as needed. Ids are an
    /// FNV-style running hash, so most exceed 2^53.
    pub fn path(&mut self, frames: &[&str]) -> u32 {
        let mut parent = 0u32;
        for name in frames {
            let cs = match self.callsite_of.get(*name) {
                Some(&cs) => cs,
                None => self.callsite(name, CallsiteKind::Sync),
            };
            parent = match self.path_of.get(&(parent, cs)) {
                Some(&p) => p,
                None => {
                    let mut id = self.snap.paths[parent as usize].id ^ 0xcbf2_9ce4_8422_2325;
                    for b in name.bytes() {
                        id = (id ^ b as u64).wrapping_mul(0x0100_0000_01b3);
                    }
                    self.snap.paths.push(PathInfo {
                        parent,
                        callsite: cs,
                        id,
                    });
                    let p = self.snap.paths.len() as u32 - 1;
                    self.path_of.insert((parent, cs), p);
                    p
                }
            };
        }
        parent
    }

    /// A new thread; returns its index.
    pub fn thread(&mut self, name: &str) -> usize {
        let index = self.snap.threads.len();
        self.snap.threads.push(ThreadSnapshot {
            index: index as u32,
            tid: 1000 + index as u64,
            name: Some(name.into()),
            node_capacity: 256,
            ..Default::default()
        });
        index
    }

    /// A fully timed node.
    pub fn node(
        &mut self,
        thread: usize,
        frames: &[&str],
        calls: u64,
        total_ns: u64,
        self_ns: u64,
    ) -> &mut NodeSnapshot {
        self.sampled_node(thread, frames, calls, calls, total_ns, self_ns)
    }

    /// A node that timed `timed` of its `calls` calls, taking `total_ns`
    /// and `self_ns` over those.
    pub fn sampled_node(
        &mut self,
        thread: usize,
        frames: &[&str],
        calls: u64,
        timed: u64,
        total_ns: u64,
        self_ns: u64,
    ) -> &mut NodeSnapshot {
        let path = self.path(frames);
        let hist = |sum: u64| {
            let mut h = Histogram::new();
            if let Some(per_call) = sum.checked_div(timed) {
                h.record_n(per_call, timed);
            }
            h
        };
        let node = NodeSnapshot {
            path,
            calls,
            timed_calls: timed,
            total_ns,
            self_ns,
            hist_total: hist(total_ns),
            hist_self: hist(self_ns),
            ..Default::default()
        };
        let nodes = &mut self.snap.threads[thread].nodes;
        nodes.push(node);
        nodes.last_mut().unwrap()
    }

    /// A root node (path 0): what `thread` allocated outside any measured
    /// function. It has no calls.
    pub fn root(&mut self, thread: usize) -> &mut NodeSnapshot {
        let nodes = &mut self.snap.threads[thread].nodes;
        nodes.push(NodeSnapshot::default());
        nodes.last_mut().unwrap()
    }

    pub fn build(self) -> RawSnapshot {
        self.snap
    }
}

/// A histogram with the given values.
pub fn hist(values: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for &v in values {
        h.record(v);
    }
    h
}

/// Sets a node's exclusive allocation counters, and its `hist_alloc` to
/// `per_call`: the inclusive bytes of each of its calls.
pub fn set_alloc(
    node: &mut NodeSnapshot,
    (bytes, count, free_bytes, free_count): (u64, u64, u64, u64),
    per_call: &[u64],
) {
    node.alloc_bytes = bytes;
    node.alloc_count = count;
    node.free_bytes = free_bytes;
    node.free_count = free_count;
    node.hist_alloc = hist(per_call);
}

/// A timed session on three threads that counted allocations, with
/// nested and recursive paths; every byte figure is multiplied by `unit`
/// (counts are not). With `unit` 1, exclusive figures merged over threads
/// (bytes, count, freed) and inclusive ones (bytes, count):
///
/// ```text
/// path                       calls  exclusive        inclusive
/// [root]                         -  115, 4, 3050     8296, 59
/// [overflow]                     2    7, 1, 0           7, 1
/// run                            2  1500, 15, 300    8174, 54
/// run > parse                    3  6000, 22, 1000   6610, 38
/// run > parse > fib              3   330, 4, 0        610, 16
/// run > parse > fib > fib        4   200, 4, 0        280, 12
/// run > parse > fib > fib > fib  8    80, 8, 40        80, 8
/// run > idle                     3     0, 0, 0          0, 0
/// run > fib                      1    64, 1, 0         64, 1
/// ```
///
/// Threads: `main` allocated 5744 B in 48 allocations and freed 1290 B in
/// 12 frees (100 B outside measured functions); `worker` allocated 2547 B
/// in 10 and freed 3100 B in 4 (10 B outside); `#2`, exited and unnamed,
/// allocated 5 B in 1, all outside measured functions.
pub fn alloc_fixture(unit: u64) -> RawSnapshot {
    let u = |n: u64| n * unit;
    let us = |values: &[u64]| values.iter().map(|&v| v * unit).collect::<Vec<u64>>();
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 2_000_000;
    let (main, worker, gone) = (b.thread("main"), b.thread("worker"), b.thread("gone"));

    set_alloc(b.root(main), (u(100), 2, u(50), 1), &[]);
    let run = b.node(main, &["run"], 1, 1_500_000, 100_000);
    set_alloc(run, (u(1000), 10, u(200), 2), &us(&[5644]));
    let parse = b.node(main, &["run", "parse"], 2, 1_200_000, 600_000);
    set_alloc(parse, (u(4000), 20, u(1000), 5), &us(&[4000, 580]));
    let fib = b.node(main, &["run", "parse", "fib"], 2, 600_000, 200_000);
    set_alloc(fib, (u(300), 3, 0, 0), &us(&[290, 290]));
    let fib = b.node(main, &["run", "parse", "fib", "fib"], 4, 400_000, 200_000);
    set_alloc(fib, (u(200), 4, 0, 0), &us(&[70; 4]));
    let fib = b.node(
        main,
        &["run", "parse", "fib", "fib", "fib"],
        8,
        200_000,
        200_000,
    );
    set_alloc(fib, (u(80), 8, u(40), 4), &us(&[10; 8]));
    let idle = b.node(main, &["run", "idle"], 3, 150_000, 150_000);
    idle.hist_alloc = hist(&[0; 3]);
    let fib = b.node(main, &["run", "fib"], 1, 50_000, 50_000);
    set_alloc(fib, (u(64), 1, 0, 0), &us(&[64]));
    let t = &mut b.snap.threads[main];
    (t.live_bytes, t.peak_live_bytes) = ((u(5744) - u(1290)) as i64, u(5000));

    set_alloc(b.root(worker), (u(10), 1, u(3000), 3), &[]);
    let run = b.node(worker, &["run"], 1, 800_000, 100_000);
    set_alloc(run, (u(500), 5, u(100), 1), &us(&[2530]));
    let parse = b.node(worker, &["run", "parse"], 1, 700_000, 600_000);
    set_alloc(parse, (u(2000), 2, 0, 0), &us(&[2030]));
    let fib = b.node(worker, &["run", "parse", "fib"], 1, 100_000, 100_000);
    set_alloc(fib, (u(30), 1, 0, 0), &us(&[30]));
    let t = &mut b.snap.threads[worker];
    t.nodes.push(NodeSnapshot {
        path: 1,
        calls: 2,
        alloc_bytes: u(7),
        alloc_count: 1,
        ..Default::default()
    });
    (t.live_bytes, t.peak_live_bytes, t.overflow_calls) =
        (u(2547) as i64 - u(3100) as i64, u(2000), 2);

    set_alloc(b.root(gone), (u(5), 1, 0, 0), &[]);
    let t = &mut b.snap.threads[gone];
    (t.name, t.exited, t.live_bytes, t.peak_live_bytes) = (None, true, u(5) as i64, u(5));

    b.snap.alloc = Some(AllocSummary {
        live_bytes: (u(8296) - u(4390)) as i64,
        peak_live_bytes: u(6000),
        peak_resolution_bytes: 4096,
    });
    b.build()
}

/// Nanoseconds in a millisecond: the fixture's samples are 1 ms of CPU
/// each (1000 Hz), except those noted.
pub const MS: u64 = 1_000_000;

/// A timed session of 120 ms with CPU samples at 1000 Hz, and its
/// [`CpuInput`]. Paths, their calls and their CPU samples (ms), exclusive
/// and inclusive (subtree):
///
/// ```text
/// path                calls  samples  cpu_ns    subtree
/// a                       1       10  10        67.25
/// a > b                   2       20  20        52.25
/// a > b > c               4       30  30.25     32.25
/// a > b > c > pending     0        2   2         2
/// a > c                   3        5   5         5
/// r                       1        1   1         7
/// r > r                   1        2   2         6
/// r > r > r               1        4   4         4
/// idle                    5        0   0         0
/// [overflow]              2        3   3         3
/// outside                 -        7   7         -
/// ```
///
/// `pending` started but never completed: it has no row, but its samples
/// count in the totals and in its callers' inclusive figures. Totals: 84
/// samples, 84.25 ms, 7 ms outside measured functions, 3 dropped.
pub fn cpu_fixture() -> (RawSnapshot, CpuInput) {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 120 * MS;
    let main = b.thread("main");
    let worker = b.thread("worker");
    b.node(main, &["a"], 1, 100 * MS, 10 * MS);
    b.node(main, &["a", "b"], 2, 60 * MS, 20 * MS);
    b.node(main, &["a", "b", "c"], 4, 40 * MS, 40 * MS);
    b.node(main, &["a", "b", "c", "pending"], 0, 0, 0);
    b.node(main, &["a", "c"], 3, 30 * MS, 30 * MS);
    b.node(worker, &["r"], 1, 7 * MS, MS);
    b.node(worker, &["r", "r"], 1, 6 * MS, 2 * MS);
    b.node(worker, &["r", "r", "r"], 1, 4 * MS, 4 * MS);
    b.node(worker, &["idle"], 5, 5 * MS, 5 * MS);
    let t = &mut b.snap.threads[worker];
    t.overflow_calls = 2;
    t.nodes.push(NodeSnapshot {
        path: 1,
        calls: 2,
        ..Default::default()
    });
    let mut by_path = Vec::new();
    for (frames, samples, ns) in [
        (&["a"][..], 10, 10 * MS),
        (&["a", "b"], 20, 20 * MS),
        (&["a", "b", "c"], 30, 30 * MS + MS / 4),
        (&["a", "b", "c", "pending"], 2, 2 * MS),
        (&["a", "c"], 5, 5 * MS),
        (&["r"], 1, MS),
        (&["r", "r"], 2, 2 * MS),
        (&["r", "r", "r"], 4, 4 * MS),
    ] {
        by_path.push((b.path(frames), samples, ns));
    }
    by_path.push((1, 3, 3 * MS));
    let cpu = CpuInput {
        frequency_hz: 1000,
        source: "perf_event".into(),
        by_path,
        outside_samples: 7,
        outside_cpu_ns: 7 * MS,
        threads: vec![
            CpuThreadInput {
                tid: 1000,
                name: Some("main".into()),
                samples: 70,
                cpu_ns: 70 * MS + MS / 4,
                dropped: 1,
            },
            CpuThreadInput {
                tid: 1001,
                name: None,
                samples: 14,
                cpu_ns: 14 * MS,
                dropped: 2,
            },
        ],
        dropped: 3,
        kernel: None,
        kernel_unattributed_ns: 0,
    };
    (b.build(), cpu)
}

/// The [`CpuInput`] of a sampler that could not start.
pub fn cpu_unavailable(reason: &str) -> CpuInput {
    CpuInput {
        frequency_hz: 1000,
        source: format!("unavailable: {reason}"),
        ..Default::default()
    }
}

/// Name of the long tokenizer function in [`fixture`].
pub const LONG: &str =
    "app::tokenizer::very_long_module_name::Tokenizer::next_token_with_lookahead";

/// A timed session of 2.5 s on three threads: a recursive-free pipeline
/// with a long function name, an async function, and lost calls.
pub fn fixture() -> RawSnapshot {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 2_500_000_000;
    b.callsite("app::fetch", CallsiteKind::Async);
    let main = b.thread("main");
    b.node(main, &["app::main"], 1, 2_400_000_000, 100_000_000);
    let parse = b.node(
        main,
        &["app::main", "app::parse"],
        1_000,
        1_200_000_000,
        300_000_000,
    );
    // 900 fast, 90 medium, 10 slow parses.
    parse.hist_total = Histogram::new();
    parse.hist_total.record_n(1_000_000, 900);
    parse.hist_total.record_n(2_000_000, 90);
    parse.hist_total.record_n(20_000_000, 10);
    b.node(
        main,
        &["app::main", "app::parse", LONG],
        250_000,
        900_000_000,
        900_000_000,
    );
    let fetch = b.node(
        main,
        &["app::main", "app::fetch"],
        40,
        800_000_000,
        50_000_000,
    );
    fetch.busy_ns = 60_000_000;
    fetch.polls = 160;
    fetch.cancelled = 2;

    let worker = b.thread("worker-1");
    b.node(worker, &["app::parse"], 500, 600_000_000, 150_000_000);
    b.node(
        worker,
        &["app::parse", LONG],
        125_000,
        450_000_000,
        450_000_000,
    );

    let exited = b.thread("worker-2");
    let fetch = b.node(exited, &["app::fetch"], 10, 100_000_000, 20_000_000);
    fetch.busy_ns = 20_000_000;
    fetch.polls = 30;
    let t = &mut b.snap.threads[exited];
    t.exited = true;
    t.name = None;
    t.overflow_calls = 7;
    t.dropped_frames = 3;
    t.nodes.push(NodeSnapshot {
        path: 1,
        calls: 7,
        ..Default::default()
    });
    b.build()
}

/// A timed session with every section of the report: allocations, CPU
/// samples (kernel time partly attributed), an async function (busy,
/// polls, cancelled) and a recursion, and its [`CpuInput`].
pub fn full_fixture() -> (RawSnapshot, CpuInput) {
    let mut b = SnapBuilder::new(Mode::Timed);
    b.snap.elapsed_ns = 50 * MS;
    b.callsite("serve", CallsiteKind::Async);
    let main = b.thread("main");
    set_alloc(b.root(main), (40, 1, 8, 1), &[]);
    let run = b.node(main, &["run"], 1, 40 * MS, 4 * MS);
    set_alloc(run, (1000, 10, 200, 2), &[3330]);
    let fib = b.node(main, &["run", "fib"], 2, 20 * MS, 6 * MS);
    set_alloc(fib, (300, 3, 0, 0), &[250, 250]);
    let fib = b.node(main, &["run", "fib", "fib"], 4, 14 * MS, 14 * MS);
    set_alloc(fib, (200, 4, 40, 1), &[50; 4]);
    let serve = b.node(main, &["run", "serve"], 3, 16 * MS, 5 * MS);
    (serve.busy_ns, serve.polls, serve.cancelled) = (9 * MS, 12, 1);
    set_alloc(serve, (1830, 7, 100, 1), &[600, 610, 620]);
    let t = &mut b.snap.threads[main];
    (t.live_bytes, t.peak_live_bytes) = (3370 - 349, 3000);
    b.snap.alloc = Some(AllocSummary {
        live_bytes: 3370 - 349,
        peak_live_bytes: 3100,
        peak_resolution_bytes: 4096,
    });
    let mut by_path = Vec::new();
    for (frames, samples, ns) in [
        (&["run"][..], 4, 4 * MS),
        (&["run", "fib"], 6, 6 * MS),
        (&["run", "fib", "fib"], 13, 13 * MS + MS / 2),
        (&["run", "serve"], 5, 5 * MS),
    ] {
        by_path.push((b.path(frames), samples, ns));
    }
    let cpu = CpuInput {
        frequency_hz: 1000,
        source: "perf_event".into(),
        by_path,
        outside_samples: 2,
        outside_cpu_ns: 2 * MS,
        threads: vec![CpuThreadInput {
            tid: 1000,
            name: Some("main".into()),
            samples: 30,
            cpu_ns: 30 * MS + MS / 2,
            dropped: 0,
        }],
        dropped: 0,
        kernel: Some(perflens_report::KernelTime::Partly),
        kernel_unattributed_ns: 3 * MS,
    };
    (b.build(), cpu)
}

/// Await sites of `waits_fixture`: `src/app.rs`, lines 12, 14 (twice)
/// and 20.
pub const SITE_A: &str = "src/app.rs:12:9";
pub const SITE_B: &str = "src/app.rs:14:9";
pub const SITE_C: &str = "src/app.rs:20:5";
pub const SITE_D: &str = "src/app.rs:14:30";

/// A timed session on two threads where `app::handler` (async) awaits at
/// four sites; ms figures:
///
/// ```text
/// site  thread  calls  timed (waits)       cancelled (wait)  busy  below it
/// A     main    4      3 x 10              1 (5)             0     -
/// A     worker  2      2 x 2               -                 0     -
/// B     main    4      1 x 3               -                 8     query (4 calls, 8), parse (2, 1),
///                                                                  idle (never ran), query > decode
/// C     main    10     1 x 0.5             -                 0     -
/// D     main    1      1 x 2               -                 0     -
/// ```
///
/// So A: count 7, wait 39, p50 of [0, 2, 2, 10, 10, 10] (2), uninstrumented;
/// B: count 4, wait 3, children [query, parse]; C: wait 0.5 (below 1 ms);
/// D: count 1, wait 2, uninstrumented.
pub fn waits_fixture(mode: Mode) -> RawSnapshot {
    let ms = 1_000_000u64;
    let mut b = SnapBuilder::new(mode);
    let main = b.thread("main");
    let worker = b.thread("worker");
    b.callsite("app::handler", CallsiteKind::Async);
    b.callsite(SITE_A, CallsiteKind::Await);
    b.callsite(SITE_B, CallsiteKind::Await);
    b.callsite(SITE_C, CallsiteKind::Await);
    b.callsite(SITE_D, CallsiteKind::Await);
    b.callsite("app::query", CallsiteKind::Async);
    let h = b.node(main, &["app::handler"], 4, 80 * ms, 10 * ms);
    (h.polls, h.busy_ns) = (20, 20 * ms);
    let h = b.node(worker, &["app::handler"], 2, 10 * ms, 2 * ms);
    (h.polls, h.busy_ns) = (4, 2 * ms);
    let a = b.sampled_node(main, &["app::handler", SITE_A], 4, 3, 30 * ms, 0);
    (a.polls, a.cancelled, a.timed_cancelled, a.cancelled_ns) = (4, 1, 1, 5 * ms);
    b.sampled_node(worker, &["app::handler", SITE_A], 2, 2, 4 * ms, 0)
        .polls = 2;
    let s = b.sampled_node(main, &["app::handler", SITE_B], 4, 1, 3 * ms, 0);
    (s.polls, s.busy_ns) = (1, 8 * ms);
    b.node(
        main,
        &["app::handler", SITE_B, "app::query"],
        4,
        8 * ms,
        6 * ms,
    )
    .polls = 4;
    b.node(main, &["app::handler", SITE_B, "app::parse"], 2, ms, ms);
    b.node(main, &["app::handler", SITE_B, "app::idle"], 0, 0, 0);
    b.node(
        main,
        &["app::handler", SITE_B, "app::query", "app::decode"],
        4,
        ms,
        ms,
    );
    b.sampled_node(main, &["app::handler", SITE_C], 10, 1, ms / 2, 0)
        .polls = 1;
    b.sampled_node(main, &["app::handler", SITE_D], 1, 1, 2 * ms, 0)
        .polls = 3;
    if mode == Mode::Count {
        for t in &mut b.snap.threads {
            for n in &mut t.nodes {
                (n.timed_calls, n.timed_cancelled) = (0, 0);
                (n.total_ns, n.self_ns, n.busy_ns, n.cancelled_ns) = (0, 0, 0, 0);
                n.hist_total = Histogram::new();
                n.hist_self = Histogram::new();
            }
        }
    }
    b.build()
}
