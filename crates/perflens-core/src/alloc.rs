//! The counting allocator.
//!
//! [`CountingAlloc`] wraps another global allocator (by default
//! [`System`]) and, while a session records, charges every allocation and
//! free to the current thread's innermost measured frame: the node on top
//! of the shadow stack. Futures push a frame for each poll, so what a
//! future allocates while being polled lands on the future, on whatever
//! thread polls it, and two futures interleaved on one thread never mix.
//!
//! How, with the `alloc` feature (what `perflens/alloc` turns on): the
//! hook only moves the thread's running totals in its block header (live
//! bytes, and bytes and count allocated or the count freed), after one
//! comparison with a threshold that also sends it to its slow path when
//! it must not count (see [`ThreadAlloc`]). Everything a thread allocates between two of its frame
//! boundaries (a measured call or poll beginning or ending) belongs to
//! the frame on top of its stack in between, so each boundary charges
//! what the totals moved since the last one to that frame's node (see
//! `frame::boundary`); a boundary with nothing to charge costs two
//! comparisons. Without the feature (a counting allocator installed by
//! hand, `perflens-core` built without `alloc`) there are no boundary
//! checks, and the hook charges the top frame's node itself, which costs
//! the hook more (see docs/overhead.md's allocation benchmark).
//!
//! What a snapshot sees: node counters are up to date as of each thread's
//! last frame boundary. The thread taking the snapshot charges its own
//! first, a thread's exit hook charges what it has left, and for every
//! other thread the snapshot adds what its totals moved past its marks
//! to the node of the frame on top of its stack, which every change of
//! the top frame notes for it (`AllocMark::top`, one store).
//! The per-thread live and peak bytes come from the running totals. So a
//! snapshot, the final one included, is exact for every thread that is
//! not running while it is read (at its root or inside a measured call);
//! for one that is, it shows everything up to about the moment it read
//! it, and may leave what is in flight to the next snapshot: it never
//! counts a byte twice (see `session::unattributed`).
//!
//! Cost and sharing: the hook touches only the current thread's hot state
//! and one cache line of its block header, with plain loads and stores
//! (no read-modify-write, no cache line shared with another thread).
//! Process-wide live bytes are published to a shared counter only when a
//! thread's own live count has moved by [`PUBLISH_STEP`] bytes since it
//! last published, so steady allocate/free churn never touches it.
//!
//! Re-entrancy: the profiler allocates for itself (registering a thread,
//! a callsite or a path, taking a snapshot). Those sections run inside
//! [`Internal`], which switches counting off for the thread, so they are
//! never counted and never re-enter the profiler from the allocator.
//! Before `main`, after a thread's exit hook ran, and while no session
//! records, the hook counts nothing and never panics.

use crate::block::{GATE_ABOVE, GATE_BELOW, ThreadAlloc, bump};
pub use crate::hot::Internal;
use crate::hot::{self, EPOCH, Hot};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use perflens_format::vocab::PUBLISH_STEP;

/// Process-wide live bytes, as published by threads.
static LIVE: AtomicI64 = AtomicI64::new(0);
/// Highest value `LIVE` reached this session.
static PEAK: AtomicU64 = AtomicU64::new(0);
/// Set when a counting allocator has counted something.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts what it allocates into the running
/// session. Install it with `#[perflens::main]` (feature `alloc`), or by
/// hand:
///
/// ```
/// #[global_allocator]
/// static ALLOC: perflens_core::CountingAlloc = perflens_core::CountingAlloc::new(std::alloc::System);
/// # fn main() {}
/// ```
pub struct CountingAlloc<A = System> {
    inner: A,
}

impl<A> CountingAlloc<A> {
    /// Counts the allocations `inner` serves.
    pub const fn new(inner: A) -> Self {
        CountingAlloc { inner }
    }
}

