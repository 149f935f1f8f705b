//! perflens's heap profile against dhat-rs (exact: a backtrace for every
//! allocation) on one workload: six functions leak 64, 32, 16, 8, 4 and
//! 1 MiB in 4 KiB blocks, while another allocates and frees 256 MiB.
//! Both name the same top five allocation sites by bytes still in use at
//! the end, in the same order: perflens by its measured paths and by
//! its native stacks, each site the first of the workload's functions on
//! the stack, as for dhat's.
//!
//! Each profiler runs in a child process (this binary again) with its
//! own allocator: the global allocator here routes to dhat's or to
//! perflens's counting one, chosen once at the child's start.
#![cfg(feature = "heap")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

static PERFLENS: perflens::CountingAlloc = perflens::CountingAlloc::new(System);
static DHAT: dhat::Alloc = dhat::Alloc;
/// Set by the dhat child before anything it profiles.
static USE_DHAT: AtomicBool = AtomicBool::new(false);

struct Route;

// SAFETY: both allocators get their memory from `System` and free with
// it, so a block allocated by one may be freed by the other (dhat
// ignores a block it did not see allocated; perflens only counts);
// arguments are forwarded unchanged.
unsafe impl GlobalAlloc for Route {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe {
            if USE_DHAT.load(Ordering::Relaxed) {
                DHAT.alloc(l)
            } else {
                PERFLENS.alloc(l)
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe {
            if USE_DHAT.load(Ordering::Relaxed) {
                DHAT.dealloc(p, l)
            } else {
                PERFLENS.dealloc(p, l)
            }
        }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        unsafe {
            if USE_DHAT.load(Ordering::Relaxed) {
                DHAT.realloc(p, l, n)
            } else {
                PERFLENS.realloc(p, l, n)
            }
        }
    }
}

#[global_allocator]
static GLOBAL: Route = Route;

const CHILD: &str = "PERFLENS_DHAT_TEST_CHILD";
const MIB: usize = 1 << 20;

fn leak(bytes: usize) {
    for _ in 0..bytes / 4096 {
        std::mem::forget(std::hint::black_box(vec![1u8; 4096]));
    }
}

#[perflens::measure]
#[inline(never)]
fn leak_64() {
    leak(64 * MIB);
}
#[perflens::measure]
#[inline(never)]
fn leak_32() {
    leak(32 * MIB);
}
#[perflens::measure]
#[inline(never)]
fn leak_16() {
    leak(16 * MIB);
}
#[perflens::measure]
#[inline(never)]
fn leak_8() {
    leak(8 * MIB);
}
#[perflens::measure]
#[inline(never)]
fn leak_4() {
    leak(4 * MIB);
}
#[perflens::measure]
#[inline(never)]
fn leak_1() {
    leak(MIB);
}
#[perflens::measure]
#[inline(never)]
fn churn() {
    for _ in 0..256 * MIB / 4096 {
        drop(std::hint::black_box(vec![2u8; 4096]));
    }
}

const SITES: [&str; 6] = [
    "leak_64", "leak_32", "leak_16", "leak_8", "leak_4", "leak_1",
];

/// The workload, in an order that does not match the ranking.
fn workload() {
    leak_4();
    churn();
    leak_16();
    leak_1();
    leak_64();
    leak_8();
    leak_32();
}

/// The sites of `SITES` by `bytes` descending (ties by name), the top
/// five.
fn top_five(mut bytes: Vec<(&'static str, u64)>) -> Vec<&'static str> {
    bytes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    bytes.into_iter().take(5).map(|(s, _)| s).collect()
}

#[test]
fn dhat_child() {
    let Ok(which) = std::env::var(CHILD) else {
        return;
    };
    let out = std::env::var("DHAT_TEST_OUT").unwrap();
    match which.as_str() {
        "dhat" => {
            USE_DHAT.store(true, Ordering::SeqCst);
            let profiler = dhat::Profiler::builder()
                .file_name(&out)
                .trim_backtraces(None)
                .build();
            workload();
            drop(profiler);
        }
        "perflens" => {
            let session = perflens::Session::builder()
                .ignore_env()
                .heap_rate(64 << 10)
                .start()
                .unwrap();
            workload();
            let report = session.finish();
            let heap = report.heap.unwrap();
            // "path <frames> <bytes>", then "stack <innermost frame
            // first, joined by ' <- '> <bytes>".
            let mut bytes: Vec<String> = (heap.inuse_paths.iter())
                .map(|p| format!("path {} {}", p.frames.join(" -> "), p.inuse_bytes))
                .collect();
            let stacks = heap.inuse_stacks.iter().map(|s| {
                let frames: Vec<&str> = s.frames.iter().rev().map(String::as_str).collect();
                format!("stack {} {}", frames.join(" <- "), s.inuse_bytes)
            });
            bytes.extend(stacks);
            std::fs::write(&out, bytes.join("\n")).unwrap();
        }
        other => panic!("unknown child {other}"),
    }
}

/// Runs the child `which`; returns what it wrote.
fn run(which: &str) -> String {
    let out = std::env::temp_dir().join(format!("perflens-dhat-{which}-{}", std::process::id()));
    let status = common::rerun_self("dhat_child")
        .env(CHILD, which)
        .env("DHAT_TEST_OUT", &out)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the {which} child failed");
    let text = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).ok();
    text
}

/// The function of `SITES` a frame names (`... two::leak_8 (file:line)`).
fn site_in(frame: &str) -> Option<&'static str> {
    SITES.into_iter().find(|s| {
        frame
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|word| word == *s)
    })
}

