//! Reading live perflens sessions.
//!
//! A program profiled with `PERFLENS_LIVE=1` (or
//! `Session::builder().live(true)`, or `#[perflens::main(live = true)]`)
//! keeps its profile in shared-memory files (their layout is
//! `perflens_format`'s `session_file`, `block` and `names`). This crate
//! finds those sessions ([`list`]), maps one read-only
//! ([`LiveSession::open`]) and builds from it the same [`Report`] the
//! program's own `Session::snapshot()` gives ([`LiveSession::report`]): timing, paths, async, allocation and CPU
//! sample figures alike, read by the very code the program uses for its
//! own snapshots.
//!
//! What it never does: write to the target's memory (every mapping is
//! `PROT_READ`), signal or trace it, or need a thread inside it. It reads
//! no more than the file sizes it checked before mapping, and a file that
//! shrinks while it is read gives an error, not a crash (see `map.rs`).
//!
//! ```no_run
//! let root = perflens_live::root().unwrap();
//! let sessions = perflens_live::list(&root);
//! for s in &sessions {
//!     println!("{} {} {:?}", s.pid, s.program, s.state);
//! }
//! if let Some(s) = sessions.first() {
//!     let mut live = perflens_live::LiveSession::open(&s.dir).unwrap();
//!     let report = live.report(&Default::default()).unwrap();
//!     println!("{} functions", report.functions.len());
//! }
//! ```

mod block_file;
mod map;
mod names;
mod read;

pub use map::Mapping;
pub use names::{Names, ThreadRecord};
pub use read::LiveSnapshot;

use block_file::BlockFile;

use perflens_format::histogram::Histogram;
use perflens_format::session_file::{
    EXTRA_CPU, PROGRAM_BYTES, SESSION_FILE_BYTES, SESSION_MAGIC, SESSION_VERSION, STATE_FINISHED,
    STATE_RUNNING, SessionHeader,
};
use perflens_format::{AllocSummary, ClockSource, Mode, RawSnapshot, ThreadSnapshot};
use perflens_report::{CpuInput, CpuThreadInput, Report, ReportOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// Where live sessions of this user are: `$XDG_RUNTIME_DIR/perflens`, or
/// `/dev/shm/perflens-<uid>` when that variable is unset or empty. An
/// error on a platform without a live view (see
/// `perflens_sys::CAPABILITIES`).
pub fn root() -> Result<PathBuf, LiveError> {
    perflens_sys::shm::root().ok_or_else(|| {
        LiveError(format!(
            "no live sessions: the live view is not available on this platform (perflens-sys: {})",
            perflens_sys::CAPABILITIES.platform
        ))
    })
}

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
    /// Threads with a block, less the profiler's own (reports leave them
    /// out).
    pub threads: usize,
    pub state: State,
}

/// Why a session cannot be read. Every message is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveError(pub String);

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LiveError {}

impl From<String> for LiveError {
    fn from(s: String) -> LiveError {
        LiveError(s)
    }
}

