//! tokio's channels through `perflens::channel!` keep tokio's semantics:
//! one suite, generated once for tokio's own constructors and once for
//! the measured ones (the same test bodies). Then, for the measured side,
//! the exact figures of each site's Channels row, and a many-producer
//! run on a multi-thread runtime whose counts must balance.
#![cfg(all(feature = "enabled", feature = "flow-tokio"))]

use std::sync::{Mutex, MutexGuard};

/// tokio's own constructor call.
macro_rules! original {
    ($($call:tt)*) => {
        $($call)*
    };
}

/// The same call, measured.
macro_rules! measured {
    ($($call:tt)*) => {
        perflens::channel!($($call)*)
    };
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The semantics suite, with `$make!(constructor call)` making each
/// channel.
macro_rules! semantics {
    ($suite:ident, $make:ident, $types:literal) => {
        mod $suite {
            use super::rt;
            use std::sync::Arc;
            use std::time::Duration;
            use tokio::sync::{broadcast, mpsc, oneshot, watch};

            #[test]
            fn a_bounded_channel_of_n_accepts_exactly_n_and_hands_the_next_back() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(3));
                    assert_eq!(tx.max_capacity(), 3);
                    for i in 0..3 {
                        assert_eq!(tx.capacity(), 3 - i as usize);
                        tx.try_send(i).unwrap();
                    }
                    assert_eq!(tx.capacity(), 0);
                    assert_eq!(rx.len(), 3);
                    assert_eq!(tx.try_send(7), Err(mpsc::error::TrySendError::Full(7)));
                    assert!(matches!(tx.try_reserve(), Err(mpsc::error::TrySendError::Full(()))));
                    assert_eq!(rx.recv().await, Some(0));
                    assert_eq!(rx.capacity(), 1);
                    tx.try_send(3).unwrap();
                    let mut got = Vec::new();
                    assert_eq!(rx.recv_many(&mut got, 10).await, 3);
                    assert_eq!(got, [1, 2, 3]);
                    assert!(rx.is_empty());
                    assert_eq!(rx.try_recv(), Err(mpsc::error::TryRecvError::Empty));
                });
            }

            #[test]
            fn closed_channels_hand_the_message_back() {
                rt().block_on(async {
                    let (tx, rx) = $make!(mpsc::channel::<String>(2));
                    assert!(!tx.is_closed());
                    drop(rx);
                    assert!(tx.is_closed());
                    tx.closed().await;
                    assert_eq!(
                        tx.try_send("a".into()),
                        Err(mpsc::error::TrySendError::Closed("a".to_string()))
                    );
                    assert_eq!(tx.send("b".into()).await.unwrap_err().0, "b");
                    assert!(
                        tx.send_timeout("c".into(), Duration::from_millis(1))
                            .await
                            .is_err_and(|e| matches!(e, mpsc::error::SendTimeoutError::Closed(c) if c == "c"))
                    );
                    assert!(tx.reserve().await.is_err());

                    let (tx, rx) = $make!(mpsc::unbounded_channel::<String>());
                    drop(rx);
                    assert_eq!(tx.send("d".into()).unwrap_err().0, "d");

                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(4));
                    tx.send(1).await.unwrap();
                    tx.send(2).await.unwrap();
                    rx.close();
                    assert!(rx.is_closed());
                    assert_eq!(tx.try_send(3), Err(mpsc::error::TrySendError::Closed(3)));
                    // What was queued is still received, then the end.
                    assert_eq!(rx.recv().await, Some(1));
                    assert_eq!(rx.recv().await, Some(2));
                    assert_eq!(rx.recv().await, None);
                    drop(tx);
                });
            }

            #[test]
            fn messages_arrive_in_order() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(8));
                    let producer = tokio::spawn(async move {
                        for i in 0..1000 {
                            tx.send(i).await.unwrap();
                        }
                    });
                    for i in 0..1000 {
                        assert_eq!(rx.recv().await, Some(i));
                    }
                    producer.await.unwrap();
                    assert_eq!(rx.recv().await, None);

                    let (tx, mut rx) = $make!(mpsc::unbounded_channel::<u32>());
                    for i in 0..1000 {
                        tx.send(i).unwrap();
                    }
                    assert_eq!(rx.len(), 1000);
                    for i in 0..1000 {
                        assert_eq!(rx.try_recv(), Ok(i));
                    }
                });
            }

            #[test]
            fn dropping_every_sender_ends_the_channel_after_it_drains() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(4));
                    let tx2 = tx.clone();
                    assert_eq!(tx.strong_count(), 2);
                    tx.send(1).await.unwrap();
                    tx2.send(2).await.unwrap();
                    drop(tx);
                    assert_eq!(rx.try_recv(), Ok(1));
                    drop(tx2);
                    assert_eq!(rx.recv().await, Some(2));
                    assert_eq!(rx.recv().await, None);
                    assert_eq!(rx.try_recv(), Err(mpsc::error::TryRecvError::Disconnected));

                    let (tx, mut rx) = $make!(mpsc::unbounded_channel::<u32>());
                    let weak = tx.downgrade();
                    tx.send(5).unwrap();
                    drop(tx);
                    assert!(weak.upgrade().is_none());
                    assert_eq!(rx.recv().await, Some(5));
                    assert_eq!(rx.recv().await, None);
                });
            }

            #[test]
            fn a_dropped_receiver_drops_what_was_queued() {
                rt().block_on(async {
                    let value = Arc::new(());
                    let (tx, rx) = $make!(mpsc::channel::<Arc<()>>(4));
                    for _ in 0..3 {
                        tx.send(value.clone()).await.unwrap();
                    }
                    assert_eq!(Arc::strong_count(&value), 4);
                    drop(rx);
                    assert_eq!(Arc::strong_count(&value), 1);
                    assert!(tx.try_send(value.clone()).is_err());
                    assert_eq!(Arc::strong_count(&value), 1);

                    let (tx, rx) = $make!(mpsc::unbounded_channel::<Arc<()>>());
                    tx.send(value.clone()).unwrap();
                    drop(rx);
                    assert_eq!(Arc::strong_count(&value), 1);
                });
            }

            #[test]
            fn a_recv_cancelled_by_select_loses_no_message() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(4));
                    // A recv that waited, cancelled by a timer.
                    tokio::select! {
                        _ = rx.recv() => panic!("nothing was sent"),
                        _ = tokio::time::sleep(Duration::from_millis(5)) => {}
                    }
                    let producer = tokio::spawn(async move {
                        for i in 0..2000u32 {
                            tx.send(i).await.unwrap();
                            if i % 7 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                    });
                    let (mut next, mut cancelled) = (0, 0);
                    loop {
                        tokio::select! {
                            v = rx.recv() => match v {
                                Some(v) => {
                                    assert_eq!(v, next);
                                    next += 1;
                                }
                                None => break,
                            },
                            _ = tokio::task::yield_now() => cancelled += 1,
                        }
                    }
                    producer.await.unwrap();
                    assert_eq!(next, 2000);
                    assert!(cancelled > 0, "no recv was cancelled");

                    let (tx, mut rx) = $make!(mpsc::unbounded_channel::<u32>());
                    tokio::select! {
                        _ = rx.recv() => panic!("nothing was sent"),
                        _ = tokio::time::sleep(Duration::from_millis(1)) => {}
                    }
                    tx.send(9).unwrap();
                    assert_eq!(rx.recv().await, Some(9));
                });
            }

            /// A task that only sends, into a channel with room, still
            /// yields when its cooperative budget runs out (tokio's
            /// `send` spends it): another task on the same thread runs
            /// before the sender is done.
            #[test]
            fn a_sending_task_spends_its_budget_and_lets_others_run() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(10_000));
                    let other_ran = Arc::new(std::sync::atomic::AtomicU32::new(0));
                    let seen = other_ran.clone();
                    let other = tokio::spawn(async move {
                        loop {
                            seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tokio::task::yield_now().await;
                        }
                    });
                    let sender = tokio::spawn(async move {
                        let mut first_seen = None;
                        let before = other_ran.load(std::sync::atomic::Ordering::Relaxed);
                        for i in 0..1_000u32 {
                            tx.send(i).await.unwrap();
                            if first_seen.is_none()
                                && other_ran.load(std::sync::atomic::Ordering::Relaxed) > before
                            {
                                first_seen = Some(i);
                            }
                        }
                        first_seen
                    });
                    let first = sender.await.unwrap();
                    other.abort();
                    // tokio's budget is 128 operations a poll: the other
                    // task runs only when the sender has used one up
                    // (tokio's own channel: after 256 sends, on the
                    // runtime this test makes). A send that did not ask
                    // for the budget would never yield here: `None`.
                    assert!(
                        matches!(first, Some(n) if n > 0 && n % 128 == 0),
                        "the sender yields at its budget: {first:?}"
                    );
                    let mut n = 0;
                    while rx.try_recv().is_ok() {
                        n += 1;
                    }
                    assert_eq!(n, 1_000);
                });
            }

            #[test]
            fn send_waits_while_full_and_completes_after_a_recv() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(1));
                    tx.send(1).await.unwrap();
                    let tx2 = tx.clone();
                    let blocked = tokio::spawn(async move { tx2.send(2).await });
                    for _ in 0..10 {
                        tokio::task::yield_now().await;
                    }
                    assert!(!blocked.is_finished());
                    assert_eq!(rx.recv().await, Some(1));
                    blocked.await.unwrap().unwrap();
                    assert_eq!(rx.recv().await, Some(2));

                    // A send that timed out waiting hands its message back.
                    tx.send(3).await.unwrap();
                    assert!(
                        tx.send_timeout(4, Duration::from_millis(5))
                            .await
                            .is_err_and(|e| matches!(e, mpsc::error::SendTimeoutError::Timeout(4)))
                    );
                    assert_eq!(rx.recv().await, Some(3));
                });
            }

            #[test]
            fn permits_send_into_the_room_they_reserved() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(mpsc::channel::<u32>(3));
                    let p = tx.reserve().await.unwrap();
                    assert_eq!(tx.capacity(), 2);
                    let many = tx.try_reserve_many(2).unwrap();
                    assert_eq!(many.len(), 2);
                    assert!(tx.try_reserve().is_err());
                    for (i, p) in many.enumerate() {
                        p.send(10 + i as u32);
                    }
                    p.send(1);
                    assert_eq!(rx.recv().await, Some(10));
                    let owned = tx.clone().reserve_owned().await.unwrap();
                    assert_eq!(tx.capacity(), 0);
                    drop(owned);
                    assert_eq!(tx.capacity(), 1);
                    let owned = tx.clone().try_reserve_owned().unwrap();
                    assert!(owned.same_channel_as_sender(&tx));
                    let back = owned.send(2);
                    assert!(back.same_channel(&tx));
                    let mut got = Vec::new();
                    rx.recv_many(&mut got, 10).await;
                    assert_eq!(got, [11, 1, 2]);
                    let released = back.try_reserve_owned().unwrap().release();
                    assert_eq!(released.capacity(), 3);
                });
            }

            #[test]
            fn a_oneshot_value_sent_before_or_after_its_receiver_drops() {
                rt().block_on(async {
                    let (tx, rx) = $make!(oneshot::channel::<String>());
                    assert!(!tx.is_closed());
                    tx.send("one".into()).unwrap();
                    assert_eq!(rx.await.unwrap(), "one");

                    let (mut tx, rx) = $make!(oneshot::channel::<String>());
                    drop(rx);
                    assert!(tx.is_closed());
                    tx.closed().await;
                    assert_eq!(tx.send("two".into()), Err("two".to_string()));

                    let value = Arc::new(());
                    let (tx, rx) = $make!(oneshot::channel::<Arc<()>>());
                    tx.send(value.clone()).unwrap();
                    assert_eq!(Arc::strong_count(&value), 2);
                    drop(rx);
                    assert_eq!(Arc::strong_count(&value), 1);

                    let (tx, mut rx) = $make!(oneshot::channel::<u32>());
                    assert_eq!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty));
                    rx.close();
                    assert_eq!(tx.send(3), Err(3));
                    assert_eq!(rx.try_recv(), Err(oneshot::error::TryRecvError::Closed));

                    let (tx, rx) = $make!(oneshot::channel::<u32>());
                    drop(tx);
                    assert!(rx.await.is_err());

                    let (tx, mut rx) = $make!(oneshot::channel::<u32>());
                    tokio::select! {
                        _ = &mut rx => panic!("nothing was sent"),
                        _ = tokio::time::sleep(Duration::from_millis(1)) => {}
                    }
                    tx.send(4).unwrap();
                    assert_eq!(rx.await, Ok(4));
                });
            }

            #[test]
            fn broadcast_receivers_each_get_every_value_or_lag() {
                rt().block_on(async {
                    let (tx, mut rx1) = $make!(broadcast::channel::<u32>(2));
                    let mut rx2 = tx.subscribe();
                    assert_eq!(tx.receiver_count(), 2);
                    assert_eq!(tx.send(1).unwrap(), 2);
                    assert_eq!(rx1.recv().await, Ok(1));
                    assert_eq!(rx2.try_recv(), Ok(1));
                    for v in 2..=5 {
                        assert_eq!(tx.send(v).unwrap(), 2);
                    }
                    assert_eq!(tx.len(), 2);
                    assert_eq!(rx1.len(), 4);
                    assert_eq!(rx1.recv().await, Err(broadcast::error::RecvError::Lagged(2)));
                    assert_eq!(rx1.recv().await, Ok(4));
                    assert_eq!(rx1.recv().await, Ok(5));
                    assert_eq!(rx2.try_recv(), Err(broadcast::error::TryRecvError::Lagged(2)));
                    assert_eq!(rx2.try_recv(), Ok(4));
                    let rx3 = rx2.resubscribe();
                    assert!(rx3.is_empty());
                    assert!(rx3.same_channel(&rx2));
                    drop(rx2);
                    assert_eq!(tx.receiver_count(), 2);
                    drop((rx1, rx3));
                    assert_eq!(tx.send(6).unwrap_err().0, 6);
                    let mut rx4 = tx.subscribe();
                    drop(tx);
                    assert_eq!(rx4.recv().await, Err(broadcast::error::RecvError::Closed));
                });
            }

            #[test]
            fn watch_receivers_see_changes_and_borrow_the_value() {
                rt().block_on(async {
                    let (tx, mut rx) = $make!(watch::channel(0u32));
                    assert_eq!(*rx.borrow(), 0);
                    assert_eq!(rx.has_changed().unwrap(), false);
                    tx.send(1).unwrap();
                    assert_eq!(rx.has_changed().unwrap(), true);
                    rx.changed().await.unwrap();
                    assert_eq!(*rx.borrow(), 1);
                    assert_eq!(rx.has_changed().unwrap(), false);
                    tx.send_modify(|v| *v += 10);
                    {
                        let r = rx.borrow_and_update();
                        assert!(r.has_changed());
                        assert_eq!(*r, 11);
                    }
                    assert_eq!(tx.send_replace(12), 11);
                    assert!(!tx.send_if_modified(|_| false));
                    rx.mark_unchanged();
                    assert_eq!(rx.has_changed().unwrap(), false);
                    rx.mark_changed();
                    assert_eq!(rx.has_changed().unwrap(), true);
                    let mut rx2 = tx.subscribe();
                    assert_eq!(tx.receiver_count(), 2);
                    let waiter = tokio::spawn(async move { *rx2.wait_for(|v| *v == 20).await.unwrap() });
                    tokio::task::yield_now().await;
                    tx.send(20).unwrap();
                    assert_eq!(waiter.await.unwrap(), 20);
                    assert_eq!(*tx.borrow(), 20);
                    drop(rx);
                    assert!(tx.is_closed());
                    tx.closed().await;
                    assert_eq!(tx.send(21).unwrap_err().0, 21);
                    let mut rx = tx.subscribe();
                    drop(tx);
                    assert!(rx.changed().await.is_err());
                    assert_eq!(*rx.borrow(), 20);
                });
            }

            #[test]
            fn blocking_calls_work_outside_a_runtime() {
                let (tx, mut rx) = $make!(mpsc::channel::<u32>(1));
                let t = std::thread::spawn(move || {
                    for i in 0..50 {
                        tx.blocking_send(i).unwrap();
                    }
                });
                for i in 0..50 {
                    assert_eq!(rx.blocking_recv(), Some(i));
                }
                t.join().unwrap();
                assert_eq!(rx.blocking_recv(), None);
                let (tx, rx) = $make!(oneshot::channel::<u32>());
                std::thread::spawn(move || tx.send(8).unwrap());
                assert_eq!(rx.blocking_recv(), Ok(8));
            }

            #[test]
            fn endpoints_are_send_sync_debug_and_clone_as_tokio_s() {
                fn send_sync<T: Send + Sync + std::fmt::Debug>(_: &T) {
                    // The suite runs on the endpoints it means to.
                    let name = std::any::type_name::<T>();
                    assert!(name.starts_with($types), "{name}");
                }
                let (tx, rx) = $make!(mpsc::channel::<u32>(1));
                send_sync(&tx);
                send_sync(&rx);
                send_sync(&tx.clone());
                let (tx, rx) = $make!(mpsc::unbounded_channel::<u32>());
                send_sync(&tx.clone());
                send_sync(&rx);
                let (tx, rx) = $make!(oneshot::channel::<u32>());
                send_sync(&tx);
                send_sync(&rx);
                let (tx, rx) = $make!(broadcast::channel::<u32>(1));
                send_sync(&tx.clone());
                send_sync(&rx);
                let (tx, rx) = $make!(watch::channel(1u32));
                send_sync(&tx);
                send_sync(&rx.clone());
            }
        }
    };
}

