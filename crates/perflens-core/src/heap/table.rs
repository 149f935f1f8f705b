//! The sample table: the sampled allocations in use, keyed by address,
//! in a fixed array with bounded linear probing, claimed and released
//! with compare-and-swap (see the parent module for who calls it and
//! when).

use super::count_down;
use perflens_format::heap::{
    HEAP_MAGIC, HeapEntry, HeapHeader, HeapSlot, SLOT_BUSY as BUSY, SLOT_EMPTY as EMPTY,
    SLOT_TOMB as TOMB, for_each_entry, heap_len,
};
use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// Slots a key may lie from its home slot.
const MAX_PROBE: usize = 64;

/// The sampled allocations: a [`HeapHeader`] and twice as many slots as
/// the capacity (a power of two), in zeroed memory (all slots empty)
/// touched only where entries land: the process's own, or a live
/// session's file, which a reader maps (see perflens-format's `heap`).
/// Never freed: a table replaced by another stays for frees that may
/// still look in it.
pub(crate) struct Table {
    header: &'static HeapHeader,
    slots: &'static [HeapSlot],
    mask: usize,
    pub(super) capacity: u32,
    /// The layout of the memory [`Table::new`] allocated, which a
    /// dropped table frees (the profiler's tables are never dropped; the
    /// table checks are); `None` over memory it was given.
    owned: Option<Layout>,
}

impl Drop for Table {
    fn drop(&mut self) {
        if let Some(layout) = self.owned {
            // SAFETY: `Table::new` allocated the header's memory with this
            // layout; the table is the only user of it, and is gone.
            unsafe { std::alloc::dealloc(self.header as *const HeapHeader as *mut u8, layout) };
        }
    }
}

impl Table {
    /// Slots of a table for `capacity` entries.
    pub(crate) fn slots_for(capacity: u32) -> usize {
        (capacity as usize * 2).next_power_of_two()
    }

    /// Bytes of a table for `capacity` entries.
    pub(crate) fn len_for(capacity: u32) -> usize {
        heap_len(Table::slots_for(capacity))
    }

    /// A table for `capacity` entries in memory of its own.
    pub(super) fn new(capacity: u32) -> Option<Box<Table>> {
        let layout = Layout::from_size_align(Table::len_for(capacity), 64).ok()?;
        // SAFETY: a non-zero size. The memory is never freed.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` is zeroed, 64-aligned, `len_for(capacity)` bytes,
        // and lives as long as the table (freed when it is dropped).
        let mut t = unsafe { Table::over(p, capacity) };
        t.owned = Some(layout);
        Some(t)
    }

    /// A table for `capacity` entries over `memory`.
    ///
    /// # Safety
    /// `memory` is zeroed, aligned to 64 bytes, [`Table::len_for`]
    /// `(capacity)` bytes long, and outlives the table.
    pub(super) unsafe fn over(memory: *mut u8, capacity: u32) -> Box<Table> {
        let n = Table::slots_for(capacity);
        // SAFETY: the caller's contract: the header and `n` slots fit,
        // aligned (the header is 64 bytes, a slot 32 with 8-byte
        // alignment), and all-zero bytes are valid atomics.
        let (header, slots) = unsafe {
            (
                &*(memory as *const HeapHeader),
                std::slice::from_raw_parts(
                    memory.add(size_of::<HeapHeader>()) as *const HeapSlot,
                    n,
                ),
            )
        };
        header.slots.store(n as u32, Ordering::Relaxed);
        header.capacity.store(capacity, Ordering::Relaxed);
        header.magic.store(HEAP_MAGIC, Ordering::Release);
        Box::new(Table {
            header,
            slots,
            mask: n - 1,
            capacity,
            owned: None,
        })
    }

