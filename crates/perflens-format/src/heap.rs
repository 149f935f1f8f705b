//! The heap profile's sample table as memory (feature `heap`): a header
//! and a power-of-two array of slots, each a sampled allocation in use
//! keyed by its address. The program keeps it in its own memory, or, when
//! its session is published, in the live session's file [`HEAP_FILE`],
//! which a reader maps read-only and sums with [`read_heap`], exactly as
//! the program does for its own snapshots.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::snapshot::{HeapPathSnapshot, HeapSnapshot, HeapStackSnapshot};

/// The file of a live session that holds its sample table.
pub const HEAP_FILE: &str = "heap";
/// [`HeapHeader::magic`] once the table is set up.
pub const HEAP_MAGIC: u64 = u64::from_le_bytes(*b"plheap\x00\x02");
/// A slot's key: never used.
pub const SLOT_EMPTY: u64 = 0;
/// A slot's key: its entry was removed (the slot may be reused).
pub const SLOT_TOMB: u64 = 1;
/// A slot's key: an entry is being written.
pub const SLOT_BUSY: u64 = 2;

/// The table's header: what it holds and for which session.
#[repr(C, align(64))]
pub struct HeapHeader {
    /// [`HEAP_MAGIC`], stored (release) after the rest is set up.
    pub magic: AtomicU64,
    /// Slots after the header (a power of two).
    pub slots: AtomicU32,
    /// Entries the table holds at most.
    pub capacity: AtomicU32,
    /// The session generation whose entries count (others are left from
    /// an earlier session, to be swept).
    pub epoch: AtomicU32,
    /// Entries now.
    pub used: AtomicU32,
    /// Mean bytes between sampled bytes.
    pub rate: AtomicU64,
    /// Allocations sampled this session, kept or not.
    pub sampled: AtomicU64,
    /// Samples not kept for want of a slot.
    pub dropped: AtomicU64,
    /// Kept samples freed this session.
    pub freed: AtomicU64,
}

const _: () = assert!(size_of::<HeapHeader>() == 64);

/// One sampled allocation. `key` is [`SLOT_EMPTY`], [`SLOT_TOMB`],
/// [`SLOT_BUSY`] or the address, published (release) after the rest.
#[repr(C)]
pub struct HeapSlot {
    pub key: AtomicU64,
    pub size: AtomicU64,
    /// The path of the innermost measured frame that allocated it.
    pub path: AtomicU32,
    /// The session generation it was sampled in.
    pub epoch: AtomicU32,
    /// The native stack that allocated it: an id in the program's own
    /// stack table (0: none was taken), meaningful only in that program.
    pub stack: AtomicU32,
    _pad: u32,
}

const _: () = assert!(size_of::<HeapSlot>() == 32);

/// What a slot holds for one sampled allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapEntry {
    /// Bytes allocated.
    pub size: u64,
    /// The path of the innermost measured frame that allocated it.
    pub path: u32,
    /// The session generation it was sampled in.
    pub epoch: u32,
    /// Its native stack's id in the program's stack table (0: none).
    pub stack: u32,
}

impl HeapSlot {
    /// Writes `e` into a slot its writer has claimed (key [`SLOT_BUSY`]);
    /// the writer publishes the key after.
    pub fn store(&self, e: HeapEntry) {
        self.size.store(e.size, Ordering::Relaxed);
        self.path.store(e.path, Ordering::Relaxed);
        self.epoch.store(e.epoch, Ordering::Relaxed);
        self.stack.store(e.stack, Ordering::Relaxed);
    }

    /// Reads the slot's entry (check the key again after, for a
    /// consistent view).
    pub fn load(&self) -> HeapEntry {
        HeapEntry {
            size: self.size.load(Ordering::Relaxed),
            path: self.path.load(Ordering::Relaxed),
            epoch: self.epoch.load(Ordering::Relaxed),
            stack: self.stack.load(Ordering::Relaxed),
        }
    }
}

/// Bytes of a table of `slots` slots, its header included.
pub const fn heap_len(slots: usize) -> usize {
    size_of::<HeapHeader>() + slots * size_of::<HeapSlot>()
}

/// How many allocations of `size` bytes a sample of one stands for at
/// `rate`: 1 over the probability that one was sampled,
/// `1 - exp(-size / rate)`.
pub fn scale(size: u64, rate: u64) -> f64 {
    if rate <= 1 || size == 0 {
        return 1.0;
    }
    let p = -(-(size as f64) / rate as f64).exp_m1();
    if p > 0.0 { 1.0 / p } else { 1.0 }
}

/// Calls `f(addr, entry)` for each entry of `slots` (a consistent view
/// of each: an entry replaced while read is skipped).
pub fn for_each_entry(slots: &[HeapSlot], mut f: impl FnMut(u64, HeapEntry)) {
    for s in slots {
        let k = s.key.load(Ordering::Acquire);
        if k <= SLOT_BUSY {
            continue;
        }
        let e = s.load();
        std::sync::atomic::fence(Ordering::Acquire);
        if s.key.load(Ordering::Relaxed) == k {
            f(k, e);
        }
    }
}

