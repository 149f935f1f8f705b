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
}