// SAFETY: every method forwards to `inner` with the caller's arguments
// unchanged and returns its result unchanged; the bookkeeping around it
// never allocates through this allocator while counting is on (see
// `Internal`), never unwinds (no panicking operations), and touches only
// thread-local state and atomics.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (the caller's contract).
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            on_alloc(p, layout.size() as u64);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            on_alloc(p, layout.size() as u64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Counted first, so that the free is a tail call and nothing has
        // to survive it (and so that a sampled block's entry is gone
        // before another thread can be handed its address).
        on_free(ptr, layout.size() as u64);
        // SAFETY: forwarded unchanged.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A sampled block's entry comes out before the block may move (and
        // its address be handed to another thread), and goes back if the
        // reallocation fails.
        #[cfg(feature = "heap")]
        let sampled = if crate::heap::maybe_sampled(ptr) {
            crate::heap::take(ptr)
        } else {
            None
        };
        // SAFETY: forwarded unchanged.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // What a realloc really does: a block of the new size, and the
            // old one released (also when it grew in place, so that bytes
            // allocated always sum the sizes ever handed out).
            on_alloc(p, new_size as u64);
            count_free_of(layout.size() as u64);
        } else {
            #[cfg(feature = "heap")]
            if let Some(entry) = sampled {
                crate::heap::put_back(ptr, entry);
            }
        }
        p
    }
}

/// Counts an allocation of `size` bytes on the current thread.
///
/// The fast path is the whole hook while a thread counts: add to the live
/// bytes, compare with the threshold, store. Everything else (no session,
/// a session that ended or just started, profiler work on this thread, a
/// new peak, a move worth publishing) arrives at the slow path through
/// the comparison: see [`ThreadAlloc`].
#[inline(always)]
pub fn on_alloc(ptr: *mut u8, size: u64) {
    // SAFETY: owner thread; the reference is dropped before returning and
    // nothing here calls out while holding it.
    let hot = unsafe { &*hot::hot() };
    // SAFETY: `alloc` always points to live counters: the thread's block
    // header (blocks are never unmapped) or the static parked ones.
    let a = unsafe { &*hot.alloc };
    let live = a.live.load(Ordering::Relaxed).wrapping_add(size as i64);
    if live > a.above.load(Ordering::Relaxed) {
        return alloc_slow(ptr, size);
    }
    count_alloc(hot, a, live, ptr, size);
}

/// Counts a free of `size` bytes at `ptr` on the current thread, before
/// the block goes back to the allocator.
#[inline(always)]
pub fn on_free(ptr: *mut u8, size: u64) {
    // On every thread, counting or not: a sampled block may be freed
    // anywhere.
    #[cfg(feature = "heap")]
    if crate::heap::maybe_sampled(ptr) {
        crate::heap::freed(ptr);
    }
    #[cfg(not(feature = "heap"))]
    let _ = ptr;
    count_free_of(size);
}

/// [`on_free`]'s count (a realloc's old block, whose sampled entry it
/// handled itself).
#[inline(always)]
fn count_free_of(size: u64) {
    // SAFETY: as in `on_alloc`.
    let hot = unsafe { &*hot::hot() };
    // SAFETY: as in `on_alloc`.
    let a = unsafe { &*hot.alloc };
    let live = a.live.load(Ordering::Relaxed).wrapping_sub(size as i64);
    if live < a.below.load(Ordering::Relaxed) {
        return free_slow(size);
    }
    count_free(hot, a, live, size);
}

/// Records an allocation that takes the thread's live bytes to `live`.
/// With the `alloc` feature that is all: frames charge what the running
/// totals moved to nodes at their boundaries (see `frame::boundary`).
/// Without it there are no boundaries, so the hook charges the innermost
/// frame's node itself.
#[inline(always)]
fn count_alloc(hot: &Hot, a: &ThreadAlloc, live: i64, ptr: *mut u8, size: u64) {
    a.live.store(live, Ordering::Relaxed);
    #[cfg(feature = "alloc")]
    {
        let _ = hot;
        bump(&a.allocated, size);
        bump(&a.allocs, 1);
    }
    // Heap sampling: one subtraction and one branch more.
    #[cfg(feature = "heap")]
    if crate::heap::countdown(size) {
        crate::heap::sample(ptr, size);
    }
    #[cfg(not(feature = "heap"))]
    let _ = ptr;
    #[cfg(not(feature = "alloc"))]
    {
        let node = top_node(hot);
        bump(&node.alloc_bytes, size);
        bump(&node.alloc_count, 1);
    }
}

