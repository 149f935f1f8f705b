//! Cost of an await site that does not suspend (issue 13: at most 5 ns
//! over a bare `.await`).
//!
//! Three twins, each one measured future looping `n` times over
//! `black_box(std::future::ready(i)).await`, driven by one poll with a
//! no-op waker, in a timed session each: one awaits bare, one through a
//! site called by hand (`perflens::__private::awaited`), and one is a
//! `#[perflens::measure] async fn` whose `.await` the macro rewrites
//! into a site. Each round runs all three, bare first; the results are
//! the medians over rounds of the per-round differences per await.

use perflens::__private::{AwaitSite, Callsite, awaited, instrument};
use std::future::{Future, ready};
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

static BARE: Callsite = Callsite::new("bench::await_bare", || "");
static SITES: Callsite = Callsite::new("bench::await_sites", || "");
static SITE: AwaitSite = AwaitSite::new(file!(), line!(), 1, "black_box(ready(i))");

async fn loop_bare(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(black_box(ready(i)).await);
    }
    acc
}

async fn loop_sites(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(awaited(&SITE, black_box(ready(i))).await);
    }
    acc
}

/// The same loop as `loop_sites`, its site made by the macro rewrite.
#[perflens::measure(label = "bench::await_macro")]
async fn loop_macro(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(black_box(ready(i)).await);
    }
    acc
}

/// Polls a future that never suspends, once.
fn once<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the loops never suspend"),
    }
}

/// How the awaits of a run are made.
#[derive(Clone, Copy, PartialEq)]
pub enum Kind {
    /// A bare `.await`.
    Bare,
    /// `awaited(&SITE, ..).await`, written by hand.
    Site,
    /// A `.await` in a `#[perflens::measure] async fn`.
    Macro,
}

/// ns per await of `n` awaits in a timed session, of `kind`. Checks that
/// the site counted every await.
pub fn run(kind: Kind, n: u64, tsc: bool) -> f64 {
    let builder = perflens::Session::builder()
        .ignore_env()
        .mode(perflens::Mode::Timed);
    let builder = if tsc {
        builder.clock(perflens::ClockSource::Tsc)
    } else {
        builder
    };
    let session = builder.start().expect("no other session");
    let start = Instant::now();
    let acc = match kind {
        Kind::Bare => once(instrument(&BARE, loop_bare(n))),
        Kind::Site => once(instrument(&SITES, loop_sites(n))),
        Kind::Macro => once(loop_macro(n)),
    };
    let elapsed = start.elapsed();
    black_box(acc);
    if kind != Kind::Bare {
        let raw = session.raw_snapshot();
        let awaits: u64 = (raw.threads.iter().flat_map(|t| &t.nodes))
            .filter(|node| {
                let cs = raw.paths[node.path as usize].callsite as usize;
                // The site is named `file:line:col`.
                raw.callsites[cs].name.starts_with(file!())
            })
            .map(|node| node.calls)
            .sum();
        assert_eq!(awaits, n, "the site must count every await");
    }
    session.finish();
    elapsed.as_nanos() as f64 / n as f64
}

/// Prints the per-round medians of bare, site and macro-site ns per
/// await and of their differences with bare.
pub fn report(n: u64, rounds: usize) {
    let (mut bare, mut site, mut mac) = (Vec::new(), Vec::new(), Vec::new());
    let (mut added, mut added_macro) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let b = run(Kind::Bare, n, false);
        let s = run(Kind::Site, n, false);
        let m = run(Kind::Macro, n, false);
        bare.push(b);
        site.push(s);
        mac.push(m);
        added.push(s - b);
        added_macro.push(m - b);
    }
    println!(
        "await site, no suspension, 1 thread, N = {n}: bare .await {:.2} ns, through a site {:.2} ns (added {:.2} ns), through the macro's site {:.2} ns (added {:.2} ns) (medians of per-round differences; goal <= 5 ns)",
        crate::stats::median(bare),
        crate::stats::median(site),
        crate::stats::median(added),
        crate::stats::median(mac),
        crate::stats::median(added_macro),
    );
}