/// The sessions under `root` (see [`root`]), oldest first. Entries that
/// cannot be read are left out (use [`LiveSession::open`] on one to
/// learn why). A root that does not exist has no sessions.
pub fn list(root: &Path) -> Vec<SessionInfo> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    if perflens_sys::shm::check_private_dir(root).is_err() {
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
    match perflens_sys::process::start_time(pid) {
        0 => perflens_sys::process::alive(pid) && proc_start == 0,
        t => proc_start == 0 || t == proc_start,
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
    /// The session's heap table (feature `heap`), once it was found.
    heap: Option<Mapping>,
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
    pub fn open(dir: &Path) -> Result<LiveSession, LiveError> {
        perflens_sys::shm::check_private_dir(dir)?;
        let header = Mapping::open(&dir.join("session"), SESSION_FILE_BYTES)?;
        // SAFETY: the mapping holds at least SESSION_FILE_BYTES, page
        // aligned; the header is plain integers and atomics.
        let h = unsafe { &*(header.base() as *const SessionHeader) };
        // SAFETY: as above; volatile: the writer may be writing.
        let magic = unsafe { std::ptr::read_volatile(&h.magic) };
        if magic != SESSION_MAGIC {
            return Err(LiveError(format!(
                "{}: not a perflens live session (wrong magic, or not written yet)",
                dir.display()
            )));
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if h.version != SESSION_VERSION {
            return Err(LiveError(format!(
                "{}: session written by format v{}; this reader reads v{SESSION_VERSION}",
                dir.display(),
                h.version
            )));
        }
        let want = size_of::<SessionHeader>();
        if h.header_size as usize != want {
            return Err(LiveError(format!(
                "{}: session header of {} bytes; format v{SESSION_VERSION} has {want} (corrupt)",
                dir.display(),
                h.header_size
            )));
        }
        let block_layout = perflens_format::block::LAYOUT_VERSION;
        if h.block_layout != block_layout {
            return Err(LiveError(format!(
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
            heap: None,
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
                    .filter(|e| !excluded(&e.path()))
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
    fn read_names(&mut self) -> Result<(), LiveError> {
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
            .map_err(|e| LiveError(format!("cannot stat {}: {e}", path.display())))?
            .len();
        if size < committed {
            return Err(LiveError(format!(
                "{}: {size} of the {committed} committed bytes are there: truncated",
                path.display()
            )));
        }
        // In chunks, so that memory stays bounded whatever the length:
        // a chunk holds at least one record of the largest size parsed.
        let mut buf = Vec::new();
        while self.names.parsed < committed {
            let from = self.names.parsed;
            let want = (committed - from).min(names::READ_CHUNK as u64) as usize;
            let last = from + want as u64 == committed;
            buf.resize(want, 0);
            let mut got = 0;
            while got < want {
                match perflens_sys::shm::read_at(file, &mut buf[got..], from + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(LiveError(format!("cannot read {}: {e}", path.display())));
                    }
                }
            }
            if got < want {
                return Err(LiveError(format!(
                    "{}: {} of the {committed} committed bytes are there: truncated",
                    path.display(),
                    from + got as u64
                )));
            }
            self.names.parse(&buf, last)?;
            if self.names.parsed == from {
                // Not even one record in a chunk (cannot happen: a chunk
                // holds the largest record); never loop on it.
                return Err(LiveError(format!(
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
    /// read any more, and is counted in [`LiveSnapshot::unread_threads`]. A block
    /// file missing from an entry that is still there (a kept one) is an
    /// error.
    fn map_blocks(&mut self) -> Result<(), LiveError> {
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
    pub fn await_sites(&self) -> Vec<perflens_format::AwaitSiteInfo> {
        self.names.await_sites()
    }

    /// Whether each read keeps what it found of the inclusive-time
    /// histograms, so that the next one scans only where they may have
    /// changed (`perflens_format::read::HistMemo`): on by default. Off, every
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

    fn truncated(&self) -> LiveError {
        LiveError(format!(
            "{}: a file changed size while being read (truncated)",
            self.dir.display()
        ))
    }

    /// The session's report now, as the program's own
    /// `Session::snapshot()` (or, once finished, its final report) gives
    /// it.
    pub fn report(&mut self, options: &ReportOptions) -> Result<Report, LiveError> {
        let live = self.raw_snapshot(true)?;
        Ok(live.report(options))
    }
}

/// Whether the block file at `path` is a thread the profiler runs for
/// itself (the CPU sampler's watcher): it may have a block from what it
/// allocated while starting, before it left itself out, and reports leave
/// it out, so the count of a session's threads does too (a loaded machine
/// made that start-up allocation come after the live session's start in
/// 1 run in 5: a list said 5 threads, the report 4). One positioned read
/// of the flag; a file that cannot be read counts as a thread.
fn excluded(path: &Path) -> bool {
    let at = std::mem::offset_of!(perflens_format::block::Header, excluded);
    let mut flag = [0u8; 4];
    open_checked(path)
        .ok()
        .and_then(|f| perflens_sys::shm::read_at(&f, &mut flag, at as u64).ok())
        .is_some_and(|n| n == 4 && u32::from_ne_bytes(flag) == 1)
}

/// Opens a file of the session for reading after the same checks as a
/// mapping: ours, private, regular, no symlink.
fn open_checked(path: &Path) -> Result<std::fs::File, LiveError> {
    let (file, _) = perflens_sys::shm::open_checked(path)?;
    Ok(file)
}

/// Finds a session by pid or by path (a session directory). With `None`,
/// the only running session; an error names the choices when there are
/// several or none.
pub fn find(root: &Path, which: Option<&str>) -> Result<PathBuf, LiveError> {
    match which {
        Some(w) if Path::new(w).is_dir() => Ok(PathBuf::from(w)),
        Some(w) => {
            let pid: u32 = w
                .parse()
                .map_err(|_| LiveError(format!("{w}: neither a pid nor a session directory")))?;
            let mut found: Vec<SessionInfo> =
                list(root).into_iter().filter(|s| s.pid == pid).collect();
            // The newest session of that pid (a program may run several).
            found.pop().map(|s| s.dir).ok_or_else(|| {
                LiveError(format!(
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
                [] => Err(LiveError(format!(
                    "no running live session in {} (start the program with PERFLENS_LIVE=1)",
                    root.display()
                ))),
                many => Err(LiveError(format!(
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
