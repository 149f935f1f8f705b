//! Every macro, with instrumentation compiled out.

#[perflens::measure]
fn add(a: u32, b: u32) -> u32 {
    a + b
}

struct S;

#[perflens::measure_all]
impl S {
    fn one(&self) -> u32 {
        1
    }

    #[perflens::skip]
    fn two(&self) -> u32 {
        2
    }
}

#[perflens::measure(label = "async work")]
async fn later(x: &u32) -> u32 {
    *x
}

/// With `enabled` off, `channel!` is the constructor call and the
/// `perflens::flow` names are the backends' own types.
fn channels() {
    use std::any::{type_name, type_name_of_val};
    let (tx, rx) = perflens::channel!(crossbeam_channel::bounded::<u32>(1), label = "jobs");
    assert_eq!(
        type_name_of_val(&tx),
        type_name::<crossbeam_channel::Sender<u32>>()
    );
    assert_eq!(
        type_name::<perflens::flow::crossbeam::Sender<u32>>(),
        type_name::<crossbeam_channel::Sender<u32>>()
    );
    assert_eq!(
        type_name::<perflens::flow::crossbeam::Receiver<u32>>(),
        type_name_of_val(&rx)
    );
    let (stx, srx) = perflens::channel!(std::sync::mpsc::sync_channel::<u32>(1));
    assert_eq!(
        type_name_of_val(&stx),
        type_name::<std::sync::mpsc::SyncSender<u32>>()
    );
    assert_eq!(
        type_name::<perflens::flow::std::Receiver<u32>>(),
        type_name_of_val(&srx)
    );
    assert_eq!(
        type_name::<perflens::flow::std::Sender<u32>>(),
        type_name::<std::sync::mpsc::Sender<u32>>()
    );
    more_channels();
    // A probe does nothing, and compiles.
    static PROBE: perflens::flow::Probe = perflens::flow::Probe::channel("queue");
    PROBE.created(Some(1));
    let stamp = PROBE.stamp();
    PROBE.sent(Some(1));
    PROBE.received(stamp);
    assert_eq!(stamp, perflens::flow::Stamp::default());
    tx.send(1).unwrap();
    stx.send(2).unwrap();
    assert_eq!(rx.recv().unwrap() + srx.recv().unwrap(), 3);
}

