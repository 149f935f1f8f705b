//! Await sites called by hand (`perflens::__private::awaited`, as the
//! macro rewrite emits it; the awaits are written inside `bare!`, where
//! the rewrite does not reach, so that each is awaited once): each site's node counts completed awaits,
//! suspensions, the wait, the measured time inside and cancellations;
//! measured code run inside lands under the site; the awaiting function's
//! calls, polls, self time and hot paths are those of a twin without
//! sites.
#![cfg(feature = "enabled")]

use perflens::__private::{AwaitSite, Mode, awaited};
use perflens::{Report, Session};
use perflens_core::{CallsiteKind, RawSnapshot};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// `e.await`, out of the macro rewrite's reach (awaits inside macro
/// invocations are no sites).
macro_rules! bare {
    ($e:expr) => {
        $e.await
    };
}

/// Sessions are process-wide: the tests of this file take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

/// Returns `Pending` `left` times (waking its task each time), then
/// `Ready`.
struct PendingN {
    left: u32,
}

impl Future for PendingN {
    type Output = u32;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if self.left == 0 {
            return Poll::Ready(7);
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

std::thread_local! {
    /// What this thread's polls in [`block_on`] took so far, by the clock.
    static POLLED: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
    /// What this thread's sleeps between polls in [`block_on`] took so
    /// far, by the clock.
    static SLEPT: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// Polls `fut` to completion on this thread, sleeping `gap` after each
/// `Pending`; adds what the polls took to [`POLLED`] and what the sleeps
/// took to [`SLEPT`].
fn block_on<F: Future>(fut: F, gap: Duration) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let began = Instant::now();
        let poll = fut.as_mut().poll(&mut cx);
        POLLED.set(POLLED.get() + began.elapsed());
        match poll {
            Poll::Ready(v) => return v,
            Poll::Pending => {
                let began = Instant::now();
                std::thread::sleep(gap);
                SLEPT.set(SLEPT.get() + began.elapsed());
            }
        }
    }
}

fn spin(ms: u64) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        std::hint::black_box(0);
    }
}

/// Large enough that the children's time wrongly kept by the awaiting
/// function (2 x LEAF_MS a run) stands above the preemptions a loaded
/// machine adds to wall times (several ms over a run on 2 busy cores).
const LEAF_MS: u64 = 10;
const OWN_MS: u64 = 5;
const SUSPEND: u32 = 4;
const GAP: Duration = Duration::from_millis(2);
const RUNS: u64 = 5;

#[perflens::measure]
fn leaf() {
    spin(LEAF_MS);
}

#[perflens::measure]
async fn callee() -> u32 {
    leaf();
    1
}

static S_PENDING: AwaitSite = AwaitSite::new(file!(), 101, 9, "PendingN{left:SUSPEND}");
static S_CALLEE: AwaitSite = AwaitSite::new(file!(), 102, 9, "callee()");
static S_BLOCK: AwaitSite = AwaitSite::new(file!(), 103, 9, "async{leaf()}");
static S_CANCEL: AwaitSite = AwaitSite::new(file!(), 104, 9, "PendingN{left:5}");

#[perflens::measure]
async fn with_sites() -> u32 {
    let a = bare!(awaited(&S_PENDING, PendingN { left: SUSPEND }));
    // Created by this future, awaited here: lands under the site.
    let b = bare!(awaited(&S_CALLEE, callee()));
    // An unmeasured future that runs measured sync code.
    bare!(awaited(&S_BLOCK, async { leaf() }));
    spin(OWN_MS);
    a + b
}

#[perflens::measure]
async fn twin() -> u32 {
    let a = bare!(PendingN { left: SUSPEND });
    let b = bare!(callee());
    bare!(async { leaf() });
    spin(OWN_MS);
    a + b
}

#[perflens::measure]
async fn cancelled() -> u32 {
    bare!(awaited(&S_CANCEL, PendingN { left: 5 }))
}

