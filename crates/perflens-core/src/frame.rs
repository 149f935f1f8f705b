//! Pushing and popping shadow-stack frames, shared by the sync guard and
//! the async wrapper. The guard inlines its own specialised copy of the
//! common case (see `guard.rs`); these general versions serve futures and
//! the guard's slow paths, and handle both clocks.

use crate::block::{
    self, BlockWrite, HISTS, MODE_TIMED, NESTED_FRAME, NESTED_NODE, Node, NodePath, OVERFLOW_NODE,
    ShadowFrame, TIMED_INSTANT, TIMED_MASK, TIMED_TSC, UNTIMED, WARMUP, bump, key, nested_key,
    node_key, tag,
};
use crate::clock;
use crate::histogram::{BUCKETS, bucket_index};
use crate::hot::{FAST_COUNT, FAST_NONE, FAST_TIMED, FAST_TRACE, Hot};
use crate::paths::{self, OVERFLOW_PATH};
use std::sync::atomic::{AtomicU64, Ordering};

/// The node of the child `tagged` (a tagged callsite id) under `parent`,
/// if this thread knows it: first the parent's one-entry cache, then the
/// table (refilling the cache on a hit).
#[inline(always)]
pub(crate) fn find_child(hot: &Hot, parent: &mut ShadowFrame, tagged: u32) -> Option<NodePath> {
    if parent.cache_cs == tagged {
        return Some(parent.cache_np);
    }
    // SAFETY: `hot.table` points to `table_mask + 1` slots of this
    // thread's block.
    let np = unsafe { block::lookup(hot.table, hot.table_mask, key(parent.path(), tagged)) }?;
    parent.cache_cs = tagged;
    parent.cache_np = np;
    Some(np)
}

/// The node of the child `tagged` under `parent_path`, if this thread
/// knows it (the table only: for callers that hold no parent frame).
#[inline(always)]
pub(crate) fn find(hot: &Hot, parent_path: u32, tagged: u32) -> Option<NodePath> {
    // SAFETY: as in `find_child`.
    unsafe { block::lookup(hot.table, hot.table_mask, key(parent_path, tagged)) }
}

/// The node and context of a call of `callsite` (an untagged id) in
/// context `parent` that is a nested call of a recursion, if this thread
/// knows it as one. Such calls always come through the slow path, so it
/// looks here first.
#[inline(always)]
pub(crate) fn find_nested(hot: &Hot, parent: u32, callsite: u32) -> Option<Resolved> {
    // SAFETY: as in `find_child`.
    let np = unsafe { block::lookup(hot.table, hot.table_mask, nested_key(parent, callsite)) }?;
    Some(Resolved { np, nested: true })
}

/// Where a call goes: its node and context, and whether it is a nested
/// call of a recursion (see `paths.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub np: NodePath,
    pub nested: bool,
}

/// The node and context of a call of `callsite` (an untagged id) made in
/// context `parent`, creating them (and the global path) on first use.
/// Falls back to the overflow node when the thread's tree or the path
/// table is full.
#[cold]
#[inline(never)]
pub(crate) fn resolve(hot: &Hot, parent: u32, callsite: u32) -> Resolved {
    const OVERFLOW: Resolved = Resolved {
        np: NodePath {
            node: OVERFLOW_NODE,
            path: OVERFLOW_PATH,
        },
        nested: false,
    };
    if let Some(np) = find(hot, parent, tag(callsite)) {
        return Resolved { np, nested: false };
    }
    if let Some(nested) = find_nested(hot, parent, callsite) {
        return nested;
    }
    // Registering a path allocates: not counted.
    let _internal = crate::hot::Internal::enter();
    let block = hot.block();
    let h = block.header();
    if h.node_count.load(Ordering::Relaxed) == block::INTERNAL_NODES {
        // The thread's first measured function or future this session.
        crate::hooks::run_first_call_hook();
    }
    let step = paths::step(parent, callsite);
    if step.path == OVERFLOW_PATH {
        return OVERFLOW;
    }
    let nk = node_key(step.path, step.nested);
    // SAFETY: as in `find_child`.
    let node = match unsafe { block::lookup(hot.table, hot.table_mask, nk) } {
        Some(np) => np.node,
        // A full tree maps new contexts to the overflow node without a
        // table entry. A node is only made with room for its node key
        // and its first context key.
        None if !block.table_room(2) => return OVERFLOW,
        None => {
            let path = step.path | if step.nested { NESTED_NODE } else { 0 };
            let Some(node) = block.push_node(path) else {
                return OVERFLOW;
            };
            block.insert(nk, NodePath { node, path: 0 });
            node
        }
    };
    let np = NodePath {
        node,
        path: step.context,
    };
    let k = if step.nested {
        nested_key(parent, callsite)
    } else {
        key(parent, tag(callsite))
    };
    // When the table is too full to remember this, the next call works
    // it out again here: slower, never wrong.
    block.insert(k, np);
    Resolved {
        np,
        nested: step.nested,
    }
}

