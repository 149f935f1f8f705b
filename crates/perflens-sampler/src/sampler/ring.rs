//! The per-thread sample rings.
//!
//! Each armed thread has a ring of `ring_words` (a power of two) `u64`
//! words with one writer and one reader. The writer is the thread's own
//! signal handler ([`SamplerState::push`]), which never blocks: a sample that
//! does not fit is counted as dropped (with its weight). The reader is
//! whoever holds the session's mutex ([`SamplerState::drain`]: the watcher on
//! every pass, a snapshot, `disarm`). `head` and `tail` count words since
//! the thread was armed; the writer publishes `head` with Release after
//! writing a record, the reader publishes `tail` after copying it out.
//!
//! A record is `[n, weight_ns, context, frame_0 .. frame_{n-1}]`: the
//! number of frames, the CPU time the sample stands for, the context
//! hook's value, then the leaf pc and the return addresses.
//!
//! Ownership: the ring's memory is a `Box<[AtomicU64]>` in the slot's
//! `SlotOwned` (under the mutex); the slot publishes a raw pointer and
//! mask to the handler. A ring is kept when its thread is disarmed and
//! reused by the next thread armed in that slot, and freed only with the
//! session, so a handler can never write into freed memory.

use std::sync::atomic::Ordering;

use super::session::{SamplerState, Shared};
use super::slot::Slot;
use crate::snapshot::SampleKey;

impl SamplerState {
    /// Stores a sample in the slot's ring; false (and counted as
    /// dropped) when the ring is full.
    pub(super) fn push(&self, slot: &Slot, weight: u64, context: u64, frames: &[u64]) -> bool {
        let ring = slot.ring.load(Ordering::Acquire);
        let mask = slot.ring_mask.load(Ordering::Relaxed);
        let need = frames.len() as u64 + 3;
        let head = slot.head.load(Ordering::Relaxed);
        let tail = slot.tail.load(Ordering::Acquire);
        if ring.is_null() || head - tail + need > mask as u64 + 1 {
            slot.dropped.fetch_add(1, Ordering::Relaxed);
            slot.dropped_ns.fetch_add(weight, Ordering::Relaxed);
            return false;
        }
        let put = |i: u64, v: u64| {
            // SAFETY: index masked into the ring of `mask + 1` words, which
            // lives as long as the slot is armed.
            unsafe { &*ring.add(((head + i) as usize) & mask) }.store(v, Ordering::Relaxed);
        };
        put(0, frames.len() as u64);
        put(1, weight);
        put(2, context);
        for (i, &f) in frames.iter().enumerate() {
            put(3 + i as u64, f);
        }
        slot.head.store(head + need, Ordering::Release);
        slot.samples.fetch_add(1, Ordering::Relaxed);
        slot.weight.fetch_add(weight, Ordering::Relaxed);
        true
    }

    /// Moves a slot's ring contents into the aggregate.
    pub(super) fn drain(&self, sh: &mut Shared, idx: usize) {
        let slot = &self.slots[idx];
        let ring = slot.ring.load(Ordering::Acquire);
        if ring.is_null() {
            return;
        }
        let tid = sh.threads[sh.owned[idx].entry].tid;
        let mask = slot.ring_mask.load(Ordering::Relaxed);
        let get = |i: u64| {
            // SAFETY: masked index into the slot's ring.
            unsafe { &*ring.add((i as usize) & mask) }.load(Ordering::Relaxed)
        };
        let head = slot.head.load(Ordering::Acquire);
        let mut tail = slot.tail.load(Ordering::Relaxed);
        let mut scratch = std::mem::take(&mut sh.scratch);
        while tail < head {
            let n = get(tail);
            let weight = get(tail + 1);
            let context = get(tail + 2);
            scratch.clear();
            scratch.extend((0..n).map(|i| get(tail + 3 + i)));
            let key = SampleKey {
                tid,
                context,
                stack: scratch.as_slice().into(),
            };
            let v = sh.agg.entry(key).or_default();
            v.count += 1;
            v.weight_ns += weight;
            tail += 3 + n;
        }
        sh.scratch = scratch;
        slot.tail.store(tail, Ordering::Release);
    }
}