/// flume, async-channel and futures' channels: the constructor call and
/// the backends' own types.
fn more_channels() {
    use std::any::{type_name, type_name_of_val};
    macro_rules! same {
        ($($ours:ty => $theirs:ty),* $(,)?) => {
            $(assert_eq!(type_name::<$ours>(), type_name::<$theirs>());)*
        };
    }
    let (ftx, frx) = perflens::channel!(flume::bounded::<u32>(1), label = "flume");
    assert_eq!(type_name_of_val(&ftx), type_name::<flume::Sender<u32>>());
    assert_eq!(type_name_of_val(&frx), type_name::<flume::Receiver<u32>>());
    same!(
        perflens::flow::flume::Sender<u32> => flume::Sender<u32>,
        perflens::flow::flume::Receiver<u32> => flume::Receiver<u32>,
        perflens::flow::flume::WeakSender<u32> => flume::WeakSender<u32>,
        perflens::flow::flume::SendFut<'static, u32> => flume::r#async::SendFut<'static, u32>,
        perflens::flow::flume::SendSink<'static, u32> => flume::r#async::SendSink<'static, u32>,
        perflens::flow::flume::RecvFut<'static, u32> => flume::r#async::RecvFut<'static, u32>,
        perflens::flow::flume::RecvStream<'static, u32> => flume::r#async::RecvStream<'static, u32>,
        perflens::flow::flume::Drain<'static, u32> => flume::Drain<'static, u32>,
        perflens::flow::flume::IntoIter<u32> => flume::IntoIter<u32>,
    );
    let (atx, arx) = perflens::channel!(async_channel::unbounded::<u32>());
    assert_eq!(type_name_of_val(&atx), type_name::<async_channel::Sender<u32>>());
    assert_eq!(type_name_of_val(&arx), type_name::<async_channel::Receiver<u32>>());
    same!(
        perflens::flow::async_channel::Sender<u32> => async_channel::Sender<u32>,
        perflens::flow::async_channel::Receiver<u32> => async_channel::Receiver<u32>,
        perflens::flow::async_channel::WeakSender<u32> => async_channel::WeakSender<u32>,
        perflens::flow::async_channel::Send<'static, u32> => async_channel::Send<'static, u32>,
        perflens::flow::async_channel::Recv<'static, u32> => async_channel::Recv<'static, u32>,
        perflens::flow::async_channel::Closed<'static, u32> => async_channel::Closed<'static, u32>,
        perflens::flow::async_channel::WeakReceiver<u32> => async_channel::WeakReceiver<u32>,
    );
    let (mut mtx, mut mrx) = perflens::channel!(futures_channel::mpsc::channel::<u32>(1));
    assert_eq!(type_name_of_val(&mtx), type_name::<futures_channel::mpsc::Sender<u32>>());
    let (otx, orx) = perflens::channel!(futures_channel::oneshot::channel::<u32>());
    assert_eq!(type_name_of_val(&orx), type_name::<futures_channel::oneshot::Receiver<u32>>());
    use futures_channel::{mpsc, oneshot};
    use perflens::flow::futures as pf;
    same!(
        pf::mpsc::Sender<u32> => mpsc::Sender<u32>,
        pf::mpsc::Receiver<u32> => mpsc::Receiver<u32>,
        pf::mpsc::UnboundedSender<u32> => mpsc::UnboundedSender<u32>,
        pf::mpsc::UnboundedReceiver<u32> => mpsc::UnboundedReceiver<u32>,
        pf::mpsc::TrySendError<u32> => mpsc::TrySendError<u32>,
        pf::mpsc::Recv<'static, mpsc::Receiver<u32>> => mpsc::Recv<'static, mpsc::Receiver<u32>>,
        pf::oneshot::Sender<u32> => oneshot::Sender<u32>,
        pf::oneshot::Receiver<u32> => oneshot::Receiver<u32>,
        pf::oneshot::Cancellation<'static, u32> => oneshot::Cancellation<'static, u32>,
    );
    ftx.send(1).unwrap();
    atx.try_send(2).unwrap();
    mtx.try_send(3).unwrap();
    otx.send(4).unwrap();
    let sum = frx.recv().unwrap() + arx.try_recv().unwrap() + mrx.try_recv().unwrap();
    let mut orx = orx;
    assert_eq!(sum + orx.try_recv().unwrap().unwrap(), 10);
}