/// Sums of the nodes of every path of site `site`, all threads.
#[derive(Debug, Default, PartialEq)]
struct Site {
    calls: u64,
    timed_calls: u64,
    wait_ns: u64,
    hist_count: u64,
    suspensions: u64,
    measured_ns: u64,
    cancelled: u64,
    timed_cancelled: u64,
    cancelled_ns: u64,
    /// Row names of the parents of the site's paths.
    parents: Vec<String>,
}

fn site(raw: &RawSnapshot, site: &AwaitSite) -> Site {
    let want = format!("{}:{}:{}", file!(), site_line(site), 9);
    let cs = (raw.callsites.iter())
        .position(|c| c.name == want)
        .unwrap_or_else(|| panic!("no callsite {want}"));
    assert_eq!(raw.callsites[cs].kind, CallsiteKind::Await);
    let mut out = Site::default();
    for (p, info) in raw.paths.iter().enumerate() {
        if info.callsite as usize != cs {
            continue;
        }
        let parent = &raw.paths[info.parent as usize];
        let parent_name = raw.callsites[parent.callsite as usize].name.clone();
        if !out.parents.contains(&parent_name) {
            out.parents.push(parent_name);
        }
        for n in raw.threads.iter().flat_map(|t| &t.nodes) {
            if n.path as usize != p {
                continue;
            }
            out.calls += n.calls;
            out.timed_calls += n.timed_calls;
            out.wait_ns += n.total_ns;
            out.hist_count += n.hist_total.count();
            out.suspensions += n.polls;
            out.measured_ns += n.busy_ns;
            out.cancelled += n.cancelled;
            out.timed_cancelled += n.timed_cancelled;
            out.cancelled_ns += n.cancelled_ns;
        }
    }
    out
}

/// The number of self-time entries of function `f` (its full name), all
/// its nodes merged: one a completed call.
fn self_entries(raw: &RawSnapshot, f: &str) -> u64 {
    let cs = (raw.callsites.iter()).position(|c| c.name == f).unwrap() as u32;
    let mut h = perflens_core::Histogram::default();
    for n in raw.threads.iter().flat_map(|t| &t.nodes) {
        if raw.paths[n.path as usize].callsite == cs {
            h.merge(&n.hist_self);
        }
    }
    h.count()
}

fn site_line(site: &AwaitSite) -> u32 {
    // The statics above number their lines 101..=104 in this order.
    [&S_PENDING, &S_CALLEE, &S_BLOCK, &S_CANCEL]
        .iter()
        .position(|s| std::ptr::eq(*s, site))
        .map(|i| 101 + i as u32)
        .unwrap()
}

/// Runs `work` in a session of `mode`; the raw snapshot and report after.
fn session(mode: Mode, work: impl FnOnce()) -> (RawSnapshot, Report) {
    let session = Session::builder().ignore_env().mode(mode).start().unwrap();
    work();
    let raw = session.raw_snapshot();
    let report = session.finish();
    (raw, report)
}

