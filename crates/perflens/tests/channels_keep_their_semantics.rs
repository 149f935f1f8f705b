//! A measured channel behaves as the original: one suite, written once
//! (a macro over the constructor call) and run against the original
//! constructor and against `perflens::channel!` of it, for crossbeam and
//! std mpsc: capacity and the Full error handing the message back,
//! disconnection both ways, order, closing, messages left queued,
//! backpressure. Then the measured side's counts, exact: sent, received,
//! dropped with the channel, queued, max queued within the capacity,
//! endpoints alive, waits; and 4 producers × 100,000 messages.
#![cfg(all(feature = "enabled", feature = "flow-std", feature = "flow-crossbeam"))]

use perflens::{ChannelRow, Report, Session};
use std::sync::Mutex;
use std::time::Duration;

/// Sessions are process-wide: the tests that start one take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The suite for a bounded channel of capacity 2 made by `$make` (a
/// constructor call, as written by a user), and for an unbounded one made
/// by `$unbounded`; `$full` is the pattern of the Full error of a
/// `try_send` (crossbeam and std name their error types alike).
macro_rules! suite {
    ($name:ident, bounded: $make:expr, unbounded: $unbounded:expr, errors: $err:path) => {
        mod $name {
            use super::*;
            use $err as e;

            #[test]
            fn capacity_full_hands_the_message_back() {
                let (tx, rx) = $make;
                tx.try_send(1u32).unwrap();
                tx.try_send(2).unwrap();
                assert_eq!(tx.try_send(3), Err(e::TrySendError::Full(3)));
                assert_eq!(rx.recv(), Ok(1));
                tx.try_send(3).unwrap();
                assert_eq!(rx.try_recv(), Ok(2));
                assert_eq!(rx.try_recv(), Ok(3));
                assert_eq!(rx.try_recv(), Err(e::TryRecvError::Empty));
            }

            #[test]
            fn a_gone_receiver_hands_every_message_back() {
                let (tx, rx) = $make;
                drop(rx);
                assert_eq!(tx.send(7u32), Err(e::SendError(7)));
                assert_eq!(tx.try_send(8), Err(e::TrySendError::Disconnected(8)));
            }

            #[test]
            fn gone_senders_close_the_channel_after_its_messages() {
                let (tx, rx) = $make;
                let tx2 = tx.clone();
                tx.send(1u32).unwrap();
                tx2.send(2).unwrap();
                drop(tx);
                assert_eq!(rx.recv(), Ok(1));
                drop(tx2);
                assert_eq!(rx.recv(), Ok(2));
                assert_eq!(rx.recv(), Err(e::RecvError));
                assert_eq!(rx.try_recv(), Err(e::TryRecvError::Disconnected));
                assert_eq!(
                    rx.recv_timeout(Duration::from_millis(1)),
                    Err(e::RecvTimeoutError::Disconnected)
                );
            }

            #[test]
            fn order_is_kept_and_iteration_ends_at_the_close() {
                let (tx, rx) = $unbounded;
                for i in 0..100u32 {
                    tx.send(i).unwrap();
                }
                drop(tx);
                let got: Vec<u32> = rx.iter().collect();
                assert_eq!(got, (0..100).collect::<Vec<_>>());
            }

            #[test]
            fn try_iter_takes_what_is_there() {
                let (tx, rx) = $unbounded;
                tx.send(1u32).unwrap();
                tx.send(2).unwrap();
                assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
                assert_eq!(rx.try_iter().count(), 0);
                tx.send(3).unwrap();
                assert_eq!(rx.into_iter().next(), Some(3));
            }

            #[test]
            fn a_timeout_expires_on_an_empty_channel() {
                let (_tx, rx) = $make;
                let r: Result<u32, _> = rx.recv_timeout(Duration::from_millis(5));
                assert_eq!(r, Err(e::RecvTimeoutError::Timeout));
            }

            #[test]
            fn send_waits_while_the_channel_is_full() {
                let (tx, rx) = $make;
                tx.send(1u32).unwrap();
                tx.send(2).unwrap();
                let start = std::time::Instant::now();
                let sender = std::thread::spawn(move || {
                    tx.send(3).unwrap();
                    std::time::Instant::now()
                });
                std::thread::sleep(Duration::from_millis(30));
                // The send could not complete before there was room.
                let room = std::time::Instant::now();
                assert_eq!(rx.recv(), Ok(1));
                let sent = sender.join().unwrap();
                assert!(sent >= room, "{:?}", room - start);
                assert_eq!(rx.recv(), Ok(2));
                assert_eq!(rx.recv(), Ok(3));
            }

            #[test]
            fn messages_left_queued_are_dropped_with_the_channel() {
                let dropped = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
                struct Counted(std::sync::Arc<std::sync::atomic::AtomicU32>);
                impl Drop for Counted {
                    fn drop(&mut self) {
                        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                let (tx, rx) = $unbounded;
                for _ in 0..3 {
                    tx.send(Counted(dropped.clone())).unwrap();
                }
                drop(rx.recv().unwrap());
                assert_eq!(dropped.load(std::sync::atomic::Ordering::Relaxed), 1);
                drop(rx);
                // With the receiver gone the messages stay until the last
                // sender goes.
                drop(tx);
                assert_eq!(dropped.load(std::sync::atomic::Ordering::Relaxed), 3);
            }

            #[test]
            fn endpoints_debug_and_send_as_the_originals() {
                fn send_sync<T: Send + Sync>(_: &T) {}
                fn send<T: Send>(_: &T) {}
                let (tx, rx) = $make;
                send_sync(&tx);
                send(&rx);
                assert!(format!("{tx:?}").ends_with("{ .. }"), "{tx:?}");
                assert_eq!(format!("{rx:?}"), "Receiver { .. }");
                tx.send(1u32).unwrap();
            }
        }
    };
}

suite!(
    crossbeam_original,
    bounded: crossbeam_channel::bounded(2),
    unbounded: crossbeam_channel::unbounded(),
    errors: crossbeam_channel
);
suite!(
    crossbeam_measured,
    bounded: perflens::channel!(crossbeam_channel::bounded(2)),
    unbounded: perflens::channel!(crossbeam_channel::unbounded()),
    errors: crossbeam_channel
);
suite!(
    std_original,
    bounded: std::sync::mpsc::sync_channel(2),
    unbounded: std::sync::mpsc::channel(),
    errors: std::sync::mpsc
);
suite!(
    std_measured,
    bounded: perflens::channel!(std::sync::mpsc::sync_channel(2)),
    unbounded: perflens::channel!(std::sync::mpsc::channel()),
    errors: std::sync::mpsc
);

/// Crossbeam's extras: its capacity and length figures, clones of the
/// receiver, timed sends.
#[test]
fn crossbeam_extras_are_kept() {
    let (tx, rx) = perflens::channel!(crossbeam_channel::bounded(2));
    assert_eq!((tx.capacity(), rx.capacity()), (Some(2), Some(2)));
    assert!(tx.is_empty() && !tx.is_full());
    tx.send(1u32).unwrap();
    tx.send(2).unwrap();
    assert!(rx.is_full() && tx.len() == 2 && rx.len() == 2);
    assert_eq!(
        tx.send_timeout(3, Duration::from_millis(5)),
        Err(crossbeam_channel::SendTimeoutError::Timeout(3))
    );
    let rx2 = rx.clone();
    assert!(rx.same_channel(&rx2) && tx.same_channel(&tx.clone()));
    assert_eq!((rx.recv(), rx2.recv()), (Ok(1), Ok(2)));
    let (utx, _urx) = perflens::channel!(crossbeam_channel::unbounded::<u8>());
    assert_eq!(utx.capacity(), None);
    // A rendezvous channel: no room at all.
    let (ztx, zrx) = perflens::channel!(crossbeam_channel::bounded(0));
    assert_eq!(
        ztx.try_send(1u8),
        Err(crossbeam_channel::TrySendError::Full(1))
    );
    let t = std::thread::spawn(move || ztx.send(2u8));
    assert_eq!(zrx.recv(), Ok(2));
    t.join().unwrap().unwrap();
}

fn session() -> Session {
    Session::builder().ignore_env().start().expect("a session")
}

fn row<'a>(report: &'a Report, name: &str) -> &'a ChannelRow {
    (report.channels.iter())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no channel {name}: {:?}", report.channels))
}

