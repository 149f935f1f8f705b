//! Allocation counting: deterministic workloads whose byte and count
//! totals are known, checked exactly, per function (exclusive) and per
//! path, including futures interleaved on one thread and futures on a
//! multi-thread runtime.
#![cfg(feature = "enabled")]

use perflens::{RawSnapshot, Session};
use perflens_core::histogram::bucket_bounds;
use std::alloc::{Layout, alloc, dealloc, realloc};
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

static ONE_SESSION: Mutex<()> = Mutex::new(());

fn one_session() -> MutexGuard<'static, ()> {
    ONE_SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

/// Exclusive (alloc bytes, alloc count, free bytes, free count) of a
/// function over all threads and paths.
fn excl(snap: &RawSnapshot, f: &str) -> (u64, u64, u64, u64) {
    excl_row(snap, &name(f))
}

/// [`excl`] of the row named `want` (a label, or a full path).
fn excl_row(snap: &RawSnapshot, want: &str) -> (u64, u64, u64, u64) {
    let mut out = (0, 0, 0, 0);
    for t in &snap.threads {
        for n in &t.nodes {
            let p = snap.paths[n.path as usize];
            if n.path > 1 && snap.callsites[p.callsite as usize].name == want {
                out.0 += n.alloc_bytes;
                out.1 += n.alloc_count;
                out.2 += n.free_bytes;
                out.3 += n.free_count;
            }
        }
    }
    out
}

/// Exclusive alloc bytes on one exact path (row names, outermost first).
fn on_path(snap: &RawSnapshot, frames: &[&str]) -> u64 {
    let want: Vec<String> = frames.iter().map(|f| name(f)).collect();
    snap.threads
        .iter()
        .flat_map(|t| &t.nodes)
        .filter(|n| {
            let got: Vec<&str> = snap
                .frames(n.path)
                .into_iter()
                .map(|c| snap.callsites[c as usize].name.as_str())
                .collect();
            n.path > 1 && got == want
        })
        .map(|n| n.alloc_bytes)
        .sum()
}

#[cfg_attr(not(feature = "alloc"), allow(dead_code))]
/// Per-call inclusive bytes of a function: (sum over the histogram,
/// entries). Sizes in these tests are chosen to fall on bucket bounds
/// (a multiple of the bucket width), so the sum is exact.
fn per_call(snap: &RawSnapshot, f: &str) -> (u64, u64) {
    let want = name(f);
    let mut out = (0, 0);
    for t in &snap.threads {
        for n in &t.nodes {
            let p = snap.paths[n.path as usize];
            if n.path > 1 && snap.callsites[p.callsite as usize].name == want {
                for &(b, c) in n.hist_alloc.buckets() {
                    // The lower bound: exact for the sizes used here.
                    out.0 += bucket_bounds(b as usize).0 * c;
                    out.1 += c;
                }
            }
        }
    }
    out
}

#[perflens::measure]
fn k_buffers(k: usize, n: usize) {
    for _ in 0..k {
        black_box(Vec::<u8>::with_capacity(n));
    }
}

#[perflens::measure]
fn allocates_nothing(x: u64) -> u64 {
    black_box(x * 2)
}

#[perflens::measure]
fn outer() {
    black_box(Vec::<u8>::with_capacity(1024));
    inner();
    inner();
}

#[perflens::measure]
fn inner() {
    black_box(Vec::<u8>::with_capacity(256));
}

#[perflens::measure]
fn recurse(depth: u32) {
    black_box(Vec::<u8>::with_capacity(100));
    if depth > 0 {
        recurse(depth - 1);
    }
}

#[perflens::measure]
fn by_hand() {
    // SAFETY: sizes are non-zero; each pointer is used with the layout it
    // was (re)allocated with.
    unsafe {
        let l = Layout::from_size_align(100, 8).unwrap();
        let p = alloc(l);
        assert!(!p.is_null());
        let p = realloc(p, l, 1000);
        assert!(!p.is_null());
        let p = realloc(p, Layout::from_size_align(1000, 8).unwrap(), 50);
        assert!(!p.is_null());
        dealloc(p, Layout::from_size_align(50, 8).unwrap());
    }
}