#[test]
fn a_site_counts_its_awaits_and_keeps_the_awaiting_self_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Each function's calls, by the clock around them: from before the
    // future is made to after its last poll.
    let (mut sites_wall, mut twin_wall) = (0u64, 0u64);
    // And what their polls took: their own time and their children's.
    let (mut sites_polls, mut twin_polls) = (0u64, 0u64);
    // And the sleeps between the sites' function's polls.
    let mut sites_slept = 0u64;
    let (raw, report) = session(Mode::Timed, || {
        for _ in 0..RUNS {
            let began = std::time::Instant::now();
            let polled = POLLED.get();
            let slept = SLEPT.get();
            assert_eq!(block_on(with_sites(), GAP), 8);
            sites_wall += began.elapsed().as_nanos() as u64;
            sites_polls += (POLLED.get() - polled).as_nanos() as u64;
            sites_slept += (SLEPT.get() - slept).as_nanos() as u64;
            let began = std::time::Instant::now();
            let polled = POLLED.get();
            assert_eq!(block_on(twin(), GAP), 8);
            twin_wall += began.elapsed().as_nanos() as u64;
            twin_polls += (POLLED.get() - polled).as_nanos() as u64;
        }
    });
    let ms = 1_000_000u64;

    // The pending site: RUNS completed awaits, each suspended SUSPEND
    // times; its waits are the awaiting function's.
    let s = site(&raw, &S_PENDING);
    assert_eq!((s.calls, s.timed_calls, s.hist_count), (RUNS, RUNS, RUNS));
    assert_eq!(s.suspensions, RUNS * SUSPEND as u64);
    assert_eq!((s.cancelled, s.measured_ns), (0, 0));
    assert_eq!(s.parents, [name("with_sites")]);
    let f = report.function(&name("with_sites")).unwrap();
    let fn_wait = f.wait_ns.unwrap();
    let floor = RUNS * SUSPEND as u64 * GAP.as_nanos() as u64;
    assert!(fn_wait >= floor, "{fn_wait} < {floor}");
    // The site's waits hold the function's between its polls (each from
    // the Pending return inside a poll to the re-poll inside the next):
    // every sleep between them (0.1% for the clocks' rates). The
    // function's wait also has the time from the future's creation to
    // its first poll, microseconds unless the thread is preempted right
    // there (55 us under a loaded loop). And little more.
    assert!(
        s.wait_ns + sites_slept / 1000 >= sites_slept && s.wait_ns <= fn_wait + ms,
        "site wait {} vs function wait {fn_wait}, slept {sites_slept}",
        s.wait_ns
    );

    // The callee site: never suspends; the measured callee created by
    // `with_sites` ran under it.
    let c = site(&raw, &S_CALLEE);
    assert_eq!((c.calls, c.timed_calls, c.suspensions), (RUNS, 0, 0));
    assert!(c.measured_ns >= RUNS * LEAF_MS * ms, "{c:?}");
    let b = site(&raw, &S_BLOCK);
    assert_eq!((b.calls, b.timed_calls, b.suspensions), (RUNS, 0, 0));
    assert!(b.measured_ns >= RUNS * LEAF_MS * ms, "{b:?}");
    let under_site = |site_cs: &str, child: &str| -> u64 {
        let cs = |n: &str| raw.callsites.iter().position(|c| c.name == n).unwrap() as u32;
        let (site_cs, child) = (cs(site_cs), cs(child));
        (raw.paths.iter().enumerate())
            .filter(|(_, p)| {
                p.callsite == child && raw.paths[p.parent as usize].callsite == site_cs
            })
            .flat_map(|(i, _)| {
                (raw.threads.iter().flat_map(|t| &t.nodes)).filter(move |n| n.path as usize == i)
            })
            .map(|n| n.calls)
            .sum()
    };
    let label = |s: u32| format!("{}:{s}:9", file!());
    assert_eq!(under_site(&label(102), &name("callee")), RUNS);
    assert_eq!(under_site(&label(103), &name("leaf")), RUNS);

    // The awaiting function is its twin: calls, polls, self time.
    let t = report.function(&name("twin")).unwrap();
    assert_eq!(
        (f.calls, f.polls),
        (RUNS, Some(RUNS * (SUSPEND as u64 + 1)))
    );
    assert_eq!((t.calls, t.polls), (f.calls, f.polls));
    assert!(f.self_ns >= RUNS * OWN_MS * ms, "{f:?}");
    // Each one's self time is at most what its polls took less its
    // measured children's time (1% for the clocks' rates): without the
    // children's time passed back, the sites' function would claim
    // 2 x LEAF_MS a run more, which that leaves no room for. A
    // preemption in its own code is in both sides. (Comparing the twins'
    // medians with each other failed under a loop beside two builds:
    // 44 ms against 32.)
    for (row, polls) in [(f, sites_polls), (t, twin_polls)] {
        let child = |c: &str| {
            report
                .path(&[row.name.as_str(), &name(c)])
                .map_or(0, |p| p.total_ns)
        };
        let children = child("callee") + child("leaf");
        assert!(
            children >= RUNS * 2 * LEAF_MS * ms,
            "{}: {children}",
            row.name
        );
        let most = polls - children;
        assert!(
            row.self_ns <= most + polls / 100,
            "{}: self {} ns, its polls {polls} ns less its children's {children} ns",
            row.name,
            row.self_ns
        );
        assert_eq!(self_entries(&raw, &row.name), RUNS);
    }
    // Their total times are what the clock around their calls says, sites
    // or not (a site adds no time to its function: the busy and waiting
    // time it passes on stays inside the call). At most that (1% for the
    // clocks' rates), and at least half of it: the time outside a call,
    // between the clock reads and the future's creation and last return,
    // is microseconds unless the thread is preempted right there.
    for (row, wall) in [(f, sites_wall), (t, twin_wall)] {
        assert!(
            row.total_ns <= wall + wall / 100 && row.total_ns >= wall / 2,
            "{}: total {} ns, the clock around its calls {wall} ns",
            row.name,
            row.total_ns
        );
        assert_eq!(row.busy_ns.unwrap() + row.wait_ns.unwrap(), row.total_ns);
    }

    // Sites are no function rows, and hot paths keep their frames.
    assert!(report.functions.iter().all(|r| !r.name.contains(file!())));
    let frames = |root: &str| {
        let mut v: Vec<Vec<String>> = (report.paths.iter())
            .filter(|p| p.frames[0] == name(root))
            .map(|p| p.frames[1..].to_vec())
            .collect();
        v.sort();
        v
    };
    assert_eq!(frames("with_sites"), frames("twin"));
    // A path ends at every frame (each spent time itself): the root, the
    // callee and both leaves.
    assert_eq!(
        frames("twin"),
        [
            vec![],
            vec![name("callee")],
            vec![name("callee"), name("leaf")],
            vec![name("leaf")]
        ]
    );
    let p = report
        .path(&[&name("with_sites"), &name("callee"), &name("leaf")])
        .unwrap();
    assert_eq!(p.calls, RUNS);
    // Awaits are not counted as calls of the thread.
    let thread_calls: u64 = report.threads.iter().map(|t| t.calls).sum();
    let fn_calls: u64 = report.functions.iter().map(|r| r.calls).sum();
    assert_eq!(thread_calls, fn_calls);

    // The sites' source locations.
    let sites = perflens_core::await_sites();
    let info = sites
        .iter()
        .find(|i| i.expr == "callee()")
        .expect("the callee site");
    assert_eq!(
        (info.file.as_str(), info.line, info.column),
        (file!(), 102, 9)
    );
    assert_eq!(
        raw.callsites[info.callsite as usize].name,
        format!("{}:102:9", file!())
    );
}

