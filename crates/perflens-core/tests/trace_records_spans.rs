//! Trace mode records each timed sync call as a begin and an end event,
//! in order, on its thread; the spans' durations are the aggregates'
//! ticks; a small buffer keeps the newest events and counts the rest;
//! exited threads give their chunks back; a session without a trace
//! writes none.

use perflens_core::trace::{
    CHUNK_BYTES, FUT_DROP, FUT_NEW, MIN_BUFFER, POLL_BEGIN, POLL_END, READY, RawTrace, SLOTS,
    SPAN_BEGIN, SPAN_END,
};
use perflens_core::{
    Callsite, ClockSource, Guard, Mode, RawSnapshot, RecordingOptions, instrument, start,
};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

static A: Callsite = Callsite::new("app::a", || "");
static B: Callsite = Callsite::new("app::b", || "");
static F: Callsite = Callsite::new("app::f", || "");
static G: Callsite = Callsite::new("app::g", || "");

/// `Pending` once (waking its task), then `Ready`.
struct Once(bool);

impl Future for Once {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// One session at a time in this process.
static SERIAL: Mutex<()> = Mutex::new(());

fn a() {
    let _g = Guard::enter(&A);
    for _ in 0..2 {
        let _g = Guard::enter(&B);
        std::hint::black_box(0);
    }
}

fn traced(buffer: usize, work: impl FnOnce()) -> (RawSnapshot, RawTrace) {
    let config = RecordingOptions {
        trace_buffer: Some(buffer),
        clock: Some(ClockSource::Tsc),
        // Traced calls are timed ones, whatever the mode asked.
        mode: Mode::Count,
        ..RecordingOptions::default()
    };
    let rec = start(&config).expect("a session");
    assert_eq!(rec.mode(), Mode::Timed);
    work();
    let (snap, live, trace) = rec.finish_traced();
    live.close();
    (snap, trace.expect("a trace"))
}

/// The name of node `node` of thread `index` in `snap`.
fn name_of(snap: &RawSnapshot, index: u32, node: u32) -> &str {
    let t = (snap.threads.iter())
        .find(|t| t.index == index)
        .expect("the thread");
    let n = (t.nodes.iter())
        .find(|n| n.index == node)
        .expect("the node");
    let path = &snap.paths[n.path as usize];
    &snap.callsites[path.callsite as usize].name
}

#[test]
fn trace_mode() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    spans_in_order_with_the_aggregates_ticks();
    a_small_buffer_keeps_the_newest_and_counts_the_rest();
    threads_each_have_their_own_stream_and_exited_ones_give_room_back();
    a_session_without_a_trace_writes_none();
    a_futures_polls_are_slices_around_what_they_ran();
}

