//! The native stacks of sampled allocations: taken by a walker the
//! profiler installs ([`set_stack_walker`], perflens-sampler's
//! allocation-free unwinder), each distinct stack kept once in a fixed
//! table and named by its id in the sample table's slots.
//!
//! The table is an index of `INDEX` slots (a stack's hash, where its
//! addresses start in the arena, how many) over an arena of `ARENA`
//! addresses, both zeroed memory made when heap sampling first starts
//! with a walker and never freed (ids stay valid for the life of the
//! process). A stack is looked up by hash with bounded linear probing;
//! a new one claims an empty slot with compare-and-swap, takes its room
//! in the arena with one `fetch_add`, writes its addresses and then
//! publishes its hash (release). No lock, no allocation. A stack that
//! finds no slot or no room is not kept: its sample keeps its path, has
//! no native stack (id 0), and is counted (`dropped`).
//!
//! Two threads that take the same new stack at once may each keep a
//! copy (each sees the other's slot still being written): a duplicate
//! costs room, never correctness, since stacks are summed by their
//! addresses when a report is built.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Addresses a stack keeps at most (the innermost ones).
pub const MAX_FRAMES: usize = 64;
/// log2 of the index's slots: distinct stacks kept at most.
const INDEX_LOG2: u32 = 14;
const INDEX: usize = 1 << INDEX_LOG2;
/// Addresses the arena holds (4 MiB).
const ARENA: usize = 1 << 19;
/// Slots a stack may lie from its home slot.
const MAX_PROBE: usize = 64;
/// An index slot's key: being written.
const BUSY: u64 = 1;

/// One distinct stack: its hash (0 empty, [`BUSY`], else the hash with
/// its top bit set), and where its addresses are.
struct Slot {
    key: AtomicU64,
    start: AtomicU32,
    len: AtomicU32,
}

struct Stacks {
    index: &'static [Slot],
    arena: &'static [AtomicU64],
    /// Arena addresses handed out.
    used: AtomicUsize,
}

/// The table (null until heap sampling starts with a walker).
static STACKS: AtomicPtr<Stacks> = AtomicPtr::new(std::ptr::null_mut());
/// The walker, `fn(&mut [u64]) -> usize` as usize (0: none).
static WALKER: AtomicUsize = AtomicUsize::new(0);
/// Samples whose stack was not kept (no walker counts nothing).
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Whether the running session takes stacks.
static ON: AtomicBool = AtomicBool::new(false);

/// Sets (or clears) the function that takes the calling thread's native
/// stack for each sampled allocation: it writes return addresses,
/// innermost first, into the slice and returns how many. It runs inside
/// the global allocator, so it must not allocate through it, nor take
/// a lock an allocation may hold; perflens-sampler's `allocation_walker`
/// is one. Takes effect at the next session start.
pub fn set_stack_walker(walk: Option<fn(&mut [u64]) -> usize>) {
    WALKER.store(walk.map_or(0, |f| f as usize), Ordering::Release);
}

/// Makes the table if a walker is set and there is none yet (called
/// when heap sampling starts, outside the allocator).
pub(super) fn prepare() {
    if WALKER.load(Ordering::Acquire) == 0 || !STACKS.load(Ordering::Acquire).is_null() {
        return;
    }
    let Some(t) = Stacks::new() else { return };
    let p = Box::into_raw(Box::new(t));
    if STACKS
        .compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // SAFETY: `p` was never published; the one made first stays.
        // Its memory leaks (a race of two session starts, at most once).
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Zeroed memory for `n` values of `T` (all-zero bytes valid), never
/// freed.
fn zeroed<T>(n: usize) -> Option<&'static [T]> {
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    // SAFETY: a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: `p` is `n` zeroed, aligned `T`s (atomics of integers, for
    // which zero bytes are valid), never freed.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p as *const T, n) })
}

impl Stacks {
    fn new() -> Option<Stacks> {
        Some(Stacks {
            index: zeroed::<Slot>(INDEX)?,
            arena: zeroed::<AtomicU64>(ARENA)?,
            used: AtomicUsize::new(0),
        })
    }

    /// The id of `addrs` (kept if new), or 0 if there is no room.
    fn intern(&self, addrs: &[u64]) -> u32 {
        let key = hash(addrs);
        let mut i = key as usize & (INDEX - 1);
        for _ in 0..MAX_PROBE {
            let s = &self.index[i];
            let k = s.key.load(Ordering::Acquire);
            if k == key && self.addrs_of(s).eq(addrs.iter().copied()) {
                return i as u32 + 1;
            }
            if k == 0
                && s.key
                    .compare_exchange(0, BUSY, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                let start = self.used.fetch_add(addrs.len(), Ordering::Relaxed);
                if start + addrs.len() > ARENA {
                    self.used.fetch_sub(addrs.len(), Ordering::Relaxed);
                    s.key.store(0, Ordering::Release);
                    return 0;
                }
                for (a, &v) in self.arena[start..start + addrs.len()].iter().zip(addrs) {
                    a.store(v, Ordering::Relaxed);
                }
                s.start.store(start as u32, Ordering::Relaxed);
                s.len.store(addrs.len() as u32, Ordering::Relaxed);
                s.key.store(key, Ordering::Release);
                return i as u32 + 1;
            }
            i = (i + 1) & (INDEX - 1);
        }
        0
    }

