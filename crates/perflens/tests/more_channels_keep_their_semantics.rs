//! flume, async-channel and futures' channels, measured, behave as the
//! originals: one suite per backend, written once (a macro over the
//! constructor calls) and run against the original constructors and
//! against `perflens::channel!` of them: capacity and the Full error
//! handing the message back, disconnected or closed channels handing
//! messages back, order, closing, receivers dropped with messages queued,
//! an async receive cancelled after one `Pending` poll losing no message,
//! a oneshot sent before and after its receiver is gone. Then the
//! measured side's rows, exact, and 4 producers × 100,000 messages.
#![cfg(all(
    feature = "enabled",
    feature = "flow-flume",
    feature = "flow-async-channel",
    feature = "flow-futures"
))]

use futures_core::Stream;
use futures_sink::Sink;
use perflens::{ChannelRow, Report, Session};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Sessions are process-wide: the tests that start one take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A context whose waker does nothing (one poll, to see `Pending`).
fn noop() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park_timeout(Duration::from_millis(10)),
        }
    }
}

/// A message that counts its drops.
struct Counted(Arc<AtomicU32>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

macro_rules! flume_suite {
    ($name:ident, bounded: $make:expr, unbounded: $unbounded:expr) => {
        mod $name {
            use super::*;
            use flume as e;

            #[test]
            fn capacity_full_hands_the_message_back() {
                let (tx, rx) = $make;
                tx.try_send(1u32).unwrap();
                tx.try_send(2).unwrap();
                assert_eq!(tx.try_send(3), Err(e::TrySendError::Full(3)));
                assert_eq!(
                    tx.send_timeout(3, Duration::from_millis(2)),
                    Err(e::SendTimeoutError::Timeout(3))
                );
                assert!(tx.is_full() && rx.len() == 2 && tx.capacity() == Some(2));
                assert_eq!(rx.recv(), Ok(1));
                tx.try_send(3).unwrap();
                assert_eq!(rx.drain().collect::<Vec<_>>(), [2, 3]);
                assert_eq!(rx.try_recv(), Err(e::TryRecvError::Empty));
                assert!(rx.is_empty());
            }

            #[test]
            fn a_gone_receiver_hands_every_message_back() {
                let (tx, rx) = $make;
                drop(rx);
                assert!(tx.is_disconnected());
                assert_eq!(tx.send(7u32), Err(e::SendError(7)));
                assert_eq!(tx.try_send(8), Err(e::TrySendError::Disconnected(8)));
                assert_eq!(block_on(tx.send_async(9)), Err(e::SendError(9)));
            }

            #[test]
            fn gone_senders_close_the_channel_after_its_messages() {
                let (tx, rx) = $make;
                let tx2 = tx.clone();
                assert_eq!((tx.sender_count(), rx.receiver_count()), (2, 1));
                tx.send(1u32).unwrap();
                tx2.send(2).unwrap();
                drop(tx);
                assert_eq!(rx.recv(), Ok(1));
                drop(tx2);
                assert_eq!(block_on(rx.recv_async()), Ok(2));
                assert_eq!(rx.recv(), Err(e::RecvError::Disconnected));
                assert_eq!(rx.try_recv(), Err(e::TryRecvError::Disconnected));
                assert_eq!(
                    rx.recv_timeout(Duration::from_millis(1)),
                    Err(e::RecvTimeoutError::Disconnected)
                );
                assert_eq!(block_on(rx.recv_async()), Err(e::RecvError::Disconnected));
            }

            #[test]
            fn order_is_kept_and_iteration_ends_at_the_close() {
                let (tx, rx) = $unbounded;
                for i in 0..100u32 {
                    tx.send(i).unwrap();
                }
                assert_eq!(tx.capacity(), None);
                drop(tx);
                let got: Vec<u32> = rx.iter().collect();
                assert_eq!(got, (0..100).collect::<Vec<_>>());
            }

            #[test]
            fn streams_and_sinks_keep_order() {
                let (tx, rx) = $unbounded;
                {
                    let mut sink = tx.sink();
                    for i in 0..3u32 {
                        let mut s = Pin::new(&mut sink);
                        assert!(matches!(
                            s.as_mut().poll_ready(&mut noop()),
                            Poll::Ready(Ok(()))
                        ));
                        s.as_mut().start_send(i).unwrap();
                        assert!(matches!(s.poll_flush(&mut noop()), Poll::Ready(Ok(()))));
                    }
                    assert!(sink.sender().same_channel(&tx));
                }
                drop(tx);
                let mut stream = rx.stream();
                let mut got = Vec::new();
                while let Poll::Ready(Some(v)) = Pin::new(&mut stream).poll_next(&mut noop()) {
                    got.push(v);
                }
                assert_eq!(got, [0, 1, 2]);
                drop(stream);
                assert_eq!(
                    block_on(rx.into_recv_async()),
                    Err(e::RecvError::Disconnected)
                );
            }

            #[test]
            fn a_cancelled_async_recv_loses_no_message() {
                let (tx, rx) = $make;
                {
                    let mut f = rx.recv_async();
                    assert!(Pin::new(&mut f).poll(&mut noop()).is_pending());
                }
                {
                    let mut s = rx.stream();
                    assert!(Pin::new(&mut s).poll_next(&mut noop()).is_pending());
                }
                tx.send(5u32).unwrap();
                assert_eq!(rx.try_recv(), Ok(5));
            }

            #[test]
            fn an_async_send_waits_for_room() {
                let (tx, rx) = $make;
                tx.send(1u32).unwrap();
                tx.send(2).unwrap();
                let mut f = tx.send_async(3);
                assert!(Pin::new(&mut f).poll(&mut noop()).is_pending());
                assert_eq!(rx.recv(), Ok(1));
                assert!(matches!(
                    Pin::new(&mut f).poll(&mut noop()),
                    Poll::Ready(Ok(()))
                ));
                drop(f);
                assert_eq!(rx.try_iter().collect::<Vec<_>>(), [2, 3]);
                // The owning future keeps the channel open while it waits.
                block_on(tx.clone().into_send_async(4)).unwrap();
                assert_eq!(rx.recv(), Ok(4));
            }

            #[test]
            fn receivers_dropped_with_messages_queued() {
                let dropped = Arc::new(AtomicU32::new(0));
                let (tx, rx) = $unbounded;
                for _ in 0..3 {
                    tx.send(Counted(dropped.clone())).unwrap();
                }
                drop(rx.recv().unwrap());
                assert_eq!(dropped.load(Ordering::Relaxed), 1);
                drop(rx);
                assert!(tx.is_disconnected());
                drop(tx);
                assert_eq!(dropped.load(Ordering::Relaxed), 3);
            }

            #[test]
            fn weak_senders_debug_and_send_as_the_originals() {
                fn send_sync<T: Send + Sync>(_: &T) {}
                let (tx, rx) = $make;
                send_sync(&tx);
                send_sync(&rx);
                assert_eq!(format!("{tx:?} {rx:?}"), "Sender Receiver");
                let weak = tx.downgrade();
                assert_eq!(format!("{weak:?}"), "WeakSender");
                weak.upgrade().unwrap().send(1u32).unwrap();
                let rx2 = rx.clone();
                assert!(rx.same_channel(&rx2));
                drop(tx);
                assert!(weak.upgrade().is_none());
                assert_eq!(rx2.recv(), Ok(1));
            }
        }
    };
}

flume_suite!(
    flume_original,
    bounded: flume::bounded(2),
    unbounded: flume::unbounded()
);
flume_suite!(
    flume_measured,
    bounded: perflens::channel!(flume::bounded(2)),
    unbounded: perflens::channel!(flume::unbounded())
);

macro_rules! async_channel_suite {
    ($name:ident, bounded: $make:expr, unbounded: $unbounded:expr) => {
        mod $name {
            use super::*;
            use async_channel as e;

            #[test]
            fn capacity_full_hands_the_message_back() {
                let (tx, rx) = $make;
                tx.try_send(1u32).unwrap();
                tx.try_send(2).unwrap();
                assert_eq!(tx.try_send(3), Err(e::TrySendError::Full(3)));
                assert!(tx.is_full() && rx.is_full() && rx.len() == 2);
                assert_eq!((tx.capacity(), rx.capacity()), (Some(2), Some(2)));
                assert_eq!(rx.recv_blocking(), Ok(1));
                tx.try_send(3).unwrap();
                assert_eq!(rx.try_recv(), Ok(2));
                assert_eq!(block_on(rx.recv()), Ok(3));
                assert_eq!(rx.try_recv(), Err(e::TryRecvError::Empty));
                assert!(tx.is_empty());
            }

            #[test]
            fn a_closed_channel_hands_every_message_back() {
                let (tx, rx) = $make;
                drop(rx);
                assert!(tx.is_closed());
                assert_eq!(tx.send_blocking(7u32), Err(e::SendError(7)));
                assert_eq!(tx.try_send(8), Err(e::TrySendError::Closed(8)));
                assert_eq!(block_on(tx.send(9)), Err(e::SendError(9)));
            }

            #[test]
            fn closing_keeps_the_queued_messages() {
                let (tx, rx) = $make;
                tx.send_blocking(1u32).unwrap();
                assert!(rx.close());
                assert!(!tx.close());
                assert_eq!(tx.try_send(2), Err(e::TrySendError::Closed(2)));
                assert_eq!(rx.recv_blocking(), Ok(1));
                assert_eq!(rx.recv_blocking(), Err(e::RecvError));
                assert_eq!(rx.try_recv(), Err(e::TryRecvError::Closed));
                assert_eq!(block_on(rx.recv()), Err(e::RecvError));
            }

            #[test]
            fn order_is_kept_and_the_stream_ends_at_the_close() {
                let (tx, rx) = $unbounded;
                for i in 0..100u32 {
                    tx.try_send(i).unwrap();
                }
                assert_eq!(tx.capacity(), None);
                assert_eq!((tx.sender_count(), tx.receiver_count()), (1, 1));
                drop(tx);
                let mut rx = pin!(rx);
                let mut got = Vec::new();
                while let Poll::Ready(Some(v)) = rx.as_mut().poll_next(&mut noop()) {
                    got.push(v);
                }
                assert_eq!(got, (0..100).collect::<Vec<_>>());
                assert!(futures_core::FusedStream::is_terminated(&*rx));
            }

            #[test]
            fn a_cancelled_async_recv_loses_no_message() {
                let (tx, rx) = $make;
                {
                    let mut f = pin!(rx.recv());
                    assert!(f.as_mut().poll(&mut noop()).is_pending());
                }
                tx.send_blocking(5u32).unwrap();
                assert_eq!(rx.try_recv(), Ok(5));
            }

            #[test]
            fn an_async_send_waits_for_room() {
                let (tx, rx) = $make;
                tx.send_blocking(1u32).unwrap();
                tx.send_blocking(2).unwrap();
                {
                    let mut f = pin!(tx.send(3));
                    assert!(f.as_mut().poll(&mut noop()).is_pending());
                    assert_eq!(rx.try_recv(), Ok(1));
                    assert!(matches!(f.as_mut().poll(&mut noop()), Poll::Ready(Ok(()))));
                }
                assert_eq!(tx.force_send(4), Ok(Some(2)));
                assert_eq!((rx.try_recv(), rx.try_recv()), (Ok(3), Ok(4)));
            }

            #[test]
            fn futures_send_as_the_originals() {
                fn send<T: Send>(_: &T) {}
                let (tx, rx) = $make;
                let f = tx.send(1u32);
                send(&f);
                drop(f);
                let r = rx.recv();
                send(&r);
            }

            #[test]
            fn receivers_dropped_with_messages_queued() {
                let dropped = Arc::new(AtomicU32::new(0));
                let (tx, rx) = $unbounded;
                for _ in 0..3 {
                    tx.send_blocking(Counted(dropped.clone())).unwrap();
                }
                drop(rx.recv_blocking().unwrap());
                assert_eq!(dropped.load(Ordering::Relaxed), 1);
                drop(rx);
                assert!(tx.is_closed());
                drop(tx);
                assert_eq!(dropped.load(Ordering::Relaxed), 3);
            }

            #[test]
            fn weak_senders_debug_and_send_as_the_originals() {
                fn send_sync<T: Send + Sync>(_: &T) {}
                let (tx, rx) = $make;
                send_sync(&tx);
                send_sync(&rx);
                assert_eq!(format!("{tx:?} {rx:?}"), "Sender { .. } Receiver { .. }");
                let weak = tx.downgrade();
                weak.upgrade().unwrap().try_send(1u32).unwrap();
                let rx2 = rx.clone();
                assert!(rx.same_channel(&rx2) && tx.same_channel(&tx.clone()));
                assert_eq!((tx.sender_count(), rx.receiver_count()), (1, 2));
                drop(tx);
                assert!(weak.upgrade().is_none());
                assert_eq!(rx2.recv_blocking(), Ok(1));
                drop((rx, rx2));
                let (tx, rx) = $make;
                let weak_rx = rx.downgrade();
                assert_eq!(weak_rx.upgrade().unwrap().receiver_count(), 2);
                {
                    let mut closed = pin!(tx.closed());
                    assert!(closed.as_mut().poll(&mut noop()).is_pending());
                    drop(rx);
                    assert!(closed.as_mut().poll(&mut noop()).is_ready());
                }
                assert!(weak_rx.upgrade().is_none());
                assert_eq!(tx.try_send(2u32), Err(e::TrySendError::Closed(2)));
            }
        }
    };
}

async_channel_suite!(
    async_channel_original,
    bounded: async_channel::bounded(2),
    unbounded: async_channel::unbounded()
);
async_channel_suite!(
    async_channel_measured,
    bounded: perflens::channel!(async_channel::bounded(2)),
    unbounded: perflens::channel!(async_channel::unbounded())
);

macro_rules! futures_suite {
    ($name:ident, bounded: $make:expr, unbounded: $unbounded:expr, oneshot: $oneshot:expr) => {
        mod $name {
            use super::*;
            use futures_channel::mpsc::TryRecvError;
            use futures_channel::oneshot::Canceled;

            #[test]
            fn capacity_is_the_buffer_and_one_per_sender() {
                // A buffer of 1 and one sender: room for 2.
                let (mut tx, mut rx) = $make;
                tx.try_send(1u32).unwrap();
                tx.try_send(2).unwrap();
                let e = tx.try_send(3).unwrap_err();
                assert!(e.is_full() && !e.is_disconnected());
                assert_eq!(format!("{e:?}"), "TrySendError { kind: Full }");
                assert_eq!(e.to_string(), "send failed because channel is full");
                assert!(e.clone().into_send_error().is_full());
                assert_eq!(e.into_inner(), 3);
                assert!(tx.poll_ready(&mut noop()).is_pending());
                assert_eq!(rx.try_recv(), Ok(1));
                assert!(matches!(tx.poll_ready(&mut noop()), Poll::Ready(Ok(()))));
                tx.try_send(3).unwrap();
                assert_eq!(rx.try_recv(), Ok(2));
                assert_eq!(block_on(rx.recv()), Ok(3));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            }

            #[test]
            fn a_gone_receiver_hands_every_message_back() {
                let (mut tx, rx) = $make;
                drop(rx);
                assert!(tx.is_closed());
                let e = tx.try_send(7u32).unwrap_err();
                assert!(e.is_disconnected());
                assert!(e.clone().into_send_error().is_disconnected());
                assert_eq!(e.into_inner(), 7);
                assert!(tx.start_send(8).unwrap_err().is_disconnected());
                let (utx, urx) = $unbounded;
                drop(urx);
                assert_eq!(utx.unbounded_send(9u32).unwrap_err().into_inner(), 9);
            }

            #[test]
            fn closing_keeps_the_queued_messages() {
                let (mut tx, mut rx) = $make;
                let tx2 = tx.clone();
                assert!(tx.same_receiver(&tx2) && tx.is_connected_to(&rx));
                tx.try_send(1u32).unwrap();
                rx.close();
                assert!(tx.is_closed() && tx2.is_closed());
                assert!(tx.try_send(2).unwrap_err().is_disconnected());
                assert_eq!(rx.try_recv(), Ok(1));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
                assert_eq!(block_on(rx.recv()), Err(futures_channel::mpsc::RecvError));
            }

            #[test]
            fn order_is_kept_and_the_stream_ends_when_senders_go() {
                let (utx, mut urx) = $unbounded;
                let utx2 = utx.clone();
                for i in 0..100u32 {
                    utx.unbounded_send(i).unwrap();
                }
                assert_eq!((utx.len(), utx.is_empty()), (100, false));
                drop(utx);
                let mut utx3 = utx2.clone();
                let mut s = Pin::new(&mut utx3);
                assert!(matches!(
                    s.as_mut().poll_ready(&mut noop()),
                    Poll::Ready(Ok(()))
                ));
                s.as_mut().start_send(100).unwrap();
                assert!(matches!(
                    s.as_mut().poll_close(&mut noop()),
                    Poll::Ready(Ok(()))
                ));
                drop(utx2);
                let mut got = Vec::new();
                while let Poll::Ready(Some(v)) = Pin::new(&mut urx).poll_next(&mut noop()) {
                    got.push(v);
                }
                assert_eq!(got, (0..101).collect::<Vec<_>>());
                assert!(futures_core::FusedStream::is_terminated(&urx));
            }

            #[test]
            fn the_sender_is_a_sink() {
                let (mut tx, mut rx) = $make;
                let mut s = Pin::new(&mut tx);
                for i in 0..2u32 {
                    assert!(matches!(
                        s.as_mut().poll_ready(&mut noop()),
                        Poll::Ready(Ok(()))
                    ));
                    s.as_mut().start_send(i).unwrap();
                }
                // Full: this sender is parked until the receiver takes one.
                assert!(s.as_mut().poll_flush(&mut noop()).is_pending());
                assert_eq!(rx.try_recv(), Ok(0));
                assert!(matches!(
                    s.as_mut().poll_flush(&mut noop()),
                    Poll::Ready(Ok(()))
                ));
                assert!(matches!(
                    s.as_mut().poll_close(&mut noop()),
                    Poll::Ready(Ok(()))
                ));
                assert_eq!(rx.try_recv(), Ok(1));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
                assert_eq!(format!("{tx:?}"), "Sender { closed: true }");
            }

            #[test]
            fn a_cancelled_async_recv_loses_no_message() {
                let (mut tx, mut rx) = $make;
                {
                    let mut f = rx.recv();
                    assert!(Pin::new(&mut f).poll(&mut noop()).is_pending());
                }
                assert!(Pin::new(&mut rx).poll_next(&mut noop()).is_pending());
                tx.try_send(5u32).unwrap();
                assert_eq!(rx.try_recv(), Ok(5));
            }

            #[test]
            fn receivers_dropped_with_messages_queued() {
                let dropped = Arc::new(AtomicU32::new(0));
                let (utx, mut urx) = $unbounded;
                for _ in 0..3 {
                    utx.unbounded_send(Counted(dropped.clone())).unwrap();
                }
                drop(urx.try_recv().unwrap());
                assert_eq!(dropped.load(Ordering::Relaxed), 1);
                drop(urx);
                assert!(utx.is_closed());
                drop(utx);
                assert_eq!(dropped.load(Ordering::Relaxed), 3);
            }

            #[test]
            fn endpoints_send_sync_and_debug_as_the_originals() {
                fn send_sync<T: Send + Sync + Unpin>(_: &T) {}
                let (tx, rx) = $make;
                let (utx, urx) = $unbounded;
                let (otx, orx) = $oneshot;
                send_sync(&tx);
                send_sync(&rx);
                send_sync(&utx);
                send_sync(&urx);
                send_sync(&otx);
                send_sync(&orx);
                assert_eq!(format!("{tx:?}"), "Sender { closed: false }");
                assert_eq!(format!("{utx:?}"), "UnboundedSender { closed: false }");
                drop((rx, urx, orx));
                otx.send(1u32).unwrap_err();
                tx.clone().try_send(2u32).unwrap_err();
                utx.unbounded_send(3u32).unwrap_err();
            }

            #[test]
            fn a_oneshot_sent_before_and_after_its_receiver_goes() {
                let (tx, mut rx) = $oneshot;
                assert!(tx.is_connected_to(&rx) && !tx.is_canceled());
                assert_eq!(rx.try_recv(), Ok(None));
                tx.send(1u32).unwrap();
                assert_eq!(block_on(rx), Ok(1));

                let dropped = Arc::new(AtomicU32::new(0));
                let (tx, rx) = $oneshot;
                tx.send(Counted(dropped.clone())).ok().unwrap();
                drop(rx);
                assert_eq!(dropped.load(Ordering::Relaxed), 1);

                let (mut tx, rx) = $oneshot;
                assert!(tx.poll_canceled(&mut noop()).is_pending());
                drop(rx);
                block_on(tx.cancellation());
                assert!(tx.is_canceled());
                assert_eq!(tx.send(2u32), Err(2));

                let (tx, rx) = $oneshot;
                drop(tx);
                assert_eq!(block_on(rx), Err::<u32, _>(Canceled));

                let (tx, mut rx) = $oneshot;
                rx.close();
                assert_eq!(tx.send(3u32), Err(3));
            }
        }
    };
}

futures_suite!(
    futures_original,
    bounded: futures_channel::mpsc::channel(1),
    unbounded: futures_channel::mpsc::unbounded(),
    oneshot: futures_channel::oneshot::channel()
);
futures_suite!(
    futures_measured,
    bounded: perflens::channel!(futures_channel::mpsc::channel(1)),
    unbounded: perflens::channel!(futures_channel::mpsc::unbounded()),
    oneshot: perflens::channel!(futures_channel::oneshot::channel())
);

fn session() -> Session {
    Session::builder().ignore_env().start().expect("a session")
}

fn row<'a>(report: &'a Report, name: &str) -> &'a ChannelRow {
    (report.channels.iter())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no channel {name}: {:?}", report.channels))
}