/// tokio's channels and every lock flavour, with `enabled` off: the
/// aliases are the originals, and `channel!` and `lock!` are their
/// constructor calls.
fn tokio_channels_and_locks() {
    use std::any::{type_name, type_name_of_val};
    macro_rules! same {
        ($($ours:ty => $theirs:ty),* $(,)?) => {
            $(assert_eq!(type_name::<$ours>(), type_name::<$theirs>());)*
        };
    }
    use perflens::flow::tokio as pt;
    use tokio::sync::{broadcast, mpsc, oneshot, watch};
    let (tx, mut rx) = perflens::channel!(mpsc::channel::<u32>(1));
    assert_eq!(type_name_of_val(&tx), type_name::<mpsc::Sender<u32>>());
    tx.try_send(5).unwrap();
    assert_eq!(rx.try_recv(), Ok(5));
    let (utx, urx) = perflens::channel!(mpsc::unbounded_channel::<u32>());
    assert_eq!(type_name_of_val(&urx), type_name::<mpsc::UnboundedReceiver<u32>>());
    let (otx, orx) = perflens::channel!(oneshot::channel::<u32>());
    let (btx, brx) = perflens::channel!(broadcast::channel::<u32>(2));
    let (wtx, wrx) = perflens::channel!(watch::channel(0u32));
    assert_eq!(type_name_of_val(&wtx), type_name::<watch::Sender<u32>>());
    assert_eq!(type_name_of_val(&brx), type_name::<broadcast::Receiver<u32>>());
    drop((utx, otx, orx, btx, wrx));
    same!(
        pt::mpsc::Sender<u32> => mpsc::Sender<u32>,
        pt::mpsc::Receiver<u32> => mpsc::Receiver<u32>,
        pt::mpsc::UnboundedSender<u32> => mpsc::UnboundedSender<u32>,
        pt::mpsc::UnboundedReceiver<u32> => mpsc::UnboundedReceiver<u32>,
        pt::mpsc::WeakSender<u32> => mpsc::WeakSender<u32>,
        pt::mpsc::WeakUnboundedSender<u32> => mpsc::WeakUnboundedSender<u32>,
        pt::mpsc::Permit<'static, u32> => mpsc::Permit<'static, u32>,
        pt::mpsc::OwnedPermit<u32> => mpsc::OwnedPermit<u32>,
        pt::mpsc::PermitIterator<'static, u32> => mpsc::PermitIterator<'static, u32>,
        pt::mpsc::error::TrySendError<u32> => mpsc::error::TrySendError<u32>,
        pt::oneshot::Sender<u32> => oneshot::Sender<u32>,
        pt::oneshot::Receiver<u32> => oneshot::Receiver<u32>,
        pt::broadcast::Sender<u32> => broadcast::Sender<u32>,
        pt::broadcast::Receiver<u32> => broadcast::Receiver<u32>,
        pt::broadcast::WeakSender<u32> => broadcast::WeakSender<u32>,
        pt::watch::Sender<u32> => watch::Sender<u32>,
        pt::watch::Receiver<u32> => watch::Receiver<u32>,
        pt::watch::Ref<'static, u32> => watch::Ref<'static, u32>,
    );

    let m = perflens::lock!(perflens::sync::Mutex::new(1u32), label = "m");
    assert_eq!(type_name_of_val(&m), type_name::<std::sync::Mutex<u32>>());
    *m.lock().unwrap() += 1;
    let pm = perflens::lock!(perflens::sync::parking_lot::Mutex::new(1u32));
    assert_eq!(type_name_of_val(&pm), type_name::<parking_lot::Mutex<u32>>());
    let tm = perflens::lock!(perflens::sync::tokio::Mutex::new(1u32));
    assert_eq!(type_name_of_val(&tm), type_name::<tokio::sync::Mutex<u32>>());
    assert_eq!(*m.lock().unwrap() + *pm.lock() + *tm.try_lock().unwrap(), 4);
    same!(
        perflens::sync::Mutex<u32> => std::sync::Mutex<u32>,
        perflens::sync::RwLock<u32> => std::sync::RwLock<u32>,
        perflens::sync::MutexGuard<'static, u32> => std::sync::MutexGuard<'static, u32>,
        perflens::sync::RwLockReadGuard<'static, u32> => std::sync::RwLockReadGuard<'static, u32>,
        perflens::sync::RwLockWriteGuard<'static, u32> => std::sync::RwLockWriteGuard<'static, u32>,
        perflens::sync::parking_lot::Mutex<u32> => parking_lot::Mutex<u32>,
        perflens::sync::parking_lot::RwLock<u32> => parking_lot::RwLock<u32>,
        perflens::sync::parking_lot::MutexGuard<'static, u32> => parking_lot::MutexGuard<'static, u32>,
        perflens::sync::parking_lot::RwLockReadGuard<'static, u32> => parking_lot::RwLockReadGuard<'static, u32>,
        perflens::sync::parking_lot::RwLockWriteGuard<'static, u32> => parking_lot::RwLockWriteGuard<'static, u32>,
        perflens::sync::tokio::Mutex<u32> => tokio::sync::Mutex<u32>,
        perflens::sync::tokio::RwLock<u32> => tokio::sync::RwLock<u32>,
        perflens::sync::tokio::MutexGuard<'static, u32> => tokio::sync::MutexGuard<'static, u32>,
        perflens::sync::tokio::OwnedMutexGuard<u32> => tokio::sync::OwnedMutexGuard<u32>,
        perflens::sync::tokio::RwLockReadGuard<'static, u32> => tokio::sync::RwLockReadGuard<'static, u32>,
        perflens::sync::tokio::RwLockWriteGuard<'static, u32> => tokio::sync::RwLockWriteGuard<'static, u32>,
    );
}

#[perflens::main(percentiles = [50, 99.9], limit = 5, format = "table")]
fn main() {
    channels();
    tokio_channels_and_locks();
    let x = perflens::measure_block!("block", { add(1, 2) });
    let _unused = later(&x);
    println!("off-build ok {}", x + S.one() + S.two());
}
