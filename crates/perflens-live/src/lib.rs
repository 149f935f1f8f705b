//! Reading live perflens sessions.
//!
//! A program profiled with `PERFLENS_LIVE=1` (or
//! `Session::builder().live(true)`, or `#[perflens::main(live = true)]`)
//! keeps its profile in shared-memory files (see `perflens_core::live`
//! for the layout). This crate finds those sessions ([`list`]), maps one
//! read-only ([`LiveSession::open`]) and builds from it the same
//! [`Report`] the program's own `Session::snapshot()` gives
//! ([`LiveSession::report`]): timing, paths, async, allocation and CPU
//! sample figures alike, read by the very code the program uses for its
//! own snapshots.
//!
//! What it never does: write to the target's memory (every mapping is
//! `PROT_READ`), signal or trace it, or need a thread inside it. It reads
//! no more than the file sizes it checked before mapping, and a file that
//! shrinks while it is read gives an error, not a crash (see `map.rs`).
//!
//! ```no_run
//! let sessions = perflens_live::list(&perflens_live::root());
//! for s in &sessions {
//!     println!("{} {} {:?}", s.pid, s.program, s.state);
//! }
//! if let Some(s) = sessions.first() {
//!     let mut live = perflens_live::LiveSession::open(&s.dir).unwrap();
//!     let report = live.report(&Default::default()).unwrap();
//!     println!("{} functions", report.functions.len());
//! }
//! ```

mod map;
mod names;

pub use map::Mapping;
pub use names::{Names, ThreadRecord};

use perflens_core::histogram::Histogram;
use perflens_core::live::{
    EXTRA_CPU, PROGRAM_BYTES, SESSION_FILE_BYTES, SESSION_MAGIC, SESSION_VERSION, STATE_FINISHED,
    STATE_RUNNING, SessionHeader,
};
use perflens_core::{AllocSummary, ClockSource, Mode, RawSnapshot, ThreadSnapshot};
use perflens_report::{CpuInput, CpuThreadInput, Report, ReportOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

pub use perflens_core::live::root;

/// What a session is doing, as far as a reader can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Its process runs and the session records.
    Running,
    /// The session ended (the entry was kept with `PERFLENS_LIVE_KEEP=1`):
    /// everything in it is final.
    Finished,
    /// Its process is gone without ending the session (killed, crashed):
    /// the figures are as it left them. `perflens list --clean` removes it.
    Stale,
}

impl State {
    /// Lower-case name, as `perflens list` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            State::Running => "running",
            State::Finished => "finished",
            State::Stale => "stale",
        }
    }
}

/// One live session found by [`list`].
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The entry's directory.
    pub dir: PathBuf,
    pub pid: u32,
    pub program: String,
    /// Wall-clock start, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// Threads with a block.
    pub threads: usize,
    pub state: State,
}

/// Why a session cannot be read. Every message is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error(s)
    }
}

/// The sessions under `root` (see [`root`]), oldest first. Entries that
/// cannot be read are left out (use [`LiveSession::open`] on one to
/// learn why). A root that does not exist has no sessions.
pub fn list(root: &Path) -> Vec<SessionInfo> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    if perflens_core::live::check_private_dir(root).is_err() {
        return Vec::new();
    }
    let mut out: Vec<SessionInfo> = dir
        .filter_map(Result::ok)
        .filter_map(|e| LiveSession::open(&e.path()).ok())
        .map(|s| s.info())
        .collect();
    out.sort_by_key(|s| (s.start_unix_ns, s.pid));
    out
}

/// Whether process `pid` is the one that started at `proc_start` (clock
/// ticks after boot; 0 = unknown, then any process with that pid is).
pub fn process_alive(pid: u32, proc_start: u64) -> bool {
    if pid == 0 {
        return false;
    }
    match perflens_core::live::proc_start_time(pid) {
        0 => Path::new(&format!("/proc/{pid}")).exists() && proc_start == 0,
        t => proc_start == 0 || t == proc_start,
    }
}

/// A block file, mapped.
struct BlockFile {
    name: Option<String>,
    map: Mapping,
    /// Pages of the file known to hold data, by page index.
    resident: std::cell::RefCell<Vec<bool>>,
    /// By chunk of [`CHUNK_PAGES`] pages: the read ([`LiveSession`]'s
    /// `reads`) that last asked the system which of its pages hold data.
    asked: std::cell::RefCell<Vec<u32>>,
    /// What the last read found of the block's inclusive-time
    /// histograms: the next reads only where they may have changed.
    memo: std::cell::RefCell<perflens_core::HistMemo>,
}

/// Pages asked about at once (see [`BlockFile::page_ok`]).
const CHUNK_PAGES: usize = 64;