/// (created, sent, received, dropped, queued)
fn counts(c: &ChannelRow) -> (u64, u64, u64, u64, u64) {
    (c.created, c.sent, c.received, c.dropped, c.queued)
}

#[test]
fn flume_rows_are_exact() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let (tx, rx) = perflens::channel!(flume::bounded(4), label = "fl");
    for i in 0..4u32 {
        tx.try_send(i).unwrap();
    }
    assert_eq!(tx.try_send(9), Err(flume::TrySendError::Full(9)));
    let mut f = tx.send_async(4);
    assert!(Pin::new(&mut f).poll(&mut noop()).is_pending());
    assert_eq!(rx.recv(), Ok(0));
    assert!(Pin::new(&mut f).poll(&mut noop()).is_ready());
    drop(f);
    assert_eq!(rx.drain().sum::<u32>(), 1 + 2 + 3 + 4);
    {
        let mut r = rx.recv_async();
        assert!(Pin::new(&mut r).poll(&mut noop()).is_pending());
    }
    let (tx2, rx2) = (tx.clone(), rx.clone());
    drop(tx2);
    tx.send(7).unwrap();
    drop(rx);
    assert_eq!(block_on(rx2.recv_async()), Ok(7));
    // Alive at the report: tx and rx2 (dropped after it).
    let alive = (tx, rx2);

    let (tx, rx) = perflens::channel!(flume::unbounded(), label = "fl-left");
    for i in 0..10u32 {
        tx.send(i).unwrap();
    }
    for _ in 0..7 {
        rx.recv().unwrap();
    }
    // Sent into a sink, never flushed: sent, then dropped with the sink.
    let mut sink = tx.sink();
    Pin::new(&mut sink).start_send(10).unwrap();
    drop(sink);
    drop((tx, rx));

    let report = s.finish();
    drop(alive);
    let fl = row(&report, "fl");
    assert_eq!(counts(fl), (1, 6, 6, 0, 0), "{fl:?}");
    assert_eq!((fl.max_queued, fl.capacity), (4, Some(4)));
    assert_eq!((fl.senders, fl.receivers), (1, 1));
    assert_eq!(fl.latency_count, 6);
    let left = row(&report, "fl-left");
    assert_eq!(counts(left), (1, 11, 7, 4, 0), "{left:?}");
    // Read after every send (the thread's first 256 at the site).
    assert_eq!((left.max_queued, left.capacity), (10, None));
    assert_eq!((left.senders, left.receivers), (0, 0));
}

