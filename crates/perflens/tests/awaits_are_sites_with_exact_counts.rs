//! The macros turn each `.await` of a measured future into an await site
//! (issue 13, item 1): one site per `.await` in the source, at its line
//! and column, with the awaited expression's text; exact counts of
//! awaits and suspensions, the waits, the measured child below its site;
//! the awaiting functions keep the calls, polls and self time they have
//! without sites. Driven by hand (no runtime) for exact numbers, then
//! under tokio for an unmeasured wait.
#![cfg(feature = "enabled")]

use perflens::Session;
use perflens_core::{AwaitSiteInfo, CallsiteKind, RawSnapshot};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Sessions are process-wide: the tests of this file take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// This file's text, to find the `.await`s' columns.
const SOURCE: &str = include_str!("awaits_are_sites_with_exact_counts.rs");

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

/// Returns `Pending` `.0` times (waking its task each time), then `Ready`.
struct PendingN(u32);

impl Future for PendingN {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

const GAP: Duration = Duration::from_millis(2);

std::thread_local! {
    /// When each poll of this thread's last [`block_on`] began and ended.
    static POLLS: std::cell::RefCell<Vec<(Instant, Instant)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Polls `fut` to completion on this thread, sleeping `GAP` after each
/// `Pending`; notes when each poll began and ended (see [`wait_bounds`]).
fn block_on<F: Future>(fut: F) -> F::Output {
    POLLS.with_borrow_mut(|p| p.clear());
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let began = Instant::now();
        let poll = fut.as_mut().poll(&mut cx);
        POLLS.with_borrow_mut(|p| p.push((began, Instant::now())));
        match poll {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::sleep(GAP),
        }
    }
}

/// Spins for `ms` of wall time, and notes in `took` how long it took
/// in fact (more, when the thread was preempted on a loaded machine:
/// a function's self time counts that too).
fn spin(ms: u64, took: &AtomicU64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        std::hint::black_box(0);
    }
    took.store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

/// What each function's spin took.
static A_SPIN: AtomicU64 = AtomicU64::new(0);
static B_SPIN: AtomicU64 = AtomicU64::new(0);
static TWIN_A_SPIN: AtomicU64 = AtomicU64::new(0);
static TWIN_B_SPIN: AtomicU64 = AtomicU64::new(0);

/// Busy time of `b` after its await, and of `a` after its awaits. `b`'s
/// is ten times `a`'s: were it charged to `a`'s self time, that would
/// stand far above the preemptions a loaded machine adds to wall times.
const B_MS: u64 = 20;
const A_MS: u64 = 2;

static B_LINE: AtomicU32 = AtomicU32::new(0);
static A_LINE: AtomicU32 = AtomicU32::new(0);

#[perflens::measure]
async fn b() {
    B_LINE.store(line!() + 1, Ordering::Relaxed);
    PendingN(1).await;
    spin(B_MS, &B_SPIN);
}

#[perflens::measure]
async fn a() {
    A_LINE.store(line!() + 1, Ordering::Relaxed);
    PendingN(3).await;
    std::future::ready(()).await;
    b().await;
    spin(A_MS, &A_SPIN);
}

/// Awaits the same futures as `b` and `a` where the rewrite does not
/// reach (inside a macro): no sites.
macro_rules! bare {
    ($e:expr) => {
        $e.await
    };
}

#[perflens::measure]
async fn twin_b() {
    bare!(PendingN(1));
    spin(B_MS, &TWIN_B_SPIN);
}

#[perflens::measure]
async fn twin_a() {
    bare!(PendingN(3));
    bare!(std::future::ready(()));
    bare!(twin_b());
    spin(A_MS, &TWIN_A_SPIN);
}

/// What the snapshot holds for one await site path.
#[derive(Debug)]
struct Site {
    info: AwaitSiteInfo,
    path: u32,
    calls: u64,
    timed_calls: u64,
    suspensions: u64,
    wait_ns: u64,
    measured_ns: u64,
    cancelled: u64,
    /// Callsite names of the paths right below the site's.
    children: Vec<String>,
}

/// The await sites on paths whose parent path is the function `parent`,
/// ordered by line.
fn sites_under(raw: &RawSnapshot, infos: &[AwaitSiteInfo], parent: &str) -> Vec<Site> {
    let cs_name = |cs: u32| raw.callsites[cs as usize].name.clone();
    let mut out = Vec::new();
    for (p, path) in raw.paths.iter().enumerate() {
        let p = p as u32;
        if raw.callsites[path.callsite as usize].kind != CallsiteKind::Await
            || p == path.parent
            || cs_name(raw.paths[path.parent as usize].callsite) != parent
        {
            continue;
        }
        let info = (infos.iter())
            .find(|i| i.callsite == path.callsite)
            .expect("every await callsite has its source location")
            .clone();
        let mut s = Site {
            info,
            path: p,
            calls: 0,
            timed_calls: 0,
            suspensions: 0,
            wait_ns: 0,
            measured_ns: 0,
            cancelled: 0,
            children: (raw.paths.iter().enumerate())
                .filter(|(c, q)| q.parent == p && *c as u32 != p)
                .map(|(_, q)| cs_name(q.callsite))
                .collect(),
        };
        for n in raw.threads.iter().flat_map(|t| &t.nodes) {
            if n.path == p {
                s.calls += n.calls;
                s.timed_calls += n.timed_calls;
                s.suspensions += n.polls;
                s.wait_ns += n.total_ns;
                s.measured_ns += n.busy_ns;
                s.cancelled += n.cancelled;
            }
        }
        out.push(s);
    }
    out.sort_by_key(|s| (s.info.line, s.info.column));
    out
}

/// The 1-based column of the first `.await` on `line` of this file.
fn await_column(line: u32) -> u32 {
    let text = SOURCE.lines().nth(line as usize - 1).unwrap();
    text.find(".await").expect("an .await on the line") as u32 + 1
}

/// Asserts a site's source location: this file, `line`, the `.await`'s
/// column, and `expr` as its text, which is on that line.
fn assert_at(s: &Site, line: u32, expr: &str) {
    assert_eq!(s.info.file, file!());
    assert_eq!(s.info.line, line, "{s:?}");
    assert_eq!(s.info.column, await_column(line), "{s:?}");
    assert_eq!(s.info.expr, expr);
    let text = SOURCE.lines().nth(line as usize - 1).unwrap();
    assert!(text.contains(&format!("{expr}.await")), "{text:?}");
}

/// What an await that suspended across the gaps `gaps` of the last
/// [`block_on`] (gap `i`: from poll `i` to poll `i + 1`) can have
/// waited: at least from the end of each poll it suspended in to the
/// start of the next, at most from the start of one to the end of the
/// next. Each gap is `GAP` of sleep, and on a loaded machine whatever
/// the thread was preempted for: the bounds hold either way.
fn wait_bounds(gaps: std::ops::Range<usize>) -> (u64, u64) {
    POLLS.with_borrow(|polls| {
        let ns = |d: Duration| d.as_nanos() as u64;
        gaps.map(|i| {
            let (before, after) = (polls[i], polls[i + 1]);
            assert!(ns(after.0 - before.1) >= ns(GAP));
            (ns(after.0 - before.1), ns(after.1 - before.0))
        })
        .fold((0, 0), |(lo, hi), (l, h)| (lo + l, hi + h))
    })
}

/// How long the polls of the last [`block_on`] took together.
fn polls_took() -> u64 {
    POLLS.with_borrow(|polls| polls.iter().map(|(b, e)| (*e - *b).as_nanos() as u64).sum())
}

/// Asserts `low <= ns <= high` (less 1% below: the clocks' rates agree
/// to a calibration's error).
fn assert_wait(ns: u64, (low, high): (u64, u64), what: &str) {
    assert!(
        ns + low / 100 >= low && ns <= high,
        "{what}: wait {ns} ns not in [{low}, {high}]"
    );
}

#[test]
fn each_await_is_a_site_with_exact_counts() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let session = Session::builder().ignore_env().start().unwrap();
    block_on(a());
    // `a`'s polls: three suspensions at `PendingN(3)` (gaps 0 to 2),
    // then one in `b` (gap 3).
    let (pending_waits, b_waits) = (wait_bounds(0..3), wait_bounds(3..4));
    let a_polls = polls_took();
    block_on(twin_a());
    let twin_polls = polls_took();
    let raw = session.raw_snapshot();
    let report = session.finish();
    let infos = perflens_core::await_sites();
    let (a_line, b_line) = (
        A_LINE.load(Ordering::Relaxed),
        B_LINE.load(Ordering::Relaxed),
    );
    assert!(a_line > 0 && b_line > 0);

