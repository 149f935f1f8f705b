//! Starting and stopping recording, and taking snapshots.

mod fork;

use crate::publish::{PublicationEnd, PublishOptions};
use crate::snapshot::{AllocSummary, ClockSource, Mode, RawSnapshot, ThreadSnapshot};
use crate::trace::RawTrace;
use crate::{callsite, clock, paths, thread};
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The defaults and `Recursion` are shared with the readers.
pub use perflens_format::vocab::{
    DEFAULT_NODES, DEFAULT_SAMPLE_EVERY, DEFAULT_SAMPLE_WARMUP, DEFAULT_STACK_DEPTH, Recursion,
};

/// Runtime settings of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordingOptions {
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
    /// Publish the session in shared memory for `perflens top` and other
    /// readers (see `publish.rs`); `None`: private (default).
    pub live: Option<PublishOptions>,
    /// Trace mode: a timeline of events beside the aggregates, in a
    /// buffer of this many bytes (see `trace.rs`; at least
    /// [`trace::MIN_BUFFER`](crate::trace::MIN_BUFFER)). Timed calls
    /// are the traced ones: a session in another mode is timed instead.
    /// `None`: no trace (default).
    pub trace_buffer: Option<usize>,
    /// Heap profiling (feature `heap`, with the counting allocator
    /// installed): sample allocations and keep the sampled ones in use
    /// (see [`crate::heap`]). `None`: not sampled (default). Without the
    /// feature the allocator hook samples nothing.
    pub heap: Option<crate::heap::HeapOptions>,
}

impl Default for RecordingOptions {
    fn default() -> Self {
        RecordingOptions {
            mode: Mode::Timed,
            node_capacity: DEFAULT_NODES,
            stack_depth: DEFAULT_STACK_DEPTH,
            recursion: Recursion::Fold,
            path_capacity: paths::DEFAULT_PATH_CAPACITY,
            clock: None,
            sample_warmup: DEFAULT_SAMPLE_WARMUP,
            live: None,
            trace_buffer: None,
            heap: None,
        }
    }
}

