//! Heap profiling (feature `heap`): which calling contexts hold the memory
//! in use now, estimated from a sample of the allocations, as Go's
//! runtime and tcmalloc estimate it, through the counting allocator, so
//! with any global allocator.
//!
//! **Which allocations are sampled.** Every allocated byte is a candidate,
//! and the gaps between sampled bytes are drawn from an exponential
//! distribution of mean [`HeapOptions::rate`] bytes: an allocation is
//! sampled when a sampled byte falls inside it. Each thread counts down
//! the bytes left to its next sampled byte (`LEFT`, a thread-local):
//! that is the hook's one subtraction and one branch more, and only
//! an allocation the countdown crosses leaves the hook's fast path
//! (`sample`). The gaps being memoryless, an allocation of `s` bytes
//! is sampled with probability `1 - exp(-s / rate)` whatever came
//! before, so each sample stands for `1 / (1 - exp(-s / rate))` such
//! allocations, and the sums over samples are unbiased estimates of the
//! objects and bytes in use (Go's scaling).
//!
//! **Where a sampled allocation lives.** A fixed table keyed by address
//! (`Table`), open addressing with bounded linear probing, claimed and
//! released with compare-and-swap: no lock, no allocation on the hook.
//! Each entry holds the size, the calling-context path of the
//! innermost measured frame when it was allocated, and the session
//! generation. Memory is bounded: a sample that finds the table full (or
//! no free slot within the probe bound) is not kept, and counted
//! (`HeapSnapshot::dropped`).
//!
//! **Finding a sampled allocation at its free.** Every free asks a
//! counting filter first (`FILTER`): a byte per hash bucket of
//! addresses, the number of table entries whose address hashes there.
//! A free whose bucket is 0 (nearly all of them) was not sampled and
//! costs a multiply, a shift, one load and a branch; one whose bucket
//! is not looks the address up in the table and removes its entry. The
//! counts are exact, so no sampled free is missed: an entry's bucket is
//! counted up before the allocation is handed out and down after the
//! entry is removed, and a bucket that would pass 255 stays at 255 for
//! good (its frees all look in the table).
//!
//! **Order with the allocator.** An entry is made after the inner
//! allocator returned the block and removed before the block goes back
//! to it (the hook counts a free first, and a `realloc` that may move a
//! sampled block takes its entry out before and puts it back if the
//! reallocation fails), so while an entry exists no other thread can be
//! handed the same address: no two entries share a key.
//!
//! **Native stacks.** With a walker installed ([`set_stack_walker`]:
//! the facade installs perflens-sampler's allocation-free unwinder),
//! each sampled allocation also keeps the native stack that made it, as
//! an id into a fixed table of distinct stacks (`stacks.rs`). The walk
//! runs only for sampled allocations, so its cost (a few microseconds)
//! is paid once per `rate` bytes on average.
//!
//! Without the feature the hook never calls in here, and a session never
//! samples (its snapshot has no heap profile).

#![cfg_attr(not(feature = "heap"), allow(dead_code))]

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering};

use perflens_format::snapshot::HeapSnapshot;

use crate::hot::{self, EPOCH};

mod stacks;
mod table;
use perflens_format::heap::HeapEntry;
pub use stacks::{MAX_FRAMES, set_stack_walker};
use table::Table;
#[doc(hidden)]
pub use table::check_table_ops;

/// Mean bytes between sampled bytes by default (Go's and tcmalloc's).
pub const DEFAULT_RATE: u64 = 512 * 1024;
/// Sampled allocations the table holds at once by default: at the
/// default rate, about 32 GiB in use.
pub const DEFAULT_CAPACITY: u32 = 1 << 16;

/// How a session samples the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapOptions {
    /// Mean bytes between sampled bytes (`PERFLENS_HEAP_RATE`); 1 samples
    /// every allocation.
    pub rate: u64,
    /// Seed of the threads' random gaps: thread `i` (in registration
    /// order) draws from a generator seeded with this and `i`, so a
    /// program that allocates the same way samples the same allocations.
    pub seed: u64,
    /// Sampled allocations kept at once (at least 64).
    pub capacity: u32,
    /// Whether each sampled allocation also keeps its native stack
    /// (`PERFLENS_HEAP_STACKS`, on by default), when a stack walker is
    /// installed ([`set_stack_walker`]).
    pub stacks: bool,
}