    // Three sites in `a`, one in `b`, in source order; none in the twins.
    let in_a = sites_under(&raw, &infos, &name("a"));
    let in_b = sites_under(&raw, &infos, &name("b"));
    assert_eq!(in_a.len(), 3, "{in_a:?}");
    assert_eq!(in_b.len(), 1, "{in_b:?}");
    assert!(sites_under(&raw, &infos, &name("twin_a")).is_empty());
    assert!(sites_under(&raw, &infos, &name("twin_b")).is_empty());
    let (pending, ready, awaits_b) = (&in_a[0], &in_a[1], &in_a[2]);
    assert_at(pending, a_line, "PendingN(3)");
    assert_at(ready, a_line + 1, "std::future::ready(())");
    assert_at(awaits_b, a_line + 2, "b()");
    assert_at(&in_b[0], b_line, "PendingN(1)");
    // The registry names them `file:line:col`.
    assert_eq!(
        raw.callsites[pending.info.callsite as usize].name,
        format!("{}:{a_line}:{}", file!(), await_column(a_line))
    );

    // `PendingN(3)`: one await, suspended three times, three gaps long,
    // nothing measured inside.
    assert_eq!(
        (pending.calls, pending.timed_calls, pending.suspensions),
        (1, 1, 3)
    );
    assert_eq!((pending.measured_ns, pending.cancelled), (0, 0));
    assert!(pending.children.is_empty());
    assert_wait(pending.wait_ns, pending_waits, "PendingN(3)");
    // `ready(())`: one await that never suspended.
    assert_eq!(
        (
            ready.calls,
            ready.timed_calls,
            ready.suspensions,
            ready.wait_ns
        ),
        (1, 0, 0, 0)
    );
    // `b()`: suspended once (b's own await), b ran below the site.
    assert_eq!(
        (awaits_b.calls, awaits_b.timed_calls, awaits_b.suspensions),
        (1, 1, 1)
    );
    assert_wait(awaits_b.wait_ns, b_waits, "b()");
    assert_eq!(awaits_b.children, [name("b")]);
    let b_ms = B_MS * 1_000_000;
    assert!(
        awaits_b.measured_ns >= b_ms,
        "b's time below the site: {awaits_b:?}"
    );
    // `b`'s own site.
    let in_b = &in_b[0];
    assert_eq!((in_b.calls, in_b.timed_calls, in_b.suspensions), (1, 1, 1));
    assert_wait(in_b.wait_ns, b_waits, "PendingN(1)");
    // `b` has one path, below the site: none right below `a`.
    let b_cs = (raw.callsites.iter())
        .position(|c| c.name == name("b"))
        .unwrap() as u32;
    let b_paths: Vec<u32> = (raw.paths.iter().enumerate())
        .filter(|(_, p)| p.callsite == b_cs)
        .map(|(i, _)| i as u32)
        .collect();
    assert_eq!(b_paths.len(), 1);
    assert_eq!(raw.paths[b_paths[0] as usize].parent, awaits_b.path);