/// One thread fills a channel (so the queue's maximum is exact), another
/// waits for room, clones come and go; a second channel is dropped with
/// messages in it; a third has no label.
/// Returns the sum received, and the endpoints still alive (for the
/// report to count; dropped after it).
fn workload() -> (u32, Box<dyn std::any::Any>) {
    let (sum, alive, _) = timed_workload();
    (sum, alive)
}

/// What the workload's waits took, by the test's own clock: the waiting
/// sender's `send`, and the receiver's loop of five receives.
struct Waits {
    send: Duration,
    receives: Duration,
}

/// [`workload`], with its [`Waits`].
fn timed_workload() -> (u32, Box<dyn std::any::Any>, Waits) {
    let (tx, rx) = perflens::channel!(crossbeam_channel::bounded(4), label = "jobs");
    for i in 0..4u32 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(
        tx.try_send(9),
        Err(crossbeam_channel::TrySendError::Full(9))
    );
    let waiter = {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let began = std::time::Instant::now();
            tx.send(4).unwrap();
            began.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    let mut sum = 0;
    let receives = std::time::Instant::now();
    for _ in 0..5 {
        sum += rx.recv().unwrap();
    }
    let receives = receives.elapsed();
    let send = waiter.join().unwrap();
    let (extra_tx, extra_rx) = (tx.clone(), rx.clone());
    drop(extra_tx);
    // Alive at the report: tx, rx and extra_rx.
    let alive: Box<dyn std::any::Any> = Box::new((tx, rx, extra_rx));

    let (tx, rx) = perflens::channel!(std::sync::mpsc::channel(), label = "left");
    for i in 0..10u32 {
        tx.send(i).unwrap();
    }
    for _ in 0..7 {
        sum += rx.recv().unwrap();
    }
    drop((tx, rx));

    let (tx, rx) = perflens::channel!(std::sync::mpsc::sync_channel(3));
    tx.send(5u32).unwrap();
    (sum + rx.recv().unwrap(), alive, Waits { send, receives })
}

/// `file:line:col` of the unlabelled channel's macro.
fn unlabelled_site() -> String {
    let source = include_str!("channels_keep_their_semantics.rs");
    let (k, line) = (source.lines().enumerate())
        .find(|(_, l)| l.contains("channel!(std::sync::mpsc::sync_channel(3))"))
        .unwrap();
    let column = line.find("perflens::channel!").unwrap() + 1;
    format!("{}:{}:{column}", file!(), k + 1)
}

#[test]
fn a_channels_figures_are_exact() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let (sum, alive, waits) = timed_workload();
    assert_eq!(sum, 10 + 21 + 5);
    let report = s.finish();
    drop(alive);
    let jobs = row(&report, "jobs");
    assert_eq!(
        (
            jobs.created,
            jobs.sent,
            jobs.received,
            jobs.dropped,
            jobs.queued
        ),
        (1, 5, 5, 0, 0)
    );
    assert_eq!((jobs.max_queued, jobs.capacity), (4, Some(4)));
    assert_eq!((jobs.senders, jobs.receivers), (1, 2));
    // The waiting sender's wait lies inside its `send` call, which the
    // test timed too, and is most of it: the call only tries once and
    // reads the clock before it blocks (half, and 2 ms, leave room for a
    // preemption in between on a loaded machine). How long it waited
    // depends on when its thread started, before or well into the
    // receiver's 20 ms sleep.
    let (send, receives) = (
        waits.send.as_nanos() as u64,
        waits.receives.as_nanos() as u64,
    );
    assert!(
        jobs.send_wait_ns <= send + 1_000_000,
        "{jobs:?}, send took {send} ns"
    );
    assert!(
        jobs.send_wait_ns * 2 + 2_000_000 >= send,
        "{jobs:?}, send took {send} ns"
    );
    // The receiver waited only inside its receives (the last one, for
    // the waiting sender to wake up), never during its sleep.
    assert!(
        jobs.recv_wait_ns <= receives + 1_000_000,
        "{jobs:?}, receives took {receives} ns"
    );
    assert_eq!(jobs.latency_count, 5);
    assert!(jobs.latency_p50_ns > 0 && jobs.latency_p50_ns <= jobs.latency_p99_ns);
    // The first four waited for the receiver's 20 ms sleep.
    assert!(jobs.latency_p50_ns >= 15_000_000, "{jobs:?}");

    let left = row(&report, "left");
    assert_eq!(
        (
            left.created,
            left.sent,
            left.received,
            left.dropped,
            left.queued
        ),
        (1, 10, 7, 3, 0)
    );
    // Read after every send (the thread's first 256 at the site).
    assert_eq!((left.max_queued, left.capacity), (10, None));
    assert_eq!((left.senders, left.receivers), (0, 0));

    let site = unlabelled_site();
    let unlabelled = row(&report, &site);
    assert_eq!(
        (unlabelled.sent, unlabelled.received, unlabelled.capacity),
        (1, 1, Some(3))
    );
    // Sorted by messages sent.
    let names: Vec<&str> = report.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["left", "jobs", site.as_str()]);
    // No function row, no hot path, no thread calls from the channels.
    assert!(report.functions.is_empty(), "{:?}", report.functions);
    assert!(report.paths.is_empty());
    assert_eq!(report.threads.iter().map(|t| t.calls).sum::<u64>(), 0);
}