    /// The addresses of a published slot.
    fn addrs_of(&self, s: &Slot) -> impl Iterator<Item = u64> + '_ {
        let start = s.start.load(Ordering::Relaxed) as usize;
        let len = s.len.load(Ordering::Relaxed) as usize;
        let run = self.arena.get(start..start + len).unwrap_or(&[]);
        run.iter().map(|a| a.load(Ordering::Relaxed))
    }
}

/// FNV-1a over the addresses, its top bit set (never 0 or [`BUSY`]).
fn hash(addrs: &[u64]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &a in addrs {
        h = (h ^ a).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1 << 63
}

/// The calling thread's native stack as an id (0: no walker, no stack,
/// or no room; the last two are counted). Called by the sampling path
/// inside the allocator: allocates nothing.
pub(super) fn here() -> u32 {
    let w = WALKER.load(Ordering::Acquire);
    let t = STACKS.load(Ordering::Acquire);
    if w == 0 || t.is_null() || !ON.load(Ordering::Relaxed) {
        return 0;
    }
    // SAFETY: only `fn(&mut [u64]) -> usize` values are stored in WALKER.
    let walk: fn(&mut [u64]) -> usize = unsafe { std::mem::transmute(w) };
    let mut addrs = [0u64; MAX_FRAMES];
    let n = walk(&mut addrs).min(MAX_FRAMES);
    // SAFETY: a published table is never freed.
    let id = if n == 0 {
        0
    } else {
        unsafe { &*t }.intern(&addrs[..n])
    };
    if id == 0 {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    id
}

/// The addresses of stack `id` (empty for 0 or an unknown id).
pub(super) fn addrs(id: u32) -> Vec<u64> {
    let t = STACKS.load(Ordering::Acquire);
    if t.is_null() || id == 0 {
        return Vec::new();
    }
    // SAFETY: a published table is never freed.
    let t = unsafe { &*t };
    match t.index.get(id as usize - 1) {
        Some(s) if s.key.load(Ordering::Acquire) > BUSY => t.addrs_of(s).collect(),
        _ => Vec::new(),
    }
}

/// A session starts: whether it takes stacks, and its count of dropped
/// ones from 0.
pub(super) fn start(on: bool) {
    ON.store(on, Ordering::Relaxed);
    DROPPED.store(0, Ordering::Relaxed);
}

/// Samples whose stack was not kept since the session started.
pub(super) fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_is_kept_once_and_read_back() {
        let t = Stacks::new().unwrap();
        let a = [0x1000u64, 0x2000, 0x3000];
        let b = [0x1000u64, 0x2000, 0x3001];
        let ia = t.intern(&a);
        let ib = t.intern(&b);
        assert!(ia != 0 && ib != 0 && ia != ib);
        assert_eq!(t.intern(&a), ia, "the same stack, the same id");
        assert_eq!(t.used.load(Ordering::Relaxed), 6);
        let read = |id: u32| t.addrs_of(&t.index[id as usize - 1]).collect::<Vec<_>>();
        assert_eq!(read(ia), a);
        assert_eq!(read(ib), b);
    }

    #[test]
    fn threads_interning_at_once_each_read_back_their_stack() {
        let t = Stacks::new().unwrap();
        // 300 stacks of 1 to 64 addresses, sharing prefixes; four threads
        // intern them in different orders, over and over.
        let stacks: Vec<Vec<u64>> = (0..300u64)
            .map(|i| {
                (0..1 + i % 64)
                    .map(|d| 0x40_0000 + d * 16 + (i % 7) * 0x1000)
                    .collect()
            })
            .collect();
        std::thread::scope(|s| {
            for k in 0..4usize {
                let (t, stacks) = (&t, &stacks);
                s.spawn(move || {
                    for round in 0..20 {
                        for j in 0..stacks.len() {
                            let st = &stacks[(j * (2 * k + 1) + round) % stacks.len()];
                            let id = t.intern(st);
                            assert_ne!(id, 0, "room for every stack");
                            let back: Vec<u64> = t.addrs_of(&t.index[id as usize - 1]).collect();
                            assert_eq!(&back, st);
                        }
                    }
                });
            }
        });
        // Duplicates are possible (two threads keeping one new stack at
        // once), but rare: at most one copy per thread.
        let kept = t
            .index
            .iter()
            .filter(|s| s.key.load(Ordering::Relaxed) > BUSY)
            .count();
        assert!((300..=4 * 300).contains(&kept), "{kept}");
    }

    #[test]
    fn a_full_arena_keeps_no_more_stacks() {
        let t = Stacks::new().unwrap();
        t.used.store(ARENA - 2, Ordering::Relaxed);
        assert_eq!(t.intern(&[1, 2, 3]), 0, "no room for 3 addresses");
        assert_ne!(t.intern(&[1, 2]), 0, "room for 2");
        assert_eq!(t.intern(&[4]), 0);
        assert_eq!(t.used.load(Ordering::Relaxed), ARENA);
    }
}
