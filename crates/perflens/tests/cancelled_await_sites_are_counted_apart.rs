//! Issue 24, point 3: an await site in a `select!` branch that loses is
//! cancelled (its await dropped while suspended) every time it loses, and
//! its row's figures describe one set of awaits each: Count, Wait, p50
//! and p99 the completed awaits, Cancelled and Cancelled wait the
//! cancelled ones. (A server's `recv()` in such a branch read "199,865
//! awaits, 58.8 s of waiting, p50 0 ns, p99 0 ns": the count and the
//! total had the cancelled awaits, the percentiles only the completed
//! ones.)
//!
//! The site is `rx.recv().await` in a measured `next_message`, whose
//! future is a branch of a biased `tokio::select!` in a measured loop:
//! polled first, so its await always suspends before the other branch
//! runs. In `CANCELLED` rounds nothing is sent and a 2 ms sleep wins: the
//! await is dropped while suspended. In `COMPLETED` rounds a task sends
//! a message 1 ms after the await suspended, and the other branch sleeps
//! a minute: the await completes. The bounds hold under any load: a wait
//! lies inside its round's wall time (measured by the test), a completed
//! one lasts at least the sender's 1 ms sleep (created after the await
//! suspended, as the task runs only then), a cancelled one at least the
//! other branch's 2 ms sleep (created when that branch is first polled,
//! after the await suspended; nothing else wakes the loop).
#![cfg(feature = "enabled")]

use perflens::Session;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const CANCELLED: usize = 24;
const COMPLETED: usize = 12;
/// A sender sends this long after the await it answers suspended.
const SEND_AFTER: Duration = Duration::from_millis(1);
/// A round that is sent nothing gives up after this long.
const GIVE_UP: Duration = Duration::from_millis(2);
/// The histogram's resolution (1/64), and the two clocks (the session's
/// and `Instant`) told apart: 3%.
const SLACK: f64 = 0.03;

/// The awaited `recv()` is the site.
#[perflens::measure]
async fn next_message(rx: &mut mpsc::Receiver<usize>) -> Option<usize> {
    rx.recv().await
}

/// Wall time of each round, by how it ended.
#[derive(Default)]
struct Rounds {
    received: Vec<Duration>,
    gave_up: Vec<Duration>,
}

/// Whether round `i` is sent a message: one round in three.
fn delivered(i: usize) -> bool {
    i % 3 == 2
}

/// A loop whose `select!` loses `next_message` in every round that is
/// sent nothing.
#[perflens::measure]
async fn serve(rx: &mut mpsc::Receiver<usize>, tx: &mpsc::Sender<usize>) -> Rounds {
    let mut rounds = Rounds::default();
    for i in 0..CANCELLED + COMPLETED {
        let deliver = delivered(i);
        if deliver {
            let tx = tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(SEND_AFTER).await;
                tx.send(i).await.unwrap();
            });
        }
        let give_up = if deliver {
            Duration::from_secs(60)
        } else {
            GIVE_UP
        };
        let start = Instant::now();
        // The other branch's sleep is made when it is first polled, after
        // `next_message`'s first poll.
        let got = tokio::select! {
            biased;
            m = next_message(&mut *rx) => m,
            () = async move { tokio::time::sleep(give_up).await } => None,
        };
        let took = start.elapsed();
        match got {
            Some(m) => {
                assert_eq!((m, deliver), (i, true));
                rounds.received.push(took);
            }
            None => {
                assert!(!deliver, "round {i} gave up before its message");
                rounds.gave_up.push(took);
            }
        }
    }
    rounds
}

fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

