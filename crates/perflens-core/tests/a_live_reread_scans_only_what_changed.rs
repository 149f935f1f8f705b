//! A live reader that reads a block again and again keeps what it found
//! (`HistMemo`) and scans only where the inclusive-time histograms may
//! have changed: every read gives exactly what a read from scratch
//! gives, an entry that was pending during one read and added since
//! (wherever it lies) included; a read after no change scans one line a
//! node; and while threads write, the counts settle, once they stop, to
//! the scratch read's.

mod common;
use common::map;
use perflens_core::publish::PublishOptions;
use perflens_core::{Callsite, Guard, RecordingOptions, start};
use perflens_format::read::{
    FULL_EVERY, HistMemo, LiveBlockRead, read_live_block, read_live_block_again,
};
use perflens_format::session_file::SessionHeader;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

static SHORT: Callsite = Callsite::new("reread::short", || "");
static LONG: Callsite = Callsite::new("reread::long", || "");
static OTHER: Callsite = Callsite::new("reread::other", || "");

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// One call of `site` that lasts about `d`.
fn call(site: &'static Callsite, d: Duration) {
    let _g = Guard::enter(site);
    spin(d);
}

/// The session's block files, each with the memo a reader keeps for it.
struct Reader {
    dir: PathBuf,
    how: LiveBlockRead,
    blocks: Vec<(PathBuf, (*const u8, usize), HistMemo)>,
    /// Reads made with the memos.
    reads: u64,
}

impl Reader {
    fn new(dir: &Path) -> Reader {
        let (h, _) = map(&dir.join("session"));
        // SAFETY: the session file starts with its header.
        let h = unsafe { &*(h as *const SessionHeader) };
        let how = LiveBlockRead {
            epoch: h.epoch,
            ns_per_tick: 1.0,
            boundary_alloc: false,
            all_histograms: false,
            total_counts_only: false,
            alloc_counted: false,
        };
        Reader {
            dir: dir.to_path_buf(),
            how,
            blocks: Vec::new(),
            reads: 0,
        }
    }

    /// Reads every block with its memo and from scratch, right after:
    /// the two must agree (no thread writes meanwhile, in the callers
    /// that check). Returns the threads (memo reads) and the lines they
    /// scanned.
    fn read(&mut self, check: bool) -> (Vec<perflens_core::ThreadSnapshot>, u64) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('b'))
            .collect();
        files.sort();
        for f in files {
            // A file just created is empty until it is sized: mapping
            // zero bytes fails (EINVAL, seen under qemu), so it waits for
            // the next read.
            let sized = std::fs::metadata(&f).is_ok_and(|m| m.len() > 0);
            if sized && !self.blocks.iter().any(|b| b.0 == f) {
                let (base, len) = map(&f);
                // A thread's file is created, then set up: read from the
                // first read that finds it set up (the reader library
                // maps only the blocks the names file lists).
                // SAFETY: a whole read-only mapping that stays mapped.
                if unsafe { read_live_block(base, len, &self.how, &|_| true) }.is_ok() {
                    self.blocks.push((f, (base, len), HistMemo::default()));
                }
            }
        }
        self.reads += 1;
        let (mut threads, mut lines) = (Vec::new(), 0);
        for (_, (base, len), memo) in &mut self.blocks {
            // SAFETY: a whole read-only mapping that stays mapped.
            let again =
                unsafe { read_live_block_again(*base, *len, &self.how, &|_| true, Some(memo)) }
                    .unwrap();
            lines += memo.lines();
            if check {
                // SAFETY: as above.
                let scratch = unsafe { read_live_block(*base, *len, &self.how, &|_| true) };
                assert_eq!(again, scratch.unwrap(), "read {}", self.reads);
            }
            threads.extend(again);
        }
        (threads, lines)
    }
}

/// One session at a time in this process.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("perflens-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    root
}

fn config(root: &Path) -> RecordingOptions {
    RecordingOptions {
        live: Some(PublishOptions {
            keep: false,
            root: Some(root.to_path_buf()),
        }),
        ..RecordingOptions::default()
    }
}

fn calls_of(threads: &[perflens_core::ThreadSnapshot]) -> u64 {
    threads.iter().flat_map(|t| &t.nodes).map(|n| n.calls).sum()
}