/// Node `i` of this thread.
#[inline(always)]
pub(crate) fn node(hot: &Hot, i: u32) -> &Node {
    // SAFETY: node indices come from the table or are the overflow node,
    // both < node_cap.
    unsafe { &*hot.nodes.add(i as usize) }
}

/// Frame `i` of this thread. The reference does not borrow `hot`.
///
/// # Safety
/// `i < stack_cap`; no other reference to that frame is alive while the
/// result is used.
#[inline(always)]
pub(crate) unsafe fn frame<'a>(hot: &Hot, i: u32) -> &'a mut ShadowFrame {
    // SAFETY: per the caller's contract; frames live as long as the block,
    // which is never unmapped.
    unsafe { &mut *hot.frames.add(i as usize) }
}

/// The frame on top of the stack (the root sentinel if none). The
/// reference does not borrow `hot`: pushing writes the next frame, never
/// this one, so it stays valid while a child is pushed.
///
/// # Safety
/// No other reference to the top frame is alive while the result is used.
#[inline(always)]
pub(crate) unsafe fn top<'a>(hot: &Hot) -> &'a mut ShadowFrame {
    // SAFETY: depth >= 1 once attached, and depth <= stack_cap; the rest
    // is the caller's contract.
    unsafe { frame(hot, hot.depth - 1) }
}

/// Whether a new call of `node` under `parent` is timed. Sampled mode
/// times every call of a node in its warm-up (its first calls, see
/// `block::warmup_countdown`), then a call when its node's countdown runs
/// out, or when its parent is timed (so the parent's exclusive time stays
/// exact).
#[inline(always)]
pub(crate) fn decide_timed(hot: &Hot, node_idx: u32, parent: &ShadowFrame) -> bool {
    match hot.fast {
        FAST_COUNT => false,
        FAST_TIMED | FAST_TRACE => true,
        // FAST_SAMPLED is sampled mode; with the Instant clock
        // (FAST_NONE) the mode is in the block header.
        FAST_NONE if hot.mode() == MODE_TIMED => true,
        _ => {
            let n = node(hot, node_idx);
            let c = n.countdown.load(Ordering::Relaxed);
            if c == 0 || c == WARMUP {
                // The last warm-up call, or the countdown ran out.
                n.countdown.store(hot.sample_every - 1, Ordering::Relaxed);
                true
            } else if c > WARMUP {
                n.countdown.store(c - 1, Ordering::Relaxed);
                true
            } else {
                n.countdown.store(c - 1, Ordering::Relaxed);
                // Masked: an await frame carries flags beside its clock.
                parent.timed & TIMED_MASK != UNTIMED
            }
        }
    }
}

/// Whether [`decide_timed`] reads its node (sampled mode): otherwise
/// any node index will do.
#[inline(always)]
pub(crate) fn decision_reads_node(hot: &Hot) -> bool {
    match hot.fast {
        FAST_COUNT | FAST_TIMED | FAST_TRACE => false,
        FAST_NONE => hot.mode() != MODE_TIMED,
        _ => true,
    }
}

