//! What allocation profiling adds to measured calls: a loop of N calls to
//! a function that allocates and frees K boxes of 64 bytes per call,
//! measured or not, under a timed session, with the counting allocator or
//! the system allocator behind the same dispatch. Prints ns per call.
//!
//! ```text
//! cargo build --release -p perflens-core --example alloc_calls [--features alloc]
//! target/release/examples/alloc_calls N K measured|bare counting|system
//! ```
//!
//! Under `valgrind --tool=callgrind`, instructions per call are the
//! difference between two runs with different N over the difference of N.
//! `measured` minus `bare` at the same K is what measuring the call costs;
//! at K = 0 it is a plain timed call. Built with `--features alloc`
//! (what `perflens/alloc` turns on), allocations are charged to nodes at
//! frame boundaries; without it, the hook charges them itself.
use perflens_core::{Callsite, CountingAlloc, Guard, Mode, RecordingOptions, start};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOC: CountingAlloc = CountingAlloc::new(System);

/// The counting allocator or the system's, as chosen on the command line:
/// both variants pay this dispatch.
struct Dispatch;

// SAFETY: forwards each call unchanged to one of two allocators that both
// get their memory from `System` (a block may be freed by the other one:
// only the counters differ).
unsafe impl GlobalAlloc for Dispatch {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe {
            if COUNTING.load(Ordering::Relaxed) {
                ALLOC.alloc(l)
            } else {
                System.alloc(l)
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe {
            if COUNTING.load(Ordering::Relaxed) {
                ALLOC.dealloc(p, l)
            } else {
                System.dealloc(p, l)
            }
        }
    }
}

#[global_allocator]
static GLOBAL: Dispatch = Dispatch;

static CS: Callsite = Callsite::new("allocating", || "");

#[inline(never)]
fn measured(k: u64) -> u64 {
    let _g = Guard::enter(&CS);
    work(k)
}

#[inline(never)]
fn bare(k: u64) -> u64 {
    work(k)
}

#[inline(always)]
fn work(k: u64) -> u64 {
    let mut acc = 0;
    for i in 0..k {
        acc += black_box(Box::new([i; 8]))[3];
    }
    acc
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: alloc_calls N K measured|bare counting|system";
    let n: u64 = args.next().and_then(|a| a.parse().ok()).expect(usage);
    let k: u64 = args.next().and_then(|a| a.parse().ok()).expect(usage);
    let f: fn(u64) -> u64 = match args.next().as_deref() {
        Some("measured") => measured,
        Some("bare") => bare,
        _ => panic!("{usage}"),
    };
    match args.next().as_deref() {
        Some("counting") => COUNTING.store(true, Ordering::Relaxed),
        Some("system") => {}
        _ => panic!("{usage}"),
    }
    let session = start(&RecordingOptions {
        mode: Mode::Timed,
        ..RecordingOptions::default()
    })
    .expect("no other session runs");
    let mut acc = 0u64;
    let t = std::time::Instant::now();
    for _ in 0..n {
        acc = acc.wrapping_add(f(black_box(k)));
    }
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    let snap = session.finish();
    let (calls, allocs): (u64, u64) = snap
        .threads
        .iter()
        .flat_map(|t| &t.nodes)
        .fold((0, 0), |(c, a), n| (c + n.calls, a + n.alloc_count));
    println!("{ns:.2} ns per call ({acc}): calls {calls} allocations {allocs}");
}
