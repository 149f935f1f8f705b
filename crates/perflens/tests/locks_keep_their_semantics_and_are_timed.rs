//! Measured locks (`perflens::sync`): the originals' behaviour, checked
//! side by side with the originals (poisoning, `try_lock` while held,
//! `get_mut`/`into_inner`, many readers or one writer), and what a lock
//! row says about a schedule whose durations are known:
//!
//! - a lock held 20 ms by A while B waits: B's wait is the rest of A's
//!   hold (`sleep` never returns early; B starts waiting right after A
//!   told it the lock was held, so its wait is 20 ms less that
//!   scheduling delay, plus the sleep's overshoot);
//! - holds of 1 ms (six) and 10 ms (four): the hold p50 lies in the
//!   1 ms range and the p99 in the 10 ms range (a histogram bucket is
//!   1/32 of a power of two wide: the reported midpoint is within 1.6%
//!   of the value; a sleep overshoots by at most a few ms);
//! - three threads blocked behind a holder (released only once the
//!   session saw all three wait): 3 contended acquisitions and 3 most
//!   waiters at once, exactly.
#![cfg(all(
    feature = "enabled",
    feature = "flow-std",
    feature = "flow-parking-lot",
    feature = "flow-tokio"
))]

use perflens::{LockRow, Mode, Report, Session};
use std::sync::{Arc, Barrier, TryLockError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// Sessions are process-wide: the tests of this file take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn timed() -> Session {
    Session::builder()
        .ignore_env()
        .mode(Mode::Timed)
        .start()
        .expect("no other session")
}

/// The lock row named `name`.
fn row<'a>(report: &'a Report, name: &str) -> &'a LockRow {
    report
        .locks
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no lock row {name}: {:?}", report.locks))
}

const MS: u64 = 1_000_000;

/// The std semantics, run on std's own types and on the measured ones.
macro_rules! std_semantics {
    ($name:ident, $Mutex:ty, $RwLock:ty) => {
        #[test]
        fn $name() {
            let _turn = turn();
            type M = $Mutex;
            type R = $RwLock;

            // Poisoned by a panic while held; the error holds the guard.
            let m = Arc::new(M::new(5u32));
            let m2 = Arc::clone(&m);
            let r = thread::spawn(move || {
                let _g = m2.lock().unwrap();
                panic!("poison it");
            })
            .join();
            assert!(r.is_err());
            assert!(m.is_poisoned());
            let err = m.lock().unwrap_err();
            assert_eq!(*err.into_inner(), 5);
            match m.try_lock() {
                Err(TryLockError::Poisoned(p)) => assert_eq!(*p.into_inner(), 5),
                _ => panic!("try_lock on a poisoned mutex must say so"),
            }
            m.clear_poison();
            assert!(!m.is_poisoned());
            *m.lock().unwrap() += 1;
            assert_eq!(*m.lock().unwrap(), 6);

            // WouldBlock while held, by this thread or another.
            {
                let g = m.lock().unwrap();
                assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
                let m3 = Arc::clone(&m);
                let blocked =
                    thread::spawn(move || matches!(m3.try_lock(), Err(TryLockError::WouldBlock)))
                        .join()
                        .unwrap();
                assert!(blocked);
                drop(g);
            }
            assert!(m.try_lock().is_ok());

            // get_mut and into_inner, no lock taken; Debug as std's.
            let mut m = Arc::into_inner(m).unwrap();
            *m.get_mut().unwrap() = 7;
            assert_eq!(
                format!("{m:?}"),
                format!("{:?}", std::sync::Mutex::new(7u32))
            );
            assert_eq!(m.into_inner().unwrap(), 7);
            let d: M = Default::default();
            assert_eq!(d.into_inner().unwrap(), 0);
            let f: M = M::from(3);
            assert_eq!(*f.lock().unwrap(), 3);
            assert_eq!(format!("{}", *f.lock().unwrap()), "3");

            // Many readers at once, one writer alone.
            let rw = Arc::new(R::new(vec![1u32]));
            let readers = 4;
            let inside = Arc::new(Barrier::new(readers));
            let handles: Vec<_> = (0..readers)
                .map(|_| {
                    let (rw, inside) = (Arc::clone(&rw), Arc::clone(&inside));
                    thread::spawn(move || {
                        let g = rw.read().unwrap();
                        // Every reader holds the lock here at once.
                        inside.wait();
                        assert!(matches!(rw.try_write(), Err(TryLockError::WouldBlock)));
                        g.len()
                    })
                })
                .collect();
            for h in handles {
                assert_eq!(h.join().unwrap(), 1);
            }
            {
                let mut w = rw.write().unwrap();
                w.push(2);
                assert!(matches!(rw.try_read(), Err(TryLockError::WouldBlock)));
                assert!(matches!(rw.try_write(), Err(TryLockError::WouldBlock)));
            }
            assert_eq!(*rw.read().unwrap(), vec![1, 2]);
            // A writer's panic poisons it.
            let rw2 = Arc::clone(&rw);
            let _ = thread::spawn(move || {
                let _w = rw2.write().unwrap();
                panic!("poison it");
            })
            .join();
            assert!(rw.is_poisoned());
            assert_eq!(rw.read().unwrap_err().into_inner().len(), 2);
            rw.clear_poison();
            let mut rw = Arc::into_inner(rw).unwrap();
            rw.get_mut().unwrap().push(3);
            assert_eq!(
                format!("{rw:?}"),
                format!("{:?}", std::sync::RwLock::new(vec![1u32, 2, 3]))
            );
            {
                let _w = rw.write().unwrap();
                assert_eq!(
                    format!("{rw:?}"),
                    "RwLock { data: <locked>, poisoned: false, .. }"
                );
            }
            assert_eq!(rw.into_inner().unwrap(), vec![1, 2, 3]);
        }
    };
}