/// Pushes a frame. Returns a pointer to it and its index, or `None` if
/// the shadow stack is full (the call is then counted as dropped).
pub(crate) fn push(hot: &mut Hot, to: Resolved, timed: bool) -> Option<(*mut ShadowFrame, u32)> {
    let depth = hot.depth;
    if depth >= hot.stack_cap {
        bump(&hot.block().header().dropped_frames, 1);
        return None;
    }
    // What was allocated since the last boundary is the parent's.
    // SAFETY: 1 <= depth (attached); owner thread.
    boundary(hot, unsafe { frame(hot, depth - 1) }.np.node);
    // SAFETY: depth < stack_cap; owner thread.
    let f = unsafe { frame(hot, depth) };
    f.np = to.np;
    f.cache_cs = 0;
    note_top(hot, to.np.node);
    #[cfg(feature = "alloc")]
    {
        f.alloc_start = alloc_mark(hot);
    }
    let clock = match (timed, hot.tsc()) {
        (false, _) => UNTIMED,
        (true, true) => TIMED_TSC,
        (true, false) => TIMED_INSTANT,
    };
    f.timed = clock;
    if to.nested {
        f.timed |= NESTED_FRAME;
        let n = node(hot, to.np.node);
        let open = n.rec_open.load(Ordering::Relaxed) + 1;
        n.rec_open.store(open, Ordering::Relaxed);
        // The outermost frame of the recursion is not a nested one.
        if open + 1 > n.rec_max.load(Ordering::Relaxed) {
            n.rec_max.store(open + 1, Ordering::Relaxed);
        }
    }
    if timed {
        f.child = 0;
        f.start = clock::now_with(hot.tsc());
    }
    // The frame before the depth: see `thread::sample_context`.
    std::sync::atomic::compiler_fence(Ordering::Release);
    hot.depth = depth + 1;
    Some((f as *mut ShadowFrame, depth))
}

/// Pops frame `depth` (and any frames above it whose guards were leaked).
/// Returns `(inclusive, exclusive)` ticks when the call was timed, after
/// charging the inclusive time to the parent frame.
pub(crate) fn pop(hot: &mut Hot, f: &ShadowFrame, depth: u32) -> Option<(u64, u64)> {
    discard_above(hot, depth);
    close_nested(hot, f);
    hot.depth = depth;
    // SAFETY: depth >= 1 (frame 0 is the root sentinel, never popped);
    // owner thread.
    note_top(hot, unsafe { frame(hot, depth - 1) }.np.node);
    let clock = f.timed & TIMED_MASK;
    if clock == UNTIMED {
        return None;
    }
    let now = clock::now_with(clock == TIMED_TSC);
    Some(charge(hot, f, depth, now))
}

/// Drops the frames above `depth` without recording them: their guards
/// were leaked, or a poll unwound through them. What was allocated since
/// the last boundary is charged to the top frame first (one of those, or
/// frame `depth` itself when there are none).
pub(crate) fn discard_above(hot: &mut Hot, depth: u32) {
    // SAFETY: 1 <= hot.depth <= stack_cap (attached); owner thread.
    boundary(hot, unsafe { top(hot) }.np.node);
    while hot.depth > depth + 1 {
        // SAFETY: depth + 1 < hot.depth <= stack_cap; owner thread.
        let f = unsafe { frame(hot, hot.depth - 1) };
        close_nested(hot, f);
        hot.depth -= 1;
    }
    // SAFETY: depth < hot.depth <= stack_cap; owner thread.
    note_top(hot, unsafe { frame(hot, hot.depth - 1) }.np.node);
}

/// A nested frame leaves the stack: its node has one open frame fewer.
#[inline]
fn close_nested(hot: &Hot, f: &ShadowFrame) {
    if f.timed & NESTED_FRAME != 0 {
        let n = node(hot, f.np.node);
        let open = n.rec_open.load(Ordering::Relaxed);
        n.rec_open.store(open.saturating_sub(1), Ordering::Relaxed);
    }
}