impl BlockFile {
    /// Whether the page holding byte `off` may be read, in read number
    /// `read`. Only the pages the file holds are read (see
    /// `Mapping::resident`), and only where a read needs them: a page
    /// not known to hold data has its chunk of 64 pages asked about in
    /// one call, at most once a read (a chunk asked during this read
    /// whose page held no data then is not asked again until the next).
    /// A page that holds data keeps it, and most of a block's histogram
    /// pages are never written, nor needed (see `read_hist` in
    /// perflens-core). Asking page by page made a large session's first
    /// read 20,000 system calls.
    fn page_ok(&self, off: usize, read: u32) -> bool {
        let page = off / 4096;
        if off >= self.map.len() {
            return false;
        }
        let mut known = self.resident.borrow_mut();
        if known.get(page) == Some(&true) {
            return true;
        }
        let chunk = page / CHUNK_PAGES;
        let mut asked = self.asked.borrow_mut();
        if asked.len() <= chunk {
            asked.resize(chunk + 1, 0);
        }
        if asked[chunk] == read {
            return false;
        }
        asked[chunk] = read;
        let first = chunk * CHUNK_PAGES;
        let pages = self.map.resident(first * 4096, CHUNK_PAGES * 4096);
        if known.len() < first + pages.len() {
            known.resize(first + pages.len(), false);
        }
        for (k, r) in known[first..first + pages.len()].iter_mut().zip(pages) {
            *k |= r;
        }
        known.get(page) == Some(&true)
    }
}

/// Which histograms a read fills (see [`LiveSession::raw_snapshot_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Histograms {
    /// Every histogram.
    All,
    /// The inclusive-time ones (calls and time percentiles): a third of
    /// the work.
    Inclusive,
    /// None: the inclusive-time ones are only counted (the timed calls,
    /// in `timed_calls` and `calls`), for a view without percentiles.
    Counts,
}

/// A live session, mapped read-only.
pub struct LiveSession {
    dir: PathBuf,
    header: Mapping,
    names: Names,
    /// Open from the start: a session that ends removes its directory
    /// (unless kept), and its last names must still be readable.
    names_file: std::fs::File,
    blocks: Vec<BlockFile>,
    /// This reader's calibration of the target's TSC ticks.
    ns_per_tick: Option<f64>,
    /// Threads whose block file was gone before it could be mapped.
    unread_threads: usize,
    /// Reads of the blocks so far (see [`BlockFile::page_ok`]).
    reads: std::cell::Cell<u32>,
    /// Whether a read keeps what it found for the next (see
    /// [`LiveSession::remember`]).
    remember: bool,
}

impl std::fmt::Debug for LiveSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSession")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The first `n` bytes of `p` read as text (the program name).
fn program_name(h: &SessionHeader) -> String {
    let n = (h.program_len as usize).min(PROGRAM_BYTES);
    String::from_utf8_lossy(&h.program[..n]).into_owned()
}