/// [`count_alloc`] for a free (bytes freed are derived from the live
/// bytes).
#[inline(always)]
fn count_free(hot: &Hot, a: &ThreadAlloc, live: i64, size: u64) {
    a.live.store(live, Ordering::Relaxed);
    #[cfg(feature = "alloc")]
    {
        let _ = (hot, size);
        bump(&a.frees, 1);
    }
    #[cfg(not(feature = "alloc"))]
    {
        let node = top_node(hot);
        bump(&node.free_bytes, size);
        bump(&node.free_count, 1);
    }
}

/// The innermost frame's node.
#[cfg(not(feature = "alloc"))]
#[inline(always)]
fn top_node(hot: &Hot) -> &crate::block::Node {
    // SAFETY: the hook counts into a block only while the thread is
    // attached to it, so 1 <= depth <= stack_cap and the top frame's node
    // is < node_cap.
    let node = unsafe { (*hot.frames.add(hot.depth as usize - 1)).np.node };
    crate::frame::node(hot, node)
}

/// The allocation would cross the threshold: count it if allocations
/// count on this thread (attaching it to the running session if need
/// be), and record the new peak and publish as due.
#[cold]
#[inline(never)]
fn alloc_slow(ptr: *mut u8, size: u64) {
    if let Some((hot, a)) = counting() {
        let live = a.live().wrapping_add(size as i64);
        count_alloc(hot, a, live, ptr, size);
        moved(hot, a, live);
    }
}

/// [`alloc_slow`] for a free.
#[cold]
#[inline(never)]
fn free_slow(size: u64) {
    if let Some((hot, a)) = counting() {
        let live = a.live().wrapping_sub(size as i64);
        count_free(hot, a, live, size);
        moved(hot, a, live);
    }
}

/// The current thread's hot state and its block's counters, if
/// allocations count on this thread now, attaching it to the running
/// session if it is not yet. Otherwise parks the hook and returns `None`.
#[inline(always)]
fn counting() -> Option<(&'static Hot, &'static ThreadAlloc)> {
    // A gate is a release store after the new generation: the hook read
    // it (relaxed); this makes the generation read below see the new one.
    std::sync::atomic::fence(Ordering::Acquire);
    // SAFETY: owner thread; dropped before `attach_for_alloc` takes its
    // own.
    let hot = unsafe { &mut *hot::hot() };
    if hot.internal == 0
        && hot.exited == 0
        && hot.has_block()
        && hot.epoch == EPOCH.load(Ordering::Relaxed)
    {
        let own: &'static ThreadAlloc = &hot.block().header().alloc;
        if std::ptr::eq(hot.alloc, own) {
            return Some((hot, own));
        }
    }
    hot::park_alloc(hot);
    attach_for_alloc()
}

/// This thread's live bytes crossed a threshold (or the slow path counted
/// for another reason): record a new low or a new peak (the most live
/// bytes rose above their lowest point, see `ThreadAlloc::peak`),
/// publish to the process-wide counter if they moved by [`PUBLISH_STEP`]
/// since the last time, and set the thresholds again. Growing phases come
/// here on every allocation that sets a new peak, and a thread freeing
/// memory allocated elsewhere on every free that sets a new low; steady
/// churn never does.
fn moved(hot: &Hot, a: &ThreadAlloc, live: i64) {
    let mark = &hot.block().header().mark;
    let min = mark.min_live.load(Ordering::Relaxed).min(live);
    mark.min_live.store(min, Ordering::Relaxed);
    let rise = live.wrapping_sub(min).max(0) as u64;
    let peak = a.peak.load(Ordering::Relaxed).max(rise);
    a.peak.store(peak, Ordering::Relaxed);
    let mut published = a.published.load(Ordering::Relaxed);
    if live.abs_diff(published) >= PUBLISH_STEP as u64 {
        let delta = live.wrapping_sub(published);
        let now = LIVE.fetch_add(delta, Ordering::Relaxed).wrapping_add(delta);
        PEAK.fetch_max(now.max(0) as u64, Ordering::Relaxed);
        a.published.store(live, Ordering::Relaxed);
        published = live;
    }
    set_thresholds(a, min, peak, published, hot.epoch);
}

