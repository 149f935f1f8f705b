//! Every live channel is in a report taken while the program runs
//! (issue 24, point 2): a SIGTERM report, `perflens snapshot`, and the
//! `PERFLENS_JSON_EVERY` rewrite, of a program under `#[tokio::main]
//! #[perflens::main]` that holds, for every backend and kind, an idle
//! channel (made, its receiver parked in a receive, its sender alive, no
//! message yet) and a busy one (messages sent on one thread, some of them
//! received on another, the channel made on a third), and a few locks
//! used and then left alone. Every row is there with its exact counts
//! and capacity.
//!
//! Before the fix a thread's node that held only a channel's creation
//! (channels made, senders and receivers made, capacity) was left out of
//! every snapshot, so an idle channel had no row and a busy one made on a
//! thread that never sent nor received showed `Made 0` and `unbounded`.
//!
//! The program is this test binary run again (`target_program`); it
//! prints `READY` once the busy channels carried their messages and each
//! idle receiver is parked (its receive returned `Pending`, or its thread
//! is about to block), and then waits to be stopped.
// Unix only: it signals processes, sets file modes, or reads a live
// session, which needs shared mappings (see docs/platforms.md).
#![cfg(unix)]

use perflens_report::{ChannelRow, LockRow, Report};
use std::future::{Future, poll_fn};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Set in the program (this binary run again).
const CHILD: &str = "PERFLENS_IDLE_CHANNELS_CHILD";

/// Idle receivers started, and parked so far.
static IDLE: AtomicUsize = AtomicUsize::new(0);
static PARKED: AtomicUsize = AtomicUsize::new(0);

/// A task that runs `fut`, an idle receiver's receive (see [`parked`]).
fn spawn_parked<F: Future + Send + 'static>(fut: F)
where
    F::Output: Send,
{
    IDLE.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(parked(fut));
}

/// `fut`, counted in [`PARKED`] once its first poll returned `Pending`
/// (the receive is waiting for a message).
async fn parked<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut counted = false;
    poll_fn(|cx| {
        let p = fut.as_mut().poll(cx);
        if p.is_pending() && !counted {
            counted = true;
            PARKED.fetch_add(1, Ordering::SeqCst);
        }
        p
    })
    .await
}

/// A thread parked in `recv` (counted just before it blocks).
fn parked_thread(recv: impl FnOnce() + Send + 'static) {
    IDLE.fetch_add(1, Ordering::SeqCst);
    std::thread::spawn(move || {
        PARKED.fetch_add(1, Ordering::SeqCst);
        recv();
    });
}

/// Messages sent into each busy queue, and received from it.
const SENT: u32 = 5;
const RECEIVED: u32 = 3;