impl RecordingOptions {
    /// Applies `PERFLENS_MODE`, `PERFLENS_SAMPLE_EVERY`,
    /// `PERFLENS_SAMPLE_WARMUP`, `PERFLENS_NODES`,
    /// `PERFLENS_STACK_DEPTH`, `PERFLENS_RECURSION`, `PERFLENS_PATHS` and
    /// `PERFLENS_CLOCK` from
    /// the environment, and with heap profiling on, `PERFLENS_HEAP_RATE`
    /// (0 turns it off), `PERFLENS_HEAP_SEED` and `PERFLENS_HEAP_TABLE`, from
    /// the environment, as `var` reads it (the facade's one reader of its
    /// settings; `None` for an unset or blank variable). Invalid values
    /// are ignored and described in the returned warnings.
    pub fn apply_env(
        mut self,
        var: impl Fn(&'static str) -> Option<String>,
    ) -> (RecordingOptions, Vec<String>) {
        let mut warnings = Vec::new();
        let num =
            |name: &'static str, min: u32, max: u32, warnings: &mut Vec<String>| -> Option<u32> {
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
                "tsc" | "cntvct" => self.clock = Some(ClockSource::Tsc),
                "instant" => self.clock = Some(ClockSource::Instant),
                _ => warnings.push(format!(
                    "PERFLENS_CLOCK={c} is not one of tsc, cntvct, instant; ignored."
                )),
            }
        }
        if let Some(heap) = &mut self.heap {
            let num64 = |name: &'static str, warnings: &mut Vec<String>| -> Option<u64> {
                let v = var(name)?;
                match v.trim().parse::<u64>() {
                    Ok(n) => Some(n),
                    Err(_) => {
                        warnings.push(format!("{name}={v} is not a whole number; ignored."));
                        None
                    }
                }
            };
            if let Some(seed) = num64("PERFLENS_HEAP_SEED", &mut warnings) {
                heap.seed = seed;
            }
            if let Some(n) = num("PERFLENS_HEAP_TABLE", 64, 1 << 26, &mut warnings) {
                heap.capacity = n;
            }
            if let Some(v) = var("PERFLENS_HEAP_STACKS") {
                match v.trim() {
                    "1" => heap.stacks = true,
                    "0" => heap.stacks = false,
                    _ => warnings.push(format!("PERFLENS_HEAP_STACKS={v} is not 0 or 1; ignored.")),
                }
            }
            match num64("PERFLENS_HEAP_RATE", &mut warnings) {
                Some(0) => self.heap = None,
                Some(rate) => heap.rate = rate,
                None => {}
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
    /// A setting cannot be honoured (an HTTP server's address without a
    /// token, an address that cannot be bound): why.
    Setting(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRecording => f.write_str(
                "a perflens session is already recording in this process; finish (or drop) it before starting another",
            ),
            StartError::Setting(why) => f.write_str(why),
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
    /// The live session's directory, when it is published.
    live_dir: Option<std::path::PathBuf>,
    /// Whether it records a trace.
    traced: bool,
}

/// Starts recording with `config`.
pub fn start(config: &RecordingOptions) -> Result<Recording, StartError> {
    fork::register();
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
        // The traced calls are the timed ones.
        _ if config.trace_buffer.is_some() => Mode::Timed,
        Mode::Sampled { every } => Mode::Sampled {
            every: every.max(1),
        },
        m => m,
    };
    // Before the threads attach for this session: they look for it.
    let traced = match config.trace_buffer {
        Some(_) if clock == ClockSource::Instant => {
            eprintln!(
                "[perflens] trace: not recorded with the Instant clock \
                 (PERFLENS_CLOCK=instant, or no invariant TSC)"
            );
            false
        }
        Some(bytes) => {
            let ok = crate::trace::begin(epoch, bytes);
            if !ok {
                eprintln!("[perflens] trace: no memory for a buffer of {bytes} bytes");
            }
            ok
        }
        None => false,
    };
    let warmup = match mode {
        Mode::Sampled { .. } => config.sample_warmup,
        _ => 0,
    };
    let live_dir = config.live.as_ref().and_then(|live| {
        let (m, every) = crate::thread::mode_code(mode);
        let facts = crate::publish::Start {
            epoch,
            mode: m,
            sample_every: every,
            sample_warmup: warmup,
            clock: (clock == ClockSource::Instant) as u32,
            path_capacity: config.path_capacity.max(2),
        };
        crate::publish::begin(&facts, live)
            .map_err(|e| crate::publish::say_unpublished(&e))
            .ok()
    });
    // A published session's heap table is in its live directory, for
    // readers (`perflens top`'s Memory tab).
    let shared = (config.heap.as_ref())
        .filter(|_| live_dir.is_some() && cfg!(feature = "heap"))
        .and_then(|h| {
            crate::publish::create_file(perflens_format::heap::HEAP_FILE, crate::heap::table_len(h))
        });
    if !crate::heap::begin(epoch, config.heap.as_ref(), shared) {
        eprintln!("[perflens] heap: no memory for the sample table; the heap is not sampled");
    }
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
        live_dir,
        traced,
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

    /// A handle another thread keeps to take snapshots of this session
    /// while it runs (an HTTP server's). Once the session has ended, its
    /// snapshots are empty (`None`).
    pub fn snapshotter(&self) -> Snapshotter {
        Snapshotter {
            epoch: self.epoch,
            mode: self.mode,
            sample_warmup: self.sample_warmup,
            clock: self.clock,
            started: self.started,
        }
    }

    /// The directory of the live session (see [`RecordingOptions::live`]), when
    /// this session is published.
    pub fn live_dir(&self) -> Option<&std::path::Path> {
        self.live_dir.as_deref()
    }

    /// Stops recording and returns the final snapshot. A live session is
    /// marked finished (and removed unless kept).
    pub fn finish(self) -> RawSnapshot {
        let (snap, live) = self.finish_live();
        live.close();
        snap
    }

    /// [`Recording::finish`], leaving a live session open for final
    /// records ([`PublicationEnd::record`]) until [`PublicationEnd::close`]: its final
    /// figures are written, readers do not see it finished yet.
    pub fn finish_live(self) -> (RawSnapshot, PublicationEnd) {
        let (snap, live, _) = self.finish_traced();
        (snap, live)
    }

    /// [`Recording::finish_live`], with the trace, when the session
    /// records one ([`RecordingOptions::trace_buffer`]).
    pub fn finish_traced(mut self) -> (RawSnapshot, PublicationEnd, Option<RawTrace>) {
        crate::frame::charge_current_thread();
        thread::deactivate(self.epoch);
        // Another session may start only once this snapshot is taken:
        // its threads reset their blocks, which this one reads.
        let snap = self.collect(true);
        let trace = self
            .traced
            .then(|| crate::trace::finish(self.epoch, each_block))
            .flatten();
        let live = crate::publish::end(
            self.epoch,
            crate::publish::Final {
                ns_per_tick: snap.ns_per_tick,
                elapsed_ns: snap.elapsed_ns,
                overflow_paths: snap.overflow_paths,
                unrecorded_calls: snap.unrecorded_calls,
                alloc: snap.alloc.map(|a| (a.live_bytes, a.peak_live_bytes)),
            },
        );
        // The heap table keeps changing after the end (frees): a reader
        // of the finished session reads the profile as it was here.
        if let Some(heap) = &snap.heap {
            let _internal = crate::hot::Internal::enter();
            live.record(
                perflens_format::names::EXTRA_HEAP,
                &perflens_format::heap::encode_heap(heap),
            );
        }
        // The live session is `live`'s to close now.
        self.live_dir = None;
        self.stop();
        (snap, live, trace)
    }

    fn stop(&mut self) {
        if !self.done {
            self.done = true;
            thread::deactivate(self.epoch);
            crate::heap::end(self.epoch);
            // Dropped without `finish`: the trace's pages go back.
            if self.traced {
                crate::trace::finish(self.epoch, each_block);
            }
            // Dropped without `finish`: the live session ends here.
            if self.live_dir.is_some() {
                crate::publish::end(
                    self.epoch,
                    crate::publish::Final {
                        ns_per_tick: clock::ns_per_tick(),
                        elapsed_ns: self.started.elapsed().as_nanos() as u64,
                        overflow_paths: paths::overflowed(),
                        unrecorded_calls: crate::hot::unrecorded(),
                        alloc: None,
                    },
                )
                .close();
            }
            *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = false;
        }
    }

    fn collect(&self, finished: bool) -> RawSnapshot {
        self.snapshotter().collect(finished)
    }
}

/// Takes snapshots of one running session from any thread (see
/// [`Recording::snapshotter`]).
#[derive(Clone, Copy, Debug)]
pub struct Snapshotter {
    epoch: u32,
    mode: Mode,
    sample_warmup: u32,
    clock: ClockSource,
    started: Instant,
}

impl Snapshotter {
    /// Everything the session recorded so far, or `None` once it has
    /// ended (a new session's blocks are not its).
    pub fn snapshot(&self) -> Option<RawSnapshot> {
        if crate::hot::EPOCH.load(Ordering::Acquire) != self.epoch {
            return None;
        }
        Some(self.collect(false))
    }

