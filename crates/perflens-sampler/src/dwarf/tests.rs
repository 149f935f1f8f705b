//! The lazy path against addr2line, and its fallbacks.

use super::lines::push_path;
use super::*;
use object::{Object, ObjectSymbol, SymbolKind};
use std::path::PathBuf;

/// Most addresses compared by the equivalence test.
const MAX_PROBES: usize = 8000;
/// Selects the measuring child of the memory test.
const RSS_MODE: &str = "PERFLENS_DWARF_RSS_MODE";

fn exe() -> PathBuf {
    std::env::current_exe().expect("test binary path")
}

/// (address, size) of the text symbols of `path`, sorted.
fn text_symbols(path: &Path) -> Vec<(u64, u64)> {
    let map = MappedFile::open(path).expect("map the test binary");
    let file = object::File::parse(map.bytes()).expect("parse the test binary");
    let mut syms: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    syms.sort_unstable();
    syms.dedup();
    syms
}

#[test]
fn range_table_finds_every_covering_range() {
    let t = RangeTable::new(vec![
        (0, 0x30, 1),
        (0x10, 0x20, 2),
        (0x18, 0x40, 3),
        (0x50, 0x60, 4),
    ]);
    let at = |p| {
        let mut v = Vec::new();
        t.covering(p, |_, c| v.push(c));
        v.sort_unstable();
        v
    };
    assert_eq!(at(0x1c), vec![1, 2, 3]);
    assert_eq!(at(0x20), vec![1, 3]);
    assert_eq!(at(0x45), Vec::<u64>::new());
    assert_eq!(at(0x5f), vec![4]);
    assert_eq!(t.min_covering_end(0x1c), Some(0x20));
}

#[test]
fn paths_join_like_addr2line() {
    let join = |a: &str, b: &str| {
        let mut p = a.to_string();
        push_path(&mut p, b);
        p
    };
    assert_eq!(join("/work", "src/lib.rs"), "/work/src/lib.rs");
    assert_eq!(join("/work/", "src"), "/work/src");
    assert_eq!(join("/work", "/rustc/abc/library"), "/rustc/abc/library");
    assert_eq!(join("", "lib.rs"), "lib.rs");
    assert_eq!(join("C:\\src", "a.c"), "C:\\src\\a.c");
    assert_eq!(join("/x", "C:/y"), "C:/y");
}

/// The lazy reader gives exactly addr2line's frames (names, files,
/// lines) for the start and the middle of every function of this test
/// binary (a sample of them if there are many), and answers most of
/// them itself.
#[test]
fn same_frames_as_addr2line() {
    let exe = exe();
    let mut probes = Vec::new();
    for (addr, size) in text_symbols(&exe) {
        probes.push(addr);
        if size > 1 {
            probes.push(addr + size / 2);
        }
    }
    probes.sort_unstable();
    probes.dedup();
    let stride = probes.len().div_ceil(MAX_PROBES).max(1);
    let probes: Vec<u64> = probes.into_iter().step_by(stride).collect();
    assert!(probes.len() > 1000, "only {} probes", probes.len());

    let loader = addr2line::Loader::new(&exe).expect("addr2line loads the test binary");
    let mut lazy = LazyDwarf::open(&exe).expect("the lazy reader applies to the test binary");
    let (mut served, mut with_frames, mut fallback) = (0usize, 0usize, 0usize);
    let mut mismatches = Vec::new();
    for &probe in &probes {
        let want = loader_frames(&loader, probe);
        match lazy.find_frames(probe) {
            Lookup::Frames(got) => {
                served += 1;
                if !got.is_empty() {
                    with_frames += 1;
                }
                if got != want {
                    mismatches.push((probe, got, want));
                }
            }
            Lookup::Fallback => fallback += 1,
        }
    }
    eprintln!(
        "{} probes: {served} answered lazily ({with_frames} with frames), {fallback} fell back, {} mismatches",
        probes.len(),
        mismatches.len()
    );
    for (probe, got, want) in mismatches.iter().take(10) {
        eprintln!("{probe:#x}:\n  lazy:      {got:?}\n  addr2line: {want:?}");
    }
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
    assert!(
        served * 100 >= probes.len() * 95,
        "only {served} of {} answered lazily",
        probes.len()
    );
    assert!(
        with_frames * 100 >= probes.len() * 50,
        "only {with_frames} of {} have frames: no debug info?",
        probes.len()
    );
}

