//! The per-thread hot state: the one cache line a measured call and the
//! allocation hook touch ([`Hot`]), the session generation it is checked
//! against ([`EPOCH`]), and [`Internal`], the section in which the
//! profiler allocates for itself. Below the registry and the recording
//! code, which all use it; above the block layout it points into. The
//! thread's life (getting a block, exit) is `thread.rs`.

use perflens_format::block::{Block, Header, Node, ShadowFrame, Slot, ThreadAlloc};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Session generation: odd = no session (recording off).
pub(crate) static EPOCH: AtomicU32 = AtomicU32::new(1);

/// `Hot::fast`: what the inlined fast path of a guard may do itself.
/// Timed, TSC clock.
pub(crate) const FAST_TIMED: u8 = 0;
/// Count only: no clock.
pub(crate) const FAST_COUNT: u8 = 1;
/// Sampled timing, TSC clock.
pub(crate) const FAST_SAMPLED: u8 = 2;
/// Timing with the `Instant` clock: every call takes the slow path, so
/// the inlined code never calls a clock function.
pub(crate) const FAST_NONE: u8 = 3;
/// Timed, TSC clock, and traced (see `trace.rs`): guards take the slow
/// path, which writes their events; the inlined code is unchanged.
pub(crate) const FAST_TRACE: u8 = 4;

/// Per-thread hot state: exactly one cache line. Owner thread only (and
/// its signal handlers).
#[repr(C, align(64))]
pub(crate) struct Hot {
    /// Frames in use, including the root sentinel (>= 1 once set up).
    pub depth: u32,
    /// Epoch of the block's contents; 0 = no block yet.
    pub epoch: u32,
    /// The allocation counters the allocator hook updates: this thread's
    /// block's while allocations count here, else a gated stand-in
    /// (see [`park_alloc`]), so that the hook needs no other test. Never
    /// null.
    pub alloc: *const ThreadAlloc,
    pub stack_cap: u32,
    pub table_mask: u32,
    pub sample_every: u32,
    /// [`FAST_TIMED`], [`FAST_COUNT`], [`FAST_SAMPLED`], [`FAST_NONE`] or
    /// [`FAST_TRACE`].
    pub fast: u8,
    /// Nesting of [`Internal`](crate::Internal) sections (a few at most).
    pub internal: u8,
    /// 1 once the thread's exit hook ran: nothing is recorded any more.
    pub exited: u8,
    /// [`no_memory_tag`] of the session in which this thread could not
    /// get memory for a block (0: none): it does not retry in that
    /// session, and its calls are counted as unrecorded.
    pub no_memory: u8,
    /// Frame 0; the block header sits at a fixed offset before it.
    pub frames: *mut ShadowFrame,
    pub table: *mut Slot,
    pub nodes: *mut Node,
    pub hist: *mut AtomicU64,
}

const _: () = assert!(size_of::<Hot>() == 64);

impl Hot {
    pub(crate) const EMPTY: Hot = Hot {
        depth: 0,
        epoch: 0,
        alloc: &raw const PARKED,
        stack_cap: 0,
        table_mask: 0,
        sample_every: 1,
        fast: FAST_NONE,
        internal: 0,
        exited: 0,
        no_memory: 0,
        frames: std::ptr::null_mut(),
        table: std::ptr::null_mut(),
        nodes: std::ptr::null_mut(),
        hist: std::ptr::null_mut(),
    };

    /// Whether timed calls read the TSC (else `Instant`). Meaningless in
    /// count mode, which reads no clock.
    #[inline(always)]
    pub fn tsc(&self) -> bool {
        self.fast != FAST_NONE
    }

    /// The session's mode code (`block::MODE_*`), from the block header:
    /// the hot state has no room for it, and only calls that take the
    /// slow path without a TSC fast path need it.
    #[inline(always)]
    pub fn mode(&self) -> u32 {
        self.block().header().mode.load(Ordering::Relaxed)
    }

    /// Whether a block is attached.
    #[inline(always)]
    pub fn has_block(&self) -> bool {
        !self.frames.is_null()
    }

    /// The block these pointers belong to (a block must be attached).
    #[inline(always)]
    pub fn block(&self) -> Block {
        // SAFETY: `frames` is frame 0 of an attached block, which lives
        // while it is attached.
        unsafe { Block::from_header(perflens_format::block::header_of(self.frames) as *mut Header) }
    }
}

thread_local! {
    pub(crate) static HOT: UnsafeCell<Hot> = const { UnsafeCell::new(Hot::EMPTY) };
}

/// The counters the allocator hook of a thread reads while allocations do
/// not count there: gated, so every allocation and free goes to the
/// hook's slow path, and never written (the hook writes counters only
/// after their thresholds let it), so threads share it without sharing a
/// written cache line.
static PARKED: ThreadAlloc = ThreadAlloc::gated();

/// Points the allocator hook of the thread whose hot state is `hot` at
/// [`PARKED`]: every allocation and free then takes the hook's slow path,
/// until [`arm_alloc`] points it back at a block.
#[inline]
pub(crate) fn park_alloc(hot: &mut Hot) {
    hot.alloc = &PARKED;
}

thread_local! {
    /// The counters of the innermost `alloc::count` scope running on this
    /// thread (null: none). While one runs, the hook counts there instead
    /// of into the thread's block (see [`arm_alloc`]). Read on cold paths
    /// only; no destructor, so reading it never allocates.
    static SCOPE: Cell<*const ThreadAlloc> = const { Cell::new(std::ptr::null()) };
}

/// Makes `counters` this thread's innermost `alloc::count` scope (null:
/// none) and returns the one it replaces.
#[cfg(feature = "alloc")]
pub(crate) fn set_scope(counters: *const ThreadAlloc) -> *const ThreadAlloc {
    SCOPE.with(|s| s.replace(counters))
}