/// Grows a Vec one element at a time; returns the capacities it went
/// through, which is what was (re)allocated.
#[perflens::measure]
fn grow(n: usize) -> Vec<usize> {
    let mut caps = Vec::with_capacity(64);
    let mut v: Vec<u64> = Vec::new();
    for i in 0..n {
        v.push(i as u64);
        if caps.last() != Some(&v.capacity()) {
            caps.push(v.capacity());
        }
    }
    black_box(&v);
    caps
}

#[test]
fn sync_functions_nested_recursive_and_realloc() {
    let _turn = one_session();
    let session = Session::builder().ignore_env().start().unwrap();
    k_buffers(7, 4096);
    k_buffers(3, 4096);
    for i in 0..100 {
        black_box(allocates_nothing(i));
    }
    outer();
    recurse(4);
    by_hand();
    let caps = grow(1000);
    let snap = session.raw_snapshot();
    drop(session.finish());

    assert_eq!(excl(&snap, "k_buffers"), (10 * 4096, 10, 10 * 4096, 10));
    // Registering the function and its path happened inside the profiler:
    // not counted.
    assert_eq!(excl(&snap, "allocates_nothing"), (0, 0, 0, 0));
    assert_eq!(excl(&snap, "outer"), (1024, 1, 1024, 1));
    assert_eq!(excl(&snap, "inner"), (512, 2, 512, 2));
    assert_eq!(on_path(&snap, &["outer", "inner"]), 512);
    assert_eq!(excl(&snap, "recurse"), (500, 5, 500, 5));
    // The recursion folds into one path: the outermost call's node holds
    // its own 100 bytes, the nested calls' node the other 400.
    assert_eq!(on_path(&snap, &["recurse"]), 500);
    assert_eq!(on_path(&snap, &["recurse", "recurse"]), 0);
    let nested: Vec<u64> = (snap.threads.iter().flat_map(|t| &t.nodes))
        .filter(|n| n.path > 1 && n.nested)
        .map(|n| n.alloc_bytes)
        .collect();
    assert_eq!(nested, [400]);
    // alloc 100, realloc to 1000, realloc to 50, free 50: three blocks
    // handed out, three released.
    assert_eq!(excl(&snap, "by_hand"), (1150, 3, 1150, 3));
    // Vec growth: each capacity was one (re)allocation; all but the last
    // were released by the next realloc. The `caps` vector itself was
    // allocated once with room for 64 entries and is returned, not freed.
    let grown: u64 = caps.iter().map(|&c| c as u64 * 8).sum();
    let released: u64 = caps[..caps.len() - 1].iter().map(|&c| c as u64 * 8).sum();
    let last = *caps.last().unwrap() as u64 * 8;
    assert!(caps.len() > 5, "{caps:?}");
    assert_eq!(
        excl(&snap, "grow"),
        (
            grown + 64 * 8,
            caps.len() as u64 + 1,
            released + last,
            caps.len() as u64
        )
    );

    // Per-call histograms need the `alloc` feature (each measured call
    // notes the bytes allocated during it).
    #[cfg(feature = "alloc")]
    {
        // Per call, inclusive: every k_buffers call allocated k * 4096.
        assert_eq!(per_call(&snap, "k_buffers"), (10 * 4096, 2));
        // 100 calls, all allocating 0.
        assert_eq!(per_call(&snap, "allocates_nothing"), (0, 100));
        // outer allocated 1024 + 2 * 256 in its one call (inclusive).
        assert_eq!(per_call(&snap, "outer"), (1536, 1));
        assert_eq!(per_call(&snap, "inner"), (512, 2));
        // recurse(4): the outermost call allocated 5 * 100 = 500 inclusive,
        // the innermost 100; five calls in all.
        assert_eq!(per_call(&snap, "recurse").1, 5);
    }
}

/// A future that returns `Pending` once (without waking anyone: the
/// driver below polls in a fixed order).
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[perflens::measure]
async fn task_a() {
    for _ in 0..3 {
        black_box(Vec::<u8>::with_capacity(1_024));
        YieldOnce(false).await;
    }
}