#[test]
fn rereads_agree_with_a_scratch_read_and_scan_what_changed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let root = root("reread");
    let rec = start(&config(&root)).expect("one session");
    let Some(dir) = common::published(&rec) else {
        drop(rec.finish());
        return;
    };
    let mut reader = Reader::new(&dir);
    let short = Duration::ZERO;
    let long = Duration::from_millis(3);

    // Many short calls and a few long ones: the histograms' entries far
    // apart, the whole `total` far above the short calls' buckets.
    for i in 0..3000 {
        call(&SHORT, short);
        if i % 1000 == 0 {
            call(&LONG, long);
        }
    }
    let (t, scratch_lines) = reader.read(true);
    assert_eq!(calls_of(&t), 3003);
    // Nothing changed: one line a node, the block's internal ones too
    // (nodes are numbered in order; no read so far reads any node whole:
    // fewer than FULL_EVERY - 4 reads).
    assert_eq!(t.len(), 1);
    let nodes = t[0].nodes.iter().map(|n| n.index).max().unwrap() as u64 + 1;
    let (_, lines) = reader.read(true);
    assert_eq!(lines, nodes);
    assert!(scratch_lines > nodes, "{scratch_lines}");

    // A long call, the thread's last: pending while this reads (in the
    // scratch read and in the memo's, both through the pending entry).
    // Then a short one, whose exit adds the long one's entry: its value
    // was in the last read's bound, far above what `total` grew by
    // since, so only the noted pending bucket finds it.
    for round in 0..4 {
        call(&LONG, long);
        let (t, _) = reader.read(true);
        assert_eq!(calls_of(&t), 3003 + 1 + round * 2, "round {round}");
        call(&SHORT, short);
        let (t, _) = reader.read(true);
        assert_eq!(calls_of(&t), 3003 + 2 + round * 2, "round {round}");
    }
    // A new node, and a long call on another node than the pending one.
    call(&OTHER, long);
    call(&SHORT, short);
    call(&LONG, long);
    call(&SHORT, short);
    let (t, _) = reader.read(true);
    assert_eq!(calls_of(&t), 3003 + 8 + 4);
    assert!(reader.reads < FULL_EVERY - 4);
    // Many more reads, some of them reading nodes whole, a call or none
    // between them: always the scratch read's figures.
    for r in 0..2 * FULL_EVERY {
        match r % 3 {
            0 => call(&LONG, long / 3),
            1 => call(&SHORT, short),
            _ => {}
        }
        reader.read(true);
    }
    drop(rec.finish());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn while_threads_write_rereads_settle_on_the_scratch_read() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let root = root("reread-mt");
    let rec = start(&config(&root)).expect("one session");
    let Some(dir) = common::published(&rec) else {
        drop(rec.finish());
        return;
    };
    let mut reader = Reader::new(&dir);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let made = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (stop, made) = (&stop, &made);
            s.spawn(move || {
                let mut n = 0u64;
                // Mostly short calls, some of 50 µs to 1 ms, on three
                // sites: entries land low and high while the reader reads.
                while !stop.load(Ordering::Relaxed) {
                    let x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ t;
                    let site = [&SHORT, &LONG, &OTHER][(x % 3) as usize];
                    let d = if x.is_multiple_of(97) {
                        Duration::from_micros(50 + (x >> 8) % 950)
                    } else {
                        Duration::ZERO
                    };
                    call(site, d);
                    n += 1;
                }
                made.fetch_add(n, Ordering::Relaxed);
            });
        }
        // The writers stop even if a check below fails.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let _stop = Stop(&stop);
        let deadline = Instant::now() + Duration::from_millis(600);
        let mut last = 0;
        while Instant::now() < deadline {
            let (t, _) = reader.read(false);
            // Counts only grow, read after read, give or take the one
            // pending entry a thread may have counted twice.
            let calls = calls_of(&t);
            assert!(calls + 3 >= last, "{calls} after {last}");
            last = calls;
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    // Written: within FULL_EVERY reads, every node was read whole at
    // least once since, and then the reads agree with a scratch read.
    for _ in 0..FULL_EVERY {
        reader.read(false);
    }
    let (t, _) = reader.read(true);
    assert_eq!(calls_of(&t), made.load(Ordering::Relaxed));
    drop(rec.finish());
    let _ = std::fs::remove_dir_all(&root);
}
