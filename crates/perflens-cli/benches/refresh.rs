//! What one refresh of `perflens top` costs the reader, in CPU time, on a
//! large live session: 10,000 calling-context nodes over 64 threads
//! (issue 12: under 10 ms).
//!
//! ```text
//! cargo bench -p perflens-cli --bench refresh
//! ```
//!
//! The target is this binary run again (`PERFLENS_REFRESH_TARGET=1`): 64
//! threads, each with its own 156 two-level call paths (100 outer
//! functions times 100 inner ones give 10,000 distinct paths), calling
//! all of them once every 100 ms, so that every refresh finds new counts.
//! The reader maps the session, then refreshes `PERFLENS_BENCH_REFRESHES`
//! times (default 50) every `PERFLENS_BENCH_INTERVAL_MS` (default 500,
//! `top`'s interval: every node changed since the last read), as
//! `perflens top` does in its default view (the Functions tab), on the
//! Hot paths tab, on that tab sorted by its Self p99 column, and on the
//! Data flow tab: read
//! every block, build the report (on the Hot paths
//! tab, the tree of frames instead of the function rows, and the Self
//! percentiles of the rows on screen, read once their order is known,
//! or, sorted by Self p99, those of the rows whose order they decide,
//! while the rows are ordered),
//! compute the rows of the view (rates against the previous picture,
//! sorted; the picture before it is dropped there) and draw it into an
//! off-screen 200x50 terminal kept from one refresh to the next, the
//! same code the command runs minus the terminal's output. Each
//! step's CPU time is the reader's own (`CLOCK_PROCESS_CPUTIME_ID`); the
//! table gives the median and the 90th percentile over refreshes. The
//! first refresh (which maps the files and reads the names) is shown
//! apart.

// The bench publishes a live session, which needs shared mappings and
// Unix file modes (see docs/platforms.md).
#[cfg(unix)]
fn main() {
    bench::main()
}

#[cfg(not(unix))]
fn main() {
    eprintln!("refresh bench: Unix only (it reads a live session over shared memory)");
}

#[cfg(unix)]
mod bench {

    use perflens_cli::top::source::{LiveSource, Source};
    use perflens_cli::top::{App, Key};
    use perflens_core::{Callsite, Guard};
    use perflens_report::FrameTree;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    const TARGET: &str = "PERFLENS_REFRESH_TARGET";
    const THREADS: usize = 64;
    const PER_THREAD: usize = 156;
    const OUTER: usize = 100;
    const INNER: usize = 100;