#[perflens::measure]
async fn make_flows() {
    use tokio::sync::{broadcast, mpsc, oneshot, watch};
    // Kept alive until the program is stopped.
    let mut keep: Vec<Box<dyn std::any::Any + Send>> = Vec::new();

    // tokio mpsc, bounded: the reproduction.
    let (tx, mut rx) = perflens::channel!(mpsc::channel::<u32>(1), label = "tokio mpsc idle");
    spawn_parked(async move { rx.recv().await });
    keep.push(Box::new(tx));
    let (tx, mut rx) = perflens::channel!(mpsc::channel::<u32>(8), label = "tokio mpsc busy");
    let tx = tokio::spawn(async move {
        for i in 0..SENT {
            tx.send(i).await.unwrap();
        }
        tx
    })
    .await
    .unwrap();
    keep.push(Box::new(tx));
    let rx = std::thread::spawn(move || {
        for _ in 0..RECEIVED {
            rx.blocking_recv().unwrap();
        }
        rx
    })
    .join()
    .unwrap();
    keep.push(Box::new(rx));

    // tokio mpsc, unbounded.
    let (tx, mut rx) = perflens::channel!(
        mpsc::unbounded_channel::<u32>(),
        label = "tokio unbounded idle"
    );
    spawn_parked(async move { rx.recv().await });
    keep.push(Box::new(tx));
    let (tx, mut rx) = perflens::channel!(
        mpsc::unbounded_channel::<u32>(),
        label = "tokio unbounded busy"
    );
    let tx = std::thread::spawn(move || {
        for i in 0..SENT {
            tx.send(i).unwrap();
        }
        tx
    })
    .join()
    .unwrap();
    for _ in 0..RECEIVED {
        rx.recv().await.unwrap();
    }
    keep.push(Box::new((tx, rx)));

    // tokio broadcast: a value sent counts once per receiver.
    let (tx, mut rx) =
        perflens::channel!(broadcast::channel::<u32>(4), label = "tokio broadcast idle");
    spawn_parked(async move { rx.recv().await });
    keep.push(Box::new(tx));
    let (tx, mut rx1) =
        perflens::channel!(broadcast::channel::<u32>(8), label = "tokio broadcast busy");
    let mut rx2 = tx.subscribe();
    let tx = std::thread::spawn(move || {
        for i in 0..3 {
            assert_eq!(tx.send(i).unwrap(), 2);
        }
        tx
    })
    .join()
    .unwrap();
    for _ in 0..3 {
        rx1.recv().await.unwrap();
    }
    rx2.recv().await.unwrap();
    keep.push(Box::new((tx, rx1, rx2)));

    // tokio oneshot.
    let (tx, rx) = perflens::channel!(oneshot::channel::<u32>(), label = "tokio oneshot idle");
    spawn_parked(rx);
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(oneshot::channel::<u32>(), label = "tokio oneshot busy");
    std::thread::spawn(move || tx.send(7).unwrap())
        .join()
        .unwrap();
    assert_eq!(rx.await.unwrap(), 7);

    // tokio watch: each value sent is seen before the next.
    let (tx, mut rx) = perflens::channel!(watch::channel(0u32), label = "tokio watch idle");
    spawn_parked(async move { rx.changed().await });
    keep.push(Box::new(tx));
    let (tx, mut rx) = perflens::channel!(watch::channel(0u32), label = "tokio watch busy");
    let tx = std::sync::Arc::new(tx);
    for i in 1..=3 {
        let tx = tx.clone();
        std::thread::spawn(move || tx.send(i).unwrap())
            .join()
            .unwrap();
        assert_eq!(*rx.borrow_and_update(), i);
    }
    keep.push(Box::new((tx, rx)));

    // crossbeam.
    let (tx, rx) = perflens::channel!(
        crossbeam_channel::bounded::<u32>(2),
        label = "crossbeam idle"
    );
    parked_thread(move || {
        let _ = rx.recv();
    });
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(
        crossbeam_channel::unbounded::<u32>(),
        label = "crossbeam busy"
    );
    queue_through_threads(
        move |i| tx.send(i).unwrap(),
        move || {
            let _ = rx.recv().unwrap();
        },
    );

    // std.
    let (tx, rx) = perflens::channel!(std::sync::mpsc::sync_channel::<u32>(3), label = "std idle");
    parked_thread(move || {
        let _ = rx.recv();
    });
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(std::sync::mpsc::channel::<u32>(), label = "std busy");
    let rx = std::sync::Mutex::new(rx);
    queue_through_threads(
        move |i| tx.send(i).unwrap(),
        move || {
            let _ = rx.lock().unwrap().recv().unwrap();
        },
    );

    // Made on a thread that has exited since; its endpoints live on.
    let (tx, rx) = std::thread::spawn(|| {
        perflens::channel!(
            std::sync::mpsc::sync_channel::<u32>(5),
            label = "made by a gone thread"
        )
    })
    .join()
    .unwrap();
    parked_thread(move || {
        let _ = rx.recv();
    });
    keep.push(Box::new(tx));

    // flume.
    let (tx, rx) = perflens::channel!(flume::bounded::<u32>(2), label = "flume idle");
    spawn_parked(async move { rx.recv_async().await });
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(flume::unbounded::<u32>(), label = "flume busy");
    queue_through_threads(
        move |i| tx.send(i).unwrap(),
        move || {
            let _ = rx.recv().unwrap();
        },
    );

    // async-channel.
    let (tx, rx) = perflens::channel!(
        async_channel::bounded::<u32>(2),
        label = "async-channel idle"
    );
    spawn_parked(async move { rx.recv().await });
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(
        async_channel::unbounded::<u32>(),
        label = "async-channel busy"
    );
    queue_through_threads(
        move |i| tx.send_blocking(i).unwrap(),
        move || {
            let _ = rx.recv_blocking().unwrap();
        },
    );

    // futures: mpsc (a bounded channel holds its buffer and one message
    // per sender) and oneshot.
    let (tx, mut rx) = perflens::channel!(
        futures_channel::mpsc::channel::<u32>(2),
        label = "futures mpsc idle"
    );
    spawn_parked(async move { rx.recv().await });
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(
        futures_channel::oneshot::channel::<u32>(),
        label = "futures oneshot idle"
    );
    spawn_parked(rx);
    keep.push(Box::new(tx));
    let (tx, rx) = perflens::channel!(
        futures_channel::mpsc::unbounded::<u32>(),
        label = "futures busy"
    );
    let rx = std::sync::Mutex::new(rx);
    queue_through_threads(
        move |i| tx.unbounded_send(i).unwrap(),
        move || {
            let _ = rx.lock().unwrap().try_recv().unwrap();
        },
    );

    // Locks used, then left alone.
    let m = perflens::lock!(perflens::sync::Mutex::new(0u32), label = "std mutex");
    for _ in 0..3 {
        *m.lock().unwrap() += 1;
    }
    let rw = perflens::lock!(perflens::sync::RwLock::new(0u32), label = "std rwlock");
    let _ = *rw.read().unwrap() + *rw.read().unwrap();
    *rw.write().unwrap() += 1;
    let pl = perflens::lock!(
        perflens::sync::parking_lot::Mutex::new(0u32),
        label = "parking_lot mutex"
    );
    for _ in 0..2 {
        *pl.lock() += 1;
    }
    let tm = perflens::lock!(
        perflens::sync::tokio::Mutex::new(0u32),
        label = "tokio mutex"
    );
    for _ in 0..2 {
        *tm.lock().await += 1;
    }
    keep.push(Box::new((m, rw, pl, tm)));

    while PARKED.load(Ordering::SeqCst) < IDLE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    println!("READY");
    // Stopped by the test.
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
}

