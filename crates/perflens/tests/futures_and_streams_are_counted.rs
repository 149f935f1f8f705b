//! `perflens::future!` and `perflens::stream!` keep the wrapped type's
//! behaviour (output and items, `size_hint`, fusedness, `Unpin`) and
//! count, exactly: a future's polls, busy and waiting time, completed or
//! cancelled; a stream's items, polls, `Pending` polls, time to its first
//! item, intervals between items, ended or dropped.
#![cfg(all(feature = "enabled", feature = "flow-stream"))]

use futures_core::{FusedFuture, FusedStream, Stream};
use perflens::{Report, Session};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Sessions are process-wide: the tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::black_box(0);
    }
}

/// Busy `BUSY` in each poll; `Pending` `left` times, then `Ready(7)`.
struct Work {
    left: u32,
}

const BUSY: Duration = Duration::from_millis(2);
const GAP: Duration = Duration::from_millis(5);

impl Future for Work {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        spin(BUSY);
        if self.left == 0 {
            return Poll::Ready(7);
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl FusedFuture for Work {
    fn is_terminated(&self) -> bool {
        self.left == 0
    }
}

/// Yields `items`, each after one `Pending`, then ends.
struct Items {
    items: Vec<u32>,
    ready: bool,
}

impl Stream for Items {
    type Item = u32;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
        if self.items.is_empty() {
            return Poll::Ready(None);
        }
        let ready = self.ready;
        self.ready = !ready;
        if !ready {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(Some(self.items.remove(0)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.items.len(), Some(self.items.len()))
    }
}

impl FusedStream for Items {
    fn is_terminated(&self) -> bool {
        self.items.is_empty()
    }
}

fn items(v: &[u32]) -> Items {
    Items {
        items: v.to_vec(),
        ready: false,
    }
}

/// Polls `fut` to completion, sleeping `GAP` after each `Pending`.
fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::sleep(GAP),
        }
    }
}

/// Takes every item of `s`, sleeping `GAP` after each `Pending`.
fn collect<S: Stream>(s: S) -> Vec<S::Item> {
    let mut s = pin!(s);
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    loop {
        match s.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(v)) => out.push(v),
            Poll::Ready(None) => return out,
            Poll::Pending => std::thread::sleep(GAP),
        }
    }
}

fn workload() {
    // Two Pendings: three polls of 2 ms, two gaps of 5 ms.
    assert_eq!(
        block_on(perflens::future!(Work { left: 2 }, label = "work")),
        7
    );
    // Polled once, then dropped.
    {
        let mut f = pin!(perflens::future!(Work { left: 5 }, label = "work"));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(f.as_mut().poll(&mut cx).is_pending());
    }
    let s = perflens::stream!(items(&[1, 2, 3]), label = "items");
    assert_eq!(s.size_hint(), (3, Some(3)));
    assert!(!s.is_terminated());
    assert_eq!(collect(s), [1, 2, 3]);
    // One item taken, then dropped.
    let mut s = pin!(perflens::stream!(items(&[4, 5]), label = "items"));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(s.as_mut().poll_next(&mut cx).is_pending());
    assert_eq!(s.as_mut().poll_next(&mut cx), Poll::Ready(Some(4)));
}

fn row<'a, T>(rows: &'a [T], name: &str, name_of: fn(&T) -> &str) -> &'a T {
    rows.iter().find(|r| name_of(r) == name).expect("a row")
}

fn session(mode: perflens::Mode) -> Report {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Session::builder().ignore_env().mode(mode).start().unwrap();
    workload();
    s.finish()
}

#[test]
fn a_future_and_a_stream_are_counted_and_timed() {
    let report = session(perflens::Mode::Timed);
    let work = row(&report.futures, "work", |r| &r.name);
    assert_eq!((work.completed, work.cancelled, work.polls), (1, 1, 4));
    // Four polls of 2 ms.
    let ms = 1_000_000;
    assert!(work.busy_ns >= 8 * ms && work.busy_ns < 40 * ms, "{work:?}");
    // The completed one waited two gaps of 5 ms; the cancelled one
    // waited nothing after its poll.
    assert!(
        work.wait_ns >= 10 * ms && work.wait_ns < 60 * ms,
        "{work:?}"
    );
    // At least three polls and two gaps: 16 ms. A percentile is its
    // bucket's midpoint, within 1/64 of the value (32 buckets an octave):
    // a wall of 16.1 ms may read 15.95 (it did, in CI).
    assert!(work.wall_p50_ns >= 16 * ms - 16 * ms / 32, "{work:?}");
    assert_eq!(work.wall_ns, work.busy_ns + work.wait_ns);

    let s = row(&report.streams, "items", |r| &r.name);
    assert_eq!((s.created, s.items, s.ended, s.dropped), (2, 4, 1, 1));
    // 3 Pendings + 3 items + the end; 1 Pending + 1 item.
    assert_eq!((s.polls, s.pending_polls), (9, 4));
    assert_eq!((s.first_item_count, s.interval_count), (2, 2));
    // Each item came one gap after the one before.
    assert!(
        s.interval_p50_ns >= 4 * ms && s.interval_max_ns < 100 * ms,
        "{s:?}"
    );
    assert!(s.first_item_mean_ns >= 2 * ms, "{s:?}");
    // Neither is a function.
    assert!(report.functions.is_empty());
    assert_eq!(report.threads.iter().map(|t| t.calls).sum::<u64>(), 0);
}

#[test]
fn count_mode_counts_the_same_without_a_clock() {
    let report = session(perflens::Mode::Count);
    let work = row(&report.futures, "work", |r| &r.name);
    assert_eq!((work.completed, work.cancelled, work.polls), (1, 1, 4));
    assert_eq!((work.busy_ns, work.wait_ns, work.wall_ns), (0, 0, 0));
    let s = row(&report.streams, "items", |r| &r.name);
    assert_eq!(
        (s.items, s.polls, s.pending_polls, s.ended, s.dropped),
        (4, 9, 4, 1, 1)
    );
    assert_eq!((s.first_item_count, s.interval_count), (0, 0));
}

#[test]
fn the_wrappers_keep_unpin_and_fusedness() {
    fn unpin<T: Unpin>(_: &T) {}
    let f = perflens::future!(std::future::ready(3u8));
    unpin(&f);
    let w = perflens::future!(Work { left: 0 });
    assert!(w.is_terminated());
    let s = perflens::stream!(items(&[]));
    unpin(&s);
    assert!(s.is_terminated());
    assert_eq!(block_on(f), 3);
}
