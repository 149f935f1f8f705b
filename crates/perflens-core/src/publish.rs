//! The live view, writer side: a session's data in shared memory that
//! another process of the same user maps read-only (`perflens top`).
//!
//! # Where
//!
//! One directory per session, `<root>/<pid>-<start ms>`, where the root
//! is `$XDG_RUNTIME_DIR/perflens`, or `/dev/shm/perflens-<uid>` when that
//! variable is unset (`perflens_sys::shm::root`). Directories are mode 0700 and files
//! 0600, created with `O_EXCL|O_NOFOLLOW`: a root that is a symlink, is
//! not ours, or is open to others is refused, and nothing is ever
//! opened through a name someone else could have planted.
//!
//! # What
//!
//! - `session`: a [`SessionHeader`], mapped shared by the writer: who
//!   (pid, program, start), how (mode, clock calibration, layouts), the
//!   state (running, finished), the names file's committed length, and
//!   the figures only known at the end.
//! - `names`: an append-only file of records (callsites, paths, threads,
//!   extra data), each `kind: u8, len: u32 LE, payload`. The writer
//!   appends with `pwrite` and only then publishes the new length in the
//!   header (release); a reader reads up to the length it loaded
//!   (acquire), so it never sees half a record.
//! - `b<n>`: one per-thread block each (see `block.rs`), the very memory
//!   the thread writes: blocks are created as shared mappings of these
//!   files while a live session runs. Nothing on the measured path
//!   changes; new threads create new files, and no writer ever waits for
//!   a reader or takes a lock a reader holds.
//!
//! A thread's `names` record (index, tid, name, file) is appended when
//! its block file is created, before the block is used; a path's record
//! before any node names it. A reader that reads the blocks first and
//! the names second finds every name the blocks use.
//!
//! # Lifetime
//!
//! The directory is removed when the session ends, unless
//! `PERFLENS_LIVE_KEEP=1` (or `keep`) keeps it, holding the final state.
//! Blocks stay mapped in the process after that (threads may still point
//! to them), and are unmapped when their thread moves to a block of a
//! later session or exits. A forked child gets private copies of the
//! blocks (see `session/fork.rs`): it never writes into its
//! parent's files.
//!
//! # Limits
//!
//! The files live on a tmpfs. Their pages are taken as the program first
//! touches them; a tmpfs that runs out of space meanwhile would make the
//! writing thread fault. So a block file is only created when the file
//! system has at least twice the block's size free; otherwise the thread
//! gets private memory and the reader shows it as not published.
//!
//! # Platforms
//!
//! Every system call here goes through `perflens_sys` (`shm` for the
//! files, `mem` for the mappings). A platform without a live view
//! (`perflens_sys::CAPABILITIES.live_view` false: the portable build)
//! has no root; `begin` then fails with a message the session says
//! once, and the session records as usual.

use crate::block::{Block, BlockWrite, Layout};
use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crate::published;
pub use crate::published::{cpu_sampling_starts, set_cpu_hz};
pub use perflens_format::names::EXTRA_CPU;
use perflens_format::session_file::*;
use perflens_sys::mem::{Access, PAGE};
use perflens_sys::shm::{SessionDir, make_private_dir, write_all_at};

/// Settings of a live session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublishOptions {
    /// Keep the directory, with the final state, after the session ends.
    pub keep: bool,
    /// Put it under this root instead of `perflens_sys::shm::root` (tests).
    pub root: Option<PathBuf>,
}

/// The running live session.
pub(crate) struct Publication {
    /// The session's epoch, the tag of its blocks.
    tag: u32,
    pid: u32,
    dir: PathBuf,
    session_dir: SessionDir,
    names: File,
    header: *mut SessionHeader,
    keep: bool,
    next_file: u32,
}

// SAFETY: the raw pointer is a shared mapping that lives as long as the
// process; access goes through the mutex or atomics.
unsafe impl Send for Publication {}