    // The functions are their twins: calls, polls, self time.
    let row = |f: &str| report.function(&name(f)).unwrap().clone();
    let (ra, rb, ta, tb) = (row("a"), row("b"), row("twin_a"), row("twin_b"));
    // a: 3 polls at PendingN(3), 1 at b's suspension, 1 to finish.
    assert_eq!((ra.calls, ra.polls), (1, Some(5)));
    assert_eq!((rb.calls, rb.polls), (1, Some(2)));
    assert_eq!((ta.calls, ta.polls), (ra.calls, ra.polls));
    assert_eq!((tb.calls, tb.polls), (rb.calls, rb.polls));
    let ms = 1_000_000;
    // Each function's self time is its spin, as long as the spin took
    // (preemptions included), and the rest of its polls, as its twin's
    // is: at least the spin, at most every poll of its `block_on` less
    // the other function's spin (the other's self time). Without the site
    // passing b's time on, a would claim b's B_MS too, ten times its own
    // spin, which that bound leaves no room for; a preemption in the poll
    // code outside the spins is in both the self time and the bound.
    for (row, spun, polls, other) in [
        (&ra, &A_SPIN, a_polls, &B_SPIN),
        (&ta, &TWIN_A_SPIN, twin_polls, &TWIN_B_SPIN),
        (&rb, &B_SPIN, a_polls, &A_SPIN),
        (&tb, &TWIN_B_SPIN, twin_polls, &TWIN_A_SPIN),
    ] {
        let (spun, other) = (spun.load(Ordering::Relaxed), other.load(Ordering::Relaxed));
        let most = polls - other;
        // (1% either way: the clocks' rates agree to a calibration's
        // error.)
        assert!(
            row.self_ns + spun / 100 >= spun && row.self_ns <= most + most / 100,
            "{}: self {} ns, its spin took {spun} ns, its polls less the other's spin {most} ns",
            row.name,
            row.self_ns
        );
    }
    assert!(ra.self_ns >= A_MS * ms, "{ra:?}");
    assert!(rb.self_ns >= b_ms);
    assert!(ra.total_ns >= rb.total_ns + A_MS * ms, "{ra:?} {rb:?}");
    // The sites' waits are a's: an await's wait runs from its suspension
    // to its resumption, both read inside a's polls, so it may overlap
    // a's busy time by the poll code around the await (the returns up
    // from the suspension and the calls down to it again: microseconds,
    // unless the thread is preempted right there), never by more than
    // a's busy time outside the two spins.
    let a_wait = ra.wait_ns.unwrap();
    let a_busy = ra.busy_ns.unwrap();
    let spins = A_SPIN.load(Ordering::Relaxed) + B_SPIN.load(Ordering::Relaxed);
    let poll_code = a_busy.saturating_sub(spins);
    let sites_wait: u64 = in_a_wait(&[pending, ready, awaits_b]);
    assert!(
        sites_wait <= a_wait + poll_code,
        "sites {sites_wait} > a {a_wait} + {poll_code} of a's polls outside its spins"
    );
    // Hot path frames go through the site: `a -> b`, as for the twins.
    let path = report.path(&[&name("a"), &name("b")]).expect("a -> b");
    assert_eq!(path.calls, 1);
    assert!(report.path(&[&name("twin_a"), &name("twin_b")]).is_some());
    assert!(report.functions.iter().all(|r| !r.name.contains(file!())));
}

