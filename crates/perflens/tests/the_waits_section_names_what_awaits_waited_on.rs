//! The report's Waits section from a real session: await sites written
//! by hand (`perflens::__private::awaited`, as the macro rewrite emits
//! them, out of its reach in a macro, so that each site's place and text
//! are the test's), polled by a ten-line `block_on` that sleeps a known
//! time after each `Pending`.
//!
//! - an await of an unmeasured future is `uninstrumented`, with its file,
//!   line and expression, and waits at least the sleeps;
//! - an await of a measured async fn lists that fn as its measured child;
//! - a site that waited under 1 ms is left out, unless the threshold is 0
//!   (`SessionBuilder::wait_min`, `PERFLENS_WAIT_MIN`);
//! - in count mode every site is listed by count.
#![cfg(feature = "enabled")]

use perflens::__private::{AwaitSite, Mode, awaited};
use perflens::{Report, Session};
use std::future::Future;
use std::pin::{Pin, pin};
use std::process::Command;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

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
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.left == 0 {
            return Poll::Ready(());
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Polls `fut` to completion on this thread, sleeping `GAP` after each
/// `Pending`.
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

const GAP: Duration = Duration::from_millis(2);
const RUNS: u64 = 3;
const MS: u64 = 1_000_000;

#[perflens::measure]
fn parse() -> u32 {
    std::hint::black_box(7)
}

/// A measured async fn that suspends once, after a measured call.
#[perflens::measure]
async fn fetch() -> u32 {
    let v = parse();
    bare!(PendingN { left: 1 });
    v
}

// Where the sites say they are (the macro rewrite will take these from
// the `.await`'s span).
const SLEEP_LINE: u32 = 101;
const FETCH_LINE: u32 = 102;
const READY_LINE: u32 = 103;
static SLEEP: AwaitSite = AwaitSite::new(file!(), SLEEP_LINE, 61, "PendingN{left:3}");
static FETCH: AwaitSite = AwaitSite::new(file!(), FETCH_LINE, 9, "fetch()");
static READY: AwaitSite = AwaitSite::new(file!(), READY_LINE, 9, "ready(())");

#[perflens::measure]
async fn handler() -> u32 {
    bare!(awaited(&SLEEP, PendingN { left: 3 }));
    let v = bare!(awaited(&FETCH, fetch()));
    bare!(awaited(&READY, std::future::ready(())));
    v
}

fn run(builder: perflens::SessionBuilder) -> Report {
    let session = builder.start().unwrap();
    for _ in 0..RUNS {
        assert_eq!(block_on(handler()), 7);
    }
    session.finish()
}

#[test]
fn an_unmeasured_await_is_named_and_a_measured_one_lists_its_callee() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let report = run(Session::builder().ignore_env());
    assert_eq!(report.wait_min_ns, Some(MS));
    let lines: Vec<u32> = report.waits.iter().map(|w| w.line).collect();
    // By wait: 3 suspensions a run, then 1; `ready(())` never waited.
    assert_eq!(lines, [SLEEP_LINE, FETCH_LINE]);

    let sleep = &report.waits[0];
    assert_eq!(
        (
            sleep.file.as_str(),
            sleep.line,
            sleep.column,
            sleep.expr.as_str()
        ),
        (file!(), SLEEP_LINE, 61, "PendingN{left:3}")
    );
    assert_eq!(sleep.function, name("handler"));
    assert_eq!(sleep.site, format!("{}:{SLEEP_LINE}", name("handler")));
    assert_eq!(
        (sleep.count, sleep.suspended, sleep.cancelled),
        (RUNS, 3 * RUNS, 0)
    );
    assert!(sleep.uninstrumented, "{sleep:?}");
    assert!(sleep.measured_children.is_empty());
    let slept = 3 * RUNS * GAP.as_nanos() as u64;
    assert!(sleep.wait_ns >= slept, "{} < {slept}", sleep.wait_ns);
    // Each await waited 3 sleeps.
    assert!(
        sleep.p50_ns >= 3 * GAP.as_nanos() as u64 * 63 / 64,
        "{sleep:?}"
    );

    let f = &report.waits[1];
    assert_eq!(
        (f.line, f.column, f.expr.as_str()),
        (FETCH_LINE, 9, "fetch()")
    );
    assert_eq!(f.measured_children, [name("fetch")]);
    assert!(!f.uninstrumented && f.measured_ns > 0, "{f:?}");
    assert_eq!((f.count, f.suspended), (RUNS, RUNS));
    assert!(f.wait_ns >= RUNS * GAP.as_nanos() as u64, "{f:?}");
    // What waited is the handler's waiting, and no more.
    let h = report.function(&name("handler")).unwrap();
    // (Each wait runs from inside one poll to inside the next: a few µs
    // more than the gap between the polls.)
    assert!(
        sleep.wait_ns + f.wait_ns <= h.wait_ns.unwrap() + MS,
        "{h:?}"
    );

    // The table names both, after the async table.
    let mut text = Vec::new();
    perflens::write_table(&report, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let rows: Vec<&str> = (text.lines())
        .skip_while(|l| !l.starts_with("Await "))
        .skip(2)
        .take(2)
        .collect();
    assert!(
        rows[0].starts_with(&format!("…{}", &sleep.site[sleep.site.len() - 47..]))
            || rows[0].starts_with(&sleep.site),
        "{text}"
    );
    assert!(
        rows[0].ends_with("uninstrumented: measure the awaited function (#[perflens::measure])"),
        "{text}"
    );
    assert!(rows[1].ends_with("fetch"), "{text}");
}

#[test]
fn a_short_wait_is_listed_only_with_a_zero_threshold() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let report = run(Session::builder().ignore_env().wait_min(Duration::ZERO));
    assert_eq!(report.wait_min_ns, Some(0));
    let lines: Vec<u32> = report.waits.iter().map(|w| w.line).collect();
    assert_eq!(lines, [SLEEP_LINE, FETCH_LINE, READY_LINE]);
    let ready = &report.waits[2];
    assert_eq!(
        (ready.count, ready.suspended, ready.wait_ns, ready.p99_ns),
        (RUNS, 0, 0, 0)
    );
    assert_eq!(ready.expr, "ready(())");
    assert!(ready.uninstrumented);

    // A threshold above every wait: no row, the threshold said.
    let report = run(Session::builder()
        .ignore_env()
        .wait_min(Duration::from_secs(10)));
    assert!(report.waits.is_empty());
    assert_eq!(report.wait_min_ns, Some(10_000 * MS));
}

