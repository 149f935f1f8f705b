//! Per-thread slots: the table the signal handler finds its thread in,
//! and arming and disarming a thread, which fill and empty a slot.
//!
//! The table is a fixed array of `2 * max_threads` [`Slot`]s, open
//! addressing on the tid with linear probing; a disarmed slot becomes a
//! tombstone that lookups probe past and arming may reuse. The handler
//! only reads it ([`SamplerState::lookup`], atomics); everything else changes
//! it under the session's mutex.
//!
//! Ownership: a [`Slot`] holds what the handler reads, as atomics and raw
//! pointers; the allocations behind those pointers (ring, unwind cache,
//! maps snapshot) are owned by the matching [`SlotOwned`] under the mutex.
//! Arming allocates them and fills the slot before publishing the tid and
//! setting `live`; disarming clears `live`, waits for the thread's handler
//! to leave (`busy`), then drains the ring, releases the source and drops
//! the maps snapshot. Rings and caches stay with the slot for the next
//! thread armed there and are freed only with the session.

use std::sync::Arc;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering,
};

use super::session::{SamplerState, Shared};
use super::sources::{self, SOURCE_NONE, SOURCE_PERF};
use super::watcher::{refresh_name, thread_name};
use super::{thread_alive, thread_cpu_ns};
use crate::arch::{self, UnwindCache};
use crate::modules::MapsSnapshot;
use crate::snapshot::ThreadEntry;
use crate::{CpuSource, SamplerError};

pub(super) const TID_EMPTY: i32 = 0;
pub(super) const TID_TOMBSTONE: i32 = -1;

/// Per-thread state shared with the signal handler.
pub(super) struct Slot {
    pub(super) tid: AtomicI32,
    pub(super) live: AtomicBool,
    pub(super) source: AtomicU8,
    /// perf fd or kernel timer id.
    pub(super) handle: AtomicI64,
    pub(super) stack_lo: AtomicU64,
    pub(super) stack_hi: AtomicU64,
    pub(super) maps: AtomicPtr<MapsSnapshot>,
    /// The thread's CPU clock (ns) at its last sample, or when it was
    /// armed; read and replaced by its handler (perf with the kernel
    /// included, see `SamplerState::sample_weight`).
    pub(super) last_cpu: AtomicU64,
    /// The source is a perf event that excludes the kernel: each sample
    /// weighs one period (see `SamplerState::sample_weight`).
    pub(super) user_only: AtomicBool,
    pub(super) ring: AtomicPtr<AtomicU64>,
    pub(super) ring_mask: AtomicUsize,
    pub(super) head: AtomicU64,
    pub(super) tail: AtomicU64,
    pub(super) cache: AtomicPtr<UnwindCache>,
    /// Reentrancy guard (a handler never nests on one thread, but a
    /// second signal number could be configured by another session).
    pub(super) busy: AtomicBool,
    pub(super) samples: AtomicU64,
    pub(super) weight: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) dropped_ns: AtomicU64,
    pub(super) truncated: AtomicU64,
    /// Samples whose stack pointer was on none of the thread's known
    /// stacks (see `stack.rs`); also counted in `truncated`.
    pub(super) off_stack: AtomicU64,
    /// When the handler last returned on this thread (monotonic ns), and
    /// whether that run walked for more than half a sampling period: the
    /// next sample skips its walk if it comes before the thread had half
    /// a period of its own (see `SamplerState::sample`).
    pub(super) last_exit_ns: AtomicU64,
    pub(super) last_walk_slow: AtomicBool,
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            tid: AtomicI32::new(TID_EMPTY),
            live: AtomicBool::new(false),
            source: AtomicU8::new(SOURCE_NONE),
            handle: AtomicI64::new(-1),
            stack_lo: AtomicU64::new(0),
            stack_hi: AtomicU64::new(0),
            maps: AtomicPtr::new(std::ptr::null_mut()),
            last_cpu: AtomicU64::new(0),
            user_only: AtomicBool::new(false),
            ring: AtomicPtr::new(std::ptr::null_mut()),
            ring_mask: AtomicUsize::new(0),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            cache: AtomicPtr::new(std::ptr::null_mut()),
            busy: AtomicBool::new(false),
            samples: AtomicU64::new(0),
            weight: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            dropped_ns: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            off_stack: AtomicU64::new(0),
            last_exit_ns: AtomicU64::new(0),
            last_walk_slow: AtomicBool::new(false),
        }
    }
}