/// Points the allocator hook at the counters allocations count in here
/// now: an `alloc::count` scope's while one runs, else the thread's block
/// if it belongs to the running session; never during profiler work or
/// after the exit hook. Else parks it.
pub(crate) fn arm_alloc(hot: &mut Hot) {
    let scope = SCOPE.with(Cell::get);
    if !scope.is_null() && hot.internal == 0 && hot.exited == 0 {
        hot.alloc = scope;
        return;
    }
    if hot.internal == 0
        && hot.exited == 0
        && hot.has_block()
        && hot.epoch == EPOCH.load(Ordering::Relaxed)
    {
        hot.alloc = &hot.block().header().alloc;
    } else {
        park_alloc(hot);
    }
}

/// The current thread's hot state.
#[inline(always)]
pub(crate) fn hot() -> *mut Hot {
    HOT.with(|h| h.get())
}

/// The current thread's hot state if its block belongs to the running
/// session.
#[inline(always)]
pub(crate) fn active() -> Option<&'static mut Hot> {
    // SAFETY: the TLS slot lives as long as the thread; no other
    // reference to it is alive across this call (the hot path takes it,
    // uses it and drops it without calling out).
    let hot = unsafe { &mut *hot() };
    if is_current(hot) { Some(hot) } else { None }
}

/// Whether a session is running (it may not have this thread yet).
#[inline(always)]
pub(crate) fn session_running() -> bool {
    EPOCH.load(Ordering::Relaxed) & 1 == 0
}

/// Whether `hot`'s block belongs to the running session. An odd global
/// epoch (no session) never equals a block's epoch, which is even or 0.
#[inline(always)]
pub(crate) fn is_current(hot: &Hot) -> bool {
    hot.epoch == EPOCH.load(Ordering::Relaxed)
}

/// Attaches a block of session `epoch` to the current thread: the
/// thread lifecycle's half of `hot::prepare`.
pub(crate) type Attach = fn(u32) -> Option<&'static mut Hot>;

static ATTACH: AtomicUsize = AtomicUsize::new(0);

/// Installs the lifecycle's [`Attach`]: before the first session
/// generation's epoch is published (release), so that a thread that sees
/// a running session (acquire) sees it.
pub(crate) fn set_attach(f: Attach) {
    ATTACH.store(f as usize, Ordering::Release);
}

/// Attaches a block of session `epoch` to the current thread, through the
/// installed [`Attach`]; `None` when none is installed.
pub(crate) fn attach(epoch: u32) -> Option<&'static mut Hot> {
    let f = ATTACH.load(Ordering::Acquire);
    if f == 0 {
        return None;
    }
    // SAFETY: only `set_attach` stores a non-zero value here, and it
    // stores an `Attach`.
    let f = unsafe { std::mem::transmute::<usize, Attach>(f) };
    f(epoch)
}

/// Makes the current thread's block ready for the running session:
/// `None` when no session runs, the thread is exiting, or memory could
/// not be had. The checks a recorder needs are here; attaching a block
/// (creating, registering or resetting it) is the thread lifecycle's,
/// reached through [`attach`], which the lifecycle installs
/// before it starts a session generation.
#[cold]
#[inline(never)]
pub(crate) fn prepare() -> Option<&'static mut Hot> {
    let epoch = EPOCH.load(Ordering::Acquire);
    if epoch & 1 == 1 {
        return None;
    }
    // SAFETY: owner thread; see `active`.
    let hot = unsafe { &mut *hot() };
    if hot.epoch == epoch {
        return Some(hot);
    }
    attach(epoch)
}

/// Session `epoch` as [`Hot::no_memory`] holds it: never 0 (epochs are
/// even). It wraps after 128 sessions, when a thread that had no memory
/// then may skip one retry.
pub(crate) fn no_memory_tag(epoch: u32) -> u8 {
    epoch as u8 | 1
}

/// Calls made during this session on threads that could get no memory
/// for a block (the address space is exhausted): not recorded, counted.
pub(crate) static UNRECORDED: AtomicU64 = AtomicU64::new(0);

/// Counts a measured call (or future) that found no block for the
/// current thread, when the reason is that there was no memory for one.
/// Only ever called on that rare path, so the shared counter costs the
/// common case nothing.
#[cold]
pub(crate) fn count_unrecorded() {
    let epoch = EPOCH.load(Ordering::Relaxed);
    // SAFETY: owner thread; a read of a plain field.
    let no_memory = unsafe { (*hot()).no_memory };
    if epoch & 1 == 0 && no_memory == no_memory_tag(epoch) {
        UNRECORDED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Calls not recorded this session for want of memory.
pub(crate) fn unrecorded() -> u64 {
    UNRECORDED.load(Ordering::Relaxed)
}

/// A section in which the profiler allocates for itself: nothing is
/// counted on this thread until it ends. Nests.
pub struct Internal {
    hot: *mut Hot,
}

impl Internal {
    /// Switches counting off for the current thread.
    #[inline]
    pub fn enter() -> Internal {
        let hot = hot();
        // SAFETY: owner thread; no reference to the hot state is held
        // across this (callers hold none while entering).
        unsafe {
            (*hot).internal = (*hot).internal.wrapping_add(1);
            park_alloc(&mut *hot);
        }
        Internal { hot }
    }
}

impl Drop for Internal {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: owner thread (Internal is !Send: it holds a raw
        // pointer); as in `enter`.
        unsafe {
            let hot = &mut *self.hot;
            hot.internal = hot.internal.wrapping_sub(1);
            if hot.internal == 0 {
                arm_alloc(hot);
            }
        }
    }
}