    fn collect(&self, finished: bool) -> RawSnapshot {
        let _internal = crate::hot::Internal::enter();
        let elapsed_ns = self.started.elapsed().as_nanos() as u64;
        let ns_per_tick = clock::ns_per_tick();
        let how = crate::read::Read {
            epoch: self.epoch,
            ns_per_tick,
            boundary_alloc: cfg!(feature = "alloc"),
            all_histograms: true,
            total_counts_only: false,
            alloc_counted: crate::alloc::installed(),
            page_ok: &crate::read::all_pages,
        };
        let mut threads = Vec::new();
        let mut unpublished = 0i64;
        thread::for_each_block(|entry| {
            if let Some(t) = crate::read::read_block(entry.block, &how) {
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
        let heap = alloc.and_then(|_| crate::heap::snapshot(self.epoch));
        RawSnapshot {
            alloc,
            heap,
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
            unrecorded_calls: crate::hot::unrecorded(),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.stop();
    }
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
        peak_resolution_bytes: perflens_format::vocab::PUBLISH_STEP as u64,
    }
}

/// True while a session records.
pub fn is_recording() -> bool {
    thread::generation() & 1 == 0
}

/// Runs `f` over every registered block: how the trace reads the blocks'
/// paths when it finishes.
fn each_block(f: &mut dyn FnMut(crate::block::Block)) {
    crate::thread::for_each_block(|entry| f(entry.block));
}