/// Allocations backing a slot (never touched by the handler directly).
#[derive(Default)]
pub(super) struct SlotOwned {
    pub(super) ring: Option<Box<[AtomicU64]>>,
    pub(super) cache: Option<Box<UnwindCache>>,
    pub(super) maps: Option<Arc<MapsSnapshot>>,
    pub(super) entry: usize,
    /// The thread's CPU time and switches at the watcher's last look
    /// (see `moves.rs`).
    pub(super) switches: Option<(u64, u64)>,
    /// A look saw enough of the thread to decide on its source (see
    /// `moves::conclusive`); until then it is looked at quickly.
    pub(super) judged: bool,
    /// The thread's CPU time at the watcher's last pass, while it is on a
    /// perf event and not yet judged.
    pub(super) cpu_at_pass: u64,
    /// The thread's CPU time at the watcher's last pass, while it is on
    /// the timer source (see `SamplerState::nudge_if_late`).
    pub(super) timer_cpu_at_pass: u64,
}

fn hash_tid(tid: i32, len: usize) -> usize {
    (tid as u32 as usize).wrapping_mul(0x9E37_79B9) % len
}

impl SamplerState {
    /// The slot of thread `tid`, if armed (linear probing from its hash).
    /// Signal-safe: atomic loads only.
    pub(super) fn lookup(&self, tid: i32) -> Option<&Slot> {
        let n = self.slots.len();
        let mut i = hash_tid(tid, n);
        for _ in 0..n {
            let s = &self.slots[i];
            let t = s.tid.load(Ordering::Acquire);
            if t == tid {
                return Some(s);
            }
            if t == TID_EMPTY {
                return None;
            }
            i = (i + 1) % n;
        }
        None
    }

    fn free_slot_index(&self, tid: i32) -> Option<usize> {
        let n = self.slots.len();
        let mut i = hash_tid(tid, n);
        for _ in 0..n {
            let t = self.slots[i].tid.load(Ordering::Relaxed);
            if t == TID_EMPTY || t == TID_TOMBSTONE {
                return Some(i);
            }
            i = (i + 1) % n;
        }
        None
    }

