//! Starting and stopping recording, and taking snapshots.

use crate::block::{Block, HISTS, NESTED_NODE, OVERFLOW_NODE};
use crate::frame::HIST_ALLOC;
use crate::histogram::{BUCKETS, Histogram};
use crate::snapshot::{AllocSummary, ClockSource, Mode, NodeSnapshot, RawSnapshot, ThreadSnapshot};
use crate::{callsite, clock, paths, thread};
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Default node capacity per thread (`PERFLENS_NODES`). 1024 distinct
/// calling contexts per thread covers every program we have profiled.
/// The address space reserved per thread is about 45 MiB for the
/// histograms of 1024 nodes plus four times the thread's stack size for
/// the shadow stack (53 MiB for a thread with a 2 MiB stack), of which
/// only touched pages cost memory.
pub const DEFAULT_NODES: u32 = 1024;
/// Default shadow-stack depth (`PERFLENS_STACK_DEPTH`): 0, as deep as
/// each thread's own stack allows (its stack size / 16 frames, address
/// space reserved without memory; see the README). A non-zero depth is
/// a fixed limit: measured calls nested deeper are counted as dropped.
pub const DEFAULT_STACK_DEPTH: u32 = 0;

/// How a call to a function already on the stack is recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recursion {
    /// Charged to the node where the function is outermost, as a nested
    /// call: a recursion of any depth is a handful of nodes (default).
    #[default]
    Fold,
    /// One node (and path) per depth (`PERFLENS_RECURSION=expand`).
    Expand,
}
/// Default sampling period for `Mode::Sampled` (`PERFLENS_SAMPLE_EVERY`).
pub const DEFAULT_SAMPLE_EVERY: u32 = 64;
/// Default warm-up of `Mode::Sampled` (`PERFLENS_SAMPLE_WARMUP`): the
/// first calls of each calling context that are all timed.
pub const DEFAULT_SAMPLE_WARMUP: u32 = 64;

/// Runtime settings of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Timing mode.
    pub mode: Mode,
    /// Maximum calling contexts per thread.
    pub node_capacity: u32,
    /// Maximum nesting of measured calls per thread; 0 = as deep as the
    /// thread's stack allows.
    pub stack_depth: u32,
    /// Folding or expanding recursion.
    pub recursion: Recursion,
    /// Maximum distinct paths in the process.
    pub path_capacity: u32,
    /// Force a clock (`None` = TSC when invariant, else `Instant`).
    pub clock: Option<ClockSource>,
    /// Sampled mode: every call of a calling context is timed until it
    /// has been called this many times, and only then one in `every`, so
    /// that rare functions are exact and only hot ones are estimates.
    pub sample_warmup: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Timed,
            node_capacity: DEFAULT_NODES,
            stack_depth: DEFAULT_STACK_DEPTH,
            recursion: Recursion::Fold,
            path_capacity: paths::DEFAULT_PATH_CAPACITY,
            clock: None,
            sample_warmup: DEFAULT_SAMPLE_WARMUP,
        }
    }
}