/// The heap profile the table holds for its session: the entries of the
/// header's epoch in `runs` (the table's slots, or the runs of them a
/// reader may read), scaled and summed by path, the largest first.
/// `None` when the header is not set up.
pub fn read_heap(header: &HeapHeader, runs: &[&[HeapSlot]]) -> Option<HeapSnapshot> {
    if header.magic.load(Ordering::Acquire) != HEAP_MAGIC {
        return None;
    }
    let epoch = header.epoch.load(Ordering::Relaxed);
    let rate = header.rate.load(Ordering::Relaxed);
    let mut by_path: HashMap<u32, HeapPathSnapshot> = HashMap::new();
    let mut by_stack: HashMap<(u32, u32), HeapStackSnapshot> = HashMap::new();
    let mut add = |_, e: HeapEntry| {
        if e.epoch != epoch {
            return;
        }
        let s = scale(e.size, rate);
        let p = by_path.entry(e.path).or_insert_with(|| HeapPathSnapshot {
            path: e.path,
            ..HeapPathSnapshot::default()
        });
        p.samples += 1;
        p.sampled_bytes += e.size;
        p.inuse_objects += s;
        p.inuse_bytes += s * e.size as f64;
        let k = by_stack
            .entry((e.path, e.stack))
            .or_insert_with(|| HeapStackSnapshot {
                path: e.path,
                stack: e.stack,
                ..HeapStackSnapshot::default()
            });
        k.samples += 1;
        k.inuse_objects += s;
        k.inuse_bytes += s * e.size as f64;
    };
    for run in runs {
        for_each_entry(run, &mut add);
    }
    let mut paths: Vec<HeapPathSnapshot> = by_path.into_values().collect();
    paths.sort_by(|a, b| {
        b.inuse_bytes
            .total_cmp(&a.inuse_bytes)
            .then(a.path.cmp(&b.path))
    });
    let mut stacks: Vec<HeapStackSnapshot> = by_stack.into_values().collect();
    stacks.sort_by(|a, b| {
        (b.inuse_bytes.total_cmp(&a.inuse_bytes))
            .then(a.path.cmp(&b.path))
            .then(a.stack.cmp(&b.stack))
    });
    Some(HeapSnapshot {
        rate_bytes: rate,
        capacity: header.capacity.load(Ordering::Relaxed),
        sampled: header.sampled.load(Ordering::Relaxed),
        dropped: header.dropped.load(Ordering::Relaxed),
        freed: header.freed.load(Ordering::Relaxed),
        paths,
        stacks,
        stacks_dropped: 0,
    })
}

/// `heap` as the bytes of an [`EXTRA_HEAP`](crate::names::EXTRA_HEAP)
/// record: the header's figures, then per path its index, samples,
/// sampled bytes and the two estimates, little-endian.
pub fn encode_heap(heap: &HeapSnapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + heap.paths.len() * 36);
    for v in [heap.rate_bytes, heap.sampled, heap.dropped, heap.freed] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&heap.capacity.to_le_bytes());
    out.extend_from_slice(&(heap.paths.len() as u32).to_le_bytes());
    for p in &heap.paths {
        out.extend_from_slice(&p.path.to_le_bytes());
        for v in [
            p.samples,
            p.sampled_bytes,
            p.inuse_objects.to_bits(),
            p.inuse_bytes.to_bits(),
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Reads what [`encode_heap`] wrote; `None` for bytes that are not such a
/// record (too short, or a count that does not fit).
pub fn decode_heap(bytes: &[u8]) -> Option<HeapSnapshot> {
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
    };
    let (rate_bytes, sampled, dropped, freed) = (word(0)?, word(8)?, word(16)?, word(24)?);
    let half = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let capacity = half(32)?;
    let n = half(36)? as usize;
    let at = 40;
    let rest = bytes.get(at..)?;
    if rest.len() != n.checked_mul(36)? {
        return None;
    }
    let paths = (rest.chunks_exact(36))
        .map(|c| {
            let u = |i: usize| u64::from_le_bytes(c[4 + i * 8..12 + i * 8].try_into().unwrap());
            HeapPathSnapshot {
                path: u32::from_le_bytes(c[..4].try_into().unwrap()),
                samples: u(0),
                sampled_bytes: u(1),
                inuse_objects: f64::from_bits(u(2)),
                inuse_bytes: f64::from_bits(u(3)),
            }
        })
        .collect();
    Some(HeapSnapshot {
        rate_bytes,
        capacity,
        sampled,
        dropped,
        freed,
        paths,
        stacks: Vec::new(),
        stacks_dropped: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_undoes_the_sampling_probability() {
        // Far above the rate every allocation is sampled.
        assert!((scale(100 << 20, 512 << 10) - 1.0).abs() < 1e-12);
        // Far below, 1/p ~ rate/size.
        let s = scale(16, 512 << 10);
        assert!((s / (32768.0 + 0.5) - 1.0).abs() < 1e-6, "{s}");
        assert_eq!(scale(10, 1), 1.0);
    }

    #[test]
    fn a_heap_record_reads_back_and_a_broken_one_is_refused() {
        let heap = HeapSnapshot {
            rate_bytes: 524288,
            capacity: 65536,
            sampled: 10,
            dropped: 1,
            freed: 3,
            paths: vec![
                HeapPathSnapshot {
                    path: 7,
                    samples: 2,
                    sampled_bytes: 4096,
                    inuse_objects: 256.5,
                    inuse_bytes: 1048576.25,
                },
                HeapPathSnapshot::default(),
            ],
            stacks: Vec::new(),
            stacks_dropped: 0,
        };
        let bytes = encode_heap(&heap);
        assert_eq!(decode_heap(&bytes), Some(heap));
        for cut in 0..bytes.len() {
            assert_eq!(decode_heap(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_heap(&longer), None);
    }
}