/// Sets the thresholds of the owner thread's counters, which belong to
/// session `epoch`: the slow path is next taken at a new peak (live
/// bytes more than `peak` above their lowest point `min`), at a new low,
/// or when live bytes moved by [`PUBLISH_STEP`] from `published`.
///
/// A session starting or ending gates every block (`thread::gate_all`)
/// after changing the generation, maybe just before these stores: a gate
/// must not be lost under them. Where `gate_all` can make every thread
/// pass a memory barrier first (Linux's `membarrier`), plain stores and
/// a read of the generation after them suffice: if these stores come
/// after this thread's barrier, so does that read, which then sees the
/// new generation and puts the gate back; if they come before it, they
/// are visible before the gate is written, and the gate stays. Elsewhere
/// the thresholds are swapped instead (a locked instruction each, on
/// every new peak), so a gate that landed first is seen, and since the
/// swap acquires what the gate released, so is the new generation. In
/// both cases a gate from the start of `epoch` itself, or one left from
/// an earlier session on a block being reset, is dropped.
pub(crate) fn set_thresholds(a: &ThreadAlloc, min: i64, peak: u64, published: i64, epoch: u32) {
    let peak = i64::try_from(peak).unwrap_or(i64::MAX);
    let above = min
        .saturating_add(peak)
        .min(published.saturating_add(PUBLISH_STEP));
    let below = min.max(published.saturating_sub(PUBLISH_STEP));
    if crate::barrier::owner_swaps() {
        let gated_above = a.above.swap(above, Ordering::Acquire) == GATE_ABOVE;
        let gated_below = a.below.swap(below, Ordering::Acquire) == GATE_BELOW;
        if (gated_above || gated_below) && EPOCH.load(Ordering::Relaxed) != epoch {
            a.gate();
        }
    } else {
        a.above.store(above, Ordering::Relaxed);
        a.below.store(below, Ordering::Relaxed);
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        if EPOCH.load(Ordering::Relaxed) != epoch {
            a.gate();
        }
    }
}

/// Attaches the current thread to the running session so that a thread
/// which allocates before (or without) calling a measured function is
/// counted too. `None` when counting must stay off.
#[inline(always)]
fn attach_for_alloc() -> Option<(&'static Hot, &'static ThreadAlloc)> {
    // Every program allocates before `main`, so this is set early; read
    // first so that the shared line is written once, not per allocation.
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
        crate::hooks::alloc_installed();
    }
    if EPOCH.load(Ordering::Relaxed) & 1 == 1 {
        return None;
    }
    {
        // SAFETY: owner thread; dropped before `prepare` takes its own.
        let hot = unsafe { &*hot::hot() };
        if hot.internal != 0 || hot.exited != 0 {
            return None;
        }
    }
    {
        let _internal = Internal::enter();
        hot::prepare()?;
    }
    // SAFETY: owner thread; the references above are gone.
    let hot = unsafe { &mut *hot::hot() };
    // Ending the `Internal` section armed the hook if it may count.
    hot::arm_alloc(hot);
    let own: &'static ThreadAlloc = &hot.block().header().alloc;
    std::ptr::eq(hot.alloc, own).then_some((hot, own))
}

/// Leaves the current thread out of allocation counting and out of
/// reports for good: for threads the profiler runs for itself (the CPU
/// sampler's watcher). What the thread allocated before the call (thread
/// start-up allocates) is not reported either.
pub fn exclude_current_thread() {
    std::mem::forget(Internal::enter());
    // SAFETY: owner thread; no other reference to the hot state is alive.
    let hot = unsafe { &*hot::hot() };
    if hot.has_block() {
        hot.block().header().excluded.store(1, Ordering::Release);
    }
}

/// Clears the process-wide counters for a new session.
pub(crate) fn reset() {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
}

/// Whether a counting allocator counted anything in this process.
pub(crate) fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Process-wide live bytes as published so far, and the published peak.
pub(crate) fn published() -> (i64, u64) {
    (LIVE.load(Ordering::Relaxed), PEAK.load(Ordering::Relaxed))
}