impl Config {
    /// Applies `PERFLENS_MODE`, `PERFLENS_SAMPLE_EVERY`,
    /// `PERFLENS_SAMPLE_WARMUP`, `PERFLENS_NODES`,
    /// `PERFLENS_STACK_DEPTH`, `PERFLENS_RECURSION`, `PERFLENS_PATHS` and
    /// `PERFLENS_CLOCK` from
    /// the environment. Invalid values are ignored and described in the
    /// returned warnings.
    pub fn apply_env(mut self) -> (Config, Vec<String>) {
        let mut warnings = Vec::new();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let num = |name: &str, min: u32, max: u32, warnings: &mut Vec<String>| -> Option<u32> {
            let v = var(name)?;
            match v.trim().parse::<u32>() {
                Ok(n) if (min..=max).contains(&n) => Some(n),
                _ => {
                    warnings.push(format!(
                        "{name}={v} is not a whole number from {min} to {max}; ignored."
                    ));
                    None
                }
            }
        };
        let every = num("PERFLENS_SAMPLE_EVERY", 1, 1 << 30, &mut warnings);
        if let Some(m) = var("PERFLENS_MODE") {
            match parse_mode(&m, every) {
                Some(mode) => self.mode = mode,
                None => warnings.push(format!(
                    "PERFLENS_MODE={m} is not one of timed, count, sampled; keeping {}.",
                    self.mode.name()
                )),
            }
        } else if let (Some(e), Mode::Sampled { .. }) = (every, self.mode) {
            self.mode = Mode::Sampled { every: e };
        }
        if let Some(n) = num("PERFLENS_SAMPLE_WARMUP", 0, 1 << 30, &mut warnings) {
            self.sample_warmup = n;
        }
        if let Some(n) = num("PERFLENS_NODES", 2, 1 << 24, &mut warnings) {
            self.node_capacity = n;
        }
        if let Some(v) = var("PERFLENS_STACK_DEPTH") {
            match v.trim() {
                "auto" => self.stack_depth = 0,
                _ => {
                    if let Some(n) = num("PERFLENS_STACK_DEPTH", 2, 1 << 24, &mut warnings) {
                        self.stack_depth = n;
                    }
                }
            }
        }
        if let Some(r) = var("PERFLENS_RECURSION") {
            match r.trim() {
                "fold" => self.recursion = Recursion::Fold,
                "expand" => self.recursion = Recursion::Expand,
                _ => warnings.push(format!(
                    "PERFLENS_RECURSION={r} is not one of fold, expand; ignored."
                )),
            }
        }
        if let Some(n) = num("PERFLENS_PATHS", 2, 1 << 28, &mut warnings) {
            self.path_capacity = n;
        }
        if let Some(c) = var("PERFLENS_CLOCK") {
            match c.trim() {
                "tsc" => self.clock = Some(ClockSource::Tsc),
                "instant" => self.clock = Some(ClockSource::Instant),
                _ => warnings.push(format!(
                    "PERFLENS_CLOCK={c} is not one of tsc, instant; ignored."
                )),
            }
        }
        (self, warnings)
    }
}

/// Parses a mode name; `every` is used for `sampled`.
pub fn parse_mode(s: &str, every: Option<u32>) -> Option<Mode> {
    match s.trim() {
        "timed" => Some(Mode::Timed),
        "count" | "count-only" => Some(Mode::Count),
        "sampled" => Some(Mode::Sampled {
            every: every.unwrap_or(DEFAULT_SAMPLE_EVERY),
        }),
        _ => None,
    }
}

/// Why a session could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartError {
    /// Another session is recording; finish it first.
    AlreadyRecording,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRecording => f.write_str(
                "a perflens session is already recording in this process; finish (or drop) it before starting another",
            ),
        }
    }
}

impl std::error::Error for StartError {}

static NEXT_EPOCH: Mutex<u32> = Mutex::new(2);
static ACTIVE: Mutex<bool> = Mutex::new(false);

/// The locked session state (held across `fork`, see `fork.rs`).
pub(crate) fn lock_state() -> (
    std::sync::MutexGuard<'static, bool>,
    std::sync::MutexGuard<'static, u32>,
) {
    (
        ACTIVE.lock().unwrap_or_else(|e| e.into_inner()),
        NEXT_EPOCH.lock().unwrap_or_else(|e| e.into_inner()),
    )
}

/// A recording session. Dropping it without [`Recording::finish`] stops
/// recording.
#[derive(Debug)]
pub struct Recording {
    epoch: u32,
    mode: Mode,
    sample_warmup: u32,
    clock: ClockSource,
    started: Instant,
    done: bool,
}

/// Starts recording with `config`.
pub fn start(config: &Config) -> Result<Recording, StartError> {
    crate::fork::register();
    let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
    if *active {
        return Err(StartError::AlreadyRecording);
    }
    *active = true;
    let epoch = {
        let mut g = NEXT_EPOCH.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = *g;
        *g = g.wrapping_add(2).max(2);
        epoch
    };
    let clock = clock::init(config.clock);
    paths::set_capacity(config.path_capacity);
    paths::set_fold(config.recursion == Recursion::Fold);
    let mode = match config.mode {
        Mode::Sampled { every } => Mode::Sampled {
            every: every.max(1),
        },
        m => m,
    };
    let warmup = match mode {
        Mode::Sampled { .. } => config.sample_warmup,
        _ => 0,
    };
    thread::activate(
        epoch,
        mode,
        warmup,
        config.node_capacity,
        config.stack_depth,
    );
    Ok(Recording {
        epoch,
        mode,
        sample_warmup: warmup,
        clock,
        started: Instant::now(),
        done: false,
    })
}

impl Recording {
    /// The timing mode in force.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// A copy of everything recorded so far; recording goes on.
    pub fn snapshot(&self) -> RawSnapshot {
        crate::frame::charge_current_thread();
        self.collect(false)
    }