#[perflens::measure]
async fn task_b() {
    for _ in 0..3 {
        black_box(Vec::<u8>::with_capacity(50_000));
        YieldOnce(false).await;
    }
}

#[test]
fn futures_interleaved_on_one_thread_never_mix() {
    let _turn = one_session();
    let session = Session::builder().ignore_env().start().unwrap();
    // Created and pinned before polling starts, so the only allocations
    // during their polls are their own.
    let mut a = Box::pin(task_a());
    let mut b = Box::pin(task_b());
    let mut cx = Context::from_waker(Waker::noop());
    let (mut a_done, mut b_done) = (false, false);
    while !(a_done && b_done) {
        if !a_done {
            a_done = a.as_mut().poll(&mut cx).is_ready();
        }
        if !b_done {
            b_done = b.as_mut().poll(&mut cx).is_ready();
        }
        // The driver allocates between polls: outside both futures.
        black_box(Vec::<u8>::with_capacity(7));
    }
    let snap = session.raw_snapshot();
    drop(session.finish());
    assert_eq!(excl(&snap, "task_a"), (3_072, 3, 3_072, 3));
    assert_eq!(excl(&snap, "task_b"), (150_000, 3, 150_000, 3));
    // One completed future each, its polls summed: 3 * 1024.
    #[cfg(feature = "alloc")]
    assert_eq!(per_call(&snap, "task_a"), (3_072, 1));
}