static LIVE: Mutex<Option<Publication>> = Mutex::new(None);

/// The locked live state (held across `fork`, see `fork.rs`): the
/// innermost lock of the runtime, taken while holding any other.
pub(crate) fn lock() -> std::sync::MutexGuard<'static, Option<Publication>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Session facts written into the header at start.
pub(crate) struct Start {
    pub epoch: u32,
    pub mode: u32,
    pub sample_every: u32,
    pub sample_warmup: u32,
    pub clock: u32,
    pub path_capacity: u32,
}

/// Starts publishing a session. Everything registered so far (callsites,
/// paths) is written out; threads publish their blocks when they set
/// them up for this session. An error leaves the session private.
pub(crate) fn begin(start: &Start, config: &PublishOptions) -> Result<PathBuf, String> {
    // Before the tag is set: from then on the registries' records come
    // here (`append` drops them while no live session runs).
    crate::hooks::set_record_sink(append_dyn);
    crate::hooks::set_alloc_installed(published::note_alloc_installed);
    crate::hooks::set_block_source(create_block);
    let _internal = crate::hot::Internal::enter();
    let root = config
        .root
        .clone()
        .or_else(perflens_sys::shm::root)
        .ok_or(NOT_AVAILABLE)?;
    make_private_dir(&root)?;
    let pid = std::process::id();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let dir = root.join(format!("{pid}-{}", now.as_millis()));
    let session_dir = SessionDir::create(&dir)?;
    // Removes the directory; what was opened closes as it is dropped.
    let undo = |msg: String| {
        let _ = std::fs::remove_dir_all(&dir);
        Err(msg)
    };
    let cannot_create =
        |e: std::io::Error| format!("cannot create a file in {}: {e}", dir.display());
    let session_file = match session_dir.create_exclusive("session") {
        Ok(f) => f,
        Err(e) => return undo(cannot_create(e)),
    };
    let names = match session_dir.create_exclusive("names") {
        Ok(f) => f,
        Err(e) => return undo(cannot_create(e)),
    };
    let mapped = match session_file.set_len(SESSION_FILE_BYTES as u64) {
        Ok(()) => crate::memory::map_shared(&session_file, SESSION_FILE_BYTES, Access::ReadWrite)
            .ok_or_else(std::io::Error::last_os_error),
        Err(e) => Err(e),
    };
    // The mapping keeps the file; the descriptor is no longer needed.
    drop(session_file);
    let base = match mapped {
        Ok(base) => base,
        Err(e) => {
            return undo(format!(
                "cannot map the session file in {}: {e}",
                dir.display()
            ));
        }
    };
    let header = base as *mut SessionHeader;
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| std::env::args().next())
        .unwrap_or_default();
    let program = &program.as_bytes()[..program.len().min(PROGRAM_BYTES)];
    // SAFETY: a fresh zeroed shared mapping of a whole header that no
    // reader trusts before the magic is set (written last, release).
    unsafe {
        let h = &mut *header;
        h.version = SESSION_VERSION;
        h.header_size = size_of::<SessionHeader>() as u32;
        h.block_layout = crate::block::LAYOUT_VERSION;
        h.pid = pid;
        h.proc_start = perflens_sys::process::start_time(pid);
        h.start_unix_ns = now.as_nanos() as u64;
        h.epoch = start.epoch;
        h.mode = start.mode;
        h.sample_every = start.sample_every;
        h.sample_warmup = start.sample_warmup;
        h.clock = start.clock;
        h.path_capacity = start.path_capacity;
        (h.anchor_tsc, h.anchor_mono_ns) = crate::clock::anchor_facts();
        h.program[..program.len()].copy_from_slice(program);
        h.program_len = program.len() as u32;
        h.alloc_feature = cfg!(feature = "alloc") as u32;
        h.alloc_installed
            .store(crate::alloc::installed() as u32, Ordering::Relaxed);
        h.state.store(STATE_RUNNING, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        std::ptr::write_volatile(&raw mut h.magic, SESSION_MAGIC);
    }
    // A session that ended without closing its live entry (its
    // `PublicationEnd` still held) is closed now: one live session at a time.
    let previous = LIVE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|l| l.tag);
    if let Some(tag) = previous {
        close(tag);
    }
    {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        *live = Some(Publication {
            tag: start.epoch,
            pid,
            dir: dir.clone(),
            session_dir,
            names,
            header,
            keep: config.keep,
            next_file: 0,
        });
        // SAFETY: the header mapping lives as long as the process.
        unsafe { published::publish(start.epoch, header) };
    }
    // What was registered before: each table is written under its own
    // lock, so a name registered meanwhile is written (at least) once; a
    // reader keeps the first record of an index.
    crate::callsite::publish_all();
    crate::paths::publish_all();
    Ok(dir)
}