fn a_futures_polls_are_slices_around_what_they_ran() {
    let (snap, trace) = traced(MIN_BUFFER, || {
        let mut fut = pin!(instrument(&F, async {
            a();
            Once(false).await;
            a();
            // Made inside F's poll, dropped before its first poll ends.
            let mut inner = pin!(instrument(&G, Once(false)));
            let mut cx = Context::from_waker(Waker::noop());
            assert!(inner.as_mut().poll(&mut cx).is_pending());
        }));
        let mut cx = Context::from_waker(Waker::noop());
        while fut.as_mut().poll(&mut cx).is_pending() {}
    });
    let t = &trace.threads[0];
    let label = |kind: u8, arg: u32| match kind {
        FUT_NEW | FUT_DROP => snap.callsites[arg as usize].name.as_str(),
        _ => name_of(&snap, t.index, arg),
    };
    let shown: Vec<(u8, u8, &str)> = (t.events.iter())
        .map(|e| (e.kind, e.flags, label(e.kind, e.arg)))
        .collect();
    let call = [
        (SPAN_BEGIN, 0, "app::a"),
        (SPAN_BEGIN, 0, "app::b"),
        (SPAN_END, 0, "app::b"),
        (SPAN_BEGIN, 0, "app::b"),
        (SPAN_END, 0, "app::b"),
        (SPAN_END, 0, "app::a"),
    ];
    let mut want = vec![(FUT_NEW, 0, "app::f"), (POLL_BEGIN, 0, "app::f")];
    want.extend(call);
    want.extend([(POLL_END, 0, "app::f"), (POLL_BEGIN, 0, "app::f")]);
    want.extend(call);
    want.extend([
        (FUT_NEW, 0, "app::g"),
        (POLL_BEGIN, 0, "app::g"),
        (POLL_END, 0, "app::g"),
        (FUT_DROP, 0, "app::g"),
        (POLL_END, READY, "app::f"),
    ]);
    assert_eq!(shown, want);
    // Ids: the thread's index above bit 40, one per future; a future
    // made inside another's poll names it as its maker; polls and the
    // drop carry their future's id.
    let ids: Vec<[u64; 2]> = (t.events.iter())
        .filter(|e| matches!(e.kind, FUT_NEW | POLL_BEGIN | FUT_DROP))
        .map(|e| e.ids)
        .collect();
    let (f, g) = (ids[0][0], ids[3][0]);
    assert_eq!(f >> 40, u64::from(t.index));
    assert_ne!(f, g);
    assert_eq!(ids, [[f, 0], [f, 0], [f, 0], [g, f], [g, 0], [g, 0]]);
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Millions of events into a 4 MiB buffer: resident memory grows by the
/// buffer at most (plus a little for the pool's bookkeeping), every
/// event is kept or counted, and the pages go back at the end.
#[test]
fn trace_memory_stays_within_the_buffer_at_any_rate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const BUFFER: usize = 4 << 20;
    const CALLS: u64 = 3_000_000;
    // glibc raises its mmap threshold after a big block is freed (an
    // earlier test's), and then keeps the decoded events' megabytes in an
    // arena after they are freed: resident memory would measure the
    // allocator. A fixed threshold maps and unmaps big blocks.
    // SAFETY: mallopt only changes a malloc tunable; no allocation is
    // under way on this thread, and others read the tunable atomically.
    assert_eq!(
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10) },
        1
    );
    let before = rss_kib();
    let mut peak = 0;
    let (_, trace) = traced(BUFFER, || {
        for k in 0..CALLS {
            let _g = Guard::enter(&B);
            if k % 500_000 == 0 {
                peak = peak.max(rss_kib());
            }
        }
        peak = peak.max(rss_kib());
    });
    let grown = peak.saturating_sub(before);
    // Under qemu-user (`scripts/test --aarch64`) the process's resident
    // memory is qemu's too, whose code cache grows as it translates the
    // code this test runs for the first time (5,452 KiB grown, where the
    // buffer and the 1 MiB allowance are 5,120).
    if std::env::var_os("TEST_UNDER_QEMU").is_some() {
        eprintln!("under qemu-user, not checked: RSS grew {grown} KiB, qemu's code cache included");
    } else {
        assert!(
            grown <= (BUFFER >> 10) as u64 + 1024,
            "RSS grew {grown} KiB"
        );
    }
    assert_eq!(trace.events() as u64 + trace.dropped(), 2 * CALLS);
    assert!(trace.dropped() > CALLS);
    assert_eq!(
        trace.events(),
        (BUFFER / CHUNK_BYTES - 1) * SLOTS + (2 * CALLS as usize) % SLOTS
    );
    // Given back (madvise): the buffer's pages are no longer resident
    // (once the decoded events are freed too). Where pages cannot be
    // given back (the portable build) the buffer stays resident, kept
    // for the next session of its size.
    drop(trace);
    if perflens_sys::CAPABILITIES.page_release {
        assert!(
            rss_kib() < peak.saturating_sub((BUFFER >> 10) as u64 / 2),
            "{} vs {peak}",
            rss_kib()
        );
    } else {
        assert!(
            rss_kib() >= peak.saturating_sub((BUFFER >> 10) as u64 / 2),
            "{} vs {peak}",
            rss_kib()
        );
    }
}

