//! The allocation walker inside a real global allocator: perflens-core's
//! counting allocator samples every allocation (rate 1) and takes each
//! one's native stack with `allocation_walker`, on the main thread and
//! on a spawned one. The stacks name the allocating function and its
//! callers down to `main`, and an allocator wrapped around the counting
//! one sees no allocation begin inside another: the walk allocates
//! nothing through the Rust allocator.
//! `harness = false`: `main` runs on the process's main thread, whose
//! stack bounds come from a different path than other threads'.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod on_linux {
    use perflens_core::{HeapOptions, RecordingOptions};

    /// Keeps `n` blocks of 1000 bytes.
    #[inline(never)]
    pub fn keep_blocks(n: usize) -> Vec<Vec<u8>> {
        let blocks = (0..n)
            .map(|i| std::hint::black_box(vec![i as u8; 1000]))
            .collect();
        // Not a tail call: this frame stays on the stack.
        std::hint::black_box(blocks)
    }

    pub fn options() -> RecordingOptions {
        RecordingOptions {
            heap: Some(HeapOptions {
                rate: 1,
                ..HeapOptions::default()
            }),
            ..RecordingOptions::default()
        }
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
#[global_allocator]
static GLOBAL: perflens_core::testing::NestingCheck = perflens_core::testing::NestingCheck::new();

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
#[inline(never)]
fn spawned_thread_body(ready: &std::sync::Barrier) -> Vec<Vec<u8>> {
    drop(on_linux::keep_blocks(1));
    ready.wait(); // set up
    ready.wait(); // counting
    on_linux::keep_blocks(50)
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
fn main() {
    use on_linux::*;
    let walk = perflens_sampler::allocation_walker().expect("a walker on this platform");
    perflens_core::set_stack_walker(Some(walk));
    let rec = perflens_core::start(&options()).unwrap();
    // A thread's first allocations set up its recording (and learn its
    // stack's bounds), allocating for the profiler: done on each thread
    // before counting.
    drop(keep_blocks(1));
    let ready = std::sync::Arc::new(std::sync::Barrier::new(2));
    let theirs = ready.clone();
    let other = std::thread::spawn(move || spawned_thread_body(&theirs));
    ready.wait();
    GLOBAL.reset();
    ready.wait();
    let kept = keep_blocks(100);
    let other = other.join().unwrap();
    let nested = GLOBAL.nested();
    let snap = rec.snapshot();
    drop(rec.finish());
    assert_eq!(nested, 0, "allocations began inside the allocator hook");
    let heap = snap.heap.expect("the heap was sampled");
    assert_eq!(heap.stacks_dropped, 0, "every sample kept its stack");
    let stacks: Vec<Vec<u64>> = heap.stacks.iter().map(|s| s.addrs.clone()).collect();
    let names: Vec<Vec<String>> = (perflens_sampler::symbolize_allocation_stacks(&stacks))
        .into_iter()
        .map(|s| s.into_iter().map(|f| f.name).collect())
        .collect();
    // The blocks of 1000 bytes: 100 from main's call, 50 from the
    // thread's, each block its own sample at rate 1.
    let through = |f: &str, outer: &str| -> u64 {
        (heap.stacks.iter().zip(&names))
            .filter(|(_, n)| {
                let at = |g: &str| n.iter().position(|x| x.ends_with(g));
                matches!((at(f), at(outer)), (Some(a), Some(b)) if a < b)
            })
            .map(|(s, _)| s.samples)
            .sum()
    };
    let from_main = through("keep_blocks", "allocation_stacks::main");
    let from_thread = through("keep_blocks", "spawned_thread_body");
    eprintln!(
        "{from_main} samples unwound from keep_blocks to main, {from_thread} to the thread's body"
    );
    // The collected Vec's own buffer is one more sample on each path.
    assert!(from_main >= 100, "{from_main}");
    assert!(from_thread >= 50, "{from_thread}");
    assert_eq!(kept.len() + other.len(), 150);
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
)))]
fn main() {}
