//! The signal handler allocates nothing: a counting global allocator
//! records allocations made while the sampler's handler runs, on a
//! thread's own stack and on an alternate signal stack.
// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod common;
use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static IN_HANDLER_ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALL_ALLOCS: AtomicU64 = AtomicU64::new(0);
static HOOK_IN_HANDLER: AtomicU64 = AtomicU64::new(0);

struct Counting;

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn note() {
    ALL_ALLOCS.fetch_add(1, Ordering::Relaxed);
    if perflens_sampler::in_signal_handler() {
        IN_HANDLER_ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn hook() -> u64 {
    // Proves the in-handler flag is set while the handler runs.
    if perflens_sampler::in_signal_handler() {
        HOOK_IN_HANDLER.fetch_add(1, Ordering::Relaxed);
    }
    7
}

/// Busy work that also allocates, so samples land inside malloc/free too.
fn busy_allocating(cpu: Duration) {
    let end = thread_cpu() + cpu;
    let mut keep: Vec<Vec<u8>> = Vec::new();
    while thread_cpu() < end {
        std::hint::black_box(leaf_spin(20_000));
        keep.push(vec![1u8; 64 + keep.len() % 512]);
        if keep.len() > 256 {
            keep.clear();
        }
    }
}

/// SIGUSR1 handler (on the altstack): burns CPU without allocating.
extern "C" fn on_usr1(_: libc::c_int) {
    std::hint::black_box(busy_for(Duration::from_millis(100)));
}

/// Runs `on_usr1` on an alternate signal stack of this thread.
fn burn_on_altstack() {
    const ALT: usize = 256 * 1024;
    let alt = vec![0u8; ALT].into_boxed_slice();
    let ss = libc::stack_t {
        ss_sp: alt.as_ptr() as *mut libc::c_void,
        ss_flags: 0,
        ss_size: ALT,
    };
    install_on_altstack(libc::SIGUSR1, on_usr1);
    // SAFETY: an altstack that stays alive (and unused elsewhere) until
    // it is disabled below.
    unsafe {
        assert_eq!(libc::sigaltstack(&ss, std::ptr::null_mut()), 0);
        assert_eq!(libc::raise(libc::SIGUSR1), 0);
        let off = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        assert_eq!(libc::sigaltstack(&off, std::ptr::null_mut()), 0);
    }
    drop(alt);
}

#[test]
fn handler_allocates_nothing_at_4000_hz() {
    let _s = serial();
    perflens_sampler::set_context_hook(hook);
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(4000)
        .build()
        .expect("start");
    // Armed by the watcher (its own stack is found on its first sample),
    // then sampled on an alternate signal stack too.
    let t = std::thread::spawn(|| {
        busy_allocating(Duration::from_millis(400));
        burn_on_altstack();
    });
    busy_allocating(Duration::from_millis(400));
    t.join().unwrap();
    let report = guard.stop().build().expect("report");
    perflens_sampler::clear_context_hook();
    let samples = report.total_samples();
    eprintln!(
        "samples {samples}, hook calls in handler {}, allocations in handler {}, all allocations {}",
        HOOK_IN_HANDLER.load(Ordering::Relaxed),
        IN_HANDLER_ALLOCS.load(Ordering::Relaxed),
        ALL_ALLOCS.load(Ordering::Relaxed)
    );
    assert!(samples > 2000, "too few samples: {samples}");
    assert!(HOOK_IN_HANDLER.load(Ordering::Relaxed) >= samples);
    assert_eq!(IN_HANDLER_ALLOCS.load(Ordering::Relaxed), 0);
}

static CS: perflens_core::Callsite = perflens_core::Callsite::new("no_alloc::measured", || "");

/// The profiler's real hooks in the handler: `perflens_core::sample_context`
/// picks the context and `perflens_core::charge_sample` adds each stored
/// sample to the node of the interrupted thread's top frame (the live
/// view's counters). Neither allocates, and the nodes' counts are
/// exactly the stored samples, weights included.
#[test]
fn the_profilers_hooks_allocate_nothing_and_charge_every_stored_sample() {
    let _s = serial();
    let before = IN_HANDLER_ALLOCS.load(Ordering::Relaxed);
    let rec =
        perflens_core::start(&perflens_core::RecordingOptions::default()).expect("one session");
    perflens_sampler::set_context_hook(perflens_core::sample_context);
    perflens_sampler::set_charge_hook(perflens_core::charge_sample);
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(4000)
        .build()
        .expect("start");
    let work = || {
        let _g = perflens_core::Guard::enter(&CS);
        busy_allocating(Duration::from_millis(300));
    };
    let t = std::thread::spawn(work);
    work();
    t.join().unwrap();
    let report = guard.stop().build().expect("report");
    perflens_sampler::clear_charge_hook();
    perflens_sampler::clear_context_hook();
    let snap = rec.finish();
    assert_eq!(IN_HANDLER_ALLOCS.load(Ordering::Relaxed), before);
    // Stored samples by context (path + 1), and what the nodes hold.
    let mut stored = std::collections::BTreeMap::<u64, (u64, u64)>::new();
    for (frames, v) in &report.data {
        let e = stored.entry(frames.context).or_default();
        e.0 += v.samples;
        e.1 += v.cpu_ns;
    }
    let mut charged = std::collections::BTreeMap::<u64, (u64, u64)>::new();
    for t in &snap.threads {
        for &(path, samples, ns) in &t.cpu_samples {
            let e = charged.entry(u64::from(path) + 1).or_default();
            e.0 += samples;
            e.1 += ns;
        }
    }
    // Samples outside any block of the session (the sampler's own
    // threads, or before a thread's first measured call) have context 0
    // and no node; those on the root node have path 0, context 1 here.
    let outside = stored.remove(&0).unwrap_or_default();
    let root = charged.remove(&1).unwrap_or_default();
    let measured = u64::from(
        snap.paths
            .iter()
            .position(|p| snap.callsites[p.callsite as usize].name == "no_alloc::measured")
            .expect("the measured path") as u32,
    ) + 1;
    eprintln!("stored {stored:?} (outside {outside:?}), charged {charged:?} (root {root:?})");
    assert!(stored[&measured].0 > 1000, "too few samples: {stored:?}");
    assert_eq!(
        stored, charged,
        "every stored sample is charged to its node, with its weight"
    );
}