/// Inclusive and exclusive time of timed frame `f` (at index `depth`)
/// ending at `now`; adds the inclusive time to the parent's child time.
#[inline(always)]
pub(crate) fn charge(hot: &Hot, f: &ShadowFrame, depth: u32, now: u64) -> (u64, u64) {
    let dur = now.saturating_sub(f.start);
    let excl = dur.saturating_sub(f.child);
    // SAFETY: depth >= 1 (frame 0 is the root sentinel, never popped).
    let parent = unsafe { frame(hot, depth - 1) };
    parent.child = parent.child.wrapping_add(dur);
    (dur, excl)
}

/// The thread's running total of allocated bytes, saved in a frame on
/// entry.
#[inline(always)]
pub(crate) fn alloc_mark(hot: &Hot) -> u64 {
    alloc_mark_at(hot.frames)
}

/// [`alloc_mark`] for the current thread, whose frame area is at `frames`.
#[inline(always)]
pub(crate) fn alloc_mark_at(frames: *mut ShadowFrame) -> u64 {
    // SAFETY: the frame area of an attached thread's block, whose header
    // precedes it (blocks are never unmapped); a plain read of a counter
    // only this thread writes (others read it atomically).
    unsafe { *(*crate::block::header_of(frames)).alloc.allocated.as_ptr() }
}

/// A frame boundary: the frame whose node is `node` is on top of the
/// stack and is about to stop being so (a child is pushed on it, or it
/// is popped). Everything this thread allocated and freed since the last
/// boundary happened while that frame was on top, so it is charged to
/// `node` (exclusive). With the `alloc` feature only: without it the
/// allocator hook charges the top frame itself.
#[inline(always)]
pub(crate) fn boundary(hot: &Hot, node: u32) {
    #[cfg(feature = "alloc")]
    if moved_since_boundary(hot) {
        charge_alloc(hot, node);
    }
    #[cfg(not(feature = "alloc"))]
    let _ = (hot, node);
}

/// [`boundary`] for the frame now on top of the stack of the current
/// thread, whose frame area is at `frames`, as the guard's inlined paths
/// use it: the charging call takes no arguments, so that the common case
/// (nothing to charge) costs three loads, an add and a branch.
#[inline(always)]
pub(crate) fn boundary_top_at(frames: *mut ShadowFrame) {
    #[cfg(feature = "alloc")]
    if moved_since_boundary_at(frames) {
        charge_top();
    }
    #[cfg(not(feature = "alloc"))]
    let _ = frames;
}

/// Whether this thread allocated or freed anything since its last frame
/// boundary. Both counts only grow, so an unchanged sum means neither
/// moved, bytes included (a wrap would take 2^64 calls).
#[cfg(feature = "alloc")]
#[inline(always)]
fn moved_since_boundary(hot: &Hot) -> bool {
    moved_since_boundary_at(hot.frames)
}

/// [`moved_since_boundary`] for the current thread, whose frame area is
/// at `frames`.
#[cfg(feature = "alloc")]
#[inline(always)]
fn moved_since_boundary_at(frames: *mut ShadowFrame) -> bool {
    // SAFETY: the frame area of an attached thread's block, whose header
    // precedes it (blocks are never unmapped).
    let h = unsafe { &*crate::block::header_of(frames) };
    let (a, m) = (&h.alloc, &h.mark);
    // SAFETY: plain reads of counters only this thread writes (others
    // only read them, atomically): no data race. Plain, so that the
    // compiler can fold them into the add and the comparison.
    unsafe { (*a.allocs.as_ptr()).wrapping_add(*a.frees.as_ptr()) != *m.ops.as_ptr() }
}

/// [`charge_alloc`] to the frame on top of the current thread's stack.
/// Not `#[cold]`: a measured function that allocates comes here on every
/// call.
#[cfg(feature = "alloc")]
#[inline(never)]
fn charge_top() {
    // SAFETY: owner thread; the guard holds no reference to the hot state
    // across this call. Taken here, not passed: the caller then needs no
    // address of its thread-local state.
    let hot = unsafe { &*crate::hot::hot() };
    // SAFETY: attached, so 1 <= depth <= stack_cap; a plain read through
    // the frame area's pointer (the guard holds no reference to the top
    // frame across this call).
    let node = unsafe { (*hot.frames.add(hot.depth as usize - 1)).np.node };
    charge_pending(hot, node);
}