fn spans_in_order_with_the_aggregates_ticks() {
    let (snap, trace) = traced(MIN_BUFFER, || {
        for _ in 0..3 {
            a();
        }
    });
    assert_eq!(trace.buffer_bytes, MIN_BUFFER);
    assert_eq!(trace.dropped(), 0);
    assert_eq!(trace.threads.len(), 1, "{trace:?}");
    let t = &trace.threads[0];
    let shown: Vec<(u8, &str)> = (t.events.iter())
        .map(|e| (e.kind, name_of(&snap, t.index, e.arg)))
        .collect();
    let call: [(u8, &str); 6] = [
        (SPAN_BEGIN, "app::a"),
        (SPAN_BEGIN, "app::b"),
        (SPAN_END, "app::b"),
        (SPAN_BEGIN, "app::b"),
        (SPAN_END, "app::b"),
        (SPAN_END, "app::a"),
    ];
    assert_eq!(shown, call.repeat(3));
    assert!(t.events.windows(2).all(|w| w[0].ticks <= w[1].ticks));
    // Each node's total is its spans' durations: the same ticks.
    for name in ["app::a", "app::b"] {
        let mut open = None;
        let mut ticks = 0u64;
        for e in &t.events {
            if name_of(&snap, t.index, e.arg) == name {
                match e.kind {
                    SPAN_BEGIN => open = Some(e.ticks),
                    _ => ticks += e.ticks - open.take().expect("a begin"),
                }
            }
        }
        let node = (snap.threads.iter().flat_map(|t| &t.nodes))
            .find(|n| snap.callsites[snap.paths[n.path as usize].callsite as usize].name == name)
            .unwrap();
        assert_eq!(
            (ticks as f64 * snap.ns_per_tick).round() as u64,
            node.total_ns,
            "{name}"
        );
    }
}

fn a_small_buffer_keeps_the_newest_and_counts_the_rest() {
    const CALLS: u64 = 200_000;
    let (_, trace) = traced(MIN_BUFFER, || {
        for _ in 0..CALLS {
            let _g = Guard::enter(&B);
        }
    });
    let chunks = (MIN_BUFFER / CHUNK_BYTES) as u64;
    let events = 2 * CALLS;
    // Whole chunks go, oldest first: the last `chunks` stay (the
    // newest one partly filled).
    let filled = events.div_ceil(SLOTS as u64);
    let kept = (chunks - 1) * SLOTS as u64 + (events - (filled - 1) * SLOTS as u64);
    assert_eq!(trace.events() as u64, kept);
    assert_eq!(trace.dropped(), events - kept);
    assert_eq!(trace.dropped_without_room, 0);
    let t = &trace.threads[0];
    assert_eq!(t.dropped, events - kept);
    // The newest kept, after every dropped one, in begin/end pairs.
    assert!(t.dropped_until_ticks < t.events[0].ticks);
    assert!(t.dropped_until_ticks > 0);
    for pair in t.events.chunks(2) {
        assert_eq!([pair[0].kind, pair[1].kind], [SPAN_BEGIN, SPAN_END]);
    }
}

fn threads_each_have_their_own_stream_and_exited_ones_give_room_back() {
    // Twice as many threads as the buffer has chunks, one after the
    // other: each takes a chunk and gives it back as it exits.
    let threads = 2 * MIN_BUFFER / CHUNK_BYTES;
    let (snap, trace) = traced(MIN_BUFFER, || {
        for _ in 0..threads {
            std::thread::spawn(|| {
                for _ in 0..5 {
                    a();
                }
            })
            .join()
            .unwrap();
        }
    });
    assert_eq!(trace.dropped_without_room, 0);
    // Every event is kept or counted: 5 calls of a, 10 of b, a thread.
    assert_eq!(
        trace.events() as u64 + trace.dropped(),
        (threads * 30) as u64
    );
    // The newest threads' streams are whole.
    let last = trace.threads.last().unwrap();
    assert_eq!(last.events.len(), 30);
    assert_eq!(last.dropped, 0);
    assert_eq!(name_of(&snap, last.index, last.events[0].arg), "app::a");
    let mut indices: Vec<u32> = trace.threads.iter().map(|t| t.index).collect();
    indices.dedup();
    assert_eq!(indices.len(), trace.threads.len());
}

fn a_session_without_a_trace_writes_none() {
    let rec = start(&RecordingOptions {
        clock: Some(ClockSource::Tsc),
        ..RecordingOptions::default()
    })
    .unwrap();
    a();
    let (snap, live, trace) = rec.finish_traced();
    live.close();
    assert!(trace.is_none());
    let calls: u64 = snap
        .threads
        .iter()
        .flat_map(|t| &t.nodes)
        .map(|n| n.calls)
        .sum();
    assert_eq!(calls, 3);
}