#[test]
fn an_await_dropped_while_suspended_is_cancelled() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // How long the function ran outside its site at most, by the clock:
    // from before it was made to the end of its first poll, its second
    // poll, and its drop.
    let mut outside = Duration::ZERO;
    let (raw, report) = session(Mode::Timed, || {
        let mut cx = Context::from_waker(Waker::noop());
        let made = Instant::now();
        let mut f = Box::pin(cancelled());
        assert!(f.as_mut().poll(&mut cx).is_pending());
        outside += made.elapsed();
        std::thread::sleep(GAP);
        let polled = Instant::now();
        assert!(f.as_mut().poll(&mut cx).is_pending());
        outside += polled.elapsed();
        std::thread::sleep(GAP);
        let dropped = Instant::now();
        drop(f);
        outside += dropped.elapsed();
    });
    let s = site(&raw, &S_CANCEL);
    assert_eq!((s.calls, s.cancelled, s.timed_cancelled), (0, 1, 1));
    assert_eq!((s.suspensions, s.wait_ns), (2, 0));
    let gaps = 2 * GAP.as_nanos() as u64;
    assert!(s.cancelled_ns >= gaps, "{s:?}");
    let f = report.function(&name("cancelled")).unwrap();
    assert_eq!((f.calls, f.cancelled), (0, Some(1)));
    // Its whole life was waiting at the site, but for its polls (less
    // than the clock around them says, 1% for the clocks' rates: a
    // preemption in a poll is in both).
    let cs = (raw.callsites.iter())
        .position(|c| c.name == name("cancelled"))
        .unwrap() as u32;
    let wall: u64 = (raw.threads.iter().flat_map(|t| &t.nodes))
        .filter(|n| raw.paths[n.path as usize].callsite == cs)
        .map(|n| n.cancelled_ns)
        .sum();
    let outside = outside.as_nanos() as u64;
    assert!(
        s.cancelled_ns <= wall && wall - s.cancelled_ns <= outside + wall / 100,
        "{f:?} {s:?}, outside the site at most {outside} ns"
    );
}