/// [`charge_pending`], out of line: every measured function inlines
/// [`boundary`] twice.
#[cfg(feature = "alloc")]
#[inline(never)]
fn charge_alloc(hot: &Hot, node_idx: u32) {
    charge_pending(hot, node_idx);
}

/// Charges what the thread's running totals moved since its last
/// boundary to `node`, and moves the mark up to them.
#[cfg(feature = "alloc")]
#[inline(always)]
fn charge_pending(hot: &Hot, node_idx: u32) {
    let h = hot.block().header();
    let n = node(hot, node_idx);
    // Written out, not zipped: this runs once per measured call that
    // allocates, and the iterator version took about 190 instructions.
    let [allocated, allocs, freed, frees] = h.alloc.totals();
    let m = &h.mark;
    let delta = [
        allocated.wrapping_sub(m.allocated.load(Ordering::Relaxed)),
        allocs.wrapping_sub(m.allocs.load(Ordering::Relaxed)),
        freed.wrapping_sub(m.freed.load(Ordering::Relaxed)),
        frees.wrapping_sub(m.frees.load(Ordering::Relaxed)),
    ];
    m.allocated.store(allocated, Ordering::Relaxed);
    m.allocs.store(allocs, Ordering::Relaxed);
    m.freed.store(freed, Ordering::Relaxed);
    m.frees.store(frees, Ordering::Relaxed);
    m.ops.store(allocs.wrapping_add(frees), Ordering::Relaxed);
    // The marks before the counters: a snapshot that reads the counters,
    // then (after an acquire fence) the marks, never counts a delta twice
    // (see `session::read_block`).
    std::sync::atomic::fence(Ordering::Release);
    bump(&n.alloc_bytes, delta[0]);
    bump(&n.alloc_count, delta[1]);
    bump(&n.free_bytes, delta[2]);
    bump(&n.free_count, delta[3]);
}

/// Records `node` as the frame now on top of the stack (`AllocMark::top`),
/// for snapshots taken by other threads: what the running totals move
/// from here on belongs to it. Called at every change of the top frame,
/// after the boundary charged what was pending: one store.
#[inline(always)]
pub(crate) fn note_top(hot: &Hot, node: u32) {
    note_top_at(hot.frames, node);
}

/// [`note_top`] for the thread whose frame area is at `frames`.
#[inline(always)]
pub(crate) fn note_top_at(frames: *mut ShadowFrame, node: u32) {
    #[cfg(feature = "alloc")]
    {
        // SAFETY: `frames` is the frame area of an attached thread's
        // block, whose header precedes it (blocks are never unmapped).
        let h = unsafe { &*crate::block::header_of(frames) };
        h.mark.top.store(node, Ordering::Relaxed);
        // The node before any movement of the totals that follows: a
        // snapshot that sees a total moved (and then fences) sees it.
        std::sync::atomic::fence(Ordering::Release);
    }
    #[cfg(not(feature = "alloc"))]
    let _ = (frames, node);
}

/// Charges what the current thread allocated since its last boundary to
/// the frame on top of its stack, if its block belongs to the running
/// session: for snapshots taken by this thread, so that they see its
/// allocations up to now.
pub(crate) fn charge_current_thread() {
    if let Some(hot) = crate::hot::active() {
        // SAFETY: attached, so depth >= 1; owner thread; no other frame
        // reference is alive.
        let node = unsafe { top(hot) }.np.node;
        boundary(hot, node);
    }
}

/// Bytes the call in frame `f` has allocated so far, itself and
/// everything it called.
#[inline(always)]
pub(crate) fn alloc_since(hot: &Hot, f: &ShadowFrame) -> u64 {
    alloc_mark(hot).wrapping_sub(f.alloc_start)
}

