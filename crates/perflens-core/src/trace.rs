//! Trace mode: a timeline of events beside the aggregates.
//!
//! Events go to one private mapping of `buffer_bytes`, split into
//! [`CHUNK_BYTES`] chunks. A thread writes into its current chunk with
//! plain stores and one release store of the chunk's length per event: no
//! allocation, no lock, no read-modify-write. Once in about a thousand
//! events its chunk is full and it takes another one under the pool's
//! lock: a chunk never used yet, or, when none is left, the oldest chunk
//! no thread is writing (flight-recorder semantics: the newest events are
//! kept, across all threads; the events of a chunk taken back are counted
//! as dropped, with the time of the last of them). Memory is the mapping
//! and the pool's bookkeeping, whatever the event rate.
//!
//! The mapping is never unmapped: a thread that checked that the session
//! records just before it ended may still write one event. At the end its
//! pages are given back to the system (`MADV_DONTNEED`), and the mapping
//! is reused by the next traced session of the same size.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Bytes of one chunk: a 64-byte header and [`SLOTS`] 16-byte slots.
pub const CHUNK_BYTES: usize = 16 * 1024;
/// Event slots in a chunk.
pub const SLOTS: usize = CHUNK_BYTES / 16 - 4;
/// The smallest buffer: a chunk for each of a few threads.
pub const MIN_BUFFER: usize = 1 << 20;
/// The default buffer (`PERFLENS_TRACE_BUFFER`).
pub const DEFAULT_BUFFER: usize = 64 << 20;

pub use perflens_format::trace::{
    AWAIT_BEGIN, AWAIT_DROP, AWAIT_END, FUT_DROP, FUT_NEW, POLL_BEGIN, POLL_END, READY, RawTrace,
    SPAN_BEGIN, SPAN_END, ThreadTrace, TraceEvent,
};

/// How many slots an event of `kind` takes (0: not a kind).
fn slots_of(kind: u8) -> usize {
    match kind {
        SPAN_BEGIN | SPAN_END | POLL_END => 1,
        FUT_NEW | POLL_BEGIN | FUT_DROP | AWAIT_BEGIN | AWAIT_END | AWAIT_DROP => 2,
        _ => 0,
    }
}

#[repr(C, align(64))]
struct Chunk {
    /// The writing thread's index.
    owner: AtomicU32,
    /// Slots written; release-stored after each event.
    len: AtomicU32,
    _pad: [u64; 7],
    slots: [[AtomicU64; 2]; SLOTS],
}

const _: () = assert!(size_of::<Chunk>() == CHUNK_BYTES);

/// The chunks, and who holds which.
struct Pool {
    base: *mut Chunk,
    chunks: usize,
    state: Mutex<State>,
    dropped_without_room: AtomicU64,
    /// The session the pool records for (its epoch; odd: none).
    epoch: AtomicU32,
    /// The clock when that session started.
    start_ticks: AtomicU64,
}

// SAFETY: `base` points into a mapping that lives for the process (never
// unmapped); chunks are written by the thread holding them and read
// through atomics.
unsafe impl Sync for Pool {}
// SAFETY: as above.
unsafe impl Send for Pool {}

#[derive(Default)]
struct State {
    /// Chunks never handed out yet start here.
    unused: usize,
    /// Chunks handed out, oldest first.
    order: VecDeque<u32>,
    /// Whether each chunk is some thread's current one.
    current: Vec<bool>,
    /// By thread index: events dropped, and the ticks of the last one.
    dropped: Vec<(u64, u64)>,
}

/// The pool of the traced session (null: none yet).
static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());
/// Every pool made (never freed: a thread may still be writing its last
/// event into one; see the module's doc).
static POOLS: Mutex<Vec<&'static Pool>> = Mutex::new(Vec::new());

fn lock(pool: &Pool) -> MutexGuard<'_, State> {
    pool.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A thread's writing position: its current chunk's next slot and end.
struct TraceHot {
    cur: *const [AtomicU64; 2],
    end: *const [AtomicU64; 2],
    chunk: *const Chunk,
    /// The session the chunk belongs to.
    epoch: u32,
    /// Futures this thread made ids for (in this session).
    ids: u64,
    /// The id of the measured future this thread is polling (0: none).
    polling: u64,
}

