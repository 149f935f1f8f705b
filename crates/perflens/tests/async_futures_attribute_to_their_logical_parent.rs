//! Futures land on the path of the code that created them, whichever
//! thread polls them; dropped futures count as cancelled.
#![cfg(feature = "enabled")]

mod common;
use common::stress::YieldOnce;
use perflens::Session;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::ThreadId;
use std::time::Duration;

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

#[perflens::measure]
fn leaf() {}

/// How many times the children's sleeps answered `Pending`: a sleep whose
/// deadline has passed by its first poll (a worker preempted for a
/// millisecond on a busy host) is ready at once, so the children's poll
/// count is only known by counting.
static SLEEPS_PENDING: AtomicU64 = AtomicU64::new(0);

/// Polls `inner`, counting its `Pending` answers in [`SLEEPS_PENDING`].
struct CountPending<F>(std::pin::Pin<Box<F>>);

impl<F: Future> Future for CountPending<F> {
    type Output = F::Output;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let out = self.0.as_mut().poll(cx);
        if out.is_pending() {
            SLEEPS_PENDING.fetch_add(1, Ordering::Relaxed);
        }
        out
    }
}

#[perflens::measure]
async fn child(seen: Arc<Mutex<Vec<ThreadId>>>) {
    for _ in 0..5 {
        seen.lock().unwrap().push(std::thread::current().id());
        CountPending(Box::pin(tokio::time::sleep(Duration::from_micros(200)))).await;
        tokio::task::yield_now().await;
    }
    leaf();
}

#[perflens::measure]
async fn parent(seen: Arc<Mutex<Vec<ThreadId>>>) {
    let handles: Vec<_> = (0..16).map(|_| tokio::spawn(child(seen.clone()))).collect();
    for h in handles {
        h.await.unwrap();
    }
}

#[perflens::measure]
async fn never() {
    std::future::pending::<()>().await
}

#[perflens::measure]
async fn two_step(step: Arc<Mutex<u32>>) -> u32 {
    YieldOnce(false).await;
    leaf();
    *step.lock().unwrap() += 1;
    7
}

/// Spins `ms` milliseconds in each poll; `Ready` on poll `ready_at`
/// (never when 0).
struct Spin {
    ms: u64,
    polls: u32,
    ready_at: u32,
}

