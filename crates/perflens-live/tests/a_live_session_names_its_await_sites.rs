//! A session with await sites reads back live: the sites' callsites are
//! of kind `Await` (code 3), their `REC_AWAIT` records give the file,
//! line, column and expression, and the site's node under its awaiting
//! function has the counts the program's own snapshot has.
// Not in the portable build: it reads a live session, and that build has
// none (tests/the_live_view_is_there_or_says_why.rs checks what it says).
#![cfg(not(perflens_portable))]

use perflens::__private::{AwaitSite, awaited};
use perflens_format::CallsiteKind;
use perflens_live::LiveSession;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

/// `Pending` once, then `Ready`.
struct Once(bool);

impl Future for Once {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// `e.await` out of the macro rewrite's reach (awaits inside macro
/// invocations are no sites), so that the hand-written site is the only
/// one.
macro_rules! bare {
    ($e:expr) => {
        $e.await
    };
}

static SITE: AwaitSite = AwaitSite::new("src/app.rs", 42, 17, "Once(false)");

#[perflens::measure]
async fn waits_once() {
    bare!(awaited(&SITE, Once(false)));
}

#[test]
fn a_live_session_names_its_await_sites() {
    let session = perflens::Session::builder()
        .ignore_env()
        .live(true)
        .live_keep(true)
        .start()
        .unwrap();
    let dir = session.live_dir().expect("published").to_path_buf();
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..5 {
        let mut f = pin!(waits_once());
        while f.as_mut().poll(&mut cx).is_pending() {}
    }
    let own = session.raw_snapshot();
    drop(session.finish());

    let mut live = LiveSession::open(&dir).unwrap();
    let snap = live.raw_snapshot(true).unwrap().snapshot;
    let sites = live.await_sites();
    let _ = std::fs::remove_dir_all(&dir);

    assert_eq!(sites.len(), 1, "{sites:?}");
    let s = &sites[0];
    assert_eq!(
        (s.file.as_str(), s.line, s.column, s.expr.as_str()),
        ("src/app.rs", 42, 17, "Once(false)")
    );
    let cs = &snap.callsites[s.callsite as usize];
    assert_eq!(
        (cs.name.as_str(), cs.kind),
        ("src/app.rs:42:17", CallsiteKind::Await)
    );
    let site_node = |snap: &perflens_format::RawSnapshot| {
        let (p, info) = (snap.paths.iter().enumerate())
            .find(|(_, p)| p.callsite == s.callsite)
            .expect("the site's path");
        let parent = &snap.callsites[snap.paths[info.parent as usize].callsite as usize];
        assert!(parent.name.ends_with("::waits_once"), "{parent:?}");
        let n = (snap.threads.iter().flat_map(|t| &t.nodes))
            .find(|n| n.path as usize == p)
            .expect("the site's node");
        (n.calls, n.timed_calls, n.polls, n.total_ns)
    };
    let (calls, timed, polls, _) = site_node(&snap);
    assert_eq!((calls, timed, polls), (5, 5, 5));
    let (live_node, own_node) = (site_node(&snap), site_node(&own));
    let counts = |n: (u64, u64, u64, u64)| (n.0, n.1, n.2);
    assert_eq!(counts(live_node), counts(own_node));
    // Same ticks; the live header holds the clock calibration as
    // refined at the session's end, the program's snapshot the one of
    // its moment: nanoseconds may differ in the last digits.
    let (a, b) = (live_node.3 as f64, own_node.3 as f64);
    assert!(
        (a - b).abs() <= 1.0 + b * 1e-3,
        "{live_node:?} {own_node:?}"
    );
}