#[perflens::measure]
async fn worker(i: u64) -> u64 {
    let mut sum = 0;
    for round in 0..3 {
        let v = black_box(Vec::<u8>::with_capacity(1_000 * (i as usize + 1)));
        sum += v.capacity() as u64 + round;
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    sum
}

#[test]
fn futures_on_a_multi_thread_runtime_are_exact() {
    let _turn = one_session();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let session = Session::builder().ignore_env().start().unwrap();
    rt.block_on(async {
        let mut handles = Vec::new();
        for i in 0..8u64 {
            handles.push(tokio::spawn(worker(i)));
            // Unmeasured tasks allocating on the same workers.
            handles.push(tokio::spawn(async move {
                for _ in 0..3 {
                    black_box(Vec::<u8>::with_capacity(777));
                    tokio::task::yield_now().await;
                }
                0
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
    });
    let snap = session.raw_snapshot();
    drop(session.finish());
    // worker(i) allocates 3 * 1000 * (i + 1): sum over i = 3000 * 36.
    let expected = 3_000 * 36;
    let (bytes, count, incl_bytes, incl_count) = excl(&snap, "worker");
    assert_eq!((bytes, count), (expected, 24));
    // Inclusive adds what the awaited sleeps allocated inside worker's
    // polls, tokio's own: its timer driver allocates now and then when a
    // sleep first registers (CI once saw one 92-byte allocation), so
    // whether one falls in a worker's poll depends on the interleaving.
    assert!(
        (expected..expected + 4_096).contains(&incl_bytes) && (24..32).contains(&incl_count),
        "{incl_bytes} bytes in {incl_count} allocations inclusive"
    );
    drop(rt);
}

#[perflens::measure]
async fn spawned_task() {
    black_box(Vec::<u8>::with_capacity(1 << 20));
}

#[perflens::measure]
async fn spawner() {
    let handles: Vec<_> = (0..4).map(|_| tokio::spawn(spawned_task())).collect();
    for h in handles {
        h.await.unwrap();
    }
}

/// A server's `main` spawns the tasks that do the work: they are its
/// children in the tree, so in its inclusive bytes, but they run outside
/// its polls, so not in what one call of it allocated. Its Avg/call and
/// p95/call agree (84 MiB against 35 KiB for one call, before).
#[cfg(feature = "alloc")]
#[test]
fn a_future_that_spawns_keeps_its_own_bytes_per_call() {
    let _turn = one_session();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let session = Session::builder().ignore_env().start().unwrap();
    rt.block_on(spawner());
    let report = session.finish();
    drop(rt);
    let row = |f: &str| {
        (report.function(&name(f)))
            .and_then(|r| r.alloc.map(|a| (r.calls, a)))
            .unwrap_or_else(|| panic!("no row {f}"))
    };
    let (calls, task) = row("spawned_task");
    assert_eq!(calls, 4);
    assert_eq!((task.incl_bytes, task.avg_bytes), (4 << 20, 1 << 20));
    let (calls, main) = row("spawner");
    assert_eq!(calls, 1);
    // Its own bytes (the tasks tokio made, the handles) are a few KiB.
    assert!(main.bytes > 0 && main.bytes < 64 << 10, "{main:?}");
    assert_eq!(main.incl_bytes, main.bytes + (4 << 20), "{main:?}");
    // One call, one value: the mean is that value read from the
    // histogram (within 1/64), as is its p95.
    for per_call in [main.avg_bytes, main.p95_bytes] {
        assert!(per_call.abs_diff(main.bytes) * 64 <= main.bytes, "{main:?}");
    }
}

#[perflens::measure]
fn on_a_thread() {
    black_box(Vec::<u8>::with_capacity(12_345));
    let kept = Vec::<u8>::with_capacity(20_000);
    std::mem::forget(kept);
}

#[test]
fn threads_that_exit_keep_their_counts_and_live_bytes() {
    let _turn = one_session();
    let session = Session::builder().ignore_env().start().unwrap();
    std::thread::Builder::new()
        .name("alloc-worker".into())
        .spawn(|| {
            on_a_thread();
            on_a_thread();
        })
        .unwrap()
        .join()
        .unwrap();
    let snap = session.raw_snapshot();
    drop(session.finish());
    assert_eq!(excl(&snap, "on_a_thread"), (64_690, 4, 24_690, 2));
    let t = snap
        .threads
        .iter()
        .find(|t| t.name.as_deref() == Some("alloc-worker"))
        .expect("the exited thread is in the snapshot");
    assert!(t.exited);
    // Live bytes are what the thread allocated minus what it freed, all
    // of it charged to some node of its own (the root node included).
    let allocated: u64 = t.nodes.iter().map(|n| n.alloc_bytes).sum();
    let freed: u64 = t.nodes.iter().map(|n| n.free_bytes).sum();
    assert_eq!(t.live_bytes, allocated as i64 - freed as i64);
    // It also freed, at exit, things its parent allocated for it, so its
    // live count may have started below 0; after the second call both
    // leaked 20,000-byte buffers were live at once.
    let root_freed: u64 = t
        .nodes
        .iter()
        .filter(|n| n.path == 0)
        .map(|n| n.free_bytes)
        .sum();
    assert!(t.peak_live_bytes + root_freed >= 40_000);
    assert!(t.peak_live_bytes as i64 >= t.live_bytes);
    let summary = snap.alloc.expect("the counting allocator is installed");
    assert!(summary.peak_live_bytes >= t.peak_live_bytes);
}

#[perflens::measure]
fn churn_big() {
    for _ in 0..100 {
        // 64 MiB, never touched: the allocator maps it and unmaps it.
        black_box(Vec::<u8>::with_capacity(64 << 20));
    }
}

#[test]
fn counters_are_u64_end_to_end() {
    let _turn = one_session();
    let session = Session::builder().ignore_env().start().unwrap();
    churn_big();
    let snap = session.raw_snapshot();
    drop(session.finish());
    let total = 100u64 * (64 << 20);
    assert!(total > u32::MAX as u64);
    assert_eq!(excl(&snap, "churn_big"), (total, 100, total, 100));
}

/// Runs before `main`, before any session, and allocates through the
/// counting allocator.
extern "C" fn before_main() {
    black_box(Vec::<u8>::with_capacity(100));
}

#[used]
#[unsafe(link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn() = before_main;

struct AllocatesOnDrop;

impl Drop for AllocatesOnDrop {
    fn drop(&mut self) {
        // Runs while the thread's locals are torn down, possibly after
        // perflens's own exit hook.
        black_box(vec![1u8; 4096]);
        on_a_thread();
    }
}

thread_local! {
    static LATE: AllocatesOnDrop = const { AllocatesOnDrop };
}

#[test]
fn allocating_before_main_and_in_thread_local_destructors_is_safe() {
    let _turn = one_session();
    let session = Session::builder().ignore_env().start().unwrap();
    for _ in 0..4 {
        std::thread::spawn(|| {
            LATE.with(|_| ());
            k_buffers(2, 64);
        })
        .join()
        .unwrap();
    }
    let snap = session.raw_snapshot();
    drop(session.finish());
    // What the threads did before their teardown is exact; what their
    // destructors did may or may not be counted, but never crashes.
    assert_eq!(excl(&snap, "k_buffers"), (4 * 2 * 64, 8, 4 * 2 * 64, 8));
}

/// Allocates zeroed memory three ways: `vec![0u8; n]` and `vec![0u64; n]`
/// (both go through `alloc_zeroed`), and `alloc_zeroed` by hand.
#[perflens::measure]
fn zeroed(n: usize) -> usize {
    let bytes = black_box(vec![0u8; n]);
    let words = black_box(vec![0u64; n]);
    let layout = Layout::from_size_align(n, 16).unwrap();
    // SAFETY: n > 0; the block is freed with the layout it was allocated
    // with.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        assert!(!p.is_null());
        assert_eq!(*p.add(n - 1), 0);
        dealloc(p, layout);
    }
    bytes.len() + words.len()
}

#[test]
fn zeroed_allocations_are_counted() {
    let _turn = one_session();
    let session = Session::builder().ignore_env().start().unwrap();
    for n in [100, 5_000] {
        black_box(zeroed(n));
    }
    let snap = session.raw_snapshot();
    drop(session.finish());
    // Per call: n + 8n + n bytes in three blocks, all freed.
    let bytes = 10 * (100 + 5_000);
    assert_eq!(excl(&snap, "zeroed"), (bytes, 6, bytes, 6));
    #[cfg(feature = "alloc")]
    assert_eq!(per_call(&snap, "zeroed").1, 2);
}

#[perflens::measure]
fn first_seen_at_the_root(n: usize) {
    black_box(Vec::<u8>::with_capacity(n));
    first_seen_inside(n);
}

#[perflens::measure]
fn first_seen_inside(n: usize) {
    black_box(Vec::<u8>::with_capacity(2 * n));
}

/// Measured functions that allocate nothing, each a new callsite and a
/// new path when first called from the root.
macro_rules! new_paths {
    ($($f:ident)*) => {
        $(
            #[perflens::measure]
            fn $f(x: u64) -> u64 {
                black_box(x + 1)
            }
        )*
        /// Calls each of them once.
        fn call_new_paths() {
            $( black_box($f(1)); )*
        }
    };
}

new_paths!(
    p00 p01 p02 p03 p04 p05 p06 p07 p08 p09 p10 p11 p12 p13 p14 p15
    p16 p17 p18 p19 p20 p21 p22 p23 p24 p25 p26 p27 p28 p29 p30 p31
    p32 p33 p34 p35 p36 p37 p38 p39 p40 p41 p42 p43 p44 p45 p46 p47
);

#[test]
fn the_root_node_holds_exactly_what_the_program_allocated_outside_measured_functions() {
    let _turn = one_session();
    // On a thread of its own that starts and ends the session, so that
    // everything the thread allocated in between is this code's or the
    // profiler's; the profiler's must not be counted.
    let (snap, before_finish) = std::thread::Builder::new()
        .name("root-exact".into())
        .spawn(|| {
            let session = Session::builder().ignore_env().start().unwrap();
            let a = black_box(Vec::<u8>::with_capacity(1_000));
            // First calls from the root: the callsites and both paths are
            // registered now, which allocates (as profiler work).
            first_seen_at_the_root(100);
            // 48 more callsites and paths, registered from the root:
            // the profiler's tables grow.
            call_new_paths();
            let b = black_box(Box::new([3u64; 4]));
            // Snapshots and reports taken from the root allocate too;
            // the program keeps them, so their memory is not freed here.
            let report = session.snapshot();
            let raw = session.raw_snapshot();
            first_seen_at_the_root(100);
            drop(a);
            let c = black_box(vec![7u8; 333]);
            let snap = session.raw_snapshot();
            // What finishing does is not part of the session.
            drop(session.finish());
            black_box((b, c, report, &raw));
            let before_finish = raw;
            (snap, before_finish)
        })
        .unwrap()
        .join()
        .unwrap();
    let root = |snap: &RawSnapshot| {
        let t = (snap.threads.iter())
            .find(|t| t.name.as_deref() == Some("root-exact"))
            .expect("the thread is in the snapshot");
        let root = t.nodes.iter().find(|n| n.path == 0).expect("a root node");
        let all: (u64, u64) = t
            .nodes
            .iter()
            .fold((0, 0), |(b, c), n| (b + n.alloc_bytes, c + n.alloc_count));
        (
            (
                root.alloc_bytes,
                root.alloc_count,
                root.free_bytes,
                root.free_count,
            ),
            all,
        )
    };
    // Outside measured functions: 1000 + 32 + 333 bytes in three blocks,
    // the first one freed.
    let (at_root, all) = root(&snap);
    assert_eq!(at_root, (1_365, 3, 1_000, 1));
    // And the measured calls: 100 + 200 bytes each, twice.
    assert_eq!(all, (1_365 + 600, 3 + 4));
    assert_eq!(excl(&snap, "first_seen_at_the_root"), (200, 2, 200, 2));
    assert_eq!(excl(&snap, "first_seen_inside"), (400, 2, 400, 2));
    // The snapshot taken half-way (from this thread, so up to date): the
    // first 1000 + 32 bytes at the root, one call of each function.
    let (at_root, all) = root(&before_finish);
    assert_eq!(at_root, (1_032, 2, 0, 0));
    assert_eq!(all, (1_032 + 300, 2 + 2));
}

static KEPT: perflens::__private::Callsite = perflens::__private::Callsite::new("kept", || "");
static LEAKED: perflens::__private::Callsite = perflens::__private::Callsite::new("leaked", || "");

/// Allocates and frees `n` bytes, then unwinds (without the panic hook,
/// so the only allocation the unwinding adds is its exception object).
#[perflens::measure]
fn unwinds_after_allocating(n: usize) {
    black_box(Vec::<u8>::with_capacity(n));
    let _freed_while_unwinding = black_box(Vec::<u8>::with_capacity(2 * n));
    std::panic::resume_unwind(Box::new(()));
}

/// Keeps a buffer across its await; cancelled after its first poll.
#[perflens::measure]
async fn cancelled_holding_a_buffer() {
    let kept = black_box(Vec::<u8>::with_capacity(1_111));
    YieldOnce(false).await;
    black_box(&kept);
}

/// Allocates in both of its polls and unwinds out of the second.
#[perflens::measure]
async fn unwinds_in_its_second_poll() {
    black_box(Vec::<u8>::with_capacity(3_333));
    YieldOnce(false).await;
    black_box(Vec::<u8>::with_capacity(2_222));
    std::panic::resume_unwind(Box::new(()));
}

#[test]
fn leaked_guards_unwinding_and_cancelled_futures_charge_every_byte_once() {
    use perflens::__private::Guard;
    let _turn = one_session();
    let snap = std::thread::Builder::new()
        .name("faults".into())
        .spawn(|| {
            let session = Session::builder().ignore_env().start().unwrap();
            // A guard leaked inside another: what runs after the leak
            // belongs to the leaked frame until the outer guard drops.
            for _ in 0..2 {
                let kept = Guard::enter(&KEPT);
                black_box(Vec::<u8>::with_capacity(100));
                std::mem::forget(Guard::enter(&LEAKED));
                black_box(Vec::<u8>::with_capacity(200));
                k_buffers(1, 400);
                black_box(Vec::<u8>::with_capacity(300));
                drop(kept);
                black_box(Vec::<u8>::with_capacity(50));
            }
            // Unwinding through a measured function, caught at the root.
            assert!(std::panic::catch_unwind(|| unwinds_after_allocating(1_000)).is_err());
            let mut cx = Context::from_waker(Waker::noop());
            {
                let mut fut = std::pin::pin!(cancelled_holding_a_buffer());
                assert!(fut.as_mut().poll(&mut cx).is_pending());
                // Dropped here, at the root: its buffer is freed there.
            }
            {
                let mut fut = std::pin::pin!(unwinds_in_its_second_poll());
                assert!(fut.as_mut().poll(&mut cx).is_pending());
                let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _ = fut.as_mut().poll(&mut cx);
                }));
                assert!(polled.is_err());
            }
            let snap = session.raw_snapshot();
            drop(session.finish());
            snap
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(excl_row(&snap, "kept"), (200, 2, 200, 2));
    assert_eq!(excl_row(&snap, "leaked"), (1_000, 4, 1_000, 4));
    let under_leaked: u64 = (snap.threads.iter().flat_map(|t| &t.nodes))
        .filter(|n| {
            let names: Vec<&str> = (snap.frames(n.path).into_iter())
                .map(|c| snap.callsites[c as usize].name.as_str())
                .collect();
            names == ["kept", "leaked", name("k_buffers").as_str()]
        })
        .map(|n| n.alloc_bytes)
        .sum();
    assert_eq!(under_leaked, 800);
    // Its two buffers (one freed while unwinding), plus the exception
    // object the unwinding allocated: freed at the root by the catch.
    let (bytes, count, freed, frees) = excl(&snap, "unwinds_after_allocating");
    assert_eq!((count, freed, frees), (3, 3_000, 2));
    let exception = bytes - 3_000;
    assert!(exception > 0);
    assert_eq!(excl(&snap, "cancelled_holding_a_buffer"), (1_111, 1, 0, 0));
    assert_eq!(
        excl(&snap, "unwinds_in_its_second_poll"),
        (3_333 + 2_222 + exception, 3, 3_333 + 2_222, 2)
    );
    let t = (snap.threads.iter())
        .find(|t| t.name.as_deref() == Some("faults"))
        .unwrap();
    let root = t.nodes.iter().find(|n| n.path == 0).unwrap();
    assert_eq!(
        (root.alloc_bytes, root.alloc_count),
        (100, 2),
        "two 50-byte buffers"
    );
    assert_eq!(
        (root.free_bytes, root.free_count),
        (100 + 1_111 + 2 * exception, 5),
        "the buffers, the cancelled future's, the two exception objects"
    );
}

#[test]
fn a_thread_that_only_allocates_is_exact_in_every_session() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};
    let _turn = one_session();
    // The worker never calls a measured function: its allocations are its
    // root node's, and it stays alive (blocked) while each session takes
    // its snapshot.
    let barrier = Arc::new(Barrier::new(2));
    let order = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (barrier, order) = (barrier.clone(), order.clone());
        std::thread::Builder::new()
            .name("allocates-only".into())
            .spawn(move || {
                loop {
                    barrier.wait();
                    let n = order.load(Ordering::SeqCst);
                    if n == 0 {
                        return;
                    }
                    black_box(Vec::<u8>::with_capacity(n));
                    barrier.wait();
                }
            })
            .unwrap()
    };
    let ask = |n: usize| {
        order.store(n, Ordering::SeqCst);
        barrier.wait();
        barrier.wait();
    };
    // Before any session.
    ask(10);
    // Sizes shrink from session to session, so that no allocation sets
    // a new peak on the worker's block: only the session change can send
    // the worker's hook to its slow path.
    for round in 1..=5u64 {
        let session = Session::builder().ignore_env().start().unwrap();
        for _ in 0..round {
            ask(1_000 * (6 - round) as usize);
        }
        let snap = session.raw_snapshot();
        drop(session.finish());
        // Between sessions: not counted anywhere.
        ask(7);
        let t = (snap.threads.iter())
            .find(|t| t.name.as_deref() == Some("allocates-only"))
            .expect("the worker is in the snapshot");
        let root = t.nodes.iter().find(|n| n.path == 0).expect("a root node");
        let bytes = 1_000 * (6 - round) * round;
        assert_eq!(
            (
                root.alloc_bytes,
                root.alloc_count,
                root.free_bytes,
                root.free_count
            ),
            (bytes, round, bytes, round),
            "session {round}"
        );
        assert_eq!(t.live_bytes, 0);
    }
    order.store(0, Ordering::SeqCst);
    barrier.wait();
    worker.join().unwrap();
}