#[test]
fn a_select_branch_cancelled_n_times_has_a_row_whose_figures_agree() {
    assert_eq!(
        (0..CANCELLED + COMPLETED).filter(|&i| delivered(i)).count(),
        COMPLETED
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let session = Session::builder().ignore_env().start().unwrap();
    let (tx, mut rx) = mpsc::channel(4);
    let rounds = rt.block_on(serve(&mut rx, &tx));
    let report = session.finish();
    assert_eq!(
        (rounds.received.len(), rounds.gave_up.len()),
        (COMPLETED, CANCELLED)
    );

    let site = (report.waits.iter())
        .find(|w| w.function.ends_with("::next_message"))
        .unwrap_or_else(|| panic!("no row for next_message's await: {:?}", report.waits));
    assert_eq!(site.expr, "rx.recv()");
    // Exact counts: every await suspended at least once.
    let (n, cancelled) = (COMPLETED as u64, CANCELLED as u64);
    assert_eq!(
        (site.count, site.completed(), site.cancelled),
        (n + cancelled, n, cancelled),
        "{site:?}"
    );
    assert!(site.suspended >= n + cancelled, "{site:?}");
    // The measured future around it agrees: completed and cancelled.
    let f = (report.functions.iter())
        .find(|f| f.name.ends_with("::next_message"))
        .unwrap();
    assert_eq!((f.calls, f.cancelled), (n, Some(cancelled)), "{f:?}");

    // The completed awaits: each waited at least SEND_AFTER and at most
    // its round; the percentiles and the total are of these 12.
    let mut received = rounds.received.clone();
    received.sort();
    let (lo, hi) = (1.0 - SLACK, 1.0 + SLACK);
    let wait = site.completed_wait_ns() as f64;
    let (p50, p99) = (site.p50_ns as f64, site.p99_ns as f64);
    let within_rounds: f64 = received.iter().copied().map(ns).sum();
    assert!(
        wait >= n as f64 * ns(SEND_AFTER) * lo && wait <= within_rounds * hi,
        "completed wait {wait} ns, rounds {within_rounds} ns: {site:?}"
    );
    // Nearest rank: p50 is the 6th of 12 waits, p99 the 12th (the
    // longest); the k-th wait is at most the k-th round.
    let median_round = ns(received[COMPLETED.div_ceil(2) - 1]);
    assert!(
        p50 >= ns(SEND_AFTER) * lo && p50 <= median_round * hi,
        "p50 {p50} ns, median round {median_round} ns: {site:?}"
    );
    assert!(
        p99 >= p50 && p99 <= ns(received[COMPLETED - 1]) * hi,
        "{site:?}"
    );
    // The percentiles and the total describe the same waits: the 7 waits
    // from the median up add at least 7 x p50, and none is above p99.
    let from_median = (COMPLETED - COMPLETED.div_ceil(2) + 1) as f64;
    assert!(wait >= from_median * p50 * lo, "{site:?}");
    assert!(wait <= n as f64 * p99 * hi, "{site:?}");

    // The cancelled awaits: each waited at least GIVE_UP and at most its
    // round.
    let cancelled_wait = site.cancelled_wait_ns as f64;
    let gave_up: f64 = rounds.gave_up.iter().copied().map(ns).sum();
    assert!(
        cancelled_wait >= cancelled as f64 * ns(GIVE_UP) * lo && cancelled_wait <= gave_up * hi,
        "cancelled wait {cancelled_wait} ns, rounds {gave_up} ns: {site:?}"
    );
    assert_eq!(
        site.wait_ns,
        site.completed_wait_ns() + site.cancelled_wait_ns
    );

    // The table shows the two sets in their own columns.
    let mut table = Vec::new();
    perflens::write_table(&report, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    let header = table
        .lines()
        .find(|l| l.starts_with("Await "))
        .unwrap_or_else(|| panic!("{table}"));
    let row = table
        .lines()
        .find(|l| l.contains("::next_message:"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells = |line: &str| -> Vec<String> {
        (line.split("  ").map(str::trim))
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let (header, row) = (cells(header), cells(row));
    let cell = |name: &str| -> &str {
        let at = header.iter().position(|h| h == name).unwrap();
        &row[at]
    };
    let ms = |ns: u64| perflens_report::format_duration(ns);
    assert_eq!(
        ["Count", "Wait", "p50", "p99", "Cancelled", "Cancelled wait"].map(cell),
        [
            COMPLETED.to_string(),
            ms(site.completed_wait_ns()),
            ms(site.p50_ns),
            ms(site.p99_ns),
            CANCELLED.to_string(),
            ms(site.cancelled_wait_ns),
        ],
        "{table}"
    );
}
