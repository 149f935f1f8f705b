//! A hot path ends wherever time is spent, not only at a leaf of the
//! calling-context tree: `parent` spends 2 ms of its own per call and then
//! calls a 20 µs `child`; beside it a 100 µs `leaf`. The time is in
//! `parent` itself, so the path ending at `parent` leads the hot paths,
//! in the report's `paths`, in the order the table ranks them and in the
//! table itself. (When paths ended only at leaves, `parent` was no path
//! at all, and the table led with the 100 µs leaf.)
#![cfg(feature = "enabled")]

use perflens::{Report, Session};
use std::time::{Duration, Instant};

/// Spins (no sleep: the time is spent on a CPU) for at least `d`.
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[perflens::measure]
fn parent() {
    spin(Duration::from_millis(2));
    child();
}

#[perflens::measure]
fn child() {
    spin(Duration::from_micros(20));
}

#[perflens::measure]
fn leaf() {
    spin(Duration::from_micros(100));
}

const CALLS: u64 = 20;

fn name(f: &str) -> String {
    format!("hot_paths_end_where_time_is_spent::{f}")
}

/// One session of the workload: its report and its terminal table.
fn run() -> (Report, String) {
    let session = Session::builder().ignore_env().start().unwrap();
    for _ in 0..CALLS {
        parent();
        leaf();
    }
    let report = session.finish();
    let mut table = Vec::new();
    perflens::write_table(&report, &mut table).unwrap();
    (report, String::from_utf8(table).unwrap())
}

/// The first row of the table's hot paths (the line below the header's
/// rule).
fn first_table_row(table: &str) -> Option<&str> {
    let at = table.find("\nHot path ")?;
    table[at..].lines().nth(3)
}

#[test]
fn hot_paths_end_where_time_is_spent() {
    let (parent_, child_, leaf_) = (name("parent"), name("child"), name("leaf"));
    let mut expected = vec![
        vec![parent_.clone()],
        vec![parent_.clone(), child_.clone()],
        vec![leaf_.clone()],
    ];
    expected.sort();
    // Which path leads is timing: 40 ms of Self against 2 ms (leaf) and
    // 0.4 ms (child), a 20x margin that a preemption landing inside the
    // leaf's few milliseconds could still close on a loaded machine. So a
    // run where the leaf's Self was inflated past the parent's is run
    // again (at most twice more). A report whose paths end only at leaves
    // has no path ending at `parent`, and fails at the first run.
    let mut seen = Vec::new();
    for attempt in 0..3 {
        let (report, table) = run();
        // The three paths, whatever the timing: every calling context
        // that ran ends a path, interior ones included.
        let mut frames: Vec<Vec<String>> = report.paths.iter().map(|p| p.frames.clone()).collect();
        frames.sort();
        assert_eq!(frames, expected, "{table}");
        // The path's figures are its last frame's: `parent`'s calls, Self
        // and Total (its child's time included).
        let p = report.path(&[parent_.as_str()]).unwrap();
        let f = report.function(&parent_).unwrap();
        assert_eq!(p.calls, CALLS);
        assert_eq!((p.self_ns, p.total_ns), (f.self_ns, f.total_ns));
        assert!(p.self_ns >= CALLS * 2_000_000, "{p:?}");
        assert!(p.total_ns > p.self_ns, "{p:?}");

        let leaf_self = report.path(&[leaf_.as_str()]).unwrap().self_ns;
        let first = &report.paths[0].frames;
        let ranked = &report.paths_by_time_spent()[0].frames;
        let row = first_table_row(&table).unwrap_or_default();
        if *first == [parent_.clone()]
            && *ranked == [parent_.clone()]
            && row.starts_with(&format!("{parent_}  "))
        {
            if !seen.is_empty() {
                eprintln!("led at attempt {attempt}, after:\n{}", seen.join("\n"));
            }
            return;
        }
        seen.push(format!(
            "attempt {attempt}: parent Self {} ns, leaf Self {leaf_self} ns, first path \
             {first:?}, first ranked {ranked:?}\n{table}",
            p.self_ns
        ));
        // Only a leaf whose Self was inflated past the parent's may lead.
        assert!(leaf_self > p.self_ns, "{}", seen.join("\n"));
    }
    panic!("the path ending at parent never led:\n{}", seen.join("\n"));
}