/// Adds the bytes a completing call allocated to its node's per-call
/// histogram. Calls that allocated nothing are not added: the snapshot
/// counts them as `calls` minus the histogram's count.
#[cfg(feature = "alloc")]
#[inline(always)]
pub(crate) fn record_alloc(hot: &Hot, f: &ShadowFrame) {
    record_alloc_at(hot, hot.frames, f);
}

/// [`record_alloc`] with the thread's frame area, `hot.frames`, already
/// loaded.
#[cfg(feature = "alloc")]
#[inline(always)]
pub(crate) fn record_alloc_at(hot: &Hot, frames: *mut ShadowFrame, f: &ShadowFrame) {
    let bytes = alloc_mark_at(frames).wrapping_sub(f.alloc_start);
    if bytes != 0 {
        hist_add(hot, f.np.node, HIST_ALLOC, bytes);
    }
}

pub(crate) use crate::block::HIST_ALLOC;

/// Adds one to histogram `which` (0 inclusive time, 1 exclusive time,
/// [`HIST_ALLOC`] bytes per call) of a node.
#[inline(always)]
pub(crate) fn hist_add(hot: &Hot, node: u32, which: usize, value: u64) {
    let idx = (node as usize * HISTS + which) * BUCKETS + bucket_index(value);
    // SAFETY: `hot.hist` is this thread's histogram area, node <
    // node_cap, which < HISTS and the bucket < BUCKETS: inside the area.
    bump(unsafe { &*hot.hist.add(idx) }, 1);
}

/// Adds a timed call's inclusive and exclusive time to its node's
/// histograms one timed call late: this call's two entries are left in
/// the header's `pending` slots, and the previous call's are added now.
///
/// Why: the bucket of a time depends on the `rdtsc` just read, and a
/// counter increment at an address that depends on `rdtsc` cost about
/// 6 ns per call on the AMD EPYC this was tuned on (a store of the
/// index itself costs nothing measurable). By the next timed exit the
/// previous index is long known. A snapshot adds the pending entries to
/// what it reads, so counts stay exact.
///
/// # Safety
/// `frames` and `hist` are the owner thread's frame and histogram areas
/// of one block, `node < node_cap`.
#[inline(always)]
pub(crate) unsafe fn hist_defer(
    frames: *mut ShadowFrame,
    hist: *const AtomicU64,
    node: u32,
    incl: u64,
    excl: u64,
) {
    // SAFETY: the header sits `FRAMES_OFFSET` bytes before frame 0.
    let pending = unsafe { &(*block::header_of(frames)).pending };
    let (a, b) = (
        pending[0].load(Ordering::Relaxed),
        pending[1].load(Ordering::Relaxed),
    );
    // SAFETY: pending entries are histogram elements or the sink, all
    // inside the area.
    unsafe {
        bump(&*hist.add(a as usize), 1);
        bump(&*hist.add(b as usize), 1);
    }
    let base = node as usize * HISTS * BUCKETS;
    pending[0].store((base + bucket_index(incl)) as u64, Ordering::Relaxed);
    pending[1].store(
        (base + BUCKETS + bucket_index(excl)) as u64,
        Ordering::Relaxed,
    );
}

/// Records one completed timed call on a node (counted by its entry in
/// the inclusive histogram, not in `calls`).
#[inline(always)]
pub(crate) fn record_timed(hot: &Hot, node_idx: u32, incl: u64, excl: u64) {
    let n = node(hot, node_idx);
    bump(&n.total, incl);
    bump(&n.self_, excl);
    hist_add(hot, node_idx, 0, incl);
    hist_add(hot, node_idx, 1, excl);
}

/// Records one completed call on a node.
#[inline(always)]
pub(crate) fn record(hot: &Hot, node_idx: u32, timing: Option<(u64, u64)>) {
    match timing {
        Some((incl, excl)) => record_timed(hot, node_idx, incl, excl),
        None => bump(&node(hot, node_idx).calls, 1),
    }
}