impl Default for HeapOptions {
    fn default() -> Self {
        HeapOptions {
            rate: DEFAULT_RATE,
            seed: 0x5eed_0f4e_a9b1,
            capacity: DEFAULT_CAPACITY,
            stacks: true,
        }
    }
}

/// log2 of the filter's buckets.
const FILTER_LOG2: u32 = 16;
/// The counting filter: entries whose address hashes to each bucket.
static FILTER: [AtomicU8; 1 << FILTER_LOG2] = [const { AtomicU8::new(0) }; 1 << FILTER_LOG2];
/// The table, made by the first session that samples the heap and never
/// freed (a later session with a larger capacity makes a new one, and
/// the old one stays for frees of its entries).
static TABLE: AtomicPtr<Table> = AtomicPtr::new(std::ptr::null_mut());
/// Tables replaced by a later one (as addresses): never freed, since a
/// free may still look in one, and kept here so that they stay reachable.
static RETIRED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
/// The generation whose allocations are sampled (odd: none).
static ON: AtomicU32 = AtomicU32::new(1);
static SEED: AtomicU64 = AtomicU64::new(0);

/// The countdown while the heap is not sampled: no allocation crosses it.
const NEVER: i64 = i64::MAX;

thread_local! {
    /// Bytes this thread allocates before its next sampled byte; below 0
    /// the allocation that took it there goes to [`sample`]. 0 at first,
    /// and after each session start (see [`thread_attached`]), so that a
    /// thread's first allocation draws its first gap.
    static LEFT: Cell<i64> = const { Cell::new(0) };
    /// The generation this thread's generator and countdown belong to.
    static GEN: Cell<u32> = const { Cell::new(1) };
    /// This thread's generator state (xorshift64*).
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// Counts `size` bytes off this thread's countdown: whether the
/// allocation crosses a sampled byte (the hook then calls [`sample`]).
#[inline(always)]
pub(crate) fn countdown(size: u64) -> bool {
    LEFT.with(|l| {
        let left = l.get().wrapping_sub(size as i64);
        l.set(left);
        left < 0
    })
}

/// Whether `addr` may be a sampled allocation (the free then calls
/// [`freed`]): its filter bucket is not 0.
#[inline(always)]
pub(crate) fn maybe_sampled(addr: *mut u8) -> bool {
    bucket(addr as u64).load(Ordering::Relaxed) != 0
}

#[inline(always)]
fn hash(addr: u64) -> u64 {
    addr.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[inline(always)]
fn bucket(addr: u64) -> &'static AtomicU8 {
    &FILTER[(hash(addr) >> (64 - FILTER_LOG2)) as usize]
}

fn count_up(addr: u64) {
    let _ = bucket(addr).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        (c < u8::MAX).then(|| c + 1)
    });
}

fn count_down(addr: u64) {
    let _ = bucket(addr).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        (c != 0 && c < u8::MAX).then(|| c - 1)
    });
}

/// Sets this thread's countdown for a session that starts (or for none):
/// its next allocation draws a first gap.
pub(crate) fn thread_attached() {
    LEFT.with(|l| l.set(0));
}