semantics!(original_endpoints, original, "tokio::");
semantics!(measured_endpoints, measured, "perflens::");

// ---------------------------------------------------------------------
// The measured side's figures.

static ONE_SESSION: Mutex<()> = Mutex::new(());

fn one_session() -> MutexGuard<'static, ()> {
    ONE_SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

fn session() -> perflens::Session {
    perflens::Session::builder().ignore_env().start().unwrap()
}

fn row<'a>(report: &'a perflens::Report, label: &str) -> &'a perflens_report::ChannelRow {
    report
        .channels
        .iter()
        .find(|r| r.name == label)
        .unwrap_or_else(|| panic!("no row {label} in {:#?}", report.channels))
}

/// (created, senders, receivers, sent, received, dropped, queued,
/// max_queued, capacity) of a row.
type Figures = (u64, u64, u64, u64, u64, u64, u64, u64, Option<u64>);

fn figures(report: &perflens::Report, label: &str) -> Figures {
    let r = row(report, label);
    (
        r.created,
        r.senders,
        r.receivers,
        r.sent,
        r.received,
        r.dropped,
        r.queued,
        r.max_queued,
        r.capacity,
    )
}

#[test]
fn a_bounded_channel_s_row_is_exact() {
    let _one = one_session();
    let s = session();
    rt().block_on(async {
        let (tx, mut rx) = measured!(
            tokio::sync::mpsc::channel::<u32>(4),
            label = "tokio-bounded"
        );
        for i in 0..4 {
            tx.try_send(i).unwrap();
        }
        assert!(tx.try_send(9).is_err());
        let tx2 = tx.clone();
        let waiting = tokio::spawn(async move {
            let sending = std::time::Instant::now();
            (tx2.send(4).await, sending)
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let freeing = std::time::Instant::now();
        assert_eq!(rx.recv().await, Some(0));
        let (sent, sending) = waiting.await.unwrap();
        sent.unwrap();
        for i in 1..4 {
            assert_eq!(rx.recv().await, Some(i));
        }
        let report = s.snapshot();
        // 5 sent, 4 received, 1 queued; the full channel held 4.
        assert_eq!(
            figures(&report, "tokio-bounded"),
            (1, 1, 1, 5, 4, 0, 1, 4, Some(4))
        );
        let r = row(&report, "tokio-bounded");
        // The send waited from its first poll (just after `sending`) until
        // the receive freed a slot (after `freeing`); the spawned task
        // first runs after the sleep began, later under qemu (5 ms), so
        // the sleep's 20 ms is no bound. 5 ms for the send's first poll.
        let blocked = freeing.saturating_duration_since(sending).as_nanos() as u64;
        assert!(
            r.send_wait_ns + 5_000_000 >= blocked,
            "{r:?}: blocked {blocked} ns"
        );
        assert!(r.send_wait_ns > 0, "{r:?}");
        assert_eq!(r.latency_count, 4, "{r:?}");
        drop(rx);
        drop(tx);
    });
    let report = s.finish();
    assert_eq!(
        figures(&report, "tokio-bounded"),
        (1, 0, 0, 5, 4, 1, 0, 4, Some(4))
    );
}

#[test]
fn an_unbounded_channel_s_row_is_exact() {
    let _one = one_session();
    let s = session();
    rt().block_on(async {
        let (tx, mut rx) = measured!(
            tokio::sync::mpsc::unbounded_channel::<u32>(),
            label = "tokio-unbounded"
        );
        let waiter = tokio::spawn(async move {
            let receiving = std::time::Instant::now();
            let first = rx.recv().await;
            (first, rx, receiving)
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let sending = std::time::Instant::now();
        for i in 0..10 {
            tx.send(i).unwrap();
        }
        let (first, mut rx, receiving) = waiter.await.unwrap();
        assert_eq!(first, Some(0));
        for i in 1..7 {
            assert_eq!(rx.recv().await, Some(i));
        }
        let report = s.snapshot();
        assert_eq!(
            figures(&report, "tokio-unbounded"),
            (1, 1, 1, 10, 7, 0, 3, 10, None)
        );
        let r = row(&report, "tokio-unbounded");
        // The receive waited from its first poll (just after `receiving`)
        // until the first send (after `sending`); the spawned task first
        // runs after the sleep began, later under qemu (7 ms), so the
        // sleep's 20 ms is no bound. 5 ms for the receive's first poll.
        let waited = sending.saturating_duration_since(receiving).as_nanos() as u64;
        assert!(
            r.recv_wait_ns + 5_000_000 >= waited && r.recv_wait_ns > 0,
            "{r:?}: waited {waited} ns"
        );
        assert_eq!(r.send_wait_ns, 0, "{r:?}");
        drop(rx);
    });
    let report = s.finish();
    assert_eq!(
        figures(&report, "tokio-unbounded"),
        (1, 0, 0, 10, 7, 3, 0, 10, None)
    );
}

#[test]
fn oneshot_rows_count_values_sent_received_and_dropped() {
    let _one = one_session();
    let s = session();
    rt().block_on(async {
        for round in 0..3u32 {
            let (tx, rx) = measured!(
                tokio::sync::oneshot::channel::<u32>(),
                label = "tokio-oneshot"
            );
            match round {
                // Sent and received.
                0 => {
                    tx.send(0).unwrap();
                    assert_eq!(rx.await, Ok(0));
                }
                // Sent, never received.
                1 => {
                    tx.send(1).unwrap();
                    drop(rx);
                }
                // The receiver gone first: handed back, not sent.
                _ => {
                    drop(rx);
                    assert_eq!(tx.send(2), Err(2));
                }
            }
        }
    });
    let report = s.finish();
    assert_eq!(
        figures(&report, "tokio-oneshot"),
        (3, 0, 0, 2, 1, 1, 0, 1, Some(1))
    );
}

#[test]
fn a_broadcast_row_counts_each_receiver_s_copy() {
    let _one = one_session();
    let s = session();
    rt().block_on(async {
        let (tx, mut rx1) = measured!(
            tokio::sync::broadcast::channel::<u32>(2),
            label = "tokio-broadcast"
        );
        let rx2 = tx.subscribe();
        for v in 1..=4 {
            assert_eq!(tx.send(v).unwrap(), 2);
        }
        // rx1 lagged 2 copies, then gets 2; rx2 gets none of its 4.
        assert_eq!(
            rx1.recv().await,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(2))
        );
        assert_eq!(rx1.recv().await, Ok(3));
        assert_eq!(rx1.try_recv(), Ok(4));
        let report = s.snapshot();
        assert_eq!(
            figures(&report, "tokio-broadcast"),
            (1, 1, 2, 8, 2, 2, 4, 2, Some(2))
        );
        drop(rx2);
        drop(rx1);
        // No receiver: handed back, not sent.
        assert!(tx.send(5).is_err());
    });
    let report = s.finish();
    assert_eq!(
        figures(&report, "tokio-broadcast"),
        (1, 0, 0, 8, 2, 6, 0, 2, Some(2))
    );
}

#[test]
fn a_watch_row_counts_sends_and_observed_changes() {
    let _one = one_session();
    let s = session();
    rt().block_on(async {
        let (tx, mut rx) = measured!(tokio::sync::watch::channel(0u32), label = "tokio-watch");
        let tx2 = tx.clone();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            tx2.send(1).unwrap();
        });
        rx.changed().await.unwrap();
        sender.await.unwrap();
        assert_eq!(*rx.borrow(), 1);
        // Two sends, one observed change.
        tx.send(2).unwrap();
        tx.send(3).unwrap();
        rx.changed().await.unwrap();
        tx.send_modify(|v| *v += 1);
        assert_eq!(*rx.borrow_and_update(), 4);
        assert_eq!(*rx.borrow_and_update(), 4);
        assert!(!tx.send_if_modified(|_| false));
        let report = s.snapshot();
        // No queue: nothing dropped, no max queued; "queued" is
        // sent − received (4 − 3), as the row always computes it.
        assert_eq!(
            figures(&report, "tokio-watch"),
            (1, 1, 1, 4, 3, 0, 1, 0, Some(1))
        );
        let r = row(&report, "tokio-watch");
        assert!(r.recv_wait_ns >= 15_000_000, "{r:?}");
        assert_eq!(r.latency_count, 3, "{r:?}");
        drop((tx, rx));
    });
    let report = s.finish();
    assert_eq!(
        figures(&report, "tokio-watch"),
        (1, 0, 0, 4, 3, 0, 1, 0, Some(1))
    );
}

#[test]
fn four_producers_on_a_multi_thread_runtime_balance() {
    const PER_PRODUCER: u32 = 100_000;
    const CAPACITY: usize = 64;
    let _one = one_session();
    let s = session();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let (received, accepted) = runtime.block_on(async {
        let (tx, mut rx) = measured!(
            tokio::sync::mpsc::channel::<u32>(CAPACITY),
            label = "tokio-stress"
        );
        let producers: Vec<_> = (0..4)
            .map(|_| {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut accepted = 0u64;
                    for i in 0..PER_PRODUCER {
                        if tx.send(i).await.is_err() {
                            break;
                        }
                        accepted += 1;
                    }
                    accepted
                })
            })
            .collect();
        drop(tx);
        // The consumer stops early, leaving messages queued and the
        // producers' last sends refused.
        let mut received = 0u64;
        while received < 350_000 {
            rx.recv().await.unwrap();
            received += 1;
        }
        drop(rx);
        let mut accepted = 0;
        for p in producers {
            accepted += p.await.unwrap();
        }
        (received, accepted)
    });
    drop(runtime);
    let report = s.finish();
    let r = row(&report, "tokio-stress");
    assert_eq!(r.received, received, "{r:?}");
    assert_eq!(r.sent, accepted, "{r:?}");
    assert_eq!(r.sent, r.received + r.dropped, "{r:?}");
    assert!(r.dropped <= CAPACITY as u64, "{r:?}");
    assert!(r.max_queued <= CAPACITY as u64 && r.max_queued > 0, "{r:?}");
    assert_eq!(r.capacity, Some(CAPACITY as u64));
    assert_eq!((r.created, r.senders, r.receivers, r.queued), (1, 0, 0, 0));
}