#[test]
fn async_channel_rows_are_exact() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let (tx, rx) = perflens::channel!(async_channel::bounded(2), label = "ac");
    // The receiver is a `Stream`, `!Unpin` as async-channel's.
    let mut rx = Box::pin(rx);
    tx.try_send(1u32).unwrap();
    tx.try_send(2).unwrap();
    assert_eq!(tx.try_send(3), Err(async_channel::TrySendError::Full(3)));
    {
        let mut f = pin!(tx.send(3));
        assert!(f.as_mut().poll(&mut noop()).is_pending());
        assert_eq!(block_on(rx.recv()), Ok(1));
        assert!(f.as_mut().poll(&mut noop()).is_ready());
    }
    assert_eq!(rx.recv_blocking(), Ok(2));
    assert_eq!(rx.as_mut().poll_next(&mut noop()), Poll::Ready(Some(3)));
    assert!(rx.as_mut().poll_next(&mut noop()).is_pending());
    {
        let mut f = pin!(rx.recv());
        assert!(f.as_mut().poll(&mut noop()).is_pending());
    }
    tx.send_blocking(4).unwrap();
    tx.send_blocking(5).unwrap();
    assert_eq!(tx.force_send(6), Ok(Some(4)));
    // A send future dropped unpolled: sent, and dropped with it.
    drop(tx.send(7));
    let rx2 = rx.clone();
    assert_eq!(rx2.receiver_count(), 2);
    drop(rx2);
    drop((tx, rx));
    let report = s.finish();
    let ac = row(&report, "ac");
    // Sent 1..=7; received 1, 2, 3; dropped 4 (pushed out), 5 and 6
    // (with the channel) and 7 (with its future).
    assert_eq!(counts(ac), (1, 7, 3, 4, 0), "{ac:?}");
    assert_eq!((ac.max_queued, ac.capacity), (2, Some(2)));
    assert_eq!((ac.senders, ac.receivers), (0, 0));
    assert_eq!(ac.latency_count, 3);
}