/// Count mode reads no clock: the same counts, no latency, no waits.
#[test]
fn count_mode_counts_without_a_clock() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Session::builder()
        .ignore_env()
        .mode(perflens::Mode::Count)
        .start()
        .unwrap();
    let (_, alive) = workload();
    let report = s.finish();
    drop(alive);
    let jobs = row(&report, "jobs");
    assert_eq!((jobs.sent, jobs.received, jobs.max_queued), (5, 5, 4));
    assert_eq!(
        (jobs.latency_count, jobs.send_wait_ns, jobs.recv_wait_ns),
        (0, 0, 0)
    );
}

/// `latency = false`: counts only, in a timed session.
#[test]
fn a_site_without_latency_reads_no_clock() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let (tx, rx) = perflens::channel!(
        crossbeam_channel::bounded(1),
        label = "quiet",
        latency = false
    );
    let t = std::thread::spawn(move || {
        for i in 0..3u32 {
            tx.send(i).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(rx.iter().sum::<u32>(), 3);
    t.join().unwrap();
    let report = s.finish();
    let quiet = row(&report, "quiet");
    assert_eq!((quiet.sent, quiet.received, quiet.latency_count), (3, 3, 0));
    assert_eq!((quiet.send_wait_ns, quiet.recv_wait_ns), (0, 0));
}

/// 4 producers × 100,000 messages into a channel of 64 whose consumer
/// stops early and drops its end: every message sent was received or
/// dropped with the channel, and the queue never held more than 64.
macro_rules! four_producers {
    ($name:ident, $make:expr, $label:literal) => {
        #[test]
        fn $name() {
            const PER: u32 = 100_000;
            let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
            let s = session();
            let (tx, rx) = $make;
            let producers: Vec<_> = (0..4)
                .map(|_| {
                    let tx = tx.clone();
                    std::thread::spawn(move || {
                        let mut sent = 0u64;
                        for i in 0..PER {
                            if tx.send(i).is_err() {
                                break;
                            }
                            sent += 1;
                        }
                        sent
                    })
                })
                .collect();
            drop(tx);
            let mut received = 0u64;
            for _ in 0..300_000 {
                rx.recv().unwrap();
                received += 1;
            }
            drop(rx);
            let sent: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
            let report = s.finish();
            let c = row(&report, $label);
            assert_eq!(c.sent, sent);
            assert_eq!(c.received, received);
            assert_eq!(c.sent, c.received + c.dropped, "{c:?}");
            assert_eq!(c.queued, 0);
            assert!(c.max_queued <= 64 && c.max_queued > 0, "{c:?}");
            assert_eq!(c.capacity, Some(64));
            assert_eq!((c.senders, c.receivers), (0, 0));
        }
    };
}

four_producers!(
    four_crossbeam_producers,
    perflens::channel!(crossbeam_channel::bounded(64), label = "four-cb"),
    "four-cb"
);
four_producers!(
    four_std_producers,
    perflens::channel!(std::sync::mpsc::sync_channel(64), label = "four-std"),
    "four-std"
);

static MAILBOX: perflens::flow::Probe = perflens::flow::Probe::channel("mailbox");

/// A queue perflens does not wrap, reporting through a probe.
struct Mailbox {
    queue: Mutex<std::collections::VecDeque<(u32, perflens::flow::Stamp)>>,
    ready: std::sync::Condvar,
}

impl Mailbox {
    fn new() -> Mailbox {
        MAILBOX.created(None);
        MAILBOX.senders(1);
        MAILBOX.receivers(1);
        Mailbox {
            queue: Mutex::new(Default::default()),
            ready: std::sync::Condvar::new(),
        }
    }

    fn post(&self, v: u32) {
        let mut q = self.queue.lock().unwrap();
        q.push_back((v, MAILBOX.stamp()));
        MAILBOX.sent(Some(q.len()));
        self.ready.notify_one();
    }

    fn take(&self) -> u32 {
        let mut q = self.queue.lock().unwrap();
        if q.is_empty() {
            let since = MAILBOX.stamp();
            q = self.ready.wait_while(q, |q| q.is_empty()).unwrap();
            MAILBOX.recv_waited(since);
        }
        let (v, sent_at) = q.pop_front().unwrap();
        MAILBOX.received(sent_at);
        v
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        MAILBOX.dropped(self.queue.get_mut().unwrap().len() as u64);
        MAILBOX.senders(-1);
        MAILBOX.receivers(-1);
    }
}

/// The probe API gives a custom queue the row a channel gets.
#[test]
fn a_probe_reports_a_custom_queue_as_a_channel() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let m = std::sync::Arc::new(Mailbox::new());
    let poster = {
        let m = m.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            for i in 0..5 {
                m.post(i);
            }
        })
    };
    // Waits for the first message, then takes two more.
    assert_eq!(m.take(), 0);
    poster.join().unwrap();
    assert_eq!(m.take() + m.take(), 3);
    drop(m);
    let report = s.finish();
    let mailbox = row(&report, "mailbox");
    assert_eq!(
        (
            mailbox.created,
            mailbox.sent,
            mailbox.received,
            mailbox.dropped,
            mailbox.queued
        ),
        (1, 5, 3, 2, 0)
    );
    assert_eq!(
        (mailbox.senders, mailbox.receivers, mailbox.capacity),
        (0, 0, None)
    );
    assert!((1..=5).contains(&mailbox.max_queued), "{mailbox:?}");
    assert!(mailbox.recv_wait_ns >= 15_000_000, "{mailbox:?}");
    assert_eq!(mailbox.latency_count, 3);
}

