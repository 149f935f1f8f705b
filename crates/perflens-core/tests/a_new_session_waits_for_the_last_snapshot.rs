//! A session's final snapshot reads every thread's block; a new session
//! makes threads reset theirs. So no session may start until the final
//! snapshot of the last one is taken: `start` during `finish` must fail.
//!
//! The test pauses `finish` inside its snapshot: this binary's global
//! allocator, on the finishing thread's first allocation (the snapshot's
//! first vector), asks a helper thread to start a session and waits for
//! its answer.

use perflens_core::{Callsite, Guard, RecordingOptions, StartError, start};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

struct Probe;

thread_local! {
    static FINISHING: Cell<bool> = const { Cell::new(false) };
}

/// Set just before `finish`; the first allocation on the finishing thread
/// clears it and runs the probe (later allocations, the probe's own
/// included, go straight through).
static ARMED: AtomicBool = AtomicBool::new(false);
/// The helper's go signal.
static GO: AtomicBool = AtomicBool::new(false);
/// The helper's answer: 0 none yet, 1 started, 2 refused.
static ANSWER: AtomicU8 = AtomicU8::new(0);

// SAFETY: forwards every call to `System` unchanged; the probe only
// touches atomics and a const thread-local, and never unwinds.
unsafe impl GlobalAlloc for Probe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let finishing = FINISHING.try_with(Cell::get).unwrap_or(false);
        if finishing && ARMED.swap(false, Ordering::SeqCst) {
            GO.store(true, Ordering::SeqCst);
            // Before the fix the helper's `start` blocked on the registry
            // this thread holds: give up waiting after a while.
            let deadline = Instant::now() + Duration::from_secs(1);
            while ANSWER.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                std::hint::spin_loop();
            }
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Probe = Probe;

static WORK: Callsite = Callsite::new("work", || "");

#[test]
fn a_new_session_waits_for_the_last_snapshot() {
    let helper = std::thread::spawn(|| {
        while !GO.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let answer = match start(&RecordingOptions::default()) {
            Ok(rec) => {
                drop(rec);
                1
            }
            Err(StartError::AlreadyRecording) => 2,
            Err(_) => 3,
        };
        ANSWER.store(answer, Ordering::SeqCst);
    });
    let rec = start(&RecordingOptions::default()).unwrap();
    drop(Guard::enter(&WORK));
    FINISHING.with(|f| f.set(true));
    ARMED.store(true, Ordering::SeqCst);
    let snap = rec.finish();
    FINISHING.with(|f| f.set(false));
    helper.join().unwrap();
    assert!(GO.load(Ordering::SeqCst), "the snapshot allocated nothing");
    assert_eq!(
        ANSWER.load(Ordering::SeqCst),
        2,
        "a session started during finish"
    );
    let calls: u64 = (snap.threads.iter().flat_map(|t| &t.nodes))
        .map(|n| n.calls)
        .sum();
    assert_eq!(calls, 1);
    // Once finished, a session starts again.
    start(&RecordingOptions::default()).unwrap().finish();
}