std_semantics!(
    std_locks_behave_so,
    std::sync::Mutex<u32>,
    std::sync::RwLock<Vec<u32>>
);
std_semantics!(
    measured_std_locks_behave_as_std,
    perflens::sync::Mutex<u32>,
    perflens::sync::RwLock<Vec<u32>>
);

/// The same checks counted in a session: every acquisition, and the
/// poisoned ones too.
#[test]
fn measured_std_locks_count_every_acquisition() {
    let _turn = turn();
    let session = timed();
    let m = perflens::lock!(perflens::sync::Mutex::new(0u32), label = "count_m");
    for _ in 0..10 {
        *m.lock().unwrap() += 1;
    }
    assert!(m.try_lock().is_ok());
    let rw = perflens::lock!(perflens::sync::RwLock::new(0u32), label = "count_rw");
    for _ in 0..4 {
        let _a = rw.read().unwrap();
        let _b = rw.read().unwrap();
    }
    *rw.write().unwrap() += 1;
    let report = session.finish();
    let r = row(&report, "count_m");
    assert_eq!((r.acquisitions, r.shared, r.contended), (11, 0, 0));
    assert_eq!(r.hold_count, 11, "timed mode times every hold");
    assert_eq!(r.wait_count, 0);
    let r = row(&report, "count_rw");
    assert_eq!((r.acquisitions, r.shared, r.contended), (9, 8, 0));

    // The table's Locks section, and the JSON's `locks`.
    let mut table = Vec::new();
    perflens::write_table(&report, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("Locks: per perflens::sync lock site"),
        "{table}"
    );
    let line = (table.lines())
        .find(|l| l.trim_start().starts_with("count_rw"))
        .unwrap_or_else(|| panic!("no count_rw line in\n{table}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[1..4], ["9", "8", "0"], "{line}");
    let mut json = Vec::new();
    perflens::write_json(&report, &mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let locks = v["locks"].as_array().expect("a locks array");
    let m = locks.iter().find(|l| l["name"] == "count_m").unwrap();
    assert_eq!(m["acquisitions"], 11);
    assert_eq!(m["contended"], 0);
    assert!(m["hold_p99_ns"].as_u64().unwrap() > 0);
    let back: Report = serde_json::from_slice(&json).unwrap();
    assert_eq!(back.locks, report.locks);
}

/// A lock without a label is named after the place of its `new`.
#[test]
fn an_unlabelled_lock_is_named_after_its_constructor_call() {
    let _turn = turn();
    let session = timed();
    let line = line!() + 1;
    let m = perflens::sync::Mutex::new(());
    drop(m.lock().unwrap());
    let report = session.finish();
    let name = format!("{}:{}:{}", file!(), line, 13);
    let r = row(&report, &name);
    assert_eq!(r.acquisitions, 1);
}

/// B waits while A holds for 20 ms: B's wait is about 20 ms.
#[test]
fn a_wait_behind_a_20ms_hold_is_20ms() {
    let _turn = turn();
    let session = timed();
    let m = perflens::lock!(perflens::sync::Mutex::new(0u32), label = "wait20");
    let (held_tx, held_rx) = mpsc::channel();
    let outside = thread::scope(|s| {
        let a = s.spawn(|| {
            let mut g = m.lock().unwrap();
            held_tx.send(()).unwrap();
            // Hold for 20 ms from the moment B waits, however late a
            // loaded machine lets B try.
            wait_for_contended(&session, "wait20", 1);
            thread::sleep(Duration::from_millis(20));
            *g += 1;
        });
        held_rx.recv().unwrap();
        let asked = Instant::now();
        *m.lock().unwrap() += 1;
        let outside = asked.elapsed().as_nanos() as u64;
        a.join().unwrap();
        outside
    });
    let report = session.finish();
    let r = row(&report, "wait20");
    assert_eq!((r.acquisitions, r.contended, r.wait_count), (2, 1, 1));
    assert_eq!(r.max_waiters, 1);
    // Lower bound: A's 20 ms sleep after B began to wait (less the
    // histogram bucket's half width); upper: B's own measure of the call
    // around it (the bucket's half width over).
    assert!(
        r.wait_p50_ns as f64 >= 20.0 * MS as f64 * 0.98
            && r.wait_p50_ns as f64 <= outside as f64 * 1.02,
        "wait {} ns, lock() took {outside} ns",
        r.wait_p50_ns
    );
    assert_eq!(r.wait_p50_ns, r.wait_max_ns);
    // A's hold is at least its sleep. (Not "at least B's wait": B's wait
    // ends when B runs again after A's release, which on a loaded machine
    // can be later than A's hold is longer: 1 run in 20 under load.)
    assert!(r.hold_max_ns as f64 >= 20.0 * MS as f64 * 0.98);
}

/// Holds of 1 ms (six) and 10 ms (four): p50 ~1 ms, p99 ~10 ms. Each
/// hold lies between the sleep inside it and the time from before
/// `lock()` to after the guard's drop, both read here, so the k-th
/// shortest hold lies between the k-th shortest of each: the percentiles
/// are checked against those, on a quiet machine or a loaded one (where
/// a 10 ms sleep took 15 ms).
#[test]
fn hold_percentiles_follow_a_schedule_of_1ms_and_10ms_holds() {
    let _turn = turn();
    let session = timed();
    let m = perflens::lock!(perflens::sync::Mutex::new(()), label = "holds");
    let (mut inner, mut outer) = (Vec::new(), Vec::new());
    for ms in [1, 10, 1, 10, 1, 1, 10, 1, 1, 10] {
        let before = Instant::now();
        let g = m.lock().unwrap();
        let slept = Instant::now();
        thread::sleep(Duration::from_millis(ms));
        inner.push(slept.elapsed().as_nanos() as f64);
        drop(g);
        outer.push(before.elapsed().as_nanos() as f64);
    }
    let report = session.finish();
    let r = row(&report, "holds");
    assert_eq!((r.acquisitions, r.hold_count, r.contended), (10, 10, 0));
    inner.sort_by(f64::total_cmp);
    outer.sort_by(f64::total_cmp);
    // Nearest rank: p50 is the 5th of 10 (a 1 ms hold), p99 the 10th (a
    // 10 ms one). Bucket midpoints lie within 1.6% of the value.
    for (label, got, k) in [("p50", r.hold_p50_ns, 4), ("p99", r.hold_p99_ns, 9)] {
        let got = got as f64;
        assert!(
            got >= inner[k] * 0.98 && got <= outer[k] * 1.02,
            "{label} {got} ns: the hold lies in [{}, {}] ns",
            inner[k],
            outer[k]
        );
    }
    let ms = |ns: u64| ns as f64 / MS as f64;
    assert!(ms(r.hold_ns) >= 6.0 * 1.0 + 4.0 * 10.0);
}

/// Waits until the session saw `n` contended acquisitions of the
/// lock site named `name` (each counted as its waiter began to wait).
fn wait_for_contended(session: &Session, name: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let snap = session.raw_snapshot();
        let seen: u64 = (snap.threads.iter().flat_map(|t| &t.nodes))
            .filter(|node| {
                let cs = snap.paths[node.path as usize].callsite as usize;
                snap.callsites[cs].name == name
            })
            .map(|node| node.polls)
            .sum();
        if seen >= n {
            assert_eq!(seen, n);
            return;
        }
        assert!(Instant::now() < deadline, "waiters never blocked");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Three threads blocked behind a holder: 3 contended, 3 waiters at once.
#[test]
fn three_threads_behind_a_holder_are_three_waiters() {
    let _turn = turn();
    let session = timed();
    let m = Arc::new(perflens::lock!(
        perflens::sync::Mutex::new(0u32),
        label = "three"
    ));
    let g = m.lock().unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let m = Arc::clone(&m);
            thread::spawn(move || *m.lock().unwrap() += 1)
        })
        .collect();
    wait_for_contended(&session, "three", 3);
    drop(g);
    for w in waiters {
        w.join().unwrap();
    }
    assert_eq!(*m.lock().unwrap(), 3);
    let report = session.finish();
    let r = row(&report, "three");
    assert_eq!(r.acquisitions, 5);
    assert_eq!(r.contended, 3);
    assert_eq!(r.max_waiters, 3);
    assert_eq!(r.wait_count, 3);
}

/// The same schedule on a parking_lot mutex and a std RwLock's writers;
/// and parking_lot's own methods.
#[test]
fn parking_lot_locks_keep_their_methods_and_are_counted() {
    let _turn = turn();
    let session = timed();
    let m = Arc::new(perflens::lock!(
        perflens::sync::parking_lot::Mutex::new(0u32),
        label = "pl_three"
    ));
    let g = m.lock();
    assert!(m.is_locked());
    assert!(m.try_lock().is_none());
    // Gives up after 5 ms: counted as contended, not acquired.
    let t = Instant::now();
    assert!(m.try_lock_for(Duration::from_millis(5)).is_none());
    assert!(t.elapsed() >= Duration::from_millis(5));
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let m = Arc::clone(&m);
            thread::spawn(move || *m.lock() += 1)
        })
        .collect();
    wait_for_contended(&session, "pl_three", 4);
    perflens::sync::parking_lot::MutexGuard::unlock_fair(g);
    for w in waiters {
        w.join().unwrap();
    }
    assert!(!m.is_locked());
    // SAFETY: no guard is alive; only the pointer's target is read.
    assert_eq!(unsafe { *m.data_ptr() }, 3);
    let mut m = Arc::into_inner(m).unwrap();
    *m.get_mut() += 1;
    assert_eq!(m.into_inner(), 4);

    let rw = perflens::lock!(
        perflens::sync::parking_lot::RwLock::new(1u32),
        label = "pl_rw"
    );
    {
        let (a, b) = (rw.read(), rw.read());
        assert_eq!(*a + *b, 2);
        assert!(rw.try_write().is_none());
        assert!(rw.try_write_for(Duration::from_millis(1)).is_none());
    }
    *rw.write() += 1;
    assert!(rw.is_locked() == rw.is_locked_exclusive());
    let report = session.finish();
    let r = row(&report, "pl_three");
    assert_eq!(r.acquisitions, 4);
    assert_eq!(r.contended, 4, "3 waiters and one timeout");
    assert_eq!(r.max_waiters, 3);
    assert_eq!(r.wait_count, 3);
    let r = row(&report, "pl_rw");
    assert_eq!((r.acquisitions, r.shared, r.contended), (3, 2, 1));
}