/// Sends [`SENT`] messages with `send` on one thread, then receives
/// [`RECEIVED`] of them with `recv` on another; the endpoints stay alive
/// (each thread keeps its closure until the program ends).
fn queue_through_threads(send: impl Fn(u32) + Send + 'static, recv: impl Fn() + Send + 'static) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let sent = done_tx.clone();
    std::thread::spawn(move || {
        for i in 0..SENT {
            send(i);
        }
        sent.send(()).unwrap();
        loop {
            std::thread::park();
        }
    });
    done_rx.recv().unwrap();
    std::thread::spawn(move || {
        for _ in 0..RECEIVED {
            recv();
        }
        done_tx.send(()).unwrap();
        loop {
            std::thread::park();
        }
    });
    done_rx.recv().unwrap();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
#[perflens::main(format = "none")]
async fn program() {
    make_flows().await;
}

#[test]
fn target_program() {
    if std::env::var_os(CHILD).is_some() {
        program();
    }
}

/// What a channel's row must hold.
#[derive(Debug, PartialEq)]
struct Want {
    name: &'static str,
    created: u64,
    sent: u64,
    received: u64,
    queued: u64,
    dropped: u64,
    /// `Some(n)`: bounded; `None`: unbounded. Never "not known": every
    /// channel here was made in the session.
    capacity: Option<u64>,
    capacity_known: bool,
    senders: u64,
    receivers: u64,
}