impl TraceHot {
    /// No chunk, no session.
    const EMPTY: TraceHot = TraceHot {
        cur: std::ptr::null(),
        end: std::ptr::null(),
        chunk: std::ptr::null(),
        epoch: 1,
        ids: 0,
        polling: 0,
    };
}

thread_local! {
    static TRACE: UnsafeCell<TraceHot> = const { UnsafeCell::new(TraceHot::EMPTY) };
}

/// Makes the pool for session `epoch`, of `buffer_bytes` (rounded down to
/// whole chunks, at least [`MIN_BUFFER`]). `false` when the memory cannot
/// be mapped.
pub(crate) fn begin(epoch: u32, buffer_bytes: usize) -> bool {
    let chunks = buffer_bytes.max(MIN_BUFFER) / CHUNK_BYTES;
    // Every pool made stays here, reused by the next session of its size:
    // at most one pool per size for the process's life.
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let pool: &'static Pool = match pools.iter().find(|p| p.chunks == chunks) {
        Some(p) => p,
        None => {
            let Some(base) = crate::memory::map_zeroed(chunks * CHUNK_BYTES) else {
                return false;
            };
            let pool = Box::leak(Box::new(Pool {
                base: base.cast(),
                chunks,
                state: Mutex::new(State::default()),
                dropped_without_room: AtomicU64::new(0),
                epoch: AtomicU32::new(1),
                start_ticks: AtomicU64::new(0),
            }));
            pools.push(pool);
            pool
        }
    };
    {
        let mut st = lock(pool);
        *st = State {
            current: vec![false; chunks],
            ..State::default()
        };
    }
    pool.dropped_without_room.store(0, Ordering::Relaxed);
    pool.start_ticks
        .store(crate::clock::now(), Ordering::Relaxed);
    pool.epoch.store(epoch, Ordering::Release);
    POOL.store(pool as *const Pool as *mut Pool, Ordering::Release);
    true
}

/// The pool of session `epoch`, if it is traced.
fn pool_of(epoch: u32) -> Option<&'static Pool> {
    // SAFETY: pools are leaked, never freed.
    let pool = unsafe { POOL.load(Ordering::Acquire).as_ref() }?;
    (pool.epoch.load(Ordering::Acquire) == epoch).then_some(pool)
}

/// Writes one event of the current thread (thread index `owner`, session
/// `epoch`): one slot, or two for the kinds with ids.
#[inline]
pub(crate) fn emit(epoch: u32, owner: u32, e: TraceEvent) {
    let need = slots_of(e.kind);
    debug_assert!(need != 0, "not an event kind: {}", e.kind);
    let _ = TRACE.try_with(|t| {
        // SAFETY: the owner thread's own state; no other reference to it
        // is alive (emit does not nest).
        let t = unsafe { &mut *t.get() };
        // Addresses, not `offset_from`: both are null before the first
        // chunk.
        let room = (t.end as usize - t.cur as usize) / size_of::<[AtomicU64; 2]>();
        if (t.epoch != epoch || room < need) && !refill(t, epoch, owner) {
            return;
        }
        // SAFETY: at least `need` slots from `cur` lie in the chunk: the
        // test above, or a fresh chunk's SLOTS (>= 2) after refill.
        unsafe {
            let s = &*t.cur;
            s[0].store(e.ticks, Ordering::Relaxed);
            s[1].store(
                u64::from(e.kind) | u64::from(e.flags) << 8 | u64::from(e.arg) << 32,
                Ordering::Relaxed,
            );
            if need == 2 {
                let s = &*t.cur.add(1);
                s[0].store(e.ids[0], Ordering::Relaxed);
                s[1].store(e.ids[1], Ordering::Relaxed);
            }
            t.cur = t.cur.add(need);
            let chunk = &*t.chunk;
            let len = t.cur.offset_from(chunk.slots.as_ptr()) as u32;
            chunk.len.store(len, Ordering::Release);
        }
    });
}

/// A new future id of the current thread (index `owner`), unique in the
/// session without atomics: the thread's index above bit 40, a count of
/// the thread's futures below; and the id of the future it is polling
/// (the new one's maker, 0 for none).
pub(crate) fn new_future_id(epoch: u32, owner: u32) -> (u64, u64) {
    TRACE
        .try_with(|t| {
            // SAFETY: the owner thread's own state; no other reference.
            let t = unsafe { &mut *t.get() };
            if t.epoch != epoch {
                // State of another session (whose pool was reset when it
                // ended): start again; the next event takes a chunk.
                *t = TraceHot {
                    epoch,
                    ..TraceHot::EMPTY
                };
            }
            t.ids += 1;
            (
                (u64::from(owner) << 40) | (t.ids & ((1 << 40) - 1)),
                t.polling,
            )
        })
        .unwrap_or((0, 0))
}

