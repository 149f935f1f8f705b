//! The workload on a multi-thread tokio runtime, traced in both
//! formats (Chrome JSON and Perfetto's protobuf, each read back and
//! checked against its format's rules): task A awaits B, which waits for a
//! thread to wake it; task C, spawned, is moved from one worker to the other; a
//! `select!` cancels its losing branch; one await calls an unmeasured
//! async function that sleeps. Checked: one lane per task (C's polls, on
//! both workers, on one lane), the cancelled future marked, the arrows
//! from each creation and each await to the polls they lead to, each
//! await span's wait equal to its Waits row, the unmeasured sleep named
//! with its file and line.
#![cfg(feature = "enabled")]

mod common;

use common::trace::{self, Trace};
use perflens::{Report, Session};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Suspends exactly once, for at least `d`: its first poll returns
/// Pending and a thread wakes it `d` later. A timer does not do for the
/// exact poll counts this test checks: on a loaded machine (or under
/// qemu) a 2 ms sleep had expired before its first poll, and did not
/// suspend at all.
struct SuspendOnce {
    d: Duration,
    woken: Option<std::sync::Arc<AtomicBool>>,
}

fn suspend_once(d: Duration) -> SuspendOnce {
    SuspendOnce { d, woken: None }
}

impl std::future::Future for SuspendOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        match &self.woken {
            Some(w) if w.load(Ordering::SeqCst) => std::task::Poll::Ready(()),
            Some(_) => std::task::Poll::Pending,
            None => {
                let woken = std::sync::Arc::new(AtomicBool::new(false));
                let (w, waker, d) = (woken.clone(), cx.waker().clone(), self.d);
                std::thread::spawn(move || {
                    std::thread::sleep(d);
                    w.store(true, Ordering::SeqCst);
                    waker.wake();
                });
                self.woken = Some(woken);
                std::task::Poll::Pending
            }
        }
    }
}

#[perflens::measure]
async fn b() {
    suspend_once(Duration::from_millis(20)).await;
}

#[perflens::measure]
async fn a() {
    b().await;
}

#[perflens::measure]
async fn c() {
    for _ in 0..6 {
        tokio::task::yield_now().await;
        suspend_once(Duration::from_millis(2)).await;
    }
    to_the_other_worker().await;
}

/// Moves the task that awaits it to the other worker, whatever the
/// machine's load: a task spawned here goes to this worker's LIFO slot
/// (which no other worker steals), so it runs as soon as this task
/// suspends, and blocks this worker until the task has resumed; only
/// then does a thread outside the runtime wake this task, so the idle
/// worker is the one that polls it.
async fn to_the_other_worker() {
    static BLOCKING: AtomicBool = AtomicBool::new(false);
    static RESUMED: AtomicBool = AtomicBool::new(false);
    BLOCKING.store(false, Ordering::SeqCst);
    RESUMED.store(false, Ordering::SeqCst);
    // Waits for `flag` (at most a minute: a broken assumption fails the
    // test's assertions, it does not hang it).
    fn wait_for(flag: &AtomicBool) {
        let start = std::time::Instant::now();
        while !flag.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async {
        BLOCKING.store(true, Ordering::SeqCst);
        wait_for(&RESUMED);
    });
    std::thread::spawn(move || {
        wait_for(&BLOCKING);
        tx.send(()).unwrap();
    });
    rx.await.unwrap();
    RESUMED.store(true, Ordering::SeqCst);
}

#[perflens::measure]
async fn loser() {
    tokio::time::sleep(Duration::from_secs(5)).await;
}

/// Not measured: its sleep is a wait perflens does not see inside.
async fn plain() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

const PLAIN_LINE: u32 = line!() + 4;

#[perflens::measure]
async fn d() {
    plain().await;
}

#[perflens::measure]
async fn root() {
    let spawned = tokio::spawn(c());
    a().await;
    // `biased`: `loser` is polled first, so it is always polled (and
    // then cancelled), even when the timer has expired by then.
    tokio::select! {
        biased;
        _ = loser() => {}
        _ = tokio::time::sleep(Duration::from_millis(5)) => {}
    }
    d().await;
    spawned.await.unwrap();
}