/// A `/proc/self/status` value in KiB.
fn status_kib(key: &str) -> u64 {
    perflens_sys::proc::status_field(key)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/self/status"))
}

/// The measuring child of `lazy_reads_a_fraction_of_what_addr2line_reads`
/// (does nothing unless started by it): symbolizes ten functions spread
/// over the test binary, with the lazy reader or with addr2line, and
/// prints by how much that raised the peak resident set.
#[test]
#[ignore = "child helper"]
fn rss_child() {
    let Ok(mode) = std::env::var(RSS_MODE) else {
        return;
    };
    let exe = exe();
    let syms: Vec<u64> = text_symbols(&exe)
        .into_iter()
        .filter(|s| s.1 > 0)
        .map(|s| s.0 + s.1 / 2)
        .collect();
    let probes: Vec<u64> = (0..10).map(|i| syms[i * (syms.len() - 1) / 9]).collect();
    // Resets the peak (VmHWM) to the current resident set; without it
    // (kernels before 4.0) the resident set at the end is measured.
    let peak = perflens_sys::proc::clear_peak_rss();
    let before = status_kib("VmRSS");
    let mut answered = 0;
    let mut lazy = None;
    let mut loader = None;
    if mode == "lazy" {
        let lazy = lazy.insert(LazyDwarf::open(&exe).expect("lazy reader"));
        for &p in &probes {
            if let Lookup::Frames(f) = lazy.find_frames(p) {
                answered += usize::from(!f.is_empty());
            }
        }
    } else {
        let loader = loader.insert(addr2line::Loader::new(&exe).expect("addr2line"));
        for &p in &probes {
            answered += usize::from(!loader_frames(loader, p).is_empty());
        }
    }
    let after = status_kib(if peak { "VmHWM" } else { "VmRSS" });
    drop((lazy, loader));
    println!("PERFLENS_RSS {} {answered}", after.saturating_sub(before));
}

fn measure(mode: &str) -> (u64, usize) {
    let out = std::process::Command::new(exe())
        .args([
            "--ignored",
            "--exact",
            "dwarf::tests::rss_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(RSS_MODE, mode)
        .output()
        .expect("run the measuring child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| Some(l.split_once("PERFLENS_RSS ")?.1))
        .unwrap_or_else(|| panic!("no measurement from the {mode} child: {stdout}"));
    let mut it = line.split_whitespace().map(|v| v.parse::<u64>().unwrap());
    (it.next().unwrap(), it.next().unwrap() as usize)
}

/// Symbolizing a handful of addresses maps and allocates far less with
/// the lazy reader than with addr2line's full context. Each is measured
/// in a fresh child process (its own mappings, so what is resident is
/// what it touched), with the file already in the page cache, where
/// the kernel's fault-around makes every touched page cost the most.
#[test]
#[cfg_attr(
    any(not(target_os = "linux"), perflens_portable, perflens_posix),
    ignore = "the portable and POSIX builds have no /proc to measure with (and the portable one reads a whole file, no mapping)"
)]
fn lazy_reads_a_fraction_of_what_addr2line_reads() {
    let exe = exe();
    let mut f = std::fs::File::open(&exe).expect("open the test binary");
    let size = std::io::copy(&mut f, &mut std::io::sink()).expect("read the test binary");
    let (full, full_answered) = measure("addr2line");
    let (lazy, lazy_answered) = measure("lazy");
    eprintln!(
        "file {} KiB; resident memory added: addr2line {full} KiB, lazy {lazy} KiB",
        size / 1024
    );
    assert!(
        full_answered >= 8,
        "addr2line symbolized {full_answered} of 10"
    );
    assert_eq!(
        lazy_answered, full_answered,
        "the lazy reader answered fewer"
    );
    assert!(
        lazy * 2 < full,
        "lazy {lazy} KiB is not under half of addr2line's {full} KiB"
    );
}