fn channel_rows() -> Vec<Want> {
    let (s, r) = (u64::from(SENT), u64::from(RECEIVED));
    let idle = |name, capacity| Want {
        name,
        created: 1,
        sent: 0,
        received: 0,
        queued: 0,
        dropped: 0,
        capacity,
        capacity_known: true,
        senders: 1,
        receivers: 1,
    };
    let busy = |name, capacity| Want {
        name,
        created: 1,
        sent: s,
        received: r,
        queued: s - r,
        dropped: 0,
        capacity,
        capacity_known: true,
        senders: 1,
        receivers: 1,
    };
    vec![
        idle("tokio mpsc idle", Some(1)),
        busy("tokio mpsc busy", Some(8)),
        idle("tokio unbounded idle", None),
        busy("tokio unbounded busy", None),
        idle("tokio broadcast idle", Some(4)),
        Want {
            // Three values, each to two receivers; one took all three,
            // the other one.
            sent: 6,
            received: 4,
            queued: 2,
            receivers: 2,
            ..busy("tokio broadcast busy", Some(8))
        },
        idle("tokio oneshot idle", Some(1)),
        Want {
            // Both ends are gone: the send consumed the sender, the
            // await the receiver.
            sent: 1,
            received: 1,
            queued: 0,
            senders: 0,
            receivers: 0,
            ..busy("tokio oneshot busy", Some(1))
        },
        idle("tokio watch idle", Some(1)),
        Want {
            sent: 3,
            received: 3,
            queued: 0,
            ..busy("tokio watch busy", Some(1))
        },
        idle("crossbeam idle", Some(2)),
        busy("crossbeam busy", None),
        idle("std idle", Some(3)),
        busy("std busy", None),
        idle("made by a gone thread", Some(5)),
        idle("flume idle", Some(2)),
        busy("flume busy", None),
        idle("async-channel idle", Some(2)),
        busy("async-channel busy", None),
        // Its buffer of 2, and one message for its one sender.
        idle("futures mpsc idle", Some(3)),
        idle("futures oneshot idle", Some(1)),
        busy("futures busy", None),
    ]
}

/// `(name, acquisitions, shared)` of each lock.
const LOCKS: [(&str, u64, u64); 4] = [
    ("std mutex", 3, 0),
    ("std rwlock", 3, 2),
    ("parking_lot mutex", 2, 0),
    ("tokio mutex", 2, 0),
];

fn got(c: &ChannelRow) -> Want {
    Want {
        // Matched by name below; an unexpected row is named in full.
        name: "",
        created: c.created,
        sent: c.sent,
        received: c.received,
        queued: c.queued,
        dropped: c.dropped,
        capacity: c.capacity,
        capacity_known: c.capacity_known,
        senders: c.senders,
        receivers: c.receivers,
    }
}

/// Every channel and lock row of `report`, exact: each difference is
/// listed, then the check fails.
fn check(report: &Report, what: &str) {
    let mut wrong = Vec::new();
    for want in channel_rows() {
        match report.channels.iter().find(|c| c.name == want.name) {
            None => wrong.push(format!("no row {:?}", want.name)),
            Some(c) => {
                let got = Want {
                    name: want.name,
                    ..got(c)
                };
                if got != want {
                    wrong.push(format!("{:?}:\n   got {got:?}\n  want {want:?}", want.name));
                }
            }
        }
    }
    let names: Vec<&str> = channel_rows().iter().map(|w| w.name).collect();
    for c in &report.channels {
        if !names.contains(&c.name.as_str()) {
            wrong.push(format!("an unexpected row {:?}: {c:?}", c.name));
        }
    }
    let mut locks: Vec<(&str, u64, u64, u64)> = (report.locks.iter())
        .map(|l: &LockRow| (l.name.as_str(), l.acquisitions, l.shared, l.contended))
        .collect();
    locks.sort();
    let mut want: Vec<(&str, u64, u64, u64)> =
        LOCKS.iter().map(|&(n, a, s)| (n, a, s, 0)).collect();
    want.sort();
    if locks != want {
        wrong.push(format!(
            "locks (name, acquisitions, shared, contended):\n   got {locks:?}\n  want {want:?}"
        ));
    }
    assert!(wrong.is_empty(), "{what}:\n{}", wrong.join("\n"));
}