#[test]
fn a_tokio_workload_has_the_timeline_it_ran() {
    for ext in ["json", "pftrace"] {
        let path =
            std::env::temp_dir().join(format!("perflens-tokio-{}.{ext}", std::process::id()));
        let report = run(&path);
        let timeline = match ext {
            "json" => {
                let text = std::fs::read_to_string(&path).unwrap();
                trace::from_json(&serde_json::from_str(&text).unwrap())
            }
            _ => trace::from_pftrace(&path),
        };
        std::fs::remove_file(&path).unwrap();
        check(&timeline, &report, ext);
    }
}

/// The workload on a two-worker runtime, traced to `path`.
fn run(path: &Path) -> Report {
    let session = Session::builder()
        .ignore_env()
        .trace(path)
        .trace_short_threads(Duration::ZERO)
        .wait_min(Duration::ZERO)
        .start()
        .unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(root());
    session.finish()
}

/// The last part of a path, with what follows it (`loser (cancelled)`).
fn short(name: &str) -> String {
    name.rsplit("::").next().unwrap().to_string()
}

/// `await file:line:col` of the `.await` in `snippet`, the first below
/// the line holding `function` in this file.
fn await_of(function: &str, snippet: &str) -> String {
    let source = include_str!("a_tokio_workload_has_the_timeline_it_ran.rs");
    format!(
        "await {}",
        trace::await_site(source, file!(), function, snippet)
    )
}