fn in_a_wait(sites: &[&Site]) -> u64 {
    sites.iter().map(|s| s.wait_ns).sum()
}

/// An unmeasured function: its own await is no site, its wait is its
/// caller's site's.
async fn plain() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

static HANDLER_LINE: AtomicU32 = AtomicU32::new(0);

#[perflens::measure]
async fn handler() {
    HANDLER_LINE.store(line!() + 1, Ordering::Relaxed);
    plain().await;
}

#[test]
fn an_unmeasured_wait_is_its_sites() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let session = Session::builder().ignore_env().start().unwrap();
    rt.block_on(handler());
    let raw = session.raw_snapshot();
    let report = session.finish();
    let infos = perflens_core::await_sites();
    let sites = sites_under(&raw, &infos, &name("handler"));
    assert_eq!(sites.len(), 1, "{sites:?}");
    let s = &sites[0];
    assert_at(s, HANDLER_LINE.load(Ordering::Relaxed), "plain()");
    assert_eq!((s.calls, s.timed_calls, s.cancelled), (1, 1, 0));
    assert!(s.suspensions >= 1);
    // The sleep's deadline is set when `plain` makes it, the wait starts
    // when its first poll returns Pending, in the same poll of `handler`:
    // what passed between the two (a preemption on a loaded machine, or
    // under qemu) is in `handler`'s busy time, not in the wait.
    let busy = (report.function(&name("handler")))
        .and_then(|f| f.busy_ns)
        .expect("handler's busy time");
    assert!(
        s.wait_ns + busy >= 20_000_000,
        "{s:?}, handler busy {busy} ns"
    );
    // Nothing measured ran inside: no child, no measured time.
    assert!(s.children.is_empty() && s.measured_ns == 0, "{s:?}");
    // `plain`'s own await (not measured) is no site.
    assert!(infos.iter().all(|i| !i.expr.contains("sleep")), "{infos:?}");
}