/// Allocates `n` bytes and keeps them while it waits at `barrier` twice
/// (inside this measured function).
#[perflens::measure]
fn parks_inside(n: usize, barrier: &std::sync::Barrier) -> Vec<u8> {
    let kept = black_box(Vec::<u8>::with_capacity(n));
    barrier.wait();
    barrier.wait();
    kept
}

#[test]
fn threads_alive_at_the_end_are_exact_in_the_final_report() {
    use std::sync::{Arc, Barrier};
    let _turn = one_session();
    // Four waits: the workers are started (what starting a thread
    // allocates is done before the session); the session has started;
    // the workers are parked; the session has finished.
    let barrier = Arc::new(Barrier::new(3));
    // A thread that made measured calls, then allocates at its root and
    // stays alive, parked, until the session has finished: those bytes
    // were charged to no node by any frame boundary.
    let at_root = {
        let barrier = barrier.clone();
        std::thread::Builder::new()
            .name("alive-at-root".into())
            .spawn(move || {
                barrier.wait();
                barrier.wait();
                k_buffers(2, 300);
                black_box(allocates_nothing(1));
                let kept = black_box(Vec::<u8>::with_capacity(4_321));
                barrier.wait();
                barrier.wait();
                drop(kept);
            })
            .unwrap()
    };
    // And one parked inside a measured function it allocated in.
    let inside = {
        let barrier = barrier.clone();
        std::thread::Builder::new()
            .name("alive-inside".into())
            .spawn(move || {
                barrier.wait();
                barrier.wait();
                k_buffers(1, 100);
                drop(parks_inside(2_345, &barrier));
            })
            .unwrap()
    };
    barrier.wait();
    let session = Session::builder().ignore_env().start().unwrap();
    barrier.wait();
    barrier.wait();
    // Live, while both are parked.
    let live = session.raw_snapshot();
    let report = session.finish();
    barrier.wait();
    at_root.join().unwrap();
    inside.join().unwrap();

    let root_of = |name: &str| {
        let t = (live.threads.iter())
            .find(|t| t.name.as_deref() == Some(name))
            .expect("the worker is in the snapshot");
        let root = t.nodes.iter().find(|n| n.path == 0);
        root.map_or((0, 0, 0, 0), |n| {
            (n.alloc_bytes, n.alloc_count, n.free_bytes, n.free_count)
        })
    };
    assert_eq!(root_of("alive-at-root"), (4_321, 1, 0, 0));
    assert_eq!(root_of("alive-inside"), (0, 0, 0, 0));
    assert_eq!(excl(&live, "k_buffers"), (700, 3, 700, 3));
    assert_eq!(excl(&live, "parks_inside"), (2_345, 1, 0, 0));

    let row = |name: &str| {
        let t = (report.threads.iter())
            .find(|t| t.name.as_deref() == Some(name))
            .expect("the worker is in the report");
        (
            t.alloc_bytes.unwrap(),
            t.alloc_count.unwrap(),
            t.free_bytes.unwrap(),
            t.free_count.unwrap(),
            t.live_bytes.unwrap(),
        )
    };
    // Everything each thread allocated during the session, exactly once.
    assert_eq!(row("alive-at-root"), (600 + 4_321, 3, 600, 2, 4_321));
    assert_eq!(row("alive-inside"), (100 + 2_345, 2, 100, 1, 2_345));
    let function = |f: &str| {
        let want = name(f);
        let r = (report.functions.iter())
            .find(|r| r.name == want)
            .expect("the function is in the report");
        r.alloc.unwrap().bytes
    };
    // (A call still running has no row of its own yet: its bytes are in
    // its thread's row, and in the raw snapshot's node, checked above.)
    assert_eq!(function("k_buffers"), 700);
    // The session's totals are the sum of the threads' (the two workers
    // and this one), so they hold the workers' bytes too.
    let totals = report.alloc.as_ref().expect("allocations were counted");
    let threads: u64 = (report.threads.iter())
        .map(|t| t.alloc_bytes.unwrap())
        .sum();
    assert_eq!(totals.total_bytes, threads);
}