/// `PERFLENS_FLOW_LATENCY=0` (in a child process, whose environment is
/// its own): the same counts, no clock read for messages or waits.
#[test]
fn perflens_flow_latency_0_counts_without_a_clock() {
    if std::env::var_os("PERFLENS_FLOW_LATENCY_CHILD").is_some() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let s = Session::start().unwrap();
        let (_, alive) = workload();
        let report = s.finish();
        drop(alive);
        let jobs = row(&report, "jobs");
        assert_eq!((jobs.sent, jobs.received, jobs.max_queued), (5, 5, 4));
        assert_eq!(
            (jobs.latency_count, jobs.send_wait_ns, jobs.recv_wait_ns),
            (0, 0, 0)
        );
        println!("child: ok");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "perflens_flow_latency_0_counts_without_a_clock",
            "--nocapture",
        ])
        .env("PERFLENS_FLOW_LATENCY_CHILD", "1")
        .env("PERFLENS_FLOW_LATENCY", "0")
        .env("PERFLENS_FORMAT", "none")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && text.contains("child: ok"), "{text}");
}

/// Latency sampling, with the defaults: each sending thread times every
/// one of its first 256 messages at a site, then one in 8 at random. A
/// quiet channel (fewer than 256 messages per thread) has every message
/// timed; a busy one about 256 per thread plus an eighth of the rest; a
/// thread switching between two sites for every message keeps both
/// right. Counts are exact either way.
#[test]
fn a_busy_channel_times_one_message_in_8_after_each_threads_first_256() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let (busy_tx, busy_rx) = perflens::channel!(crossbeam_channel::unbounded(), label = "busy");
    let (quiet_tx, quiet_rx) = perflens::channel!(std::sync::mpsc::channel(), label = "quiet");
    let per_thread = 256 + 8_000u64;
    let producers: Vec<_> = (0..2)
        .map(|t| {
            let busy = busy_tx.clone();
            let quiet = quiet_tx.clone();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    busy.send(i).unwrap();
                    // One message in 80 goes to the other site: this
                    // thread's last site changes there and back.
                    if i % 80 == 0 {
                        quiet.send(t).unwrap();
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    drop((busy_tx, quiet_tx));
    assert_eq!(busy_rx.iter().count() as u64, 2 * per_thread);
    assert_eq!(quiet_rx.iter().count(), 2 * 104);
    let report = s.finish();
    let quiet = row(&report, "quiet");
    assert_eq!((quiet.sent, quiet.received), (208, 208));
    assert_eq!(quiet.latency_count, 208, "under 256 per thread: all timed");
    let busy = row(&report, "busy");
    assert_eq!((busy.sent, busy.received), (2 * per_thread, 2 * per_thread));
    // 2 × (256 + 8000 / 8) expected: 2512; the random gaps (4 to 12
    // messages) move it by a few dozen at most.
    assert!(
        (2400..=2620).contains(&busy.latency_count),
        "{} timed of {}",
        busy.latency_count,
        busy.received
    );
    assert!(busy.latency_p50_ns > 0 && busy.latency_max_ns >= busy.latency_p99_ns);
}

/// `flow_latency(1)` (`PERFLENS_FLOW_LATENCY=1`) times every message;
/// `flow_latency(0)` none, and reads no clock for waits either.
#[test]
fn flow_latency_1_times_every_message_and_0_none() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for (every, timed) in [(1u32, 3_000u64), (0, 0)] {
        let s = Session::builder()
            .ignore_env()
            .flow_latency(every)
            .start()
            .unwrap();
        let (tx, rx) = perflens::channel!(crossbeam_channel::bounded(1), label = "all");
        let consumer = std::thread::spawn(move || rx.iter().count());
        for i in 0..3_000u32 {
            tx.send(i).unwrap();
        }
        drop(tx);
        assert_eq!(consumer.join().unwrap(), 3_000);
        let report = s.finish();
        let all = row(&report, "all");
        assert_eq!((all.sent, all.received), (3_000, 3_000));
        assert_eq!(all.latency_count, timed, "one in {every}");
        if every == 0 {
            assert_eq!((all.send_wait_ns, all.recv_wait_ns), (0, 0));
        }
    }
}