static BLOCK_LINE: AtomicU32 = AtomicU32::new(0);

#[perflens::measure]
fn sync_caller() {
    BLOCK_LINE.store(line!() + 2, Ordering::Relaxed);
    block_on(async {
        perflens::measure_block!("awaiting_block", { PendingN(2).await });
    });
}

#[test]
fn a_measured_block_awaits_at_a_site() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let session = Session::builder().ignore_env().start().unwrap();
    sync_caller();
    // Two suspensions: gaps 0 and 1 of the block's future.
    let waits = wait_bounds(0..2);
    let raw = session.raw_snapshot();
    drop(session.finish());
    let sites = sites_under(&raw, &perflens_core::await_sites(), "awaiting_block");
    assert_eq!(sites.len(), 1, "{sites:?}");
    let s = &sites[0];
    assert_at(s, BLOCK_LINE.load(Ordering::Relaxed), "PendingN(2)");
    assert_eq!((s.calls, s.timed_calls, s.suspensions), (1, 1, 2));
    assert_wait(s.wait_ns, waits, "measure_block!");
}

static DROPPED_LINE: AtomicU32 = AtomicU32::new(0);

#[perflens::measure]
async fn dropped() {
    DROPPED_LINE.store(line!() + 1, Ordering::Relaxed);
    PendingN(5).await;
}

#[test]
fn an_await_dropped_while_suspended_is_cancelled_at_its_site() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let session = Session::builder().ignore_env().start().unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut f = Box::pin(dropped());
    for _ in 0..2 {
        assert!(f.as_mut().poll(&mut cx).is_pending());
        std::thread::sleep(GAP);
    }
    drop(f);
    let raw = session.raw_snapshot();
    let report = session.finish();
    let sites = sites_under(&raw, &perflens_core::await_sites(), &name("dropped"));
    assert_eq!(sites.len(), 1, "{sites:?}");
    let s = &sites[0];
    assert_at(s, DROPPED_LINE.load(Ordering::Relaxed), "PendingN(5)");
    // Never completed: no await counted, one cancelled after 2 suspensions.
    assert_eq!(
        (s.calls, s.cancelled, s.suspensions, s.wait_ns),
        (0, 1, 2, 0)
    );
    let f = report.function(&name("dropped")).unwrap();
    assert_eq!((f.calls, f.cancelled, f.polls), (0, Some(1), Some(2)));
}

#[perflens::measure]
async fn texts(v: &[u8]) -> u8 {
    let sum = std::future::ready(v.iter().map(|x| x * 2).sum::<u8>()).await;
    let s: &'static str = std::future::ready("a \"quoted\" é").await;
    sum + std::future::ready(s.len() as u8).await
}

#[test]
fn texts_are_the_source_compacted_and_cut() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let session = Session::builder().ignore_env().start().unwrap();
    assert_eq!(block_on(texts(&[1, 2])), 6 + 13);
    let raw = session.raw_snapshot();
    drop(session.finish());
    let sites = sites_under(&raw, &perflens_core::await_sites(), &name("texts"));
    let exprs: Vec<&str> = sites.iter().map(|s| s.info.expr.as_str()).collect();
    // As rustc hands the tokens to the macro: the same text as the unit
    // tests' (which see proc-macro2's own tokens).
    assert_eq!(
        exprs,
        [
            "std::future::ready(v.iter().map(|x| {…}…",
            "std::future::ready(\"a \\\"quoted\\\" é\")",
            "std::future::ready(s.len() as u8)",
        ]
    );
    assert!(exprs.iter().all(|e| e.chars().count() <= 40));
}