    /// Arms thread `tid`. `bounds`: exact stack bounds when called on the
    /// thread itself; otherwise `maps` resolves them on the first sample.
    pub(super) fn arm(
        &self,
        sh: &mut Shared,
        tid: i32,
        bounds: Option<(u64, u64)>,
        maps: Option<&Arc<MapsSnapshot>>,
    ) -> Result<(), SamplerError> {
        if let Some(&idx) = sh.by_tid.get(&tid) {
            if let Some((lo, hi)) = bounds {
                // Called on the thread itself: exact bounds, current name.
                let s = &self.slots[idx];
                s.stack_lo.store(lo, Ordering::Relaxed);
                s.stack_hi.store(hi, Ordering::Release);
                let e = sh.owned[idx].entry;
                refresh_name(&mut sh.threads[e].name, tid);
            }
            return Ok(());
        }
        let Some(idx) = self.free_slot_index(tid) else {
            sh.arm_errors += 1;
            return Err(SamplerError::InvalidConfig(format!(
                "more than max_threads ({}) threads",
                self.slots.len() / 2
            )));
        };
        let slot = &self.slots[idx];
        let owned = &mut sh.owned[idx];
        let ring = owned.ring.get_or_insert_with(|| {
            (0..self.cfg.ring_words)
                .map(|_| AtomicU64::new(0))
                .collect()
        });
        let ring_ptr = ring.as_ptr() as *mut AtomicU64;
        let cache = owned.cache.get_or_insert_with(arch::new_cache);
        let cache_ptr: *mut UnwindCache = &mut **cache;
        owned.maps = maps.cloned();
        owned.switches = None;
        owned.judged = false;
        owned.cpu_at_pass = 0;
        slot.ring.store(ring_ptr, Ordering::Relaxed);
        slot.ring_mask
            .store(self.cfg.ring_words - 1, Ordering::Relaxed);
        slot.head.store(0, Ordering::Relaxed);
        slot.tail.store(0, Ordering::Relaxed);
        slot.cache.store(cache_ptr, Ordering::Relaxed);
        let (lo, hi) = bounds.unwrap_or((0, 0));
        slot.stack_lo.store(lo, Ordering::Relaxed);
        slot.stack_hi.store(hi, Ordering::Relaxed);
        slot.maps.store(
            owned.maps.as_ref().map_or(std::ptr::null_mut(), |m| {
                Arc::as_ptr(m) as *mut MapsSnapshot
            }),
            Ordering::Relaxed,
        );
        slot.last_cpu.store(0, Ordering::Relaxed);
        for c in [
            &slot.samples,
            &slot.weight,
            &slot.dropped,
            &slot.dropped_ns,
            &slot.truncated,
            &slot.off_stack,
            &slot.last_exit_ns,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        slot.last_walk_slow.store(false, Ordering::Relaxed);
        slot.busy.store(false, Ordering::Relaxed);

        // Open the source (before publishing the tid: nothing fires while
        // the event is disabled / the timer disarmed).
        let (source, handle, signal, kernel) = self.open_source(tid);
        let handle = match handle {
            Ok(h) => h,
            Err(e) => {
                sh.arm_errors += 1;
                slot.maps.store(std::ptr::null_mut(), Ordering::Relaxed);
                sh.owned[idx].maps = None;
                return Err(SamplerError::NoSource(e));
            }
        };
        slot.source.store(source, Ordering::Relaxed);
        slot.user_only.store(!kernel, Ordering::Relaxed);
        slot.handle.store(handle as i64, Ordering::Relaxed);
        slot.tid.store(tid, Ordering::Release);
        slot.live.store(true, Ordering::Release);

        let cpu_at_arm = thread_cpu_ns(tid).unwrap_or(0);
        // The first sample weighs the CPU time from here on (nothing
        // fires before `enable`, and the signal reaches the thread after
        // this store).
        slot.last_cpu.store(cpu_at_arm, Ordering::Relaxed);
        let enabled = sources::enable(source, handle, self.period_ns);
        let entry = sh.threads.len();
        sh.threads.push(ThreadEntry {
            tid,
            name: thread_name(tid),
            source: if source == SOURCE_PERF {
                CpuSource::PerfEvent
            } else {
                CpuSource::Timer
            },
            signal,
            kernel,
            samples: 0,
            sampled_ns: 0,
            cpu_ns: 0,
            dropped: 0,
            dropped_ns: 0,
            truncated: 0,
            off_stack: 0,
            exited: false,
            slot: Some(idx),
            cpu_at_arm,
            armed_pass: self.passes.load(Ordering::Relaxed),
            moved_to_timer: false,
            kernel_unsampled_ns: 0,
            nudged: 0,
        });
        sh.owned[idx].entry = entry;
        sh.by_tid.insert(tid, idx);
        if let Err(e) = enabled {
            sh.arm_errors += 1;
            self.disarm(sh, idx, false);
            return Err(SamplerError::NoSource(e));
        }
        Ok(())
    }

    /// Stops sampling thread in slot `idx`: disables and closes its source,
    /// drains its ring and finalizes its entry. `exited`: the thread is gone
    /// (its slot can be reused).
    pub(super) fn disarm(&self, sh: &mut Shared, idx: usize, exited: bool) {
        let slot = &self.slots[idx];
        let handle = slot.handle.load(Ordering::Relaxed) as i32;
        let source = slot.source.load(Ordering::Relaxed);
        let tid = slot.tid.load(Ordering::Relaxed);
        let final_count = sources::stop(source, handle);
        let measured = thread_cpu_ns(tid);
        slot.live.store(false, Ordering::SeqCst);
        // A handler already past the `live` check on that thread finishes
        // its push and its reads of the source handle, ring, cache and
        // maps. Wait for it before releasing any of them, whether or not
        // the thread is said to have exited: only a thread the kernel no
        // longer knows runs no handler.
        while slot.busy.load(Ordering::SeqCst) {
            if !thread_alive(tid) {
                break;
            }
            std::thread::yield_now();
        }
        sources::release(source, handle);
        slot.source.store(SOURCE_NONE, Ordering::Relaxed);
        self.drain(sh, idx);
        let e = sh.owned[idx].entry;
        let entry = &mut sh.threads[e];
        entry.samples = slot.samples.load(Ordering::Relaxed);
        entry.sampled_ns = slot.weight.load(Ordering::Relaxed);
        entry.dropped = slot.dropped.load(Ordering::Relaxed);
        entry.dropped_ns = slot.dropped_ns.load(Ordering::Relaxed);
        entry.truncated = slot.truncated.load(Ordering::Relaxed);
        entry.off_stack = slot.off_stack.load(Ordering::Relaxed);
        let last_cpu = slot.last_cpu.load(Ordering::Relaxed);
        let weighed_by_clock = !(source == SOURCE_PERF && slot.user_only.load(Ordering::Relaxed));
        let cpu = match (measured, final_count) {
            (Some(m), _) => m.saturating_sub(entry.cpu_at_arm),
            // The thread is gone, and its CPU clock with it: its CPU up to
            // its last sample, on the clock its samples were weighed with
            // (perf's own count runs ahead of that clock under load, 3% on
            // a loaded 2-vCPU machine, as it also counts the interrupts
            // that land on the thread), so that its samples stand for all
            // of it; what ran after the last sample is under one period.
            (None, _) if weighed_by_clock && last_cpu > entry.cpu_at_arm => {
                last_cpu - entry.cpu_at_arm
            }
            (None, Some(c)) => c,
            (None, None) => entry.cpu_ns.max(entry.sampled_ns + entry.dropped_ns),
        };
        entry.cpu_ns = cpu;
        entry.exited = exited;
        if !exited {
            refresh_name(&mut entry.name, tid);
        }
        entry.slot = None;
        sh.by_tid.remove(&tid);
        slot.maps.store(std::ptr::null_mut(), Ordering::Relaxed);
        sh.owned[idx].maps = None;
        // Tombstone: lookups probe past it; arming may reuse it.
        slot.tid.store(TID_TOMBSTONE, Ordering::Release);
    }
}
