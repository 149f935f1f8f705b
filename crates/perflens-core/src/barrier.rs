//! A process-wide memory barrier (`membarrier`): when a session starts
//! or ends, the thread that gates every block's allocation counters
//! makes every other thread pass a full barrier, so the owners' plain
//! stores need no read-modify-write. Where no such barrier exists the
//! owners swap instead ([`owner_swaps`]).

use perflens_sys::barrier;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether owners must swap their thresholds (see
/// `alloc::set_thresholds`): until a process-wide barrier is known to
/// work, and for good where there is none.
static OWNER_SWAPS: AtomicBool = AtomicBool::new(true);

/// Whether the owner side of a gate must use swaps, because
/// `thread::gate_all` cannot make every thread pass a barrier.
#[inline]
pub(crate) fn owner_swaps() -> bool {
    OWNER_SWAPS.load(Ordering::Relaxed)
}

/// Which process-wide barrier this process uses (0 = not known yet).
static BARRIER: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
const BARRIER_PRIVATE: u8 = 1;
const BARRIER_GLOBAL: u8 = 2;
const BARRIER_NONE: u8 = 3;

/// Finds the process-wide barrier [`gate_all`] uses, once, before the
/// first session records: Linux's `membarrier`, private expedited (a few
/// microseconds) or global (a scheduler grace period, milliseconds: only
/// at session start and end). Where neither exists, owners swap their
/// thresholds instead (slower peaks, same exactness).
pub(crate) fn init() {
    if BARRIER.load(Ordering::Relaxed) != 0 {
        return;
    }
    let found = match barrier::find() {
        barrier::Kind::PrivateExpedited => BARRIER_PRIVATE,
        barrier::Kind::Global => BARRIER_GLOBAL,
        barrier::Kind::None => BARRIER_NONE,
    };
    BARRIER.store(found, Ordering::Relaxed);
    OWNER_SWAPS.store(found == BARRIER_NONE, Ordering::Relaxed);
}

/// Makes every running thread of the process pass a full memory barrier
/// before this returns (after a fence here): any store another thread
/// made before its barrier is visible to what follows, and any load it
/// makes after its barrier sees what preceded this call.
pub(crate) fn process_barrier() {
    std::sync::atomic::fence(Ordering::SeqCst);
    {
        let kind = match BARRIER.load(Ordering::Relaxed) {
            BARRIER_PRIVATE => barrier::Kind::PrivateExpedited,
            BARRIER_GLOBAL => barrier::Kind::Global,
            _ => return,
        };
        if !barrier::run(kind) {
            // Registered and queried, so this should not happen; if it
            // does, owners swap from now on (a gate racing this very
            // change could still be overwritten once).
            OWNER_SWAPS.store(true, Ordering::Relaxed);
        }
    }
    std::sync::atomic::fence(Ordering::SeqCst);
}