/// tokio's mutex in async code: a task waits behind a 20 ms hold, an
/// owned guard moves to another task, and each acquisition is counted
/// on the thread that dropped its guard.
#[test]
fn tokio_locks_wait_asynchronously_and_are_counted() {
    let _turn = turn();
    let session = timed();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let m = Arc::new(perflens::lock!(
        perflens::sync::tokio::Mutex::new(0u32),
        label = "tokio_m"
    ));
    let asked = rt.block_on({
        let m = Arc::clone(&m);
        async move {
            let g = m.lock().await;
            assert!(m.try_lock().is_err());
            // The hold starts once the waiter is about to ask (not when it
            // was spawned: under qemu a task can start 10 ms late).
            let (tx, rx) = tokio::sync::oneshot::channel();
            let waiter = tokio::spawn({
                let m = Arc::clone(&m);
                async move {
                    let asked = Instant::now();
                    tx.send(()).unwrap();
                    *m.lock().await += 1;
                    asked.elapsed()
                }
            });
            rx.await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(g);
            let waited = waiter.await.unwrap();
            // An owned guard, moved into another task and dropped there.
            let owned = Arc::clone(&m).lock_owned().await;
            tokio::spawn(async move {
                let mut owned = owned;
                *owned += 1;
            })
            .await
            .unwrap();
            waited
        }
    });
    assert_eq!(*m.blocking_lock(), 2);
    drop(rt);
    let rw = perflens::lock!(perflens::sync::tokio::RwLock::new(0u32), label = "tokio_rw");
    {
        let _r = rw.blocking_read();
        assert!(rw.try_write().is_err());
        assert!(rw.try_read().is_ok());
    }
    *rw.blocking_write() += 1;
    let report = session.finish();
    let r = row(&report, "tokio_m");
    assert_eq!(r.acquisitions, 4);
    assert_eq!(r.contended, 1);
    assert_eq!(r.wait_count, 1);
    assert!(
        r.wait_max_ns >= 10 * MS && r.wait_max_ns as f64 <= asked.as_nanos() as f64 * 1.02,
        "wait {} ns, lock() took {asked:?}",
        r.wait_max_ns
    );
    let r = row(&report, "tokio_rw");
    assert_eq!((r.acquisitions, r.shared, r.contended), (3, 2, 0));
}

