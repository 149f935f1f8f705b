//! What lower layers write into the running live session's header,
//! without knowing the live session: its tag (which block files belong
//! to it), and the counters a signal handler or the allocator's first use
//! bump (CPU samples outside measured code, the allocator installed).
//! The publication (`publish.rs`, above) sets and clears them; the thread
//! lifecycle and the sampler's hooks read them with plain atomics.

use perflens_format::session_file::SessionHeader;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// The live session's tag, 0 when none (read without the lock).
static TAG: AtomicU32 = AtomicU32::new(0);
/// The live session's header, for the signal handler (null when none).
static HEADER: AtomicPtr<SessionHeader> = AtomicPtr::new(std::ptr::null_mut());

/// The tag of the running live session (0: none).
#[inline]
pub(crate) fn tag() -> u32 {
    TAG.load(Ordering::Relaxed)
}

/// Publishes live session `tag`'s header, and moves into it the samples
/// counted before it existed.
///
/// # Safety
/// `header` is a mapping that lives as long as the process.
pub(crate) unsafe fn publish(tag: u32, header: *mut SessionHeader) {
    TAG.store(tag, Ordering::Relaxed);
    HEADER.store(header, Ordering::Release);
    // SAFETY: per the caller.
    take_early_samples(unsafe { &*header });
}

/// No live session from now on.
pub(crate) fn unpublish() {
    TAG.store(0, Ordering::Relaxed);
    HEADER.store(std::ptr::null_mut(), Ordering::Release);
}

/// The CPU sampler's frequency, shown by readers (0: not sampling).
pub fn set_cpu_hz(hz: u32) {
    let h = HEADER.load(Ordering::Acquire);
    if !h.is_null() {
        // SAFETY: the header mapping lives as long as the process.
        unsafe { &*h }.cpu_hz.store(hz, Ordering::Relaxed);
    }
}

/// Notes that the counting allocator is installed.
pub(crate) fn note_alloc_installed() {
    let h = HEADER.load(Ordering::Acquire);
    if !h.is_null() {
        // SAFETY: the header mapping lives as long as the process.
        unsafe { &*h }.alloc_installed.store(1, Ordering::Relaxed);
    }
}

/// CPU samples (and their ns) taken outside any session's block while no
/// live header existed yet: the CPU sampler starts before the session
/// (see `perflens::Session`), and its report counts these as outside
/// measured code; the live session takes them over when it begins.
static EARLY_SAMPLES: AtomicU64 = AtomicU64::new(0);
static EARLY_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// Forgets earlier samples outside any block: a CPU sampler starts.
pub fn cpu_sampling_starts() {
    EARLY_SAMPLES.store(0, Ordering::Relaxed);
    EARLY_CPU_NS.store(0, Ordering::Relaxed);
}

/// Moves the samples counted before the header existed into it.
pub(crate) fn take_early_samples(h: &SessionHeader) {
    h.outside_samples
        .fetch_add(EARLY_SAMPLES.swap(0, Ordering::Relaxed), Ordering::Relaxed);
    h.outside_cpu_ns
        .fetch_add(EARLY_CPU_NS.swap(0, Ordering::Relaxed), Ordering::Relaxed);
}

/// Counts a CPU sample taken on a thread without a block of this
/// session. Async-signal-safe: two atomic additions.
pub(crate) fn outside_sample(weight_ns: u64) {
    let h = HEADER.load(Ordering::Acquire);
    if h.is_null() {
        EARLY_SAMPLES.fetch_add(1, Ordering::Relaxed);
        EARLY_CPU_NS.fetch_add(weight_ns, Ordering::Relaxed);
    } else {
        // SAFETY: the header mapping lives as long as the process.
        let h = unsafe { &*h };
        h.outside_samples.fetch_add(1, Ordering::Relaxed);
        h.outside_cpu_ns.fetch_add(weight_ns, Ordering::Relaxed);
    }
}