impl LiveSession {
    /// Opens the session in directory `dir`: a directory of this user
    /// with no access for others, holding a session file of a version
    /// this reader reads. One-line errors otherwise.
    pub fn open(dir: &Path) -> Result<LiveSession, Error> {
        perflens_core::live::check_private_dir(dir)?;
        let header = Mapping::open(&dir.join("session"), SESSION_FILE_BYTES)?;
        // SAFETY: the mapping holds at least SESSION_FILE_BYTES, page
        // aligned; the header is plain integers and atomics.
        let h = unsafe { &*(header.base() as *const SessionHeader) };
        // SAFETY: as above; volatile: the writer may be writing.
        let magic = unsafe { std::ptr::read_volatile(&h.magic) };
        if magic != SESSION_MAGIC {
            return Err(Error(format!(
                "{}: not a perflens live session (wrong magic, or not written yet)",
                dir.display()
            )));
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if h.version != SESSION_VERSION {
            return Err(Error(format!(
                "{}: session written by format v{}; this reader reads v{SESSION_VERSION}",
                dir.display(),
                h.version
            )));
        }
        let want = size_of::<SessionHeader>();
        if h.header_size as usize != want {
            return Err(Error(format!(
                "{}: session header of {} bytes; format v{SESSION_VERSION} has {want} (corrupt)",
                dir.display(),
                h.header_size
            )));
        }
        let block_layout = perflens_core::layout::LAYOUT_VERSION;
        if h.block_layout != block_layout {
            return Err(Error(format!(
                "{}: written by layout v{}; this reader reads v{block_layout}",
                dir.display(),
                h.block_layout
            )));
        }
        let names_file = open_checked(&dir.join("names"))?;
        Ok(LiveSession {
            dir: dir.to_path_buf(),
            header,
            names: Names::default(),
            names_file,
            blocks: Vec::new(),
            ns_per_tick: None,
            unread_threads: 0,
            reads: Default::default(),
            remember: true,
        })
    }

    fn header(&self) -> &SessionHeader {
        // SAFETY: checked in `open`; the mapping lives as long as `self`.
        unsafe { &*(self.header.base() as *const SessionHeader) }
    }

    /// The entry's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Who and what, and the state now.
    pub fn info(&self) -> SessionInfo {
        let h = self.header();
        let threads = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with('b'))
                    .count()
            })
            .unwrap_or(0);
        SessionInfo {
            dir: self.dir.clone(),
            pid: h.pid,
            program: program_name(h),
            start_unix_ns: h.start_unix_ns,
            threads,
            state: self.state(),
        }
    }

    /// The session's state now.
    pub fn state(&self) -> State {
        let h = self.header();
        match h.state.load(Ordering::Acquire) {
            STATE_FINISHED => State::Finished,
            STATE_RUNNING if process_alive(h.pid, h.proc_start) => State::Running,
            _ => State::Stale,
        }
    }

    /// The target's pid.
    pub fn pid(&self) -> u32 {
        self.header().pid
    }

    /// The target's program name.
    pub fn program(&self) -> String {
        program_name(self.header())
    }

    /// Reads the names committed so far that were not read yet.
    fn read_names(&mut self) -> Result<(), Error> {
        let committed = self.header().names_len.load(Ordering::Acquire);
        if committed <= self.names.parsed {
            return Ok(());
        }
        let path = self.dir.join("names");
        let file = &self.names_file;
        // The writer commits bytes it has written: a file shorter than
        // the committed length was cut, or the header lies. Checked
        // before allocating, so that a huge length is an error, not an
        // allocation failure.
        let size = file
            .metadata()
            .map_err(|e| Error(format!("cannot stat {}: {e}", path.display())))?
            .len();
        if size < committed {
            return Err(Error(format!(
                "{}: {size} of the {committed} committed bytes are there: truncated",
                path.display()
            )));
        }
        // In chunks, so that memory stays bounded whatever the length:
        // a chunk holds at least one record of the largest size parsed.
        use std::os::unix::fs::FileExt;
        let mut buf = Vec::new();
        while self.names.parsed < committed {
            let from = self.names.parsed;
            let want = (committed - from).min(names::READ_CHUNK as u64) as usize;
            let last = from + want as u64 == committed;
            buf.resize(want, 0);
            let mut got = 0;
            while got < want {
                match file.read_at(&mut buf[got..], from + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error(format!("cannot read {}: {e}", path.display()))),
                }
            }
            if got < want {
                return Err(Error(format!(
                    "{}: {} of the {committed} committed bytes are there: truncated",
                    path.display(),
                    from + got as u64
                )));
            }
            self.names.parse(&buf, last)?;
            if self.names.parsed == from {
                // Not even one record in a chunk (cannot happen: a chunk
                // holds the largest record); never loop on it.
                return Err(Error(format!(
                    "{}: no record parsed (corrupt)",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// Maps the block files of threads that appeared since the last read.
    /// A session that has ended without being kept removes its files: a
    /// thread that started just before (and was not mapped yet) cannot be
    /// read any more, and is counted in [`Live::unread_threads`]. A block
    /// file missing from an entry that is still there (a kept one) is an
    /// error.
    fn map_blocks(&mut self) -> Result<(), Error> {
        let done = self.blocks.len() + self.unread_threads;
        for t in &self.names.threads[done.min(self.names.threads.len())..] {
            let path = self.dir.join(&t.file);
            let map = match Mapping::open(&path, 4096) {
                Ok(map) => map,
                // The entry is being removed (its session file first or
                // its block files: `remove_dir_all` takes them in any
                // order), not kept: the session ended.
                Err(_)
                    if !path.exists()
                        && !self.dir.join("session").exists()
                        && self.state() != State::Running =>
                {
                    self.unread_threads += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            self.blocks.push(BlockFile {
                name: t.name.clone(),
                map,
                resident: Default::default(),
                asked: Default::default(),
                memo: Default::default(),
            });
        }
        Ok(())
    }

    /// Where the await sites named so far are (by callsite id), as of the
    /// last snapshot read.
    pub fn await_sites(&self) -> Vec<perflens_core::AwaitSiteInfo> {
        self.names.await_sites()
    }

    /// Whether each read keeps what it found of the inclusive-time
    /// histograms, so that the next one scans only where they may have
    /// changed (`perflens_core::HistMemo`): on by default. Off, every
    /// read scans them from scratch, as far as the nodes' whole totals
    /// allow (the figures are the same): for comparison.
    pub fn remember(&mut self, on: bool) {
        self.remember = on;
        if !on {
            for b in &self.blocks {
                *b.memo.borrow_mut() = Default::default();
            }
        }
    }

    /// A raw snapshot of the session now, as the program's own
    /// `Recording::snapshot` would take it (see [`LiveSession::report`]),
    /// with the CPU samples per path. `all_histograms: false` reads only
    /// the inclusive-time histograms (calls, time percentiles): the
    /// exclusive-time and bytes-per-call ones are then empty.
    pub fn raw_snapshot(&mut self, all_histograms: bool) -> Result<Live, Error> {
        self.raw_snapshot_with(if all_histograms {
            Histograms::All
        } else {
            Histograms::Inclusive
        })
    }

    /// [`LiveSession::raw_snapshot`], filling only the histograms `what`
    /// names (the others are left empty).
    pub fn raw_snapshot_with(&mut self, what: Histograms) -> Result<Live, Error> {
        // Threads first, then their blocks, then the names again: every
        // path a block's node names was written before the node.
        self.read_names()?;
        self.map_blocks()?;
        // Read once: the figures below are all of one state (a session
        // that finishes meanwhile is read as still running).
        let finished = self.header().state.load(Ordering::Acquire) == STATE_FINISHED;
        let alloc_counted = self.header().alloc_installed.load(Ordering::Acquire) == 1;
        let (epoch, ns_per_tick, boundary_alloc) = {
            // SAFETY: checked in `open`; the mapping lives as long as
            // `self` (a copy of the pointer, so that the calibration
            // below may be stored).
            let h = unsafe { &*(self.header.base() as *const SessionHeader) };
            let fin = f64::from_bits(h.ns_per_tick.load(Ordering::Acquire));
            let ns_per_tick = if finished && fin > 0.0 {
                // What the program's final report used.
                fin
            } else if h.clock == 1 {
                1.0
            } else {
                // Calibrated once, at the first read, and kept: a factor
                // that moved between reads would make figures that did
                // not change look as if they shrank.
                let (tsc, mono) = (h.anchor_tsc, h.anchor_mono_ns);
                *self
                    .ns_per_tick
                    .get_or_insert_with(|| perflens_core::ns_per_tick_since(tsc, mono))
            };
            (h.epoch, ns_per_tick, h.alloc_feature == 1)
        };
        let how = perflens_core::LiveBlockRead {
            epoch,
            ns_per_tick,
            boundary_alloc,
            all_histograms: what == Histograms::All,
            total_counts_only: what == Histograms::Counts,
            alloc_counted,
        };
        let read = self.next_read();
        let mut threads = Vec::with_capacity(self.blocks.len());
        let mut block_of = Vec::with_capacity(self.blocks.len());
        for (i, b) in self.blocks.iter().enumerate() {
            let m = &b.map;
            let page_ok = |off: usize| b.page_ok(off, read);
            let mut memo = b.memo.borrow_mut();
            // SAFETY: the mapping is readable for `len` bytes (a shrinking
            // file is caught by the SIGBUS guard) and page aligned.
            let t = unsafe {
                perflens_core::read_live_block_again(
                    m.base(),
                    m.len(),
                    &how,
                    &page_ok,
                    self.remember.then_some(&mut *memo),
                )
            }
            .map_err(|e| {
                // A block that shrank reads as zeros where it was cut:
                // say so rather than what the zeros look like.
                if m.faulted() {
                    self.truncated()
                } else {
                    Error(format!("{}: {e}", self.dir.display()))
                }
            })?;
            if let Some(t) = t {
                block_of.push((t.index, i));
                threads.push(ThreadSnapshot {
                    name: b.name.clone(),
                    ..t
                });
            }
        }
        // Any mapping that ever faulted: its patched pages read as zeros
        // from then on, on every read, without faulting again.
        if self.header.faulted() || self.blocks.iter().any(|b| b.map.faulted()) {
            return Err(self.truncated());
        }
        check_sums(&threads).map_err(|e| Error(format!("{}: {e}", self.dir.display())))?;
        self.read_names()?;
        threads.sort_by_key(|t| t.index);
        block_of.sort_by_key(|&(index, _)| index);
        let block_of = block_of.into_iter().map(|(_, b)| b).collect();
        let callsites = self.names.callsites();
        let paths = self.names.paths(callsites.len())?;
        for t in &threads {
            if let Some(n) = t.nodes.iter().find(|n| n.path as usize >= paths.len()) {
                return Err(Error(format!(
                    "{}: thread {} has a node of path {} of {} (corrupt)",
                    self.dir.display(),
                    t.index,
                    n.path,
                    paths.len()
                )));
            }
        }
        let h = self.header();
        let mode = match h.mode {
            1 => Mode::Count,
            2 => Mode::Sampled {
                every: h.sample_every.max(1),
            },
            _ => Mode::Timed,
        };
        let elapsed_ns = if finished {
            h.elapsed_ns.load(Ordering::Relaxed)
        } else {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            now.saturating_sub(h.start_unix_ns)
        };
        let alloc = (h.alloc_installed.load(Ordering::Relaxed) == 1).then(|| {
            if finished {
                AllocSummary {
                    live_bytes: h.alloc_live_bytes.load(Ordering::Relaxed),
                    peak_live_bytes: h.alloc_peak_bytes.load(Ordering::Relaxed),
                    peak_resolution_bytes: perflens_core::PUBLISH_STEP as u64,
                }
            } else {
                // The process-wide peak lives in the process: while it
                // runs, the largest thread peak (and the live bytes) bound it.
                // Saturating: a hostile file may hold any figures.
                let live = threads
                    .iter()
                    .fold(0i64, |sum, t| sum.saturating_add(t.live_bytes));
                let peak = threads.iter().map(|t| t.peak_live_bytes).max().unwrap_or(0);
                AllocSummary {
                    live_bytes: live,
                    peak_live_bytes: peak.max(live.max(0) as u64),
                    peak_resolution_bytes: perflens_core::PUBLISH_STEP as u64,
                }
            }
        });
        let cpu = self.cpu_input(&threads);
        let snapshot = RawSnapshot {
            mode,
            sample_warmup: h.sample_warmup,
            clock: if h.clock == 1 {
                ClockSource::Instant
            } else {
                ClockSource::Tsc
            },
            ns_per_tick,
            elapsed_ns,
            finished,
            callsites,
            paths,
            threads,
            path_capacity: h.path_capacity,
            overflow_paths: h.overflow_paths.load(Ordering::Relaxed),
            unrecorded_calls: h.unrecorded_calls.load(Ordering::Relaxed),
            alloc,
        };
        Ok(Live {
            snapshot,
            await_sites: self.names.await_sites(),
            cpu,
            unread_threads: self.unread_threads,
            unpublished_threads: h.unpublished_threads.load(Ordering::Relaxed),
            names_lost: h.names_lost.load(Ordering::Relaxed),
            read: how,
            read_id: read,
            block_of,
        })
    }

    /// A number for the next read of the blocks, never 0 (a chunk never
    /// asked about).
    fn next_read(&self) -> u32 {
        let n = self.reads.get().wrapping_add(1).max(1);
        self.reads.set(n);
        n
    }

    /// The exclusive-time histograms of some nodes of `live`, a snapshot
    /// this session read with `all_histograms: false` (a view that shows
    /// their percentiles only for the rows on screen reads those after
    /// the rest). `nodes`: each one's thread and node, as indices into
    /// `live.snapshot.threads` and that thread's `nodes`. Each histogram
    /// holds at most as many entries as the snapshot's timed calls of its
    /// node, so that it agrees with the rest of the snapshot. A node out
    /// of range, or of a block of another session generation since,
    /// reads as empty.
    pub fn self_histograms(
        &self,
        live: &Live,
        nodes: &[(usize, usize)],
    ) -> Result<Vec<Histogram>, Error> {
        // The pages' residency as the snapshot's read found it, not asked
        // again: a view reads these in several steps (the rows that order
        // the screen, then the rows on it), and each asked anew cost a
        // system call per histogram. A page first written since (a
        // histogram's first entries on it, in the moments since) shows
        // in the next snapshot's read.
        let read = live.read_id;
        let mut out = vec![Histogram::default(); nodes.len()];
        // By thread: one validation of each block read.
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.sort_by_key(|&i| nodes[i]);
        let mut at = 0;
        while at < order.len() {
            let thread = nodes[order[at]].0;
            let end = at + order[at..].partition_point(|&i| nodes[i].0 == thread);
            let (Some(t), Some(b)) = (
                live.snapshot.threads.get(thread),
                live.block_of.get(thread).and_then(|&b| self.blocks.get(b)),
            ) else {
                at = end;
                continue;
            };
            let wanted: Vec<(usize, (u32, u64))> = (order[at..end].iter())
                .filter_map(|&i| {
                    let n = t.nodes.get(nodes[i].1)?;
                    Some((i, (n.index, n.timed_calls)))
                })
                .collect();
            let ask: Vec<(u32, u64)> = wanted.iter().map(|&(_, w)| w).collect();
            let m = &b.map;
            let page_ok = |off: usize| b.page_ok(off, read);
            // SAFETY: as in `raw_snapshot`.
            let read = unsafe {
                perflens_core::read_live_self_histograms(
                    m.base(),
                    m.len(),
                    &live.read,
                    &page_ok,
                    &ask,
                )
            }
            .map_err(|e| Error(format!("{}: {e}", self.dir.display())))?;
            if m.faulted() {
                return Err(self.truncated());
            }
            for ((i, _), h) in wanted.iter().zip(read.into_iter().flatten()) {
                out[*i] = h;
            }
            at = end;
        }
        Ok(out)
    }

    /// For each of `frames` (each a list of calling contexts: thread and
    /// node, as in [`LiveSession::self_histograms`]), a histogram of the
    /// exclusive times of its contexts merged that gives the same
    /// quantiles up to `q` as their whole histograms merged: the contexts
    /// are read in step, a cache line (8 buckets) at a time from the
    /// smallest, and the read stops once the merged count reaches the
    /// rank of `q`; the entries left unread (each context's timed calls
    /// beyond those seen) lie above it and are counted in the last
    /// bucket. Reading each whole histogram went on to its largest value,
    /// a preempted call's, many lines past the percentiles a view shows.
    pub fn self_quantile_histograms(
        &self,
        live: &Live,
        frames: &[&[(usize, usize)]],
        q: f64,
    ) -> Result<Vec<Histogram>, Error> {
        use perflens_core::histogram::BUCKETS;
        use perflens_core::{HIST_LINES, LiveSelfLines};
        let read = live.read_id;
        let oks: Vec<_> = (self.blocks.iter())
            .map(|b| move |off: usize| b.page_ok(off, read))
            .collect();
        let mut lines: Vec<Option<Option<LiveSelfLines>>> = Vec::new();
        lines.resize_with(self.blocks.len(), || None);
        let mut out = Vec::with_capacity(frames.len());
        for contexts in frames {
            // Each context: its block's lines, its node, the entries left
            // to see (its timed calls in the snapshot).
            let mut at: Vec<(usize, u32, u64)> = Vec::with_capacity(contexts.len());
            for &(t, j) in contexts.iter() {
                let (Some(node), Some(&b)) = (
                    live.snapshot.threads.get(t).and_then(|th| th.nodes.get(j)),
                    live.block_of.get(t),
                ) else {
                    continue;
                };
                let Some(file) = self.blocks.get(b) else {
                    continue;
                };
                if lines[b].is_none() {
                    let m = &file.map;
                    // SAFETY: as in `raw_snapshot`; the mapping outlives
                    // this call.
                    let l = unsafe { LiveSelfLines::open(m.base(), m.len(), &live.read, &oks[b]) }
                        .map_err(|e| Error(format!("{}: {e}", self.dir.display())))?;
                    lines[b] = Some(l);
                }
                if node.timed_calls > 0 && matches!(lines[b], Some(Some(_))) {
                    at.push((b, node.index, node.timed_calls));
                }
            }
            let total = at.iter().fold(0u64, |s, &(_, _, n)| s.saturating_add(n));
            let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total.max(1));
            let mut merged = Histogram::default();
            // Counts cut to fit a u64 in all (a hostile file's; real
            // counts always fit).
            let mut room = u64::MAX;
            let mut add = |h: &mut Histogram, bucket: usize, c: u64| {
                let c = c.min(room);
                room -= c;
                h.record_n(perflens_core::histogram::bucket_value(bucket), c);
                c
            };
            let mut seen = 0u64;
            for line in 0..HIST_LINES {
                if seen >= rank || at.iter().all(|&(_, _, left)| left == 0) {
                    break;
                }
                let mut sum = [0u64; 8];
                for (b, node, left) in at.iter_mut().filter(|(_, _, left)| *left > 0) {
                    let Some(Some(l)) = &lines[*b] else {
                        continue;
                    };
                    for (s, c) in sum.iter_mut().zip(l.line(*node, line)) {
                        *s = s.saturating_add(c);
                        *left = left.saturating_sub(c);
                    }
                }
                for (i, &c) in sum.iter().enumerate() {
                    if c != 0 {
                        seen = seen.saturating_add(add(&mut merged, line * 8 + i, c));
                    }
                }
            }
            let unread = at
                .iter()
                .fold(0u64, |s, &(_, _, left)| s.saturating_add(left));
            if unread > 0 && seen >= rank {
                add(&mut merged, BUCKETS - 1, unread);
            }
            out.push(merged);
        }
        // A file that shrank while this read it read as zeros from there.
        if self.blocks.iter().any(|b| b.map.faulted()) {
            return Err(self.truncated());
        }
        Ok(out)
    }

    /// The CPU sampler's figures: samples per path from the nodes, the
    /// rest from the sampler's final record once the session finished.
    fn cpu_input(&self, threads: &[ThreadSnapshot]) -> Option<CpuInput> {
        let h = self.header();
        let fin: Option<CpuInput> = self
            .names
            .extras
            .get(&EXTRA_CPU)
            .and_then(|b| serde_json::from_slice(b).ok());
        let hz = h.cpu_hz.load(Ordering::Relaxed);
        if fin.is_none() && hz == 0 {
            return None;
        }
        let mut by_path: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        let mut outside = (
            h.outside_samples.load(Ordering::Relaxed),
            h.outside_cpu_ns.load(Ordering::Relaxed),
        );
        for t in threads {
            for &(path, samples, ns) in &t.cpu_samples {
                let e = if path == 0 {
                    &mut outside
                } else {
                    by_path.entry(path).or_default()
                };
                e.0 = e.0.saturating_add(samples);
                e.1 = e.1.saturating_add(ns);
            }
        }
        let mut input = fin.unwrap_or_else(|| CpuInput {
            frequency_hz: hz,
            source: "live".to_string(),
            threads: threads
                .iter()
                .map(|t| {
                    let (samples, cpu_ns) = t
                        .cpu_samples
                        .iter()
                        .fold((0u64, 0u64), |(s, n), &(_, s2, n2)| {
                            (s.saturating_add(s2), n.saturating_add(n2))
                        });
                    CpuThreadInput {
                        tid: t.tid,
                        name: t.name.clone(),
                        samples,
                        cpu_ns,
                        dropped: 0,
                    }
                })
                .filter(|t| t.samples != 0)
                .collect(),
            ..CpuInput::default()
        });
        if input.source.starts_with("unavailable") {
            return Some(input);
        }
        input.by_path = by_path.into_iter().map(|(p, (s, n))| (p, s, n)).collect();
        (input.outside_samples, input.outside_cpu_ns) = outside;
        Some(input)
    }

    fn truncated(&self) -> Error {
        Error(format!(
            "{}: a file changed size while being read (truncated)",
            self.dir.display()
        ))
    }

    /// The session's report now, as the program's own
    /// `Session::snapshot()` (or, once finished, its final report) gives
    /// it.
    pub fn report(&mut self, options: &ReportOptions) -> Result<Report, Error> {
        let live = self.raw_snapshot(true)?;
        Ok(live.report(options))
    }
}

/// A raw snapshot read from a live session, with its CPU samples.
#[derive(Clone, Debug)]
pub struct Live {
    pub snapshot: RawSnapshot,
    /// Where the await sites named so far are in the source (see
    /// [`LiveSession::await_sites`]): the report's Waits rows read them.
    pub await_sites: Vec<perflens_core::AwaitSiteInfo>,
    /// `None` when the session samples no CPU.
    pub cpu: Option<CpuInput>,
    /// Threads that could not be read: they started as the program
    /// ended, and their files were removed (the session was not kept)
    /// before this reader mapped them. Their figures are not in
    /// `snapshot`.
    pub unread_threads: usize,
    /// Threads the program could not publish (no room on the file
    /// system for their block file): they kept private memory, and their
    /// figures are not in `snapshot`.
    pub unpublished_threads: u64,
    /// Names the program could not append (the file system was full):
    /// paths and threads registered after that are missing.
    pub names_lost: u64,
    /// How the blocks were read.
    read: perflens_core::LiveBlockRead,
    /// Which read of the session it was (see `Block::page_ok`).
    read_id: u32,
    /// The session's block each thread of `snapshot` was read from.
    block_of: Vec<usize>,
}

impl Live {
    /// What this snapshot lacks, in one line, when it lacks anything.
    pub fn missing(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.unread_threads > 0 {
            parts.push(format!(
                "{} thread(s) not shown: they started as it ended, and its entry was removed first",
                self.unread_threads
            ));
        }
        if self.unpublished_threads > 0 {
            parts.push(format!(
                "{} thread(s) not published: no room for their files",
                self.unpublished_threads
            ));
        }
        if self.names_lost > 0 {
            parts.push(format!(
                "{} name record(s) lost: the file system was full",
                self.names_lost
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

impl Live {
    /// The report of this snapshot.
    pub fn report(&self, options: &ReportOptions) -> Report {
        let mut report =
            Report::from_snapshot_with_sites(&self.snapshot, &self.await_sites, options);
        if let Some(cpu) = &self.cpu {
            report.add_cpu(&self.snapshot, cpu);
        }
        report
    }
}

/// Refuses figures no program writes: every figure of every node and
/// thread, all added together, must fit a u64. The report adds figures
/// up by function, path and thread, and some of them together (calls
/// and cancelled calls), so any sum it makes then fits too. A hostile
/// file holding counters near `u64::MAX` is an error here rather than
/// an overflow there. (A real session is nowhere near: 2^64 ns is 584
/// years, 2^64 bytes 16 EiB.)
fn check_sums(threads: &[ThreadSnapshot]) -> Result<(), String> {
    // Added up in 128 bits first (no overflow: at most 2^64 figures),
    // and only past 2^64 again one by one, for the figure to name: a
    // tenth of a large session's read was spent here.
    let mut wide = 0u128;
    figures(threads, |_, v| {
        wide += u128::from(v);
        Ok(())
    })?;
    if wide <= u128::from(u64::MAX) {
        return Ok(());
    }
    let mut sum = 0u64;
    figures(threads, |name, v| {
        sum = sum.checked_add(v).ok_or_else(|| {
            format!("the session's figures add up past 2^64 (at its {name}): corrupt")
        })?;
        Ok(())
    })
}

/// Calls `add` with every figure of `threads` and its name, until it
/// fails.
fn figures(
    threads: &[ThreadSnapshot],
    mut add: impl FnMut(&str, u64) -> Result<(), String>,
) -> Result<(), String> {
    for t in threads {
        add("overflow calls", t.overflow_calls)?;
        add("dropped frames", t.dropped_frames)?;
        add("live bytes", t.live_bytes.unsigned_abs())?;
        add("peak live bytes", t.peak_live_bytes)?;
        for &(_, samples, ns) in &t.cpu_samples {
            add("CPU samples", samples)?;
            add("CPU ns", ns)?;
        }
        for n in &t.nodes {
            for (name, v) in [
                ("calls", n.calls),
                ("timed calls", n.timed_calls),
                ("total ns", n.total_ns),
                ("self ns", n.self_ns),
                ("busy ns", n.busy_ns),
                ("polls", n.polls),
                ("cancelled calls", n.cancelled),
                ("timed cancelled calls", n.timed_cancelled),
                ("cancelled ns", n.cancelled_ns),
                ("bytes allocated", n.alloc_bytes),
                ("allocations", n.alloc_count),
                ("bytes freed", n.free_bytes),
                ("frees", n.free_count),
                ("inclusive-time histogram counts", n.hist_total.count()),
                ("exclusive-time histogram counts", n.hist_self.count()),
                ("bytes histogram counts", n.hist_alloc.count()),
            ] {
                add(name, v)?;
            }
        }
    }
    Ok(())
}

/// Opens a file of the session for reading after the same checks as a
/// mapping: ours, private, regular, no symlink.
fn open_checked(path: &Path) -> Result<std::fs::File, Error> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error(format!("cannot open {}: {e}", path.display())))?;
    let md = file
        .metadata()
        .map_err(|e| Error(format!("cannot stat {}: {e}", path.display())))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !md.is_file() {
        return Err(Error(format!(
            "{} is not a regular file; refused",
            path.display()
        )));
    }
    if md.uid() != me || md.mode() & 0o077 != 0 {
        return Err(Error(format!(
            "{} belongs to uid {} with mode {:o}; refused (must be ours, 0600)",
            path.display(),
            md.uid(),
            md.mode() & 0o777
        )));
    }
    Ok(file)
}

/// Finds a session by pid or by path (a session directory). With `None`,
/// the only running session; an error names the choices when there are
/// several or none.
pub fn find(root: &Path, which: Option<&str>) -> Result<PathBuf, Error> {
    match which {
        Some(w) if Path::new(w).is_dir() => Ok(PathBuf::from(w)),
        Some(w) => {
            let pid: u32 = w
                .parse()
                .map_err(|_| Error(format!("{w}: neither a pid nor a session directory")))?;
            let mut found: Vec<SessionInfo> =
                list(root).into_iter().filter(|s| s.pid == pid).collect();
            // The newest session of that pid (a program may run several).
            found.pop().map(|s| s.dir).ok_or_else(|| {
                Error(format!(
                    "no live session of pid {pid} in {}",
                    root.display()
                ))
            })
        }
        None => {
            let sessions = list(root);
            let running: Vec<&SessionInfo> = sessions
                .iter()
                .filter(|s| s.state == State::Running)
                .collect();
            match running.as_slice() {
                [one] => Ok(one.dir.clone()),
                [] => Err(Error(format!(
                    "no running live session in {} (start the program with PERFLENS_LIVE=1)",
                    root.display()
                ))),
                many => Err(Error(format!(
                    "{} running sessions: name one by pid ({})",
                    many.len(),
                    many.iter()
                        .map(|s| format!("{} {}", s.pid, s.program))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            }
        }
    }
}

/// Removes the stale entries under `root` (process gone, session not
/// ended); returns their directories.
pub fn clean(root: &Path) -> Vec<PathBuf> {
    list(root)
        .into_iter()
        .filter(|s| s.state == State::Stale)
        .filter(|s| std::fs::remove_dir_all(&s.dir).is_ok())
        .map(|s| s.dir)
        .collect()
}