impl Future for Spin {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(self.ms) {}
        self.polls += 1;
        if self.polls == self.ready_at {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[perflens::measure]
async fn spun(ms: u64, ready_at: u32) {
    Spin {
        ms,
        polls: 0,
        ready_at,
    }
    .await
}

#[perflens::measure]
fn spawner() -> impl Future<Output = u32> + Send {
    two_step(Arc::new(Mutex::new(0)))
}

#[test]
fn async_futures_attribute_to_their_logical_parent() {
    let session = Session::builder().ignore_env().start().unwrap();

    // 1. A multi-thread runtime: 16 tasks spawned inside `parent`, polled
    //    by whichever worker picks them up.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(parent(seen.clone()));
    drop(rt);

    // 2. Deterministic migration: created under `spawner` on this thread,
    //    first polled on thread A, finished on thread B.
    let fut = spawner();
    let fut = std::thread::spawn(move || {
        let mut fut = Box::pin(fut);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        fut
    })
    .join()
    .unwrap();
    let out = std::thread::spawn(move || {
        let mut fut = fut;
        let mut cx = Context::from_waker(Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("second poll must finish"),
        }
    })
    .join()
    .unwrap();
    assert_eq!(out, 7);

    // 3. Cancellation: one dropped after a poll, one never polled, one
    //    cut by a timeout.
    {
        let mut f = pin!(never());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(f.as_mut().poll(&mut cx).is_pending());
    }
    drop(never());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(async { tokio::time::timeout(Duration::from_millis(1), never()).await });
    assert!(r.is_err());

    // 4. A cancelled future's time: one polled once (20 ms of work), then
    //    left waiting 30 ms and dropped; one completed in two polls of
    //    10 ms with 5 ms between them.
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut f = pin!(spun(20, 0));
        assert!(f.as_mut().poll(&mut cx).is_pending());
        std::thread::sleep(Duration::from_millis(30));
    }
    {
        let mut f = pin!(spun(10, 2));
        assert!(f.as_mut().poll(&mut cx).is_pending());
        std::thread::sleep(Duration::from_millis(5));
        assert!(f.as_mut().poll(&mut cx).is_ready());
    }

    let report = session.finish();
    let path = |frames: &[&str]| {
        let names: Vec<String> = frames.iter().map(|f| name(f)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report.path(&names).map(|p| p.calls)
    };
    // All 16 children under `parent`, with their leaf, none at the root.
    assert_eq!(path(&["parent", "child", "leaf"]), Some(16));
    assert_eq!(path(&["child", "leaf"]), None);
    let segments = &report
        .path(&[&name("parent"), &name("child"), &name("leaf")])
        .unwrap()
        .segments;
    let calls: Vec<u64> = segments.iter().map(|s| s.calls).collect();
    assert_eq!(calls, [1, 16, 16]);
    let parent = report.function(&name("parent")).unwrap();
    assert_eq!((parent.calls, parent.cancelled), (1, Some(0)));
    let child = report.function(&name("child")).unwrap();
    assert_eq!(child.calls, 16);
    // Each task: its first poll, one more after each of its 5 yields (a
    // tokio yield is always `Pending` once) and after each time a sleep
    // answered `Pending` (at most once: a task is polled again only when
    // woken, and its timer wakes it once, when the sleep is over); almost
    // always 11 polls a task.
    let sleeps_pending = SLEEPS_PENDING.load(Ordering::Relaxed);
    assert!(sleeps_pending <= 16 * 5, "{sleeps_pending}");
    assert_eq!(
        child.polls,
        Some(16 + 16 * 5 + sleeps_pending),
        "first poll + 5 yields + {sleeps_pending} pending sleeps"
    );
    assert_eq!(child.cancelled, Some(0));
    for row in [parent, child] {
        let busy = row.busy_ns.unwrap();
        assert!(row.self_ns <= busy && busy <= row.total_ns, "{row:?}");
        assert_eq!(row.wait_ns, Some(row.total_ns - busy), "{row:?}");
    }
    // Each child slept 5 x 200 µs between polls.
    assert!(child.wait_ns.unwrap() >= 16 * 1_000_000, "{child:?}");
    // The children were created on this thread and polled elsewhere: a
    // multi-thread runtime runs spawned tasks on its workers only, never
    // on the thread in `block_on`. How many workers took part is the
    // runtime's business, so it is not checked.
    let here = std::thread::current().id();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 16 * 5);
    assert!(
        seen.iter().all(|&t| t != here),
        "a child ran on the test thread"
    );

    // The migrated future: under `spawner`, 2 polls, its leaf under it.
    assert_eq!(path(&["spawner", "two_step", "leaf"]), Some(1));
    let two = report.function(&name("two_step")).unwrap();
    assert_eq!((two.calls, two.polls, two.cancelled), (1, Some(2), Some(0)));

    let never_row = report.function(&name("never")).unwrap();
    assert_eq!(never_row.calls, 0);
    assert_eq!(never_row.cancelled, Some(3));
    // One manual poll; `timeout` polls its future when first polled and
    // again when woken by the timer, before it sees the deadline.
    assert_eq!(never_row.polls, Some(3));
    // Futures that never completed still show how long they lived.
    assert!(never_row.total_ns >= 1_000_000, "{never_row:?}");
    assert_eq!(report.path(&[name("never").as_str()]).unwrap().calls, 0);

    // The cancelled future's work and wait count in the row's time, with
    // self <= busy <= total; calls and latency describe the completed one.
    let spun = report.function(&name("spun")).unwrap();
    let ms = |ns: u64| ns / 1_000_000;
    assert_eq!(
        (spun.calls, spun.cancelled, spun.polls),
        (1, Some(1), Some(3))
    );
    let (busy, wait) = (spun.busy_ns.unwrap(), spun.wait_ns.unwrap());
    assert!(ms(busy) >= 40, "{spun:?}");
    assert!(ms(wait) >= 35, "{spun:?}");
    assert_eq!(spun.total_ns, busy + wait);
    assert!(spun.self_ns <= busy && ms(spun.self_ns) >= 40, "{spun:?}");
    assert!(ms(spun.total_ns) >= 75, "{spun:?}");
    // Latency is the completed future's alone (two 10 ms polls and a 5 ms
    // sleep): the cancelled one's lifetime (20 ms of work, 30 ms of
    // waiting) is in total_ns but not in the average.
    assert!(ms(spun.avg_ns) >= 25, "{spun:?}");
    assert!(ms(spun.total_ns - spun.avg_ns) >= 50, "{spun:?}");
    // One value: every percentile is its bucket, within 1/64 (and a
    // nanosecond of rounding) of it.
    for p in [spun.p50_ns, spun.p99_ns] {
        assert!(p.abs_diff(spun.avg_ns) <= spun.avg_ns / 64 + 1, "{spun:?}");
    }
}
