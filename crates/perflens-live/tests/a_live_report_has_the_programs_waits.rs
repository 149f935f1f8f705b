//! `perflens snapshot` of a live session has the Waits rows the program's
//! own report (`PERFLENS_JSON`) has: the same sites, places,
//! expressions, counts, waits and measured children, read from the block
//! files and the names file's `REC_AWAIT` records.
// Not in the portable build: it reads a live session, and that build has
// none (tests/the_live_view_is_there_or_says_why.rs checks what it says).
#![cfg(not(perflens_portable))]

use perflens::__private::{AwaitSite, Mode, awaited};
use perflens_live::LiveSession;
use perflens_report::ReportOptions;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Sessions are process-wide: the tests of this file take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `Pending` `left` times, then `Ready`.
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

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

static SLEEP: AwaitSite = AwaitSite::new("src/server.rs", 30, 13, "PendingN(2)");
static LOOKUP: AwaitSite = AwaitSite::new("src/server.rs", 31, 13, "lookup()");
static READY: AwaitSite = AwaitSite::new("src/server.rs", 32, 13, "ready(())");

/// `e.await`, out of the macro rewrite's reach (awaits inside macro
/// invocations are no sites): the sites are the test's own.
macro_rules! bare {
    ($e:expr) => {
        $e.await
    };
}

#[perflens::measure]
async fn lookup() {
    bare!(PendingN(1));
}

#[perflens::measure]
async fn serve() {
    bare!(awaited(&SLEEP, PendingN(2)));
    bare!(awaited(&LOOKUP, lookup()));
    bare!(awaited(&READY, std::future::ready(())));
}

/// The program's final report and the live one of the same session,
/// both listing every site.
fn both(mode: Mode) -> (perflens::Report, perflens_report::Report) {
    let session = perflens::Session::builder()
        .ignore_env()
        .mode(mode)
        .wait_min(Duration::ZERO)
        .live(true)
        .live_keep(true)
        .start()
        .unwrap();
    let dir = session.live_dir().expect("published").to_path_buf();
    for _ in 0..4 {
        block_on(serve());
    }
    let own = session.finish();
    let mut live = LiveSession::open(&dir).unwrap();
    let options = ReportOptions {
        wait_min_ns: 0,
        ..ReportOptions::default()
    };
    let read = live.report(&options);
    let _ = std::fs::remove_dir_all(&dir);
    (own, read.unwrap())
}

#[test]
fn a_live_report_has_the_programs_waits() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (own, live) = both(Mode::Timed);
    // By wait, largest first (the two that suspend wait a few sleeps
    // each: their order is the machine's).
    assert!(own.waits.windows(2).all(|w| w[0].wait_ns >= w[1].wait_ns));
    let mut lines: Vec<(u32, &str)> = (own.waits.iter())
        .map(|w| (w.line, w.expr.as_str()))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [(30, "PendingN(2)"), (31, "lookup()"), (32, "ready(())")]
    );
    let at = |line: u32| own.waits.iter().find(|w| w.line == line).unwrap();
    assert!(at(31).measured_children[0].ends_with("::lookup"));
    assert!(at(30).uninstrumented && at(30).wait_ns >= 8_000_000);
    // The final snapshot's ticks with the final calibration, on both
    // sides: the same nanoseconds.
    assert_eq!(live.waits, own.waits);
    assert_eq!(live.wait_min_ns, Some(0));
}

#[test]
fn count_mode_too() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (own, live) = both(Mode::Count);
    assert_eq!(own.waits.len(), 3);
    assert!(own.waits.iter().all(|w| w.count == 4 && w.wait_ns == 0));
    assert_eq!(live.waits, own.waits);
    assert_eq!((own.wait_min_ns, live.wait_min_ns), (None, None));
}