fn runtime_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perflens-idle-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// The program, started with `env` in `dir` (its runtime directory), once
/// it printed `READY`.
fn start(dir: &Path, env: &[(&str, &Path)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "target_program",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PERFLENS_") {
            cmd.env_remove(k);
        }
    }
    cmd.env(CHILD, "1")
        .env("XDG_RUNTIME_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("READY"));
    if !ready {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "the program never got ready: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    child
}

fn stderr_of(child: Child) -> (std::process::ExitStatus, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read_report(path: &Path) -> Option<Report> {
    Report::from_json_str(&std::fs::read_to_string(path).ok()?).ok()
}

#[test]
fn a_sigterm_report_has_every_idle_and_busy_channel() {
    let dir = runtime_dir("sigterm");
    let json = dir.join("report.json");
    let child = start(&dir, &[("PERFLENS_JSON", &json)]);
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let (status, err) = stderr_of(child);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}\n{err}");
    if !perflens_sys::CAPABILITIES.stop_signals {
        // The portable build: the program said at start that a stop
        // signal writes no report, and died of it without one.
        assert!(
            err.contains("[perflens] no report on SIGTERM/SIGINT: signals are not handled"),
            "{err}"
        );
        assert!(read_report(&json).is_none(), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let report = read_report(&json).unwrap_or_else(|| panic!("no report at {json:?}: {err}"));
    assert!(report.finished, "the session's final report");
    check(&report, "the SIGTERM report");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_perflens_snapshot_has_every_idle_and_busy_channel() {
    let dir = runtime_dir("snapshot");
    let mut child = start(&dir, &[("PERFLENS_LIVE", Path::new("1"))]);
    let out = Command::new(env!("CARGO_BIN_EXE_perflens"))
        .args(["snapshot", &child.id().to_string()])
        .env("XDG_RUNTIME_DIR", &dir)
        .output()
        .unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    if !perflens_sys::CAPABILITIES.live_view {
        // The portable build has no live view, and the command says so.
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("the live view is not available on this platform"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = Report::from_json_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert!(!report.finished, "a snapshot of the running program");
    check(&report, "perflens snapshot");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_json_every_rewrite_has_every_idle_and_busy_channel() {
    let dir = runtime_dir("every");
    let json = dir.join("report.json");
    let mut child = start(
        &dir,
        &[
            ("PERFLENS_JSON", &json),
            ("PERFLENS_JSON_EVERY", Path::new("0.02")),
        ],
    );
    // A rewrite whose snapshot began after `READY`: the file is removed,
    // and the second report to appear after that was snapshotted after
    // the first one was renamed into place.
    let _ = std::fs::remove_file(&json);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut report = None;
    for _ in 0..2 {
        loop {
            if let Some(r) = read_report(&json) {
                report = Some(r);
                std::fs::remove_file(&json).unwrap();
                break;
            }
            assert!(Instant::now() < deadline, "no rewrite of {json:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    child.kill().unwrap();
    let _ = child.wait();
    let report = report.unwrap();
    assert!(!report.finished, "a snapshot of the running program");
    check(&report, "the PERFLENS_JSON_EVERY report");
    let _ = std::fs::remove_dir_all(&dir);
}