/// Why a platform without a live view has none.
const NOT_AVAILABLE: &str = "not available on this platform";

/// Says on stderr why a session is not published: each time, but on a
/// platform without a live view only once per process.
pub(crate) fn say_unpublished(why: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    if perflens_sys::CAPABILITIES.live_view {
        eprintln!("[perflens] live view unavailable: {why}");
    } else {
        SAID.call_once(|| {
            eprintln!(
                "[perflens] live view unavailable: {why} (perflens-sys: {})",
                perflens_sys::CAPABILITIES.platform
            )
        });
    }
}

/// Appends one record (`kind`, then the payload the closure writes) to
/// the names file, if a live session runs in this process. Called with
/// the lock of the table the record comes from held, so records of one
/// table are in registration order.
/// [`append`] as the registries' record sink (see `hooks.rs`).
fn append_dyn(kind: u8, payload: &mut dyn FnMut(&mut Vec<u8>)) {
    append(kind, payload);
}

pub(crate) fn append(kind: u8, payload: impl FnOnce(&mut Vec<u8>)) {
    if published::tag() == 0 {
        return;
    }
    let _internal = crate::hot::Internal::enter();
    let mut guard = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(live) = guard.as_mut() else { return };
    if live.pid != std::process::id() {
        return;
    }
    append_locked(live, kind, payload);
}