fn check(timeline: &Trace, report: &Report, format: &str) {
    // Lanes: root's task and C's (spawned: polled by the runtime
    // directly), each named after its root future; each holds its
    // futures and their awaits.
    let lane_of = |f: &str| -> &trace::Track {
        let found: Vec<&trace::Track> = (timeline.tasks())
            .filter(|t| {
                (t.slices.iter()).any(|s| !s.name.starts_with("await ") && short(&s.name) == f)
            })
            .collect();
        assert_eq!(found.len(), 1, "{format}: {f} on lanes {found:?}");
        found[0]
    };
    let (r, cl) = (lane_of("root"), lane_of("c"));
    assert_eq!(timeline.tasks().count(), 2, "{format}: {timeline:?}");
    let m = module_path!();
    assert_eq!(r.name, format!("task #1: {m}::root"), "{format}");
    assert_eq!(
        cl.name,
        format!("task #2: {m}::c (spawned by #1)"),
        "{format}"
    );
    let futures = |t: &trace::Track| -> Vec<String> {
        (t.slices.iter())
            .filter(|s| !s.name.starts_with("await "))
            .map(|s| short(&s.name))
            .collect()
    };
    assert_eq!(
        futures(r),
        ["root", "a", "b", "loser (cancelled)", "d"],
        "{format}"
    );
    assert_eq!(futures(cl), ["c"], "{format}");

    // C's polls: a first poll, a yield and a sleep each round, the hop;
    // on the threads that ran them, the last on another worker than the
    // one before it.
    let polls_of_c: Vec<(u64, u64)> = {
        let mut v: Vec<(u64, u64)> = (timeline.threads())
            .flat_map(|t| t.slices.iter().map(move |s| (t, s)))
            .filter(|(_, s)| short(&s.name) == "c")
            .map(|(t, s)| (s.begin, t.tid.expect("a worker's own track")))
            .collect();
        v.sort();
        v
    };
    assert_eq!(polls_of_c.len(), 1 + 6 * 2 + 1, "{format}");
    let workers: BTreeSet<u64> = polls_of_c.iter().map(|p| p.1).collect();
    assert_eq!(workers.len(), 2, "{format}: {polls_of_c:?}");
    let [.., before, last] = polls_of_c[..] else {
        unreachable!()
    };
    assert_ne!(before.1, last.1, "{format}: {polls_of_c:?}");
    // Everything root awaited was polled by `block_on`, on this thread.
    let main_polls: BTreeSet<String> = (timeline.threads())
        .flat_map(|t| &t.slices)
        .map(|s| short(&s.name))
        .filter(|s| s != "c")
        .collect();
    assert_eq!(
        main_polls,
        ["a", "b", "d", "loser", "root"].map(String::from).into(),
        "{format}"
    );

    // The select!'s loser is cancelled, and nothing else.
    let cancelled: Vec<String> = (timeline.tasks())
        .flat_map(|t| &t.slices)
        .filter(|s| s.args.get("cancelled").is_some_and(|v| v == true))
        .filter(|s| !s.name.starts_with("await "))
        .map(|s| short(&s.name))
        .collect();
    assert_eq!(cancelled, ["loser (cancelled)"], "{format}");

    // Arrows: from each future's creation to its first poll; from each
    // await that waited on a measured future to that future's polls
    // during the wait.
    let count = |from: &str, to: &str| {
        (timeline.flows.iter())
            .filter(|(f, t)| f == from && short(t) == to)
            .count()
    };
    for f in ["root", "a", "b", "c", "loser", "d"] {
        assert_eq!(
            count("created", f),
            1,
            "{format}: {f}: {:?}",
            timeline.flows
        );
    }
    let a_in_root = await_of("async fn root", "a().await");
    let b_in_a = await_of("async fn a", "b().await");
    let d_in_root = await_of("async fn root", "d().await");
    // B's two polls (the first, and the one after its timer) ran while
    // A awaited it, and A's while root awaited A.
    assert_eq!(count(&b_in_a, "b"), 2, "{format}: {:?}", timeline.flows);
    assert_eq!(count(&a_in_root, "a"), 2, "{format}: {:?}", timeline.flows);
    assert_eq!(count(&d_in_root, "d"), 2, "{format}: {:?}", timeline.flows);
    assert_eq!(
        timeline.flows.len(),
        6 + 2 * 3,
        "{format}: {:?}",
        timeline.flows
    );

    // Each await span's wait is its site's, summed over its awaits.
    let mut span_waits: BTreeMap<String, u64> = BTreeMap::new();
    for s in timeline.tasks().flat_map(|t| &t.slices) {
        let Some(site) = s.name.strip_prefix("await ") else {
            continue;
        };
        let site = site.trim_end_matches(" (cancelled)").to_string();
        *span_waits.entry(site).or_default() += s.args["wait_ns"].as_u64().unwrap();
    }
    assert!(!span_waits.is_empty(), "{format}");
    let mut compared = 0;
    for w in &report.waits {
        let site = format!("{}:{}:{}", w.file, w.line, w.column);
        // Awaits in the unmeasured `plain` have no lane.
        let Some(&spans) = span_waits.get(&site) else {
            continue;
        };
        compared += 1;
        // The same ticks, a cancelled await's too (its drop reads the
        // clock once for its span and its counters); each await (span)
        // and each thread's node (row) rounds to ns on its own: within
        // 1 ns an await.
        assert!(
            spans.abs_diff(w.wait_ns) <= w.count,
            "{format}: {site}: {spans} vs {} ({} cancelled)",
            w.wait_ns,
            w.cancelled
        );
    }
    assert_eq!(compared, span_waits.len(), "{format}: {span_waits:?}");
    // The unmeasured sleep: named with its file and line, uninstrumented.
    let plain_row = (report.waits.iter())
        .find(|w| w.line == PLAIN_LINE && w.file == file!())
        .unwrap_or_else(|| panic!("no Waits row at line {PLAIN_LINE}: {:?}", report.waits));
    assert!(plain_row.uninstrumented, "{plain_row:?}");
    // Its 10 ms run from the sleep's making; its wait from its first
    // Pending, in the same poll of `d`: what passed between the two (a
    // preemption) is in d's busy time.
    let d_busy = (report.functions.iter())
        .find(|f| f.name.ends_with("::d"))
        .and_then(|f| f.busy_ns)
        .expect("d's busy time");
    assert!(
        plain_row.wait_ns + d_busy >= 10_000_000,
        "{plain_row:?}, d busy {d_busy} ns"
    );
}