#[test]
fn futures_rows_are_exact() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = session();
    let (mut tx, mut rx) = perflens::channel!(futures_channel::mpsc::channel(1), label = "fu");
    tx.try_send(1u32).unwrap();
    tx.try_send(2).unwrap();
    assert!(tx.try_send(3).unwrap_err().is_full());
    let mut tx2 = tx.clone();
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(
        Pin::new(&mut rx).poll_next(&mut noop()),
        Poll::Ready(Some(2))
    );
    tx2.try_send(3).unwrap();
    let mut sink = Pin::new(&mut tx2);
    assert!(matches!(
        sink.as_mut().poll_ready(&mut noop()),
        Poll::Ready(Ok(()))
    ));
    sink.as_mut().start_send(4).unwrap();
    assert_eq!(block_on(rx.recv()), Ok(3));
    assert_eq!(block_on(rx.recv()), Ok(4));
    {
        let mut f = rx.recv();
        assert!(Pin::new(&mut f).poll(&mut noop()).is_pending());
    }
    drop(tx2);
    // Alive at the report (dropped after it).
    let alive = (tx, rx);

    let (utx, mut urx) = perflens::channel!(futures_channel::mpsc::unbounded(), label = "fu-unb");
    for i in 0..5u32 {
        utx.unbounded_send(i).unwrap();
    }
    assert_eq!(urx.try_recv(), Ok(0));
    assert_eq!(urx.try_recv(), Ok(1));
    drop((utx, urx));

    for case in 0..3u32 {
        let (tx, rx) = perflens::channel!(futures_channel::oneshot::channel(), label = "fu-one");
        match case {
            0 => {
                tx.send(1u32).unwrap();
                assert_eq!(block_on(rx), Ok(1));
            }
            1 => {
                tx.send(2).unwrap();
                drop(rx);
            }
            _ => {
                drop(rx);
                assert_eq!(tx.send(3), Err(3));
            }
        }
    }
    let report = s.finish();
    drop(alive);
    let fu = row(&report, "fu");
    assert_eq!(counts(fu), (1, 4, 4, 0, 0), "{fu:?}");
    // The buffer and a sender, then a second sender: 3; the send that
    // found it full saw buffer + 1 queued.
    assert_eq!((fu.max_queued, fu.capacity), (2, Some(3)), "{fu:?}");
    assert_eq!((fu.senders, fu.receivers), (1, 1));
    let unb = row(&report, "fu-unb");
    assert_eq!(counts(unb), (1, 5, 2, 3, 0), "{unb:?}");
    // Read after every send (the thread's first 256 at the site).
    assert_eq!((unb.max_queued, unb.capacity), (5, None));
    assert_eq!((unb.senders, unb.receivers), (0, 0));
    let one = row(&report, "fu-one");
    assert_eq!(counts(one), (3, 2, 1, 1, 0), "{one:?}");
    assert_eq!((one.max_queued, one.capacity), (1, Some(1)));
    assert_eq!((one.senders, one.receivers), (0, 0));
}

/// 4 producers × 100,000 messages into a channel of 64 whose consumer
/// stops early and drops its end: every message sent was received or
/// dropped with the channel, and the queue never held more than 64.
macro_rules! four_producers {
    ($name:ident, $make:expr, $label:literal, $send:ident, $recv:ident) => {
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
                            if tx.$send(i).is_err() {
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
                rx.$recv().unwrap();
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
    four_flume_producers,
    perflens::channel!(flume::bounded(64), label = "four-flume"),
    "four-flume",
    send,
    recv
);
four_producers!(
    four_async_channel_producers,
    perflens::channel!(async_channel::bounded(64), label = "four-ac"),
    "four-ac",
    send_blocking,
    recv_blocking
);