/// The allocation of `size` bytes at `ptr` crossed this thread's next
/// sampled byte (or the countdown is not set up for this session yet).
/// Called by the allocator hook on the allocating thread while
/// allocations count there; allocates nothing.
#[cold]
#[inline(never)]
pub(crate) fn sample(ptr: *mut u8, size: u64) {
    let epoch = EPOCH.load(Ordering::Relaxed);
    if ON.load(Ordering::Relaxed) != epoch {
        LEFT.with(|l| l.set(NEVER));
        return;
    }
    // The rate is the table's (a sampled session always has one).
    let Some(table) = table() else { return };
    let h = table.header();
    let rate = h.rate.load(Ordering::Relaxed);
    if GEN.with(Cell::get) != epoch {
        // First allocation of the session on this thread: seed its
        // generator and draw its first gap, which may or may not fall in
        // this allocation.
        GEN.with(|g| g.set(epoch));
        let index = thread_index();
        RNG.with(|r| r.set(seed_for(SEED.load(Ordering::Relaxed), index)));
        let left = draw(rate).wrapping_sub(size as i64);
        LEFT.with(|l| l.set(left));
        if left >= 0 {
            return;
        }
    }
    // The gap after a sampled allocation starts at its end (the gaps are
    // memoryless: where the last one fell inside it does not matter).
    LEFT.with(|l| l.set(draw(rate)));
    h.sampled.fetch_add(1, Ordering::Relaxed);
    let entry = HeapEntry {
        size,
        path: current_path(),
        epoch,
        stack: stacks::here(),
    };
    if table.insert(ptr as u64, entry) {
        count_up(ptr as u64);
    } else {
        h.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// `addr`'s filter bucket is not 0: if it is a sampled allocation, its
/// entry goes. Called by the hook before the block is freed, on any
/// thread, whether or not allocations count there.
#[cold]
#[inline(never)]
pub(crate) fn freed(addr: *mut u8) {
    take(addr);
}

/// Takes `addr`'s entry out of the table if it has one. A `realloc` of
/// a sampled block takes it out before the block may move, and
/// [`put_back`] returns it if the reallocation fails.
pub(crate) fn take(addr: *mut u8) -> Option<HeapEntry> {
    let table = table()?;
    let entry = table.remove(addr as u64)?;
    count_down(addr as u64);
    if entry.epoch == ON.load(Ordering::Relaxed) {
        table.header().freed.fetch_add(1, Ordering::Relaxed);
    }
    Some(entry)
}

/// Puts back an entry [`take`] took out (the block did not move).
pub(crate) fn put_back(addr: *mut u8, entry: HeapEntry) {
    if let Some(table) = table() {
        if table.insert(addr as u64, entry) {
            count_up(addr as u64);
            if entry.epoch == ON.load(Ordering::Relaxed) {
                table.header().freed.fetch_sub(1, Ordering::Relaxed);
            }
        } else {
            table.header().dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn table() -> Option<&'static Table> {
    let t = TABLE.load(Ordering::Acquire);
    // SAFETY: a published table is never freed.
    (!t.is_null()).then(|| unsafe { &*t })
}

/// The path of the innermost measured frame on this thread (the root's
/// outside any).
fn current_path() -> u32 {
    // SAFETY: owner thread; read-only, dropped before returning.
    let hot = unsafe { &*hot::hot() };
    if !hot.has_block() || !hot::is_current(hot) || hot.depth == 0 {
        return perflens_format::vocab::ROOT_PATH;
    }
    // SAFETY: 1 <= depth <= stack_cap while a block is attached, so the
    // top frame is inside the frames array.
    let np = unsafe { (*hot.frames.add(hot.depth as usize - 1)).np };
    np.path & !crate::block::NESTED_NODE
}

/// This thread's registration index in the running session (or a count
/// of the threads seen, for one with no block).
fn thread_index() -> u64 {
    // SAFETY: owner thread; read-only.
    let hot = unsafe { &*hot::hot() };
    if hot.has_block() {
        u64::from(hot.block().header().thread_index)
    } else {
        static OTHERS: AtomicU64 = AtomicU64::new(1 << 32);
        OTHERS.fetch_add(1, Ordering::Relaxed)
    }
}

/// SplitMix64 of the session's seed and a thread index: a generator
/// state that is never 0.
fn seed_for(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    if z == 0 { 1 } else { z }
}

/// The next gap in bytes, exponential with mean `rate` (at least 1).
fn draw(rate: u64) -> i64 {
    let x = RNG.with(|r| {
        let mut x = r.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        r.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    });
    // Uniform in (0, 1]: 53 bits, never 0.
    let u = ((x >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
    let gap = -u.ln() * rate as f64;
    (gap as i64).max(1)
}

pub use perflens_format::heap::scale;

/// Starts sampling the heap for generation `epoch` (before it is
/// published), or stops (`None`). Entries of earlier sessions are
/// removed. The table is made on first use (inside an `Internal`
/// section: not counted), and again when it must be larger, or when the
/// session gives it memory of its own (`shared`: a live session's file,
/// [`Table::len_for`] bytes, zeroed, never unmapped), so that a reader
/// sees it; `false` if there was no memory for it (the session then
/// samples nothing, and says so).
pub(crate) fn begin(epoch: u32, options: Option<&HeapOptions>, shared: Option<*mut u8>) -> bool {
    ON.store(1, Ordering::Relaxed);
    let Some(o) = options.filter(|_| cfg!(feature = "heap")) else {
        sweep(epoch);
        return true;
    };
    let capacity = capacity_of(o);
    let have = table().map_or(0, |t| t.capacity);
    if have < capacity || shared.is_some() {
        let _internal = hot::Internal::enter();
        let t = match shared {
            // SAFETY: the caller's contract (see above), for this
            // capacity.
            Some(memory) => Some(unsafe { Table::over(memory, capacity) }),
            None => Table::new(capacity),
        };
        let Some(t) = t else {
            sweep(epoch);
            return false;
        };
        // The old table (if any) is emptied, and stays for frees that
        // may still look in it: never freed, and kept reachable.
        let old = TABLE.swap(Box::into_raw(t), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: a published table is never freed.
            unsafe { &*old }.sweep(epoch);
            RETIRED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(old as usize);
        }
    }
    sweep(epoch);
    if o.stacks {
        let _internal = hot::Internal::enter();
        stacks::prepare();
    }
    stacks::start(o.stacks);
    if let Some(t) = table() {
        let h = t.header();
        h.sampled.store(0, Ordering::Relaxed);
        h.dropped.store(0, Ordering::Relaxed);
        h.freed.store(0, Ordering::Relaxed);
        h.rate.store(o.rate.max(1), Ordering::Relaxed);
        h.epoch.store(epoch, Ordering::Relaxed);
    }
    SEED.store(o.seed, Ordering::Relaxed);
    ON.store(epoch, Ordering::Relaxed);
    true
}

/// The capacity a session with `options` gets (at least 64).
pub(crate) fn capacity_of(options: &HeapOptions) -> u32 {
    options.capacity.max(64)
}

/// Bytes of a table for a session with `options`, for the memory a live
/// session gives it.
pub fn table_len(options: &HeapOptions) -> usize {
    Table::len_for(capacity_of(options))
}

/// Removes the entries of sessions other than `epoch`.
fn sweep(epoch: u32) {
    if let Some(t) = table() {
        t.sweep(epoch);
    }
}

/// The heap profile of session `epoch` now, or `None` when it does not
/// sample the heap.
pub(crate) fn snapshot(epoch: u32) -> Option<HeapSnapshot> {
    if ON.load(Ordering::Relaxed) != epoch {
        return None;
    }
    let table = table()?;
    let mut heap = perflens_format::heap::read_heap(table.header(), &[table.slots()])?;
    for s in &mut heap.stacks {
        s.addrs = stacks::addrs(s.stack);
    }
    heap.stacks_dropped = stacks::dropped();
    Some(heap)
}

/// Stops sampling after session `epoch` (its entries stay until the next
/// session starts, or their frees).
pub(crate) fn end(epoch: u32) {
    let _ = ON.compare_exchange(epoch, 1, Ordering::Relaxed, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_average_the_rate() {
        RNG.with(|r| r.set(seed_for(42, 0)));
        let n = 200_000;
        let sum: f64 = (0..n).map(|_| draw(4096) as f64).sum();
        let mean = sum / n as f64;
        assert!((mean / 4096.0 - 1.0).abs() < 0.01, "mean gap {mean}");
    }
}
