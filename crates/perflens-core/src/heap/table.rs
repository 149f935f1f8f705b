//! The sample table: the sampled allocations in use, keyed by address,
//! in a fixed array with bounded linear probing, claimed and released
//! with compare-and-swap (see the parent module for who calls it and
//! when).

use super::count_down;
use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const EMPTY: u64 = 0;
const TOMB: u64 = 1;
const BUSY: u64 = 2;
/// Slots a key may lie from its home slot.
const MAX_PROBE: usize = 64;

/// One table slot. `key` is [`EMPTY`], [`TOMB`] (an entry was removed),
/// [`BUSY`] (being written) or an address, published with release after
/// the other fields.
#[repr(C)]
struct Slot {
    key: AtomicU64,
    size: AtomicU64,
    path: AtomicU32,
    epoch: AtomicU32,
}

/// The sampled allocations: twice as many slots as `capacity`, zeroed
/// (empty) memory from the allocator, touched only where entries land.
pub(crate) struct Table {
    slots: Box<[Slot]>,
    mask: usize,
    pub(super) capacity: u32,
    /// Entries now (at most `capacity`).
    used: AtomicU32,
}

impl Table {
    pub(super) fn new(capacity: u32) -> Option<Box<Table>> {
        let n = (capacity as usize * 2).next_power_of_two();
        let layout = Layout::array::<Slot>(n).ok()?;
        // SAFETY: a non-zero size; all-zero bytes are a valid `Slot`
        // (atomics of 0: empty). The boxed slice takes the allocation
        // with the same layout (`Box<[Slot]>` of `n` slots).
        let slots = unsafe {
            let p = std::alloc::alloc_zeroed(layout) as *mut Slot;
            if p.is_null() {
                return None;
            }
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))
        };
        Some(Box::new(Table {
            slots,
            mask: n - 1,
            capacity,
            used: AtomicU32::new(0),
        }))
    }

    #[inline]
    fn home(&self, addr: u64) -> usize {
        (super::hash(addr) >> 20) as usize & self.mask
    }

    /// Makes an entry for `addr`: `false` (nothing changed) when the
    /// table holds `capacity` entries or no slot within [`MAX_PROBE`] of
    /// its home is free.
    pub(super) fn insert(&self, addr: u64, size: u64, path: u32, epoch: u32) -> bool {
        if self.used.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.used.fetch_sub(1, Ordering::Relaxed);
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
                s.size.store(size, Ordering::Relaxed);
                s.path.store(path, Ordering::Relaxed);
                s.epoch.store(epoch, Ordering::Relaxed);
                s.key.store(addr, Ordering::Release);
                return true;
            }
            i = (i + 1) & self.mask;
        }
        self.used.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Removes `addr`'s entry: `(size, path, epoch)`, or `None` if it
    /// has none (a filter bucket shared with another entry).
    pub(super) fn remove(&self, addr: u64) -> Option<(u64, u32, u32)> {
        let mut i = self.home(addr);
        for _ in 0..MAX_PROBE {
            let s = &self.slots[i];
            let k = s.key.load(Ordering::Acquire);
            if k == addr {
                let entry = (
                    s.size.load(Ordering::Relaxed),
                    s.path.load(Ordering::Relaxed),
                    s.epoch.load(Ordering::Relaxed),
                );
                // A session's sweep may take the same entry: one wins.
                if s.key
                    .compare_exchange(addr, TOMB, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    self.used.fetch_sub(1, Ordering::Relaxed);
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

    /// Calls `f(addr, size, path, epoch)` for each entry (a consistent
    /// view of each: an entry replaced while read is skipped).
    pub(super) fn for_each(&self, mut f: impl FnMut(u64, u64, u32, u32)) {
        for s in self.slots.iter() {
            let k = s.key.load(Ordering::Acquire);
            if k <= BUSY {
                continue;
            }
            let (size, path, epoch) = (
                s.size.load(Ordering::Relaxed),
                s.path.load(Ordering::Relaxed),
                s.epoch.load(Ordering::Relaxed),
            );
            std::sync::atomic::fence(Ordering::Acquire);
            if s.key.load(Ordering::Relaxed) == k {
                f(k, size, path, epoch);
            }
        }
    }

    /// Removes every entry not of `epoch`.
    pub(super) fn sweep(&self, epoch: u32) {
        let mut stale = Vec::new();
        self.for_each(|addr, _, _, e| {
            if e != epoch {
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
    let mut model: HashMap<u64, (u64, u32, u32)> = HashMap::new();
    for op in data.chunks_exact(3) {
        let addr = 0x10_0000 + u64::from(op[1] % 64) * 16;
        let size = u64::from(op[2]);
        let epoch = u32::from(op[2] % 3) * 2;
        match op[0] % 4 {
            0 => {
                if model.contains_key(&addr) {
                    continue; // an address is in the table at most once
                }
                if table.insert(addr, size, op[1].into(), epoch) {
                    model.insert(addr, (size, op[1].into(), epoch));
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
                model.retain(|_, e| e.2 == epoch);
            }
            _ => {
                let mut seen = HashMap::new();
                table.for_each(|a, s, p, e| {
                    assert!(seen.insert(a, (s, p, e)).is_none(), "{a:#x} twice");
                });
                assert_eq!(seen, model);
            }
        }
        assert_eq!(table.used.load(Ordering::Relaxed) as usize, model.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_finds_what_it_holds_and_nothing_else() {
        let t = Table::new(64).unwrap();
        for i in 0..64u64 {
            assert!(t.insert(0x1000 + i * 16, i, i as u32, 2));
        }
        // Full: the 65th is refused and changes nothing.
        assert!(!t.insert(0x9000, 1, 1, 2));
        assert_eq!(t.remove(0x9000), None);
        for i in (0..64u64).step_by(2) {
            assert_eq!(t.remove(0x1000 + i * 16), Some((i, i as u32, 2)));
        }
        assert_eq!(t.remove(0x1000), None, "removed once");
        let mut left = Vec::new();
        t.for_each(|a, s, _, _| left.push((a, s)));
        left.sort();
        let odd: Vec<_> = (1..64u64)
            .step_by(2)
            .map(|i| (0x1000 + i * 16, i))
            .collect();
        assert_eq!(left, odd);
        // Tombstones are reused.
        for i in 0..32u64 {
            assert!(t.insert(0x20000 + i * 16, 7, 0, 4));
        }
        assert!(!t.insert(0x30000, 1, 1, 2), "full again");
        t.sweep(4);
        let mut n = 0;
        t.for_each(|_, s, _, e| {
            assert_eq!((s, e), (7, 4));
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