/// Count mode reads no clock: acquisitions counted, no hold or wait.
#[test]
fn count_mode_counts_locks_without_times() {
    let _turn = turn();
    let session = Session::builder()
        .ignore_env()
        .mode(Mode::Count)
        .start()
        .unwrap();
    let m = perflens::lock!(perflens::sync::Mutex::new(()), label = "counted");
    for _ in 0..7 {
        drop(m.lock().unwrap());
    }
    let report = session.finish();
    let r = row(&report, "counted");
    assert_eq!((r.acquisitions, r.hold_count, r.hold_ns), (7, 0, 0));
}

/// Send, Sync and unsized values as std's.
#[test]
fn measured_locks_are_send_sync_and_hold_unsized_values_as_std() {
    fn send_sync<T: Send + Sync>() {}
    fn sync<T: Sync>() {}
    send_sync::<perflens::sync::Mutex<u32>>();
    send_sync::<perflens::sync::RwLock<u32>>();
    send_sync::<perflens::sync::parking_lot::Mutex<u32>>();
    send_sync::<perflens::sync::tokio::Mutex<u32>>();
    send_sync::<perflens::sync::tokio::MutexGuard<'static, u32>>();
    sync::<perflens::sync::MutexGuard<'static, u32>>();
    sync::<perflens::sync::RwLockReadGuard<'static, u32>>();
    sync::<perflens::sync::RwLockWriteGuard<'static, u32>>();
    // A Mutex of a Send but not Sync value is Sync, as std's.
    send_sync::<perflens::sync::Mutex<std::cell::Cell<u32>>>();
    let _turn = turn();
    let m: &perflens::sync::Mutex<[u32]> = &perflens::sync::Mutex::new([1, 2, 3]);
    m.lock().unwrap()[1] = 5;
    assert_eq!(&*m.lock().unwrap(), &[1, 5, 3]);
    let b: Box<perflens::sync::Mutex<dyn std::fmt::Debug + Send>> =
        Box::new(perflens::sync::Mutex::new(7u8));
    assert_eq!(format!("{:?}", &*b.lock().unwrap()), "7");
}
