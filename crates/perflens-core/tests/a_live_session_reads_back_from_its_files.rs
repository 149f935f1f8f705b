//! A live session in one process (the writer and, here, the reader too):
//! its block files, mapped read-only and read with `read_live_block`,
//! give exactly the trees the session's own final snapshot gives; a
//! finished entry kept with `keep` says so in its header. (The reader
//! library and the command, in other processes, are tested in
//! perflens-live and perflens-cli; this one runs under the sanitizers
//! with the rest of perflens-core's tests: `scripts/sanitize asan`.)

mod common;
use common::map;
use perflens_core::publish::PublishOptions;
use perflens_core::{Callsite, Guard, RecordingOptions, start};
use perflens_format::read::{LiveBlockRead, read_live_block};
use perflens_format::session_file::{SESSION_FILE_BYTES, STATE_FINISHED, SessionHeader};
use std::sync::atomic::Ordering;

static OUTER: Callsite = Callsite::new("live::outer", || "");
static INNER: Callsite = Callsite::new("live::inner", || "");

#[test]
fn block_files_read_back_as_the_final_snapshot() {
    let root = std::env::temp_dir().join(format!("perflens-core-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let config = RecordingOptions {
        live: Some(PublishOptions {
            keep: true,
            root: Some(root.clone()),
        }),
        ..RecordingOptions::default()
    };
    let rec = start(&config).expect("one session");
    let Some(dir) = common::published(&rec) else {
        drop(rec.finish());
        return;
    };
    let work = |n: u32| {
        for _ in 0..n {
            let _o = Guard::enter(&OUTER);
            for _ in 0..3 {
                let _i = Guard::enter(&INNER);
                std::hint::black_box(0);
            }
        }
    };
    // Joined, not scoped: a scope ends when the threads' closures have
    // returned, before their exit hooks ran, and a thread whose hook ran
    // after the final snapshot is marked exited in its file but not in
    // the snapshot. `join` waits for the thread itself.
    let threads = [500, 700].map(|n| std::thread::spawn(move || work(n)));
    for t in threads {
        t.join().unwrap();
    }
    work(100);
    let snap = rec.finish();

    let (h, hlen) = map(&dir.join("session"));
    assert!(hlen >= SESSION_FILE_BYTES);
    // SAFETY: the session file holds a header (checked size).
    let h = unsafe { &*(h as *const SessionHeader) };
    assert_eq!(h.state.load(Ordering::Acquire), STATE_FINISHED);
    assert_eq!(h.pid, std::process::id());
    let how = LiveBlockRead {
        epoch: h.epoch,
        ns_per_tick: f64::from_bits(h.ns_per_tick.load(Ordering::Relaxed)),
        boundary_alloc: h.alloc_feature == 1,
        all_histograms: true,
        total_counts_only: false,
        alloc_counted: h.alloc_installed.load(Ordering::Relaxed) == 1,
    };
    let mut read = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('b'))
        .collect();
    files.sort();
    for f in &files {
        let (base, len) = map(f);
        // SAFETY: a whole read-only mapping that stays mapped.
        let t = unsafe { read_live_block(base, len, &how, &|_| true) }.unwrap();
        read.extend(t);
    }
    read.sort_by_key(|t| t.index);
    // The same trees; thread names come from the names file, which the
    // reader library parses.
    let mut expected = snap.threads.clone();
    for t in &mut expected {
        t.name = None;
    }
    assert_eq!(read.len(), 3, "{files:?}");
    assert_eq!(read, expected);
    let calls: u64 = read.iter().flat_map(|t| &t.nodes).map(|n| n.calls).sum();
    assert_eq!(calls, 1300 * 4);
    let _ = std::fs::remove_dir_all(&root);
}