#[test]
fn count_mode_lists_every_site_by_count() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let report = run(Session::builder().ignore_env().mode(Mode::Count));
    assert_eq!(report.wait_min_ns, None);
    let rows: Vec<(u32, u64, u64)> = (report.waits.iter())
        .map(|w| (w.line, w.count, w.wait_ns))
        .collect();
    // Equal counts: by line.
    assert_eq!(
        rows,
        [
            (SLEEP_LINE, RUNS, 0),
            (FETCH_LINE, RUNS, 0),
            (READY_LINE, RUNS, 0)
        ]
    );
    assert_eq!(report.waits[1].measured_children, [name("fetch")]);
}

/// Run by `perflens_wait_min_sets_the_threshold` in a child process with
/// `PERFLENS_WAIT_MIN` set: a session that reads the environment, writing
/// `PERFLENS_JSON`.
#[test]
fn child_session_reading_the_environment() {
    if std::env::var_os("PERFLENS_WAITS_CHILD").is_none() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    run(Session::builder());
}

#[test]
fn perflens_wait_min_sets_the_threshold() {
    let dir = std::env::temp_dir().join(format!("perflens-waits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = |wait_min: &str| -> (Report, String) {
        let json = dir.join(format!("report-{wait_min}.json"));
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "child_session_reading_the_environment",
            "--test-threads=1",
            "--nocapture",
        ]);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("PERFLENS_") {
                cmd.env_remove(k);
            }
        }
        let out = cmd
            .env("PERFLENS_WAITS_CHILD", "1")
            .env("PERFLENS_WAIT_MIN", wait_min)
            .env("PERFLENS_JSON", &json)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        (Report::from_json_str(&text).unwrap(), stderr)
    };
    let (zero, _) = child("0");
    assert_eq!(zero.wait_min_ns, Some(0));
    assert_eq!(zero.waits.len(), 3);
    let (half, _) = child("500us");
    assert_eq!(half.wait_min_ns, Some(MS / 2));
    assert_eq!(half.waits.len(), 2);
    let (bare, _) = child("10000");
    assert_eq!(bare.wait_min_ns, Some(10_000 * MS));
    assert!(bare.waits.is_empty());
    let (bad, stderr) = child("soon");
    assert_eq!(bad.wait_min_ns, Some(MS));
    assert!(
        stderr.contains("PERFLENS_WAIT_MIN=soon is not a duration"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

static SOMETIMES: AwaitSite = AwaitSite::new(file!(), 104, 9, "PendingN{left}");

/// Suspends at the site once when `suspend`.
#[perflens::measure]
async fn sometimes(suspend: bool) {
    bare!(awaited(
        &SOMETIMES,
        PendingN {
            left: suspend as u32,
        },
    ));
}

#[test]
fn sampled_mode_does_not_scale_the_waits() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let builder = Session::builder()
        .ignore_env()
        .mode(Mode::Sampled { every: 5 })
        .sample_warmup(0);
    let session = builder.start().unwrap();
    // 2 of 10 awaits suspend (timed), 8 do not (waited 0). `wall`: the
    // time the 2 suspending ones took, which holds their waits.
    let mut wall = 0;
    for i in 0..10 {
        let start = std::time::Instant::now();
        block_on(sometimes(i % 5 == 0));
        if i % 5 == 0 {
            wall += start.elapsed().as_nanos() as u64;
        }
    }
    let report = session.finish();
    let w = &report.waits[0];
    assert_eq!((w.line, w.count, w.suspended), (104, 10, 2));
    let gap = GAP.as_nanos() as u64;
    // Scaled by awaits over suspended ones it would be 5 times the two
    // waits, far more than the time they took (1% allowed for the
    // clock's calibration).
    assert!(
        w.wait_ns >= 2 * gap && w.wait_ns <= wall + wall / 100,
        "{w:?}, {wall} ns"
    );
    assert_eq!(w.p50_ns, 0);
}
