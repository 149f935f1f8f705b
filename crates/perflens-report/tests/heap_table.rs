//! The terminal's heap section: what it says when nothing sampled is in
//! use, and the allocation sites from the native stacks.

use perflens_report::{AllocTotals, HeapProfile, HeapStack, Report, ReportOptions, write_table};

/// A report of an empty session, with `heap` and `allocated` bytes.
fn report(heap: HeapProfile, allocated: u64) -> String {
    // One session at a time (the tests run in parallel).
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let snap = {
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        perflens_core::start(&perflens_core::RecordingOptions::default())
            .unwrap()
            .finish()
    };
    let mut r = Report::from_snapshot(&snap, &ReportOptions::default());
    r.alloc = Some(AllocTotals {
        total_bytes: allocated,
        total_count: 10,
        ..AllocTotals::default()
    });
    r.heap = Some(heap);
    r.finished = true;
    let mut out = Vec::new();
    write_table(&r, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn stack(frames: &[&str], bytes: u64, samples: u64) -> HeapStack {
    HeapStack {
        frames: frames.iter().map(|f| f.to_string()).collect(),
        path: vec!["app::main".to_string()],
        inuse_bytes: bytes,
        inuse_objects: samples * 4,
        samples,
    }
}

#[test]
fn no_sample_in_use_is_no_estimate_and_says_why() {
    let heap = HeapProfile {
        rate_bytes: 512 << 10,
        capacity: 65536,
        ..HeapProfile::default()
    };
    let text = report(heap, 212 << 10);
    let line = text.lines().find(|l| l.starts_with("Heap in use")).unwrap();
    assert_eq!(
        line,
        "Heap in use: no sampled allocation in use, so no estimate (one sampled byte every \
         512.00 KiB on average; 0 sampled in all, of 212.00 KiB allocated during the session): \
         too few samples for this little memory; lower PERFLENS_HEAP_RATE to see it"
    );
    assert!(!text.contains("~0 B"), "{text}");
}

#[test]
fn allocation_sites_sum_the_stacks_by_their_innermost_frame_and_caller() {
    let heap = HeapProfile {
        rate_bytes: 512 << 10,
        inuse_bytes: 7 << 20,
        inuse_objects: 40,
        inuse_samples: 10,
        sampled: 30,
        capacity: 65536,
        inuse_paths: vec![perflens_report::HeapPath {
            frames: vec!["app::main".to_string()],
            inuse_bytes: 7 << 20,
            inuse_objects: 40,
            alloc_bytes: 9 << 20,
            alloc_objects: 50,
            samples: 10,
        }],
        inuse_stacks: vec![
            // Two stacks into the same site from the same caller: one row.
            stack(
                &["main", "app::main", "app::load", "app::parse"],
                3 << 20,
                4,
            ),
            stack(
                &[
                    "main",
                    "app::main",
                    "app::reload",
                    "app::load",
                    "app::parse",
                ],
                2 << 20,
                3,
            ),
            stack(&["main", "app::main", "app::cache"], 1 << 20, 2),
            stack(&[], 1 << 20, 1),
        ],
        stacks_dropped: 1,
        dropped: 0,
    };
    let text = report(heap, 9 << 20);
    let section = text
        .split("Still live at exit (by allocation site)")
        .nth(1)
        .unwrap_or_else(|| panic!("no allocation sites:\n{text}"));
    let rows: Vec<Vec<&str>> = (section.lines().skip(2).take(3))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "app::parse",
            "app::load",
            "~5.00",
            "MiB",
            "~28",
            "71.4%",
            "7"
        ]
    );
    assert_eq!(rows[1][..3], ["app::cache", "app::main", "~1.00"]);
    assert_eq!(rows[2][..3], ["(no", "native", "stack)"]);
    assert!(
        text.contains("! 1 sampled allocations have no native stack"),
        "{text}"
    );
}