#[test]
fn count_mode_counts_awaits_and_suspensions_without_a_clock() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (raw, _) = session(Mode::Count, || {
        for _ in 0..RUNS {
            block_on(with_sites(), Duration::ZERO);
        }
    });
    let s = site(&raw, &S_PENDING);
    assert_eq!((s.calls, s.timed_calls, s.wait_ns), (RUNS, 0, 0));
    assert_eq!(s.suspensions, RUNS * SUSPEND as u64);
    assert_eq!(site(&raw, &S_CALLEE).calls, RUNS);
}

/// Calls of `child` on a path whose parent path has callsite `parent`.
fn calls_under(raw: &RawSnapshot, parent: &str, child: &str) -> (usize, u64, u64) {
    let cs = |n: &str| {
        raw.callsites
            .iter()
            .position(|c| c.name == n)
            .map(|i| i as u32)
    };
    let (Some(parent), Some(child)) = (cs(parent), cs(child)) else {
        return (0, 0, 0);
    };
    let paths: Vec<usize> = (raw.paths.iter().enumerate())
        .filter(|(_, p)| p.callsite == child && raw.paths[p.parent as usize].callsite == parent)
        .map(|(i, _)| i)
        .collect();
    let nodes =
        (raw.threads.iter().flat_map(|t| &t.nodes)).filter(|n| paths.contains(&(n.path as usize)));
    let (calls, timed) = nodes.fold((0, 0), |(c, t), n| (c + n.calls, t + n.timed_calls));
    (paths.len(), calls, timed)
}

#[test]
fn a_future_moved_under_a_site_leaves_no_path_behind() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (raw, _) = session(Mode::Timed, || {
        block_on(with_sites(), Duration::ZERO);
    });
    // `callee()` is created in `with_sites`, first polled under the site:
    // its creation resolved no `with_sites -> callee` path.
    assert_eq!(
        calls_under(&raw, &name("with_sites"), &name("callee")),
        (0, 0, 0)
    );
    assert_eq!(
        calls_under(&raw, &format!("{}:102:9", file!()), &name("callee")).1,
        1
    );
}

#[test]
fn sampled_mode_times_every_wait_and_samples_the_children() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const N: u64 = 20;
    let builder = Session::builder()
        .ignore_env()
        .mode(Mode::Sampled { every: 10 })
        .sample_warmup(0);
    let session = builder.start().unwrap();
    for _ in 0..N {
        block_on(with_sites(), Duration::ZERO);
    }
    let raw = session.raw_snapshot();
    drop(session.finish());
    // Every wait is timed, whatever the awaiting call's sampling.
    let s = site(&raw, &S_PENDING);
    assert_eq!((s.calls, s.timed_calls), (N, N));
    // `leaf` under the block's site is timed when its own countdown runs
    // out or when `with_sites` is timed (the await frame carries its
    // clock): about 2 + 2 of 20. An await frame read as a timed parent
    // would time all 20.
    let (_, calls, timed) = calls_under(&raw, &format!("{}:103:9", file!()), &name("leaf"));
    assert_eq!(calls, N);
    assert!(timed <= N / 2, "{timed} of {calls} timed");
}

static S_PANIC: AwaitSite = AwaitSite::new(file!(), 105, 9, "async{leaf();panic!()}");

#[perflens::measure]
async fn panics_inside() {
    bare!(awaited(&S_PANIC, async {
        leaf();
        panic!("inside the awaited future");
    }))
}