#[test]
fn dhat_and_perflens_name_the_same_top_five_sites_by_bytes_in_use_at_the_end() {
    // dhat: per program point, the bytes live at the end (`eb`), and its
    // stack (`fs`, indices into the frame table `ftbl`); a point's site
    // is the first of our functions on its stack.
    let dhat: serde_json::Value = serde_json::from_str(&run("dhat")).unwrap();
    let ftbl: Vec<&str> = (dhat["ftbl"].as_array().unwrap().iter())
        .map(|f| f.as_str().unwrap())
        .collect();
    let mut dhat_bytes: Vec<(&'static str, u64)> = SITES.iter().map(|s| (*s, 0)).collect();
    for pp in dhat["pps"].as_array().unwrap() {
        let eb = pp["eb"].as_u64().unwrap_or(0);
        let site = (pp["fs"].as_array().unwrap().iter())
            .find_map(|i| site_in(ftbl[i.as_u64().unwrap() as usize]));
        if let Some(site) = site {
            dhat_bytes.iter_mut().find(|(s, _)| *s == site).unwrap().1 += eb;
        }
    }
    let dhat_top = top_five(dhat_bytes.clone());
    // perflens: its still-live-at-exit paths, by their last frame, and
    // its native stacks, as dhat's: by the first of our functions.
    let perflens_text = run("perflens");
    let mut perflens_bytes: Vec<(&'static str, u64)> = SITES.iter().map(|s| (*s, 0)).collect();
    let mut stack_bytes = perflens_bytes.clone();
    for line in perflens_text.lines() {
        let (what, bytes) = line.rsplit_once(' ').unwrap();
        let bytes = bytes.parse::<u64>().unwrap();
        let (into, site) = match what.split_once(' ').unwrap() {
            ("path", path) => (&mut perflens_bytes, path.rsplit(" -> ").find_map(site_in)),
            (_, stack) => (&mut stack_bytes, stack.split(" <- ").find_map(site_in)),
        };
        if let Some(site) = site {
            into.iter_mut().find(|(s, _)| *s == site).unwrap().1 += bytes;
        }
    }
    let perflens_top = top_five(perflens_bytes.clone());
    eprintln!("dhat (exact, bytes at the end): {dhat_bytes:?}");
    eprintln!("perflens (estimates at 64 KiB): {perflens_bytes:?}");
    eprintln!("perflens by native stack: {stack_bytes:?}");
    assert_eq!(top_five(stack_bytes), dhat_top, "by native stack");
    // dhat is exact: the leaks themselves.
    assert_eq!(
        dhat_top,
        ["leak_64", "leak_32", "leak_16", "leak_8", "leak_4"]
    );
    assert_eq!(dhat_bytes[0].1, 64 * MIB as u64);
    assert_eq!(perflens_top, dhat_top);
}