/// The id of the measured future this thread is polling (0: none).
pub(crate) fn polling() -> u64 {
    // SAFETY: the owner thread's own state, read only.
    TRACE
        .try_with(|t| unsafe { (*t.get()).polling })
        .unwrap_or(0)
}

/// Notes that this thread now polls future `id` (0: none); returns the
/// one it polled before, to be put back when the poll ends.
pub(crate) fn set_polling(id: u64) -> u64 {
    TRACE
        .try_with(|t| {
            // SAFETY: the owner thread's own state; no other reference.
            let t = unsafe { &mut *t.get() };
            std::mem::replace(&mut t.polling, id)
        })
        .unwrap_or(0)
}

/// Seals the thread's chunk and takes a new one. `false` (the event is
/// dropped and counted) when the session is not traced any more, or
/// every chunk is some thread's current one.
#[cold]
#[inline(never)]
fn refill(t: &mut TraceHot, epoch: u32, owner: u32) -> bool {
    let Some(pool) = pool_of(epoch) else {
        return false;
    };
    let _internal = crate::hot::Internal::enter();
    let mut st = lock(pool);
    let index_of = |c: *const Chunk| (c as usize - pool.base as usize) / CHUNK_BYTES;
    if t.epoch == epoch && !t.chunk.is_null() {
        if let Some(c) = st.current.get_mut(index_of(t.chunk)) {
            *c = false;
        }
    }
    t.chunk = std::ptr::null();
    t.cur = std::ptr::null();
    t.end = std::ptr::null();
    if t.epoch != epoch {
        (t.ids, t.polling) = (0, 0);
    }
    t.epoch = epoch;
    let taken = if st.unused < pool.chunks {
        st.unused += 1;
        Some(st.unused - 1)
    } else {
        // The oldest chunk no thread writes: its events make room.
        let at = st.order.iter().position(|&c| !st.current[c as usize]);
        at.and_then(|at| st.order.remove(at)).map(|c| {
            // SAFETY: c < chunks.
            let chunk = unsafe { &*pool.base.add(c as usize) };
            let (events, last) = decode(chunk, &mut |_| {});
            let who = chunk.owner.load(Ordering::Relaxed) as usize;
            if st.dropped.len() <= who {
                st.dropped.resize(who + 1, (0, 0));
            }
            let d = &mut st.dropped[who];
            d.0 += events;
            d.1 = d.1.max(last);
            c as usize
        })
    };
    let Some(c) = taken else {
        pool.dropped_without_room.fetch_add(1, Ordering::Relaxed);
        return false;
    };
    st.order.push_back(c as u32);
    st.current[c] = true;
    // SAFETY: c < chunks, inside the mapping.
    let chunk = unsafe { &*pool.base.add(c) };
    chunk.owner.store(owner, Ordering::Relaxed);
    chunk.len.store(0, Ordering::Release);
    t.chunk = chunk;
    t.cur = chunk.slots.as_ptr();
    // SAFETY: one past the last slot of the chunk.
    t.end = unsafe { t.cur.add(SLOTS) };
    true
}

/// The current thread's chunk is done (it exits): another thread may take
/// it back once it is the oldest.
pub(crate) fn seal_current_thread() {
    let _ = TRACE.try_with(|t| {
        // SAFETY: the owner thread's own state.
        let t = unsafe { &mut *t.get() };
        if let Some(pool) = pool_of(t.epoch).filter(|_| !t.chunk.is_null()) {
            let mut st = lock(pool);
            let c = (t.chunk as usize - pool.base as usize) / CHUNK_BYTES;
            if let Some(cur) = st.current.get_mut(c) {
                *cur = false;
            }
        }
        t.chunk = std::ptr::null();
        t.cur = std::ptr::null();
        t.end = std::ptr::null();
    });
}

