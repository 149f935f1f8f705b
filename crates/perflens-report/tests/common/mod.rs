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
    CallsiteInfo, CallsiteKind, ClockSource, Mode, NodeSnapshot, PathInfo, RawSnapshot,
    ThreadSnapshot,
};

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
