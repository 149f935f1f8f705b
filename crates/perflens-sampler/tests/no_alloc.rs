//! The signal handler allocates nothing: a counting global allocator
//! records allocations made while the sampler's handler runs, on a
//! thread's own stack and on an alternate signal stack.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
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