/// Calls `f` with each event of `chunk` up to its released length;
/// returns how many, and the ticks of the last.
fn decode(chunk: &Chunk, f: &mut dyn FnMut(TraceEvent)) -> (u64, u64) {
    let len = (chunk.len.load(Ordering::Acquire) as usize).min(SLOTS);
    let (mut at, mut n, mut last) = (0, 0, 0);
    while at < len {
        let s = &chunk.slots[at];
        let ticks = s[0].load(Ordering::Relaxed);
        let word = s[1].load(Ordering::Relaxed);
        let kind = word as u8;
        let need = slots_of(kind);
        if need == 0 || at + need > len {
            break;
        }
        let ids = match need {
            2 => [0, 1].map(|i| chunk.slots[at + 1][i].load(Ordering::Relaxed)),
            _ => [0, 0],
        };
        f(TraceEvent {
            ticks,
            kind,
            flags: (word >> 8) as u8,
            arg: (word >> 32) as u32,
            ids,
        });
        n += 1;
        last = ticks;
        at += need;
    }
    (n, last)
}

/// Ends the trace of session `epoch` (recording has stopped): its events,
/// by thread, oldest first, with the paths of each thread's block
/// (`each_block` runs its argument over every registered block). The
/// pool's pages go back to the system.
pub(crate) fn finish(
    epoch: u32,
    each_block: fn(&mut dyn FnMut(crate::block::Block)),
) -> Option<RawTrace> {
    let pool = pool_of(epoch)?;
    let _internal = crate::hot::Internal::enter();
    let end_ticks = crate::clock::now();
    pool.epoch.store(1, Ordering::Release);
    let mut st = lock(pool);
    let mut threads: Vec<ThreadTrace> = Vec::new();
    let mut slot_of: Vec<Option<usize>> = Vec::new();
    let mut thread_of = |who: usize, threads: &mut Vec<ThreadTrace>| -> usize {
        if slot_of.len() <= who {
            slot_of.resize(who + 1, None);
        }
        *slot_of[who].get_or_insert_with(|| {
            threads.push(ThreadTrace {
                index: who as u32,
                ..ThreadTrace::default()
            });
            threads.len() - 1
        })
    };
    for &c in &st.order {
        // SAFETY: c < chunks.
        let chunk = unsafe { &*pool.base.add(c as usize) };
        let who = chunk.owner.load(Ordering::Relaxed) as usize;
        let at = thread_of(who, &mut threads);
        decode(chunk, &mut |e| threads[at].events.push(e));
    }
    for (who, &(n, until)) in st.dropped.iter().enumerate() {
        if n != 0 {
            let at = thread_of(who, &mut threads);
            threads[at].dropped = n;
            threads[at].dropped_until_ticks = until;
        }
    }
    threads.sort_by_key(|t| t.index);
    let dropped_without_room = pool.dropped_without_room.load(Ordering::Relaxed);
    *st = State::default();
    // SAFETY: the whole mapping; a thread still writing its last event
    // writes atomics into a page that reads back as zero from here on,
    // never outside the mapping.
    unsafe { crate::memory::release(pool.base.cast(), pool.chunks * CHUNK_BYTES) };
    // Released before the thread registry is taken: `fork` takes the
    // registry first.
    drop(st);
    each_block(&mut |block| {
        if let Some((index, paths)) = crate::read::node_paths(block, epoch) {
            if let Ok(at) = threads.binary_search_by_key(&index, |t| t.index) {
                threads[at].node_paths = paths;
            }
        }
    });
    let trace = RawTrace {
        buffer_bytes: pool.chunks * CHUNK_BYTES,
        start_ticks: pool.start_ticks.load(Ordering::Relaxed),
        end_ticks,
        threads,
        dropped_without_room,
    };
    Some(trace)
}

/// Whether this thread's timed calls are traced (session `epoch`).
pub(crate) fn traced(epoch: u32) -> bool {
    pool_of(epoch).is_some()
}

/// The pool's lock, held across `fork` (see `fork.rs`).
pub(crate) struct ForkHold(#[allow(dead_code)] MutexGuard<'static, State>);

/// Takes the traced session's pool lock, if any (before `fork`).
pub(crate) fn lock_for_fork() -> Option<ForkHold> {
    // SAFETY: pools are leaked, never freed.
    let pool: &'static Pool = unsafe { POOL.load(Ordering::Acquire).as_ref() }?;
    Some(ForkHold(lock(pool)))
}

/// The current thread's index, for its events.
#[inline]
pub(crate) fn owner(hot: &crate::hot::Hot) -> u32 {
    hot.block().header().thread_index
}
