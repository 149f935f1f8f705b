//! A full tree is reported (never silent), and the count-only and
//! sampled modes count every call exactly.
#![cfg(feature = "enabled")]

use perflens::{Mode, Session};

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

macro_rules! leaves {
    ($($f:ident),*) => { $( #[perflens::measure] fn $f() { std::hint::black_box(()); } )* };
}
leaves!(f0, f1, f2, f3, f4, f5, f6, f7);

#[perflens::measure]
fn hot(i: u64) -> u64 {
    std::hint::black_box(i + 1)
}

#[perflens::measure]
fn sampled_parent() {
    for i in 0..10 {
        hot(i);
    }
}

#[test]
fn overflow_and_modes_are_reported() {
    // 1. Overflow: room for 4 calling contexts.
    let session = Session::builder()
        .ignore_env()
        .node_capacity(4)
        .start()
        .unwrap();
    for _ in 0..5 {
        f0();
        f1();
        f2();
        f3();
        f4();
        f5();
        f6();
        f7();
    }
    let report = session.finish();
    assert_eq!(
        report.dropped.overflow_calls, 20,
        "4 of 8 functions did not fit, 5 calls each"
    );
    let recorded: u64 = report.functions.iter().map(|f| f.calls).sum();
    assert_eq!(recorded, 20);
    let mut table = Vec::new();
    perflens::write_table(&report, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("PERFLENS_NODES"),
        "the table says how to raise the capacity:\n{table}"
    );
    let mut json = Vec::new();
    perflens::write_json(&report, &mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["dropped"]["overflow_calls"], 20);

    // 2. Count-only: exact counts, no time.
    let session = Session::builder()
        .ignore_env()
        .mode(Mode::Count)
        .start()
        .unwrap();
    for i in 0..1000 {
        hot(i);
    }
    let report = session.finish();
    let row = report.function(&name("hot")).unwrap();
    assert_eq!(row.calls, 1000);
    assert_eq!((row.timed_calls, row.total_ns), (0, 0));

    // 3. Sampled 1 in 8: every call counted, 1 in 8 timed (the first of
    //    each 8), children of a timed call are timed too.
    let session = Session::builder()
        .ignore_env()
        .mode(Mode::Sampled { every: 8 })
        // The 1-in-8 mechanics from the first call (the warm-up that
        // times the first calls of each context is tested on its own).
        .sample_warmup(0)
        .start()
        .unwrap();
    for i in 0..1000 {
        hot(i);
    }
    for _ in 0..16 {
        sampled_parent();
    }
    let report = session.finish();
    assert!(report.functions.iter().all(|f| f.sampled));
    let parent = report.function(&name("sampled_parent")).unwrap();
    assert_eq!((parent.calls, parent.timed_calls), (16, 2));
    let hot_row = report.function(&name("hot")).unwrap();
    assert_eq!(hot_row.calls, 1000 + 160);
    // Top level: calls 0, 8, ..., 992 are timed (125). Under the parent
    // (160 calls): the countdown times calls 0, 8, ..., 152 (20), and the
    // two timed parent calls (#0 and #8) time all their children, calls
    // 0..=9 and 80..=89, four of which the countdown already timed:
    // 20 + 20 - 4 = 36.
    let path: Vec<String> = vec![name("sampled_parent"), name("hot")];
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    assert_eq!(report.path(&path).unwrap().calls, 160);
    assert_eq!(hot_row.timed_calls, 125 + 36);
    assert!(hot_row.total_ns > 0);
}
