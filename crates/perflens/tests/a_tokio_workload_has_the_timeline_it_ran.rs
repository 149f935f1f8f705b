//! The workload on a multi-thread tokio runtime, traced to Chrome
//! JSON: task A awaits B, which awaits a timer; task C, spawned, hops
//! between the workers; a `select!` cancels its losing branch; one await
//! calls an unmeasured async function that sleeps. Checked: one lane per
//! task (C's polls, on whatever workers ran them, on one lane), the
//! cancelled future marked, every arrow with both ends, each await
//! span's wait equal to its Waits row, the unmeasured sleep named with
//! its file and line.
#![cfg(feature = "enabled")]

use perflens::Session;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

#[perflens::measure]
async fn b() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[perflens::measure]
async fn a() {
    b().await;
}

#[perflens::measure]
async fn c() {
    for _ in 0..6 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[perflens::measure]
async fn loser() {
    tokio::time::sleep(Duration::from_secs(5)).await;
}

/// Not measured: its sleep is a wait perflens does not see inside.
async fn plain() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

const PLAIN_LINE: u32 = line!() + 4;

#[perflens::measure]
async fn d() {
    plain().await;
}

#[perflens::measure]
async fn root() {
    let spawned = tokio::spawn(c());
    a().await;
    tokio::select! {
        _ = loser() => {}
        _ = tokio::time::sleep(Duration::from_millis(5)) => {}
    }
    d().await;
    spawned.await.unwrap();
}

#[test]
fn a_tokio_workload_has_the_timeline_it_ran() {
    let path = std::env::temp_dir().join(format!("perflens-tokio-{}.json", std::process::id()));
    let session = Session::builder()
        .ignore_env()
        .trace(&path)
        .trace_short_threads(Duration::ZERO)
        .wait_min(Duration::ZERO)
        .start()
        .unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(root());
    let report = session.finish();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let tasks_pid = u64::from(std::process::id()) + 1_000_000_000;
    let short = |name: &str| name.rsplit("::").next().unwrap().to_string();

    // Lanes: root's task and C's (spawned: polled by the runtime
    // directly), each named after its root future.
    let lanes: BTreeMap<u64, String> = (events.iter())
        .filter(|e| e["pid"] == tasks_pid && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    let lane_of = |f: &str| -> u64 {
        let found: BTreeSet<u64> = (events.iter())
            .filter(|e| e["pid"] == tasks_pid && e["ph"] == "X" && e["cat"] == "future")
            .filter(|e| short(e["name"].as_str().unwrap()).starts_with(f))
            .map(|e| e["tid"].as_u64().unwrap())
            .collect();
        assert_eq!(found.len(), 1, "{f} on lanes {found:?} of {lanes:?}");
        *found.first().unwrap()
    };
    let (r, cl) = (lane_of("root"), lane_of("c"));
    assert_ne!(r, cl);
    assert!(lanes[&r].ends_with("::root"), "{lanes:?}");
    assert!(lanes[&cl].contains("::c"), "{lanes:?}");
    for f in ["a", "b", "loser", "d"] {
        assert_eq!(lane_of(f), r, "{f}");
    }
    // C's polls: every one on a worker thread's track, all its future
    // slices on its one lane.
    let polls_of_c: Vec<&Value> = (events.iter())
        .filter(|e| e["pid"] != tasks_pid && e["cat"] == "poll")
        .filter(|e| short(e["name"].as_str().unwrap()) == "c")
        .collect();
    assert_eq!(
        polls_of_c.len(),
        1 + 6 * 2,
        "a first poll, then a yield and a sleep each round"
    );

    // The select!'s loser is cancelled.
    let cancelled: Vec<String> = (events.iter())
        .filter(|e| e["pid"] == tasks_pid && e["args"]["cancelled"] == true && e["cat"] == "future")
        .map(|e| short(e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(cancelled, ["loser (cancelled)"]);

    // Every arrow has both ends.
    let ids = |ph: &str| -> Vec<u64> {
        let mut v: Vec<u64> = (events.iter())
            .filter(|e| e["ph"] == ph)
            .map(|e| e["id"].as_u64().unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids("s"), ids("f"));
    assert!(!ids("s").is_empty());

    // Each await span's wait is its site's, summed over its awaits.
    let mut span_waits: BTreeMap<String, u64> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| e["pid"] == tasks_pid && e["cat"] == "await")
    {
        let site = e["name"].as_str().unwrap().trim_start_matches("await ");
        let site = site.trim_end_matches(" (cancelled)").to_string();
        *span_waits.entry(site).or_default() += e["args"]["wait_ns"].as_u64().unwrap();
    }
    assert!(!span_waits.is_empty());
    for w in &report.waits {
        let site = format!("{}:{}:{}", w.file, w.line, w.column);
        // Awaits in the unmeasured `plain` have no lane.
        let Some(&spans) = span_waits.get(&site) else {
            continue;
        };
        if w.cancelled == 0 {
            // The same ticks; each await (span) and each thread's node
            // (row) rounds to ns on its own: within 1 ns per await.
            assert!(
                spans.abs_diff(w.wait_ns) <= w.count,
                "{site}: {spans} vs {}",
                w.wait_ns
            );
        } else {
            // A cancelled await's wait runs to its drop, which the trace
            // and the counters each read the clock for: within 1%.
            assert!(
                spans.abs_diff(w.wait_ns) * 100 <= w.wait_ns,
                "{site}: {spans} vs {}",
                w.wait_ns
            );
        }
    }
    // The unmeasured sleep: named with its file and line, uninstrumented.
    let plain_row = (report.waits.iter())
        .find(|w| w.line == PLAIN_LINE && w.file == file!())
        .unwrap_or_else(|| panic!("no Waits row at line {PLAIN_LINE}: {:?}", report.waits));
    assert!(plain_row.uninstrumented, "{plain_row:?}");
    assert!(plain_row.wait_ns >= 10_000_000);
}
