//! The programmatic session: snapshots while recording goes on, one
//! session at a time, and a new session starts from zero.
#![cfg(feature = "enabled")]

use perflens::{Error, Session};

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

#[perflens::measure]
fn step(i: u64) -> u64 {
    std::hint::black_box(i)
}

#[perflens::measure]
fn nap(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

#[test]
fn sessions_snapshot_while_recording() {
    // Nothing is recorded without a session.
    step(0);

    let session = Session::builder().ignore_env().start().unwrap();
    assert!(matches!(
        Session::builder().ignore_env().start(),
        Err(Error::AlreadyRecording)
    ));
    for i in 0..5 {
        step(i);
    }
    let early = session.snapshot();
    assert_eq!(early.function(&name("step")).unwrap().calls, 5);
    assert!(!early.finished);
    for i in 0..7 {
        step(i);
    }
    let last = session.finish();
    assert!(last.finished);
    assert_eq!(last.function(&name("step")).unwrap().calls, 12);

    // Calls between sessions are not recorded; a new session starts at 0,
    // also on threads whose block holds an older session's data.
    step(1);
    let session = Session::builder().ignore_env().start().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| step(2));
    });
    step(3);
    let report = session.finish();
    assert_eq!(report.function(&name("step")).unwrap().calls, 2);
    assert_eq!(report.threads.len(), 2);

    // A thread's last timed call enters its histograms only at the next
    // timed exit (see `frame::hist_defer`): reports must still hold it,
    // with its time, whether the thread goes on or has exited.
    let session = Session::builder().ignore_env().start().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            step(4);
            nap(3);
        });
    });
    nap(6);
    let snap = session.snapshot();
    let row = snap.function(&name("nap")).unwrap();
    assert_eq!((row.calls, row.timed_calls), (2, 2));
    // A percentile is its bucket's midpoint, within 1/64 of the value
    // (32 buckets an octave): a nap of 3.02 ms may read 2.98.
    let at_least = |ns: u64| ns - ns / 32;
    assert!(row.p50_ns >= at_least(3_000_000), "{row:?}");
    assert!(row.p99_ns >= at_least(6_000_000), "{row:?}");
    let path = snap.path(&[name("nap").as_str()]).unwrap();
    assert_eq!(path.calls, 2);
    assert!(
        path.segments[0].self_p99_ns >= at_least(6_000_000),
        "{path:?}"
    );
    step(5);
    let report = session.finish();
    assert_eq!(report.function(&name("nap")).unwrap().calls, 2);
    assert_eq!(report.function(&name("step")).unwrap().calls, 2);

    // A session that reads the environment writes `PERFLENS_JSON` when
    // it finishes, as `#[perflens::main]` does.
    let path = std::env::temp_dir().join(format!("perflens-session-{}.json", std::process::id()));
    // SAFETY: this test binary runs this one test, and no other thread
    // of it reads the environment while the variable is set.
    unsafe { std::env::set_var("PERFLENS_JSON", &path) };
    let session = Session::builder().start().unwrap();
    step(6);
    let report = session.finish();
    // SAFETY: as above.
    unsafe { std::env::remove_var("PERFLENS_JSON") };
    let written = std::fs::read_to_string(&path).expect("PERFLENS_JSON written");
    std::fs::remove_file(&path).unwrap();
    let written = perflens::Report::from_json_str(&written).unwrap();
    assert_eq!(written.function(&name("step")).unwrap().calls, 1);
    assert_eq!(written, report);
}