#[test]
fn a_panic_inside_an_await_pops_its_frame() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (raw, report) = session(Mode::Timed, || {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(|| block_on(panics_inside(), Duration::ZERO));
        assert!(r.is_err());
        // Awaited at the root: no measured frame below to clean up after
        // it, its own frame must go.
        let at_root = awaited(&S_PANIC, async {
            panic!("inside the awaited future");
        });
        let r = std::panic::catch_unwind(|| block_on(at_root, Duration::ZERO));
        assert!(r.is_err());
        std::panic::set_hook(hook);
        // The stack is back at the root: this call is top-level.
        leaf();
    });
    assert_eq!(report.path(&[&name("leaf")]).map(|p| p.calls), Some(1));
    let label = format!("{}:105:9", file!());
    assert_eq!(calls_under(&raw, &label, &name("leaf")).1, 1);
    // The awaiting future's poll unwound: it was dropped, not completed.
    let f = report.function(&name("panics_inside")).unwrap();
    assert_eq!((f.calls, f.cancelled), (0, Some(1)));
}

#[test]
fn without_a_session_an_await_is_a_plain_await() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(block_on(with_sites(), Duration::ZERO), 8);
    assert_eq!(
        block_on(awaited(&S_PENDING, PendingN { left: 2 }), Duration::ZERO),
        7
    );
}

#[test]
fn with_the_stack_full_a_site_still_counts_its_awaits() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The root and the awaiting future's poll frame: no room for an
    // await frame.
    let session = (Session::builder().ignore_env().mode(Mode::Timed))
        .stack_depth(2)
        .start()
        .unwrap();
    for _ in 0..RUNS {
        assert_eq!(block_on(with_sites(), GAP), 8);
    }
    let raw = session.raw_snapshot();
    drop(session.finish());
    let dropped: u64 = raw.threads.iter().map(|t| t.dropped_frames).sum();
    assert!(dropped >= RUNS * 3, "{dropped} frames dropped");
    let s = site(&raw, &S_PENDING);
    assert_eq!((s.calls, s.timed_calls, s.hist_count), (RUNS, RUNS, RUNS));
    assert_eq!(s.suspensions, RUNS * SUSPEND as u64);
    assert!(
        s.wait_ns >= RUNS * SUSPEND as u64 * GAP.as_nanos() as u64,
        "{s:?}"
    );
    assert_eq!(site(&raw, &S_BLOCK).calls, RUNS);
    // Nor is there room for the measured code inside.
    assert_eq!(calls_under(&raw, &name("with_sites"), &name("leaf")).1, 0);
    assert_eq!(
        calls_under(&raw, &format!("{}:103:9", file!()), &name("leaf")).1,
        0
    );
}

static S_SWITCH: AwaitSite = AwaitSite::new(file!(), 106, 9, "async{finish;start}");

#[perflens::measure]
async fn switches_session(first: Session) -> Session {
    bare!(awaited(&S_SWITCH, async move {
        drop(first.finish());
        let next = Session::builder()
            .ignore_env()
            .mode(Mode::Timed)
            .start()
            .unwrap();
        leaf();
        next
    }))
}

#[test]
fn a_session_that_ends_inside_an_await_leaves_the_next_one_clean() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let first = Session::builder()
        .ignore_env()
        .mode(Mode::Timed)
        .start()
        .unwrap();
    let next = block_on(switches_session(first), Duration::ZERO);
    // The stack is back at the root: this call is top-level, like the one
    // made inside the await in the next session.
    leaf();
    let raw = next.raw_snapshot();
    let report = next.finish();
    assert_eq!(report.path(&[&name("leaf")]).map(|p| p.calls), Some(2));
    let label = format!("{}:106:9", file!());
    let recorded = (raw.threads.iter().flat_map(|t| &t.nodes))
        .any(|n| raw.callsites[raw.paths[n.path as usize].callsite as usize].name == label);
    assert!(!recorded, "the await was recorded in the next session");
}