    /// The header: the session's rate, epoch and counts.
    pub(super) fn header(&self) -> &'static HeapHeader {
        self.header
    }

    /// The slots.
    pub(super) fn slots(&self) -> &'static [HeapSlot] {
        self.slots
    }

    #[inline]
    fn home(&self, addr: u64) -> usize {
        (super::hash(addr) >> 20) as usize & self.mask
    }

    /// Makes an entry for `addr`: `false` (nothing changed) when the
    /// table holds `capacity` entries or no slot within [`MAX_PROBE`] of
    /// its home is free.
    pub(super) fn insert(&self, addr: u64, entry: HeapEntry) -> bool {
        let used = &self.header.used;
        if used.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            used.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        let mut i = self.home(addr);
        for _ in 0..MAX_PROBE {
            let s = &self.slots[i];
            let k = s.key.load(Ordering::Relaxed);
            if (k == EMPTY || k == TOMB)
                && s.key
                    .compare_exchange(k, BUSY, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                s.store(entry);
                s.key.store(addr, Ordering::Release);
                return true;
            }
            i = (i + 1) & self.mask;
        }
        used.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Removes `addr`'s entry, or `None` if it has none (a filter
    /// bucket shared with another entry).
    pub(super) fn remove(&self, addr: u64) -> Option<HeapEntry> {
        let mut i = self.home(addr);
        for _ in 0..MAX_PROBE {
            let s = &self.slots[i];
            let k = s.key.load(Ordering::Acquire);
            if k == addr {
                let entry = s.load();
                // A session's sweep may take the same entry: one wins.
                if s.key
                    .compare_exchange(addr, TOMB, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    self.header.used.fetch_sub(1, Ordering::Relaxed);
                    return Some(entry);
                }
                return None;
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Calls `f(addr, entry)` for each entry (a consistent view of each:
    /// an entry replaced while read is skipped).
    pub(super) fn for_each(&self, f: impl FnMut(u64, HeapEntry)) {
        for_each_entry(self.slots, f);
    }

    /// Removes every entry not of `epoch`.
    pub(super) fn sweep(&self, epoch: u32) {
        let mut stale = Vec::new();
        self.for_each(|addr, e| {
            if e.epoch != epoch {
                stale.push(addr);
            }
        });
        for addr in stale {
            if self.remove(addr).is_some() {
                count_down(addr);
            }
        }
    }
}

/// Runs the operations `data` encodes on a small table and checks each
/// against a map: what the fuzz target `heap_table` and the unit tests
/// drive. Three bytes an operation: what (insert, remove, sweep, read
/// all), an address among 64 (so that they collide and the table fills),
/// and a size.
/// Panics on the first disagreement.
#[doc(hidden)]
pub fn check_table_ops(data: &[u8]) {
    let table = Table::new(64).expect("memory for a small table");
    let mut model: HashMap<u64, HeapEntry> = HashMap::new();
    for op in data.chunks_exact(3) {
        let addr = 0x10_0000 + u64::from(op[1] % 64) * 16;
        let size = u64::from(op[2]);
        let epoch = u32::from(op[2] % 3) * 2;
        match op[0] % 4 {
            0 => {
                if model.contains_key(&addr) {
                    continue; // an address is in the table at most once
                }
                let entry = HeapEntry {
                    size,
                    path: op[1].into(),
                    epoch,
                    stack: u32::from(op[1] ^ op[2]),
                };
                if table.insert(addr, entry) {
                    model.insert(addr, entry);
                } else {
                    // Refused only when full: with fewer than 64 live
                    // entries in 128 slots, 64 slots from any home hold a
                    // free one.
                    assert!(model.len() >= 64, "refused with {} entries", model.len());
                }
            }
            1 => assert_eq!(table.remove(addr), model.remove(&addr), "remove {addr:#x}"),
            2 => {
                table.sweep(epoch);
                model.retain(|_, e| e.epoch == epoch);
            }
            _ => {
                let mut seen = HashMap::new();
                table.for_each(|a, e| {
                    assert!(seen.insert(a, e).is_none(), "{a:#x} twice");
                });
                assert_eq!(seen, model);
            }
        }
        assert_eq!(
            table.header.used.load(Ordering::Relaxed) as usize,
            model.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_finds_what_it_holds_and_nothing_else() {
        let t = Table::new(64).unwrap();
        let e = |size: u64, path: u32, epoch: u32| HeapEntry {
            size,
            path,
            epoch,
            stack: path + 1,
        };
        for i in 0..64u64 {
            assert!(t.insert(0x1000 + i * 16, e(i, i as u32, 2)));
        }
        // Full: the 65th is refused and changes nothing.
        assert!(!t.insert(0x9000, e(1, 1, 2)));
        assert_eq!(t.remove(0x9000), None);
        for i in (0..64u64).step_by(2) {
            assert_eq!(t.remove(0x1000 + i * 16), Some(e(i, i as u32, 2)));
        }
        assert_eq!(t.remove(0x1000), None, "removed once");
        let mut left = Vec::new();
        t.for_each(|a, x| left.push((a, x.size)));
        left.sort();
        let odd: Vec<_> = (1..64u64)
            .step_by(2)
            .map(|i| (0x1000 + i * 16, i))
            .collect();
        assert_eq!(left, odd);
        // Tombstones are reused.
        for i in 0..32u64 {
            assert!(t.insert(0x20000 + i * 16, e(7, 0, 4)));
        }
        assert!(!t.insert(0x30000, e(1, 1, 2)), "full again");
        t.sweep(4);
        let mut n = 0;
        t.for_each(|_, x| {
            assert_eq!((x.size, x.epoch, x.stack), (7, 4, 1));
            n += 1;
        });
        assert_eq!(n, 32);
    }

    #[test]
    fn random_table_operations_agree_with_a_map() {
        // xorshift bytes: long runs of inserts, removes and sweeps.
        let mut x = 0x1234_5678_9abc_def1u64;
        for _ in 0..200 {
            let data: Vec<u8> = (0..3000)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly inserts and removes, some sweeps and reads.
                    x as u8
                })
                .collect();
            check_table_ops(&data);
        }
    }
}