    /// Stops recording and returns the final snapshot.
    pub fn finish(mut self) -> RawSnapshot {
        crate::frame::charge_current_thread();
        thread::deactivate(self.epoch);
        // Another session may start only once this snapshot is taken:
        // its threads reset their blocks, which this one reads.
        let snap = self.collect(true);
        self.stop();
        snap
    }

    fn stop(&mut self) {
        if !self.done {
            self.done = true;
            thread::deactivate(self.epoch);
            *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = false;
        }
    }

    fn collect(&self, finished: bool) -> RawSnapshot {
        let _internal = crate::alloc::Internal::enter();
        let elapsed_ns = self.started.elapsed().as_nanos() as u64;
        let ns_per_tick = clock::ns_per_tick();
        let to_ns = |t: u64| (t as f64 * ns_per_tick).round() as u64;
        let mut threads = Vec::new();
        let mut unpublished = 0i64;
        thread::for_each_block(|entry| {
            if let Some(t) = read_block(entry.block, self.epoch, &to_ns) {
                let a = &entry.block.header().alloc;
                unpublished = unpublished.wrapping_add(
                    t.live_bytes
                        .wrapping_sub(a.published.load(Ordering::Relaxed)),
                );
                threads.push(ThreadSnapshot {
                    name: entry.name.clone(),
                    ..t
                });
            }
        });
        let alloc = crate::alloc::installed().then(|| alloc_summary(&threads, unpublished));
        RawSnapshot {
            alloc,
            mode: self.mode,
            sample_warmup: self.sample_warmup,
            clock: self.clock,
            ns_per_tick,
            elapsed_ns,
            finished,
            callsites: callsite::all(),
            paths: paths::all(),
            threads,
            path_capacity: paths::capacity(),
            overflow_paths: paths::overflowed(),
            unrecorded_calls: thread::unrecorded(),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_block(block: Block, epoch: u32, to_ns: &dyn Fn(u64) -> u64) -> Option<ThreadSnapshot> {
    let h = block.header();
    if h.epoch.load(Ordering::Acquire) != epoch || h.excluded.load(Ordering::Acquire) == 1 {
        return None;
    }
    let count = h.node_count.load(Ordering::Acquire);
    let pending = block.pending();
    let read_hist = |node: u32, which: usize| read_hist(block, node, which, pending);
    let mut nodes = Vec::with_capacity(count as usize);
    let mut overflow_calls = 0;
    for i in 0..count {
        // SAFETY: i < node_count <= node_cap.
        let n = unsafe { block.node(i) };
        let r = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let hist_total = read_hist(i, 0);
        // `calls` counts the untimed calls; each timed one is an entry of
        // the inclusive histogram.
        let timed_calls = hist_total.count();
        let calls = r(&n.calls) + timed_calls;
        #[allow(unused_mut)]
        let mut hist_alloc = read_hist(i, HIST_ALLOC);
        // Calls that allocated nothing are not in the histogram. Without
        // the `alloc` feature calls record nothing there: leave it empty.
        #[cfg(feature = "alloc")]
        {
            let zero_calls = calls.saturating_sub(hist_alloc.count());
            if zero_calls != 0 {
                hist_alloc.record_n(0, zero_calls);
            }
        }
        let path = n.path.load(Ordering::Relaxed);
        let nested = path & NESTED_NODE != 0;
        let node = NodeSnapshot {
            path: path & !NESTED_NODE,
            nested,
            max_depth: if nested {
                n.rec_max.load(Ordering::Relaxed)
            } else {
                0
            },
            calls,
            timed_calls,
            total_ns: to_ns(r(&n.total)),
            self_ns: to_ns(r(&n.self_)),
            busy_ns: to_ns(r(&n.busy)),
            polls: r(&n.polls),
            cancelled: r(&n.cancelled),
            timed_cancelled: r(&n.cancelled_timed),
            cancelled_ns: to_ns(r(&n.cancelled_wall)),
            hist_total,
            hist_self: read_hist(i, 1),
            alloc_bytes: r(&n.alloc_bytes),
            alloc_count: r(&n.alloc_count),
            free_bytes: r(&n.free_bytes),
            free_count: r(&n.free_count),
            hist_alloc,
        };
        if i == OVERFLOW_NODE {
            overflow_calls = node.calls + node.cancelled;
        }
        nodes.push(node);
    }
    // Read after every node counter: see `unattributed`.
    #[cfg(feature = "alloc")]
    if let Some((top, moved)) = unattributed(block) {
        if let Some(node) = nodes.get_mut(top as usize) {
            node.alloc_bytes = node.alloc_bytes.wrapping_add(moved[0]);
            node.alloc_count = node.alloc_count.wrapping_add(moved[1]);
            node.free_bytes = node.free_bytes.wrapping_add(moved[2]);
            node.free_count = node.free_count.wrapping_add(moved[3]);
        }
    }
    nodes.retain(|node| {
        node.calls != 0
            || node.cancelled != 0
            || node.polls != 0
            || node.alloc_count != 0
            || node.free_count != 0
    });
    Some(ThreadSnapshot {
        index: h.thread_index,
        tid: h.tid,
        name: None,
        exited: h.exited.load(Ordering::Acquire) == 1,
        nodes,
        node_capacity: h.node_cap - crate::block::INTERNAL_NODES,
        overflow_calls,
        dropped_frames: h.dropped_frames.load(Ordering::Relaxed),
        live_bytes: h.alloc.live(),
        peak_live_bytes: h.alloc.peak.load(Ordering::Relaxed),
    })
}

/// What a thread allocated and freed since its last frame boundary
/// (with the `alloc` feature, allocations are charged to nodes at frame
/// boundaries: see `frame::boundary`), and the node it belongs to: the
/// frame on top of the thread's stack since that boundary, as noted by
/// the thread at each change of its top frame (see `AllocMark::top`). `None`
/// when the thread kept crossing boundaries while this read it (a live
/// snapshot then shows that part at the thread's next boundary).
///
/// Never counts a byte twice. The caller read the node counters before;
/// the owner stores the marks, then (release fence) adds to the node
/// counters, so a charge whose addition was read has its marks seen here
/// (acquire fence), and what it charged is not in `totals - marks`.
/// Which node: the owner records the top node, then (release fence) moves
/// the totals, so totals seen moved past the marks mean that node is
/// seen, or a later one; a later one was noted at a later boundary, which
/// charged (every boundary after a movement does) and so stored new
/// marks first (release fence in the charge),
/// so the second read of the marks differs and this reads again. A
/// thread that is not running (parked, blocked, or waiting for the
/// session to end) is read exactly.
#[cfg(feature = "alloc")]
fn unattributed(block: Block) -> Option<(u32, [u64; 4])> {
    use std::sync::atomic::fence;
    let h = block.header();
    let marks = || h.mark.counters().map(|m| m.load(Ordering::Relaxed));
    fence(Ordering::Acquire);
    for _ in 0..8 {
        let before = marks();
        let totals = h.alloc.totals();
        fence(Ordering::Acquire);
        let top = h.mark.top.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if marks() != before {
            continue;
        }
        let moved = [0, 1, 2, 3].map(|i| totals[i].wrapping_sub(before[i]));
        // Bytes freed are derived from two counters the owner may be
        // updating: a read between them can look like a step back.
        if moved.iter().any(|&d| (d as i64) < 0) {
            continue;
        }
        return Some((top, moved));
    }
    None
}

/// Process-wide live and peak bytes: what threads published, plus what
/// each moved since its last publication (so `live_bytes` is exact).
fn alloc_summary(threads: &[ThreadSnapshot], unpublished: i64) -> AllocSummary {
    let (published_live, published_peak) = crate::alloc::published();
    let live = published_live.wrapping_add(unpublished);
    let thread_peak = threads.iter().map(|t| t.peak_live_bytes).max().unwrap_or(0);
    AllocSummary {
        live_bytes: live,
        peak_live_bytes: published_peak.max(thread_peak).max(live.max(0) as u64),
        peak_resolution_bytes: crate::alloc::PUBLISH_STEP as u64,
    }
}

/// Histogram `which` of a node, with the thread's pending entries (see
/// `Header::pending`) added.
fn read_hist(block: Block, node: u32, which: usize, pending: [Option<u64>; 2]) -> Histogram {
    let first = ((node as usize * HISTS + which) * BUCKETS) as u64;
    Histogram::from_dense((0..BUCKETS).map(|b| {
        // SAFETY: node < node_count <= node_cap, which < HISTS, b < BUCKETS.
        let stored = unsafe { block.bucket(node, which, b) }.load(Ordering::Relaxed);
        let idx = first + b as u64;
        stored + pending.iter().filter(|&&p| p == Some(idx)).count() as u64
    }))
}

/// True while a session records.
pub fn is_recording() -> bool {
    thread::generation() & 1 == 0
}