    fn target() {
        let leak = |name: String| -> &'static Callsite {
            let name: &'static str = Box::leak(name.into_boxed_str());
            Box::leak(Box::new(Callsite::new(name, || "")))
        };
        let outer: Vec<&'static Callsite> = (0..OUTER)
            .map(|i| leak(format!("server::handlers::route_{i:02}")))
            .collect();
        let inner: Vec<&'static Callsite> = (0..INNER)
            .map(|i| leak(format!("server::storage::step_{i:02}")))
            .collect();
        let session = perflens::Session::builder()
            .live(true)
            .start()
            .expect("a session");
        let aged = aged_rounds();
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (outer, inner) = (outer.clone(), inner.clone());
                std::thread::spawn(move || {
                    // The calls of a session that has run for a while, made
                    // at once: the histograms hold what they would hold.
                    for _ in 0..aged {
                        for k in 0..PER_THREAD {
                            let p = t * PER_THREAD + k;
                            let _o = Guard::enter(outer[p / INNER % OUTER]);
                            let _i = Guard::enter(inner[p % INNER]);
                            std::hint::black_box(p);
                        }
                    }
                    loop {
                        for k in 0..PER_THREAD {
                            let p = t * PER_THREAD + k;
                            let _o = Guard::enter(outer[p / INNER % OUTER]);
                            let _i = Guard::enter(inner[p % INNER]);
                            std::hint::black_box(p);
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
            })
            .collect();
        // Runs until the reader kills it.
        for t in threads {
            let _ = t.join();
        }
        drop(session);
    }

    /// `PERFLENS_BENCH_AGE_S`: the target first makes, at once, the calls of
    /// a session that has run that many seconds (one call of each path every
    /// 100 ms), so that the reader meets histograms as full as a long-lived
    /// session's.
    fn aged_rounds() -> u64 {
        std::env::var("PERFLENS_BENCH_AGE_S")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 10
    }

    fn cpu_now() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    pub fn main() {
        if std::env::var_os(TARGET).is_some() {
            target();
            return;
        }
        // `cargo bench` passes `--bench`; nothing else is taken.
        let refreshes: usize = std::env::var("PERFLENS_BENCH_REFRESHES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(50);
        let interval = Duration::from_millis(
            std::env::var("PERFLENS_BENCH_INTERVAL_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(500),
        );
        // A tmpfs, as `$XDG_RUNTIME_DIR` and `/dev/shm` are.
        let runtime =
            std::path::PathBuf::from(format!("/dev/shm/perflens-refresh-{}", std::process::id()));
        std::fs::create_dir_all(&runtime).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(TARGET, "1")
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let root = runtime.join("perflens");
        // Wait until every thread has made every call once (after the calls
        // of an aged session).
        let deadline = Instant::now() + Duration::from_secs(60 + aged_rounds() / 100);
        let mut source = loop {
            assert!(Instant::now() < deadline, "the target never got ready");
            std::thread::sleep(Duration::from_millis(100));
            let Ok(dir) = perflens_live::find(&root, Some(&child.id().to_string())) else {
                continue;
            };
            let mut s = perflens_live::LiveSession::open(&dir).unwrap();
            let Ok(live) = s.raw_snapshot(false) else {
                continue;
            };
            let nodes: usize = live.snapshot.threads.iter().map(|t| t.nodes.len()).sum();
            let calls: u64 = live
                .snapshot
                .threads
                .iter()
                .flat_map(|t| &t.nodes)
                .map(|n| n.calls)
                .sum();
            // Two calls a path a round (the outer and the inner frame).
            let aged = aged_rounds() * (THREADS * PER_THREAD * 2) as u64;
            if live.snapshot.threads.len() == THREADS
                && nodes >= THREADS * PER_THREAD
                && calls > aged
            {
                break LiveSource::open(&dir).unwrap();
            }
        };
        // As `perflens top` does before its first read.
        perflens_cli::top::keep_freed_memory();
        let mut nodes = 0u64;
        let mut tables = Vec::new();
        // The Hot paths tab sorted by its Self p99 ("Paths p99") reads the
        // exclusive-time histograms of the rows whose order it decides (the
        // rows from the top to a page below the screen, and their siblings).
        // The Data flow tab reads the inclusive-time histograms (channel
        // latency, lock holds) without building the function rows (this
        // target has no channel or lock: its cost is the read's).
        let views: [(&str, &[char]); 4] = [
            ("Functions", &[]),
            ("Hot paths", &['h']),
            ("Paths p99", &['h', '6']),
            ("Data flow", &['d']),
        ];
        // `PERFLENS_BENCH_TABS=hot,p99`: only the tabs whose names start so
        // (case aside), for a profile of one.
        let only: Option<Vec<String>> = std::env::var("PERFLENS_BENCH_TABS")
            .ok()
            .map(|v| v.split(',').map(|s| s.trim().to_lowercase()).collect());
        for (tab, keys) in views {
            let wanted = only.as_ref().is_none_or(|o| {
                let t = tab.to_lowercase();
                o.iter().any(|w| !w.is_empty() && t.starts_with(w.as_str()))
            });
            if !wanted {
                continue;
            }
            let mut app = App::new(Duration::from_millis(500), "bench".into());
            for &k in keys {
                app.key(Key::Char(k));
            }
            // Kept, as the command keeps its terminal.
            let mut screen = perflens_cli::top::Offscreen::new(200, 50);
            let mut steps: Vec<[Duration; 3]> = Vec::new();
            let mut first = None;
            for i in 0..=refreshes {
                let t0 = cpu_now();
                source.set_needs(app.needs());
                let frame = source.read().expect("read");
                let t1 = cpu_now();
                nodes = frame.report.threads.iter().map(|t| t.nodes).sum();
                // The Hot paths tab's Self percentiles, read for the rows
                // whose order they decide while the rows are ordered, then
                // for the rows on screen: part of the read.
                let mut fill = Duration::ZERO;
                let mut timed_fill = |tree: &mut FrameTree, nodes: &[u32]| {
                    let t = cpu_now();
                    let r = source.fill_self_percentiles(tree, nodes);
                    fill += cpu_now() - t;
                    r
                };
                app.update_with(Ok(frame), Some(&mut timed_fill));
                app.fill_self_percentiles(&mut timed_fill);
                let t2 = cpu_now();
                std::hint::black_box(screen.draw(&mut app));
                let t3 = cpu_now();
                let step = [t1 - t0 + fill, t2 - fill - t1, t3 - t2];
                if i == 0 {
                    first = Some(step);
                } else {
                    steps.push(step);
                }
                // As `perflens top` waits between refreshes: every node has
                // changed since the last read, and the caches have moved on.
                std::thread::sleep(interval);
            }
            tables.push((tab, steps, first.unwrap()));
        }
        // The read alone, keeping what each read found of the histograms
        // (what `top` does) against scanning them from scratch: two readers
        // of the same session, one read every half interval, alternated
        // (each reader's reads `interval` apart, each read the first in half
        // of the pairs).
        let memo = compare_memo(&dir_of(&root, &child), refreshes, interval);
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&runtime);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "perflens top, one refresh of a live session of {nodes} nodes over {THREADS} threads, {refreshes} refreshes a tab, reader CPU time in ms:"
        );
        println!(
            "| tab        | step                          | median |    p90 | first refresh |"
        );
        println!(
            "|------------|-------------------------------|--------|--------|---------------|"
        );
        for (tab, steps, first) in &tables {
            let stat = |i: Option<usize>, q: f64| {
                let mut v: Vec<f64> = steps
                    .iter()
                    .map(|s| ms(i.map_or(s.iter().sum(), |i| s[i])))
                    .collect();
                v.sort_by(f64::total_cmp);
                v[((v.len() - 1) as f64 * q).round() as usize]
            };
            let names = [
                "map and read, build report",
                "view rows (rates, sort)",
                "draw 200x50",
            ];
            for (i, name) in names.iter().enumerate() {
                println!(
                    "| {tab:<10} | {name:<29} | {:>6.2} | {:>6.2} | {:>13.2} |",
                    stat(Some(i), 0.5),
                    stat(Some(i), 0.9),
                    ms(first[i])
                );
            }
            println!(
                "| {tab:<10} | {:<29} | {:>6.2} | {:>6.2} | {:>13.2} |",
                "whole refresh",
                stat(None, 0.5),
                stat(None, 0.9),
                ms(first.iter().sum())
            );
        }
        let [kept, scratch, ratio] = memo;
        println!(
            "\nthe read alone (the Functions tab's), {refreshes} pairs: keeping what each read found {kept:.2} ms, scanning from scratch {scratch:.2} ms (medians); kept / scratch, median of the pairs: {ratio:.3}"
        );
    }

    /// The session's entry of `child`.
    fn dir_of(root: &std::path::Path, child: &std::process::Child) -> std::path::PathBuf {
        perflens_live::find(root, Some(&child.id().to_string())).expect("the session")
    }

    /// Medians of the read with and without `HistMemo` and of their ratio
    /// (see the caller).
    fn compare_memo(dir: &std::path::Path, pairs: usize, interval: Duration) -> [f64; 3] {
        let open = |remember: bool| {
            let mut s = perflens_live::LiveSession::open(dir).expect("the session");
            s.remember(remember);
            // Mapped and named, and the memo filled.
            s.raw_snapshot(false).expect("a read");
            s
        };
        let mut readers = [open(true), open(false)];
        let mut times: Vec<[f64; 2]> = Vec::new();
        for i in 0..pairs {
            let mut t = [0.0; 2];
            for k in [i % 2, 1 - i % 2] {
                std::thread::sleep(interval / 2);
                let t0 = cpu_now();
                std::hint::black_box(readers[k].raw_snapshot(false).expect("a read"));
                t[k] = (cpu_now() - t0).as_secs_f64() * 1e3;
            }
            times.push(t);
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        [
            median(times.iter().map(|t| t[0]).collect()),
            median(times.iter().map(|t| t[1]).collect()),
            median(times.iter().map(|t| t[0] / t[1]).collect()),
        ]
    }
}
