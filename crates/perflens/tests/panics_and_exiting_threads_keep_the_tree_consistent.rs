//! A panic unwinding through measured functions leaves the tree
//! consistent, and threads that exit before the report keep their data.
#![cfg(feature = "enabled")]

use perflens::Session;

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

#[perflens::measure]
fn boom(n: u32) {
    deeper(n);
}

#[perflens::measure]
fn deeper(n: u32) {
    if n > 0 {
        panic!("boom");
    }
}

#[perflens::measure]
fn after() {}

#[perflens::measure]
fn worker(n: u64) -> u64 {
    (0..n).map(work).sum()
}

#[perflens::measure]
fn work(i: u64) -> u64 {
    std::hint::black_box(i * 2)
}

#[test]
fn panics_and_exiting_threads_keep_the_tree_consistent() {
    let session = Session::builder().ignore_env().start().unwrap();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for _ in 0..3 {
        assert!(std::panic::catch_unwind(|| boom(1)).is_err());
    }
    std::panic::set_hook(hook);
    boom(0);
    after();

    let t = std::thread::Builder::new()
        .name("short-lived".into())
        .spawn(|| worker(25))
        .unwrap();
    assert_eq!(t.join().unwrap(), 600);

    let report = session.finish();
    let path = |frames: &[&str]| {
        let names: Vec<String> = frames.iter().map(|f| name(f)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report.path(&names).map(|p| p.calls)
    };
    // The unwound calls are recorded, and `after` is a top-level call,
    // not a child of a frame left behind by the panic.
    assert_eq!(report.function(&name("boom")).unwrap().calls, 4);
    assert_eq!(path(&["boom", "deeper"]), Some(4));
    assert_eq!(path(&["after"]), Some(1));

    // The exited thread is in the report with its data.
    let t = report
        .threads
        .iter()
        .find(|t| t.name.as_deref() == Some("short-lived"))
        .unwrap();
    assert!(t.exited);
    assert_eq!(t.calls, 26);
    assert_eq!(path(&["worker", "work"]), Some(25));
}