/// [`append`] with `LIVE` held (and checked to be this process's).
fn append_locked(live: &mut Publication, kind: u8, payload: impl FnOnce(&mut Vec<u8>)) {
    let mut rec = vec![kind, 0, 0, 0, 0];
    payload(&mut rec);
    let len = (rec.len() - REC_HEAD) as u32;
    rec[1..REC_HEAD].copy_from_slice(&len.to_le_bytes());
    // SAFETY: the header mapping lives as long as the process.
    let h = unsafe { &*live.header };
    if h.names_lost.load(Ordering::Relaxed) != 0 {
        // Once one record is lost, later ones would refer to it.
        h.names_lost.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let at = h.names_len.load(Ordering::Relaxed);
    // Interrupted writes are retried; a write that fails or writes
    // nothing loses the record.
    if write_all_at(&live.names, &rec, at).is_err() {
        h.names_lost.fetch_add(1, Ordering::Relaxed);
        return;
    }
    h.names_len.store(at + rec.len() as u64, Ordering::Release);
}

/// A block for thread `index` in a new file of the live session, or
/// `None` when no live session runs (or the file cannot be had: then the
/// thread is counted as unpublished and gets private memory).
pub(crate) fn create_block(
    layout: Layout,
    index: u32,
    tid: u64,
    name: Option<&str>,
) -> Option<Block> {
    if published::tag() == 0 {
        return None;
    }
    // The file's name and its record are the profiler's allocations.
    let _internal = crate::hot::Internal::enter();
    {
        let mut guard = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        let live = guard.as_mut()?;
        if live.pid != std::process::id() {
            return None;
        }
        // SAFETY: the header mapping lives as long as the process.
        let h = unsafe { &*live.header };
        let created = room_for(&live.session_dir, layout.size)
            .then(|| {
                let file = format!("b{}", live.next_file);
                live.next_file += 1;
                let fd = live.session_dir.create_exclusive(&file).ok()?;
                let base = fd
                    .set_len(layout.size as u64)
                    .ok()
                    .and_then(|()| crate::memory::map_shared(&fd, layout.size, Access::ReadWrite));
                // The mapping (if any) keeps the file.
                drop(fd);
                let Some(base) = base else {
                    let _ = live.session_dir.remove(&file);
                    return None;
                };
                // SAFETY: a fresh zeroed shared mapping of `layout.size`
                // bytes that lives until `Block::unmap`.
                let block = unsafe { Block::init(base, layout, index, tid, live.tag) };
                // The thread's record goes in under the same lock as its
                // file: a session that ended between the two would leave
                // a block file that no record names.
                append_locked(live, REC_THREAD, |r| {
                    r.extend_from_slice(&index.to_le_bytes());
                    r.extend_from_slice(&tid.to_le_bytes());
                    let name = name.unwrap_or("").as_bytes();
                    let name = &name[..name.len().min(u16::MAX as usize)];
                    r.extend_from_slice(&(name.len() as u16).to_le_bytes());
                    r.extend_from_slice(name);
                    r.extend_from_slice(file.as_bytes());
                });
                Some(block)
            })
            .flatten();
        if created.is_none() {
            h.unpublished_threads.fetch_add(1, Ordering::Relaxed);
        }
        created
    }
}

/// A new zeroed file `name` of `len` bytes in the live session, mapped
/// read-write for the rest of the process (the heap profile's table),
/// or `None` when no live session runs or the file cannot be had.
pub(crate) fn create_file(name: &str, len: usize) -> Option<*mut u8> {
    if published::tag() == 0 {
        return None;
    }
    let _internal = crate::hot::Internal::enter();
    let mut guard = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let live = guard.as_mut()?;
    if live.pid != std::process::id() || !room_for(&live.session_dir, len) {
        return None;
    }
    let fd = live.session_dir.create_exclusive(name).ok()?;
    let base = fd
        .set_len(len as u64)
        .ok()
        .and_then(|()| crate::memory::map_shared(&fd, len, Access::ReadWrite));
    // The mapping (if any) keeps the file.
    drop(fd);
    if base.is_none() {
        let _ = live.session_dir.remove(name);
    }
    base
}

/// Whether the file system of `dir` has at least twice `bytes` free.
fn room_for(dir: &SessionDir, bytes: usize) -> bool {
    dir.free_space()
        .is_some_and(|free| free as u128 >= 2 * bytes as u128)
}

/// Final figures of a session, written when it ends.
pub(crate) struct Final {
    pub ns_per_tick: f64,
    pub elapsed_ns: u64,
    pub overflow_paths: u64,
    pub unrecorded_calls: u64,
    pub alloc: Option<(i64, u64)>,
}

/// The end of a live session: add records, then close (or drop).
#[derive(Debug)]
pub struct PublicationEnd {
    tag: u32,
    active: bool,
}

impl PublicationEnd {
    /// Appends an extra record for readers (`tag` says what it is; the
    /// `perflens` crate stores the CPU sampler's figures this way).
    pub fn record(&self, tag: u32, bytes: &[u8]) {
        if self.active && published::tag() == self.tag {
            append(REC_EXTRA, |r| {
                r.extend_from_slice(&tag.to_le_bytes());
                r.extend_from_slice(bytes);
            });
        }
    }

    /// Marks the session finished, then removes its directory unless it
    /// is kept.
    pub fn close(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if std::mem::take(&mut self.active) {
            close(self.tag);
        }
    }
}

impl Drop for PublicationEnd {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Writes the final figures; the session stays open for
/// [`PublicationEnd::record`] until [`PublicationEnd::close`].
pub(crate) fn end(tag: u32, fin: Final) -> PublicationEnd {
    let guard = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let none = PublicationEnd { tag, active: false };
    let Some(live) = guard.as_ref() else {
        return none;
    };
    if live.tag != tag || live.pid != std::process::id() {
        return none;
    }
    // SAFETY: the header mapping lives as long as the process.
    let h = unsafe { &*live.header };
    h.ns_per_tick
        .store(fin.ns_per_tick.to_bits(), Ordering::Relaxed);
    h.elapsed_ns.store(fin.elapsed_ns, Ordering::Relaxed);
    // A sample that found no header just before it was set.
    published::take_early_samples(h);
    h.overflow_paths
        .store(fin.overflow_paths, Ordering::Relaxed);
    h.unrecorded_calls
        .store(fin.unrecorded_calls, Ordering::Relaxed);
    if let Some((live_bytes, peak)) = fin.alloc {
        h.alloc_installed.store(1, Ordering::Relaxed);
        h.alloc_live_bytes.store(live_bytes, Ordering::Relaxed);
        h.alloc_peak_bytes.store(peak, Ordering::Relaxed);
    }
    PublicationEnd { tag, active: true }
}

/// Marks the session finished and, unless kept, removes its files. The
/// blocks stay mapped (see the module docs).
fn close(tag: u32) {
    let _internal = crate::hot::Internal::enter();
    let mut guard = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_none_or(|l| l.tag != tag) {
        return;
    }
    let Some(live) = guard.take() else { return };
    published::unpublish();
    let ours = live.pid == std::process::id();
    if ours {
        // SAFETY: the header mapping lives as long as the process.
        unsafe { &*live.header }
            .state
            .store(STATE_FINISHED, Ordering::Release);
    }
    let Publication {
        dir,
        keep,
        session_dir,
        names,
        ..
    } = live;
    // The names file and the directory are closed first.
    drop((names, session_dir));
    if ours && !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// In a forked child (called with every runtime lock held, `live` being
/// the held `LIVE` guard's content, the child's only thread running):
/// forgets the parent's live session without touching its files. The
/// child's blocks are made private by `session::fork`.
pub(crate) fn forget_after_fork(live: &mut Option<Publication>) {
    // Closes the child's copies of the names file and the directory.
    drop(live.take());
    published::unpublish();
}

/// Replaces the shared mapping of a live block by a private copy of its
/// contents at the same address, so that a forked child's writes stay
/// its own. Only the pages the file holds are copied.
///
/// # Safety
/// The block is not being written (the child's only thread is here) and
/// is a live block's whole mapping.
pub(crate) unsafe fn privatize(block: Block) {
    let h = block.header();
    let size = h.size as usize;
    let base = block.base();
    let Some(copy) = crate::memory::map_zeroed(size) else {
        // No memory for a copy (the address space is exhausted): the
        // block stays shared, and the parent's entry shows the child's
        // calls too.
        return;
    };
    let pages = size / PAGE;
    // SAFETY: `base..base+size` is one page-aligned mapping.
    let resident = unsafe { crate::memory::resident(base, size) };
    for i in 0..pages {
        if resident.as_ref().is_none_or(|r| r[i]) {
            // SAFETY: page `i` of both mappings, which do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(base.add(i * PAGE), copy.add(i * PAGE), PAGE) };
        }
    }
    // SAFETY: moves the private copy over the shared mapping (same size,
    // no overlap), which the kernel unmaps atomically; only this thread
    // runs.
    if !unsafe { crate::memory::remap_private(copy, base, size) } {
        // SAFETY: our own copy, unused.
        unsafe { crate::memory::unmap(copy, size) };
        return;
    }
    // SAFETY: the block is now private to this process and only this
    // thread runs.
    unsafe { (*block.header_ptr()).live = 0 };
}
