//! Hostile input to the live reader (issue 12): corrupted copies of a
//! real kept session. None of them may panic, hang or crash the reader:
//! each gives a one-line `Err` that names the problem, or (where the
//! corruption is harmless) a report.
//!
//! One real session is produced per test binary (this binary run again
//! on `target_program`, as in `two_processes.rs`, under its own
//! `XDG_RUNTIME_DIR`, with `PERFLENS_LIVE_KEEP=1`); each case copies its
//! directory and corrupts the copy. Every read runs on a thread with a
//! time limit: a case that does not finish in time fails as a hang, a
//! panic fails naming the case.
// Not in the portable build: it reads a live session, and that build has
// none (tests/the_live_view_is_there_or_says_why.rs checks what it says).
#![cfg(not(perflens_portable))]

use perflens_format::block::{Header, LAYOUT_VERSION, MAGIC};
use perflens_format::session_file::{
    REC_CALLSITE, REC_EXTRA, REC_HEAD, REC_PATH, REC_THREAD, SESSION_FILE_BYTES, STATE_FINISHED,
    SessionHeader,
};
use perflens_live::LiveSession;
use std::mem::offset_of;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

/// Set in the child: how long it runs its workload, in ms.
const CHILD: &str = "PERFLENS_HOSTILE_TEST_CHILD";

/// How long one read may take before it counts as a hang.
const LIMIT: Duration = Duration::from_secs(10);

mod common;
use common::{live_session, run_workers};

/// The program: a CPU-sampled, allocation-counted live session with two
/// threads of measured work, for `CHILD` ms.
#[test]
fn target_program() {
    let Some(ms) = std::env::var(CHILD)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    let session = live_session();
    let until = Instant::now() + Duration::from_millis(ms);
    let acc = run_workers(1, 1, until);
    std::hint::black_box(acc);
    session.finish();
}

/// Where this binary's directories go.
fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("perflens-hostile-{}", std::process::id()))
}

fn private_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// The real kept session, produced once.
fn real_session() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Directories of earlier runs whose process is gone.
        for e in std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("perflens-hostile-")
                && !Path::new(&format!("/proc/{pid}")).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let runtime = scratch().join("runtime");
        let _ = std::fs::remove_dir_all(&runtime);
        private_dir(&runtime);
        let status = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "target_program",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "300")
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("PERFLENS_LIVE", "1")
            .env("PERFLENS_LIVE_KEEP", "1")
            .status()
            .unwrap();
        assert!(status.success(), "the child failed: {status}");
        let sessions = perflens_live::list(&runtime.join("perflens"));
        assert_eq!(sessions.len(), 1, "one kept session: {sessions:?}");
        let dir = sessions[0].dir.clone();
        // The copy reads as it is.
        read(&dir).expect("the real session reads");
        dir
    })
}

/// A private copy of the real session, for case `name`: returns the
/// session directory (inside a private parent of its own, which `list`
/// can be pointed at).
fn copy(name: &str) -> PathBuf {
    let src = real_session();
    let parent = scratch().join("cases").join(name);
    let _ = std::fs::remove_dir_all(&parent);
    private_dir(&parent);
    let dir = parent.join("s");
    private_dir(&dir);
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dir.join(e.file_name());
        // Sparse: the block files are mostly holes, which the reader
        // must find as holes.
        let ok = Command::new("cp")
            .arg("--sparse=always")
            .arg(e.path())
            .arg(&to)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp {:?}", e.path());
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    dir
}

/// Open and report, as `perflens live` does.
fn read(dir: &Path) -> Result<perflens_report::Report, String> {
    let mut s = LiveSession::open(dir).map_err(|e| e.0)?;
    s.report(&Default::default()).map_err(|e| e.0)
}

/// Runs `f` on a thread with the time limit: a panic or a hang fails
/// the test, naming `case`.
fn guarded<T: Send + 'static>(case: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("case {case}: the reader hung (no answer in {LIMIT:?})")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("case {case}: the reader panicked (see above)")
        }
    }
}

/// Reads `dir` (and lists its parent) under the guard.
fn guarded_read(case: &str, dir: &Path) -> Result<(), String> {
    let dir = dir.to_path_buf();
    guarded(case, move || {
        let parent = dir.parent().unwrap().to_path_buf();
        let listed = perflens_live::list(&parent);
        let r = read(&dir).map(|_| ());
        // `list` leaves out exactly the entries that do not open.
        let opens = LiveSession::open(&dir).is_ok();
        assert_eq!(listed.len(), usize::from(opens), "list agrees with open");
        r
    })
}

/// What a corrupted copy must give.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// An error whose message contains one of these.
    Err(&'static [&'static str]),
    /// A report.
    Ok,
    /// Either, as long as an error names the problem with one of these.
    Either(&'static [&'static str]),
}

fn check(case: &str, dir: &Path, expect: Expect) {
    let r = guarded_read(case, dir);
    match &r {
        Ok(()) => eprintln!("{case}: a report"),
        Err(e) => eprintln!("{case}: {e}"),
    }
    let words = match (expect, &r) {
        (Expect::Ok, Ok(())) | (Expect::Either(_), Ok(())) => return,
        (Expect::Ok, Err(e)) => panic!("case {case}: expected a report, got error: {e}"),
        (Expect::Err(_), Ok(())) => panic!("case {case}: accepted, expected an error"),
        (Expect::Err(w) | Expect::Either(w), Err(_)) => w,
    };
    let e = r.unwrap_err();
    assert!(!e.contains('\n'), "case {case}: a multi-line error: {e}");
    assert!(
        words.iter().any(|w| e.contains(w)),
        "case {case}: error {e:?} names none of {words:?}"
    );
}

fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at as u64).unwrap();
}

fn read_at<const N: usize>(path: &Path, at: usize) -> [u8; N] {
    let f = std::fs::File::open(path).unwrap();
    let mut b = [0; N];
    f.read_exact_at(&mut b, at as u64).unwrap();
    b
}

/// The block files of a session directory, by name.
fn blocks(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with('b') && n[1..].bytes().all(|c| c.is_ascii_digit())
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no block files in {dir:?}");
    v
}

/// The block with the most nodes (a worker's).
fn busiest_block(dir: &Path) -> PathBuf {
    blocks(dir)
        .into_iter()
        .max_by_key(|b| u32::from_le_bytes(read_at(b, offset_of!(Header, node_count))))
        .unwrap()
}

/// The records of the names file: (offset, kind, payload length).
fn records(dir: &Path) -> Vec<(usize, u8, usize)> {
    let bytes = std::fs::read(dir.join("names")).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at + REC_HEAD <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        out.push((at, bytes[at], len));
        at += REC_HEAD + len;
    }
    out
}

/// The offset of the `n`th record of `kind`.
fn record(dir: &Path, kind: u8, n: usize) -> usize {
    records(dir)
        .into_iter()
        .filter(|r| r.1 == kind)
        .nth(n)
        .unwrap_or_else(|| panic!("no record {n} of kind {kind}"))
        .0
}

fn u32le(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

fn u64le(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

type Corrupt = fn(&Path);

const ERR_SIZES: &[&str] = &["inconsistent", "out of range", "truncated", "corrupt"];

/// The table of corruptions: name, what to do to the copy, what the
/// reader must say.
fn cases() -> Vec<(&'static str, Corrupt, Expect)> {
    fn sh(field: usize, bytes: &[u8], dir: &Path) {
        patch(&dir.join("session"), field, bytes);
    }
    fn blk(field: usize, bytes: &[u8], dir: &Path) {
        patch(&busiest_block(dir), field, bytes);
    }
    vec![
        // -- the session header
        (
            "session wrong magic",
            |d| sh(0, b"NOTLIVE!", d),
            Expect::Err(&["wrong magic"]),
        ),
        (
            "session format version",
            |d| sh(offset_of!(SessionHeader, version), &u32le(3), d),
            Expect::Err(&["session written by format v3; this reader reads v2"]),
        ),
        (
            "session header size",
            |d| sh(offset_of!(SessionHeader, header_size), &u32le(64), d),
            Expect::Err(&["session header of 64 bytes; format v2 has"]),
        ),
        (
            "session block layout version",
            |d| {
                let v = LAYOUT_VERSION - 1;
                sh(offset_of!(SessionHeader, block_layout), &u32le(v), d)
            },
            Expect::Err(&["written by layout v6; this reader reads v7"]),
        ),
        (
            "session file short",
            |d| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("session"))
                    .unwrap();
                f.set_len(SESSION_FILE_BYTES as u64 - 1).unwrap();
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "session file empty",
            |d| {
                std::fs::write(d.join("session"), b"").unwrap();
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "session names_len past the names file",
            |d| {
                let len = std::fs::metadata(d.join("names")).unwrap().len();
                sh(offset_of!(SessionHeader, names_len), &u64le(len + 1000), d)
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "session names_len u64::MAX",
            |d| sh(offset_of!(SessionHeader, names_len), &u64le(u64::MAX), d),
            Expect::Err(&["truncated"]),
        ),
        (
            "session names_len 1 TiB",
            |d| sh(offset_of!(SessionHeader, names_len), &u64le(1 << 40), d),
            Expect::Err(&["truncated"]),
        ),
        (
            "session names_len zero",
            |d| sh(offset_of!(SessionHeader, names_len), &u64le(0), d),
            // No paths: the nodes name paths that are not there.
            Expect::Either(&["corrupt"]),
        ),
        (
            "session names_len mid-record",
            |d| {
                let (at, _, _) = records(d)[3];
                sh(
                    offset_of!(SessionHeader, names_len),
                    &u64le(at as u64 + 2),
                    d,
                )
            },
            // The writer commits whole records.
            Expect::Err(&["cut short by the committed length (corrupt)"]),
        ),
        (
            "session program_len huge",
            |d| sh(offset_of!(SessionHeader, program_len), &u32le(u32::MAX), d),
            Expect::Ok,
        ),
        (
            "session garbage mode, clock, state, sample_every",
            |d| {
                for f in [
                    offset_of!(SessionHeader, mode),
                    offset_of!(SessionHeader, clock),
                    offset_of!(SessionHeader, state),
                    offset_of!(SessionHeader, sample_every),
                    offset_of!(SessionHeader, path_capacity),
                    offset_of!(SessionHeader, cpu_hz),
                ] {
                    sh(f, &u32le(0xdead_beef), d);
                }
            },
            Expect::Ok,
        ),
        (
            "session finished with ns_per_tick f64::MAX",
            |d| {
                sh(offset_of!(SessionHeader, state), &u32le(STATE_FINISHED), d);
                let bits = f64::MAX.to_bits();
                sh(offset_of!(SessionHeader, ns_per_tick), &u64le(bits), d)
            },
            Expect::Either(&["corrupt"]),
        ),
        (
            "session finished with ns_per_tick NaN and u64::MAX figures",
            |d| {
                sh(offset_of!(SessionHeader, state), &u32le(STATE_FINISHED), d);
                for f in [
                    offset_of!(SessionHeader, ns_per_tick),
                    offset_of!(SessionHeader, elapsed_ns),
                    offset_of!(SessionHeader, overflow_paths),
                    offset_of!(SessionHeader, unrecorded_calls),
                    offset_of!(SessionHeader, alloc_live_bytes),
                    offset_of!(SessionHeader, alloc_peak_bytes),
                    offset_of!(SessionHeader, outside_samples),
                    offset_of!(SessionHeader, outside_cpu_ns),
                ] {
                    sh(f, &u64le(u64::MAX), d);
                }
            },
            Expect::Either(&["corrupt"]),
        ),
        (
            "session running, anchors garbage",
            |d| {
                sh(offset_of!(SessionHeader, state), &u32le(1), d);
                sh(offset_of!(SessionHeader, clock), &u32le(0), d);
                sh(offset_of!(SessionHeader, anchor_tsc), &u64le(u64::MAX), d);
                sh(
                    offset_of!(SessionHeader, anchor_mono_ns),
                    &u64le(u64::MAX),
                    d,
                );
                sh(offset_of!(SessionHeader, pid), &u32le(u32::MAX), d);
                sh(
                    offset_of!(SessionHeader, start_unix_ns),
                    &u64le(u64::MAX),
                    d,
                );
            },
            Expect::Ok,
        ),
        // -- the names file
        (
            "names shorter than committed",
            |d| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("names"))
                    .unwrap();
                let len = f.metadata().unwrap().len();
                f.set_len(len / 2).unwrap();
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "names empty",
            |d| std::fs::write(d.join("names"), b"").unwrap(),
            Expect::Err(&["truncated"]),
        ),
        (
            "names record length u32::MAX",
            |d| patch(&d.join("names"), 1, &u32le(u32::MAX)),
            Expect::Err(&["corrupt"]),
        ),
        (
            "names record length past the end",
            |d| {
                let (at, _, _) = records(d)[2];
                patch(&d.join("names"), at + 1, &u32le(100_000))
            },
            Expect::Err(&["of 100000 bytes runs past the committed length (corrupt)"]),
        ),
        (
            "names record length zero",
            |d| {
                let at = record(d, REC_PATH, 1);
                patch(&d.join("names"), at + 1, &u32le(0))
            },
            Expect::Err(&["too short"]),
        ),
        (
            "names file of 64 GiB (sparse), all committed",
            |d| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("names"))
                    .unwrap();
                f.set_len(64 << 30).unwrap();
                sh(offset_of!(SessionHeader, names_len), &u64le(64 << 30), d)
            },
            // Read in chunks: the zeros after the real records are
            // records of kind 0, refused at the first one.
            Expect::Err(&["unknown record kind 0"]),
        ),
        (
            "names file of 10 MB of extra records, read across chunks",
            |d| {
                let names = d.join("names");
                let mut bytes = std::fs::read(&names).unwrap();
                let mut push = |len: usize| {
                    bytes.push(REC_EXTRA);
                    bytes.extend_from_slice(&u32le(len as u32));
                    bytes.extend_from_slice(&u32le(1000));
                    bytes.extend(std::iter::repeat_n(b'x', len - 4));
                };
                for _ in 0..9000 {
                    push(997);
                }
                // Records of the largest size, across chunk boundaries.
                for _ in 0..3 {
                    push(1 << 20);
                }
                let len = bytes.len() as u64;
                std::fs::write(&names, bytes).unwrap();
                sh(offset_of!(SessionHeader, names_len), &u64le(len), d)
            },
            Expect::Ok,
        ),
        (
            "names unknown record kind",
            |d| patch(&d.join("names"), 0, &[200]),
            Expect::Err(&["unknown record kind"]),
        ),
        (
            "names callsite of unknown kind",
            |d| {
                let at = record(d, REC_CALLSITE, 0);
                patch(&d.join("names"), at + REC_HEAD + 4, &[250])
            },
            Expect::Err(&["unknown callsite kind"]),
        ),
        (
            "names callsite name not UTF-8",
            |d| {
                let at = record(d, REC_CALLSITE, 0);
                patch(&d.join("names"), at + REC_HEAD + 5, &[0xff, 0xfe, 0x80])
            },
            Expect::Ok,
        ),
        (
            "names path parent is itself",
            |d| {
                let at = record(d, REC_PATH, 2);
                let index = u32::from_le_bytes(read_at(&d.join("names"), at + REC_HEAD));
                patch(&d.join("names"), at + REC_HEAD + 4, &u32le(index))
            },
            Expect::Err(&["not an earlier path (corrupt)"]),
        ),
        (
            "names path parent forward",
            |d| {
                let at = record(d, REC_PATH, 1);
                let index = u32::from_le_bytes(read_at(&d.join("names"), at + REC_HEAD));
                patch(&d.join("names"), at + REC_HEAD + 4, &u32le(index + 1))
            },
            Expect::Err(&["not an earlier path (corrupt)"]),
        ),
        (
            "names path parent u32::MAX",
            |d| {
                let at = record(d, REC_PATH, 1);
                patch(&d.join("names"), at + REC_HEAD + 4, &u32le(u32::MAX))
            },
            Expect::Err(&["corrupt"]),
        ),
        (
            "names path cycle of two",
            |d| {
                // Paths 1 and 2 point at each other.
                let names = d.join("names");
                for (n, parent) in [(1, 2u32), (2, 1)] {
                    let at = (0..)
                        .map(|i| record(d, REC_PATH, i))
                        .find(|&at| u32::from_le_bytes(read_at(&names, at + REC_HEAD)) == n)
                        .unwrap();
                    patch(&names, at + REC_HEAD + 4, &u32le(parent));
                }
            },
            Expect::Err(&["not an earlier path (corrupt)"]),
        ),
        (
            "names path callsite out of range",
            |d| {
                let at = record(d, REC_PATH, 1);
                patch(&d.join("names"), at + REC_HEAD + 8, &u32le(1_000_000))
            },
            Expect::Err(&["names callsite 1000000 of"]),
        ),
        (
            "names path index huge (a gap)",
            |d| {
                let at = record(d, REC_PATH, 1);
                patch(&d.join("names"), at + REC_HEAD, &u32le(u32::MAX))
            },
            Expect::Either(&["corrupt"]),
        ),
        (
            "names thread file ..",
            |d| {
                let at = record(d, REC_THREAD, 0);
                let names = d.join("names");
                let (_, _, len) = records(d).into_iter().find(|r| r.0 == at).unwrap();
                let name_len = u16::from_le_bytes(read_at(&names, at + REC_HEAD + 12));
                let file_at = at + REC_HEAD + 14 + name_len as usize;
                let file_len = len - 14 - name_len as usize;
                let mut f = b"..".to_vec();
                f.resize(file_len, b'/');
                patch(&names, file_at, &f)
            },
            Expect::Err(&["refused"]),
        ),
        (
            "names thread record naming a missing block file",
            |d| {
                // A thread record naming a file that is not there.
                let at = record(d, REC_THREAD, 0);
                let names = d.join("names");
                let (_, _, len) = records(d).into_iter().find(|r| r.0 == at).unwrap();
                let name_len = u16::from_le_bytes(read_at(&names, at + REC_HEAD + 12));
                let file_at = at + REC_HEAD + 14 + name_len as usize;
                let file_len = len - 14 - name_len as usize;
                assert!(file_len == 2, "block files are b<n>");
                // "b0" -> a file that is not there.
                patch(&names, file_at, b"zz")
            },
            Expect::Err(&["cannot open"]),
        ),
        (
            "names thread name_len past the record",
            |d| {
                let at = record(d, REC_THREAD, 0);
                patch(
                    &d.join("names"),
                    at + REC_HEAD + 12,
                    &u16::MAX.to_le_bytes(),
                )
            },
            Expect::Err(&["too short"]),
        ),
        // -- a block
        (
            "block wrong magic",
            |d| blk(offset_of!(Header, magic), &u64le(!MAGIC), d),
            Expect::Err(&["not a perflens block (wrong magic)"]),
        ),
        (
            "block layout version",
            |d| {
                blk(
                    offset_of!(Header, layout_version),
                    &u32le(LAYOUT_VERSION - 1),
                    d,
                )
            },
            Expect::Err(&["written by layout v6; this reader reads v7"]),
        ),
        (
            "block header_size",
            |d| blk(offset_of!(Header, header_size), &u32le(8), d),
            Expect::Err(&["inconsistent"]),
        ),
        (
            "block size past the end",
            |d| blk(offset_of!(Header, size), &u64le(u64::MAX), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block off_nodes past the end",
            |d| blk(offset_of!(Header, off_nodes), &u64le(1 << 40), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block off_hist past the end",
            |d| blk(offset_of!(Header, off_hist), &u64le(u64::MAX - 4095), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block off_frames and off_table zero",
            |d| {
                blk(offset_of!(Header, off_frames), &u64le(0), d);
                blk(offset_of!(Header, off_table), &u64le(0), d)
            },
            Expect::Err(ERR_SIZES),
        ),
        (
            "block node_cap u32::MAX",
            |d| blk(offset_of!(Header, node_cap), &u32le(u32::MAX), d),
            Expect::Err(&["out of range"]),
        ),
        (
            "block node_cap 0",
            |d| blk(offset_of!(Header, node_cap), &u32le(0), d),
            Expect::Err(&["out of range"]),
        ),
        (
            "block node_cap 2^30 - 1 (table capacity overflows u32)",
            |d| blk(offset_of!(Header, node_cap), &u32le((1 << 30) - 1), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block node_cap 2^29 + 1",
            |d| blk(offset_of!(Header, node_cap), &u32le((1 << 29) + 1), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block node_cap doubled, sizes to match, file too short",
            |d| {
                // A consistent header for twice the nodes, in the file of
                // the smaller block: only the file size says no.
                let b = busiest_block(d);
                let cap = u32::from_le_bytes(read_at(&b, offset_of!(Header, node_cap)));
                patch(&b, offset_of!(Header, node_cap), &u32le(cap * 2));
            },
            Expect::Err(ERR_SIZES),
        ),
        (
            "block stack_cap u32::MAX",
            |d| blk(offset_of!(Header, stack_cap), &u32le(u32::MAX), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block table_mask",
            |d| blk(offset_of!(Header, table_mask), &u32le(u32::MAX), d),
            Expect::Err(ERR_SIZES),
        ),
        (
            "block node_count past node_cap",
            |d| blk(offset_of!(Header, node_count), &u32le(u32::MAX), d),
            Expect::Ok,
        ),
        (
            "block pending entries past the histograms",
            |d| {
                blk(offset_of!(Header, pending), &u64le(u64::MAX), d);
                blk(offset_of!(Header, pending) + 8, &u64le(u64::MAX - 1), d)
            },
            Expect::Ok,
        ),
        (
            "block of another epoch",
            |d| blk(offset_of!(Header, epoch), &u32le(0x7777_7777), d),
            Expect::Ok,
        ),
        (
            "block file shorter than its header says",
            |d| {
                let b = busiest_block(d);
                let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
                let len = f.metadata().unwrap().len();
                f.set_len(len - 4096).unwrap();
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "block file of one page",
            |d| {
                let b = busiest_block(d);
                let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
                f.set_len(4096).unwrap();
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "block file of 100 bytes",
            |d| {
                let b = busiest_block(d);
                let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
                f.set_len(100).unwrap();
            },
            Expect::Err(&["truncated"]),
        ),
        (
            "block file missing",
            |d| std::fs::remove_file(busiest_block(d)).unwrap(),
            Expect::Err(&["cannot open"]),
        ),
        (
            "block file is a directory",
            |d| {
                let b = busiest_block(d);
                std::fs::remove_file(&b).unwrap();
                private_dir(&b);
            },
            Expect::Err(&["not a regular file", "cannot map", "cannot open"]),
        ),
        (
            "block node path out of range",
            |d| {
                let b = busiest_block(d);
                let off = u64::from_le_bytes(read_at(&b, offset_of!(Header, off_nodes)));
                // Node 2, the first measured one (0: overflow, 1: root).
                patch(&b, off as usize + 2 * 128, &u32le(0x7fff_fff0))
            },
            Expect::Err(&["has a node of path 2147483632 of", "(corrupt)"]),
        ),
        (
            "block node path out of range, nested bit",
            |d| {
                let b = busiest_block(d);
                let off = u64::from_le_bytes(read_at(&b, offset_of!(Header, off_nodes)));
                patch(&b, off as usize + 2 * 128, &u32le(u32::MAX))
            },
            Expect::Err(&["(corrupt)"]),
        ),
        (
            "block node counters u64::MAX",
            |d| {
                let b = busiest_block(d);
                let off = u64::from_le_bytes(read_at(&b, offset_of!(Header, off_nodes)));
                for node in 0..4 {
                    // Every counter after the path and countdown.
                    let at = off as usize + node * 128 + 8;
                    patch(&b, at, &[0xff; 120]);
                }
            },
            Expect::Either(&["corrupt"]),
        ),
        (
            // Found by the live_reader fuzz target: each figure's sum
            // fits, but the report adds calls and cancelled calls.
            "block node calls and cancelled calls 2^63 each",
            |d| {
                let b = busiest_block(d);
                let off = u64::from_le_bytes(read_at(&b, offset_of!(Header, off_nodes)));
                // Node 2: `calls` at byte 8, `cancelled` at byte 48.
                let node = off as usize + 2 * 128;
                patch(&b, node + 8, &u64le(1 << 63));
                patch(&b, node + 48, &u64le(1 << 63));
            },
            Expect::Err(&["add up past 2^64"]),
        ),
        (
            "block histogram counts u64::MAX",
            |d| {
                let b = busiest_block(d);
                let off = u64::from_le_bytes(read_at(&b, offset_of!(Header, off_hist)));
                // The first few nodes' histograms, all buckets.
                patch(&b, off as usize, &vec![0xff; 4 * 3 * 8 * 300]);
            },
            Expect::Either(&["corrupt"]),
        ),
        (
            // Found by the live_reader fuzz target: the running session's
            // live bytes, summed over the threads, overflowed an i64.
            "running session, every block's live bytes near i64::MAX",
            |d| {
                sh(offset_of!(SessionHeader, state), &u32le(1), d);
                sh(offset_of!(SessionHeader, alloc_installed), &u32le(1), d);
                // `ThreadAlloc::live`, after `allocated` and `allocs`.
                let live = offset_of!(Header, alloc) + 16;
                for b in blocks(d) {
                    patch(&b, live, &(i64::MAX - 5).to_le_bytes());
                }
            },
            Expect::Either(&["corrupt"]),
        ),
        (
            "block allocation marks and totals u64::MAX",
            |d| {
                blk(offset_of!(Header, alloc), &[0xff; 64], d);
                blk(offset_of!(Header, mark), &[0x00; 64], d)
            },
            Expect::Either(&["corrupt"]),
        ),
    ]
}

#[test]
fn corrupted_copies_give_errors_that_name_the_problem() {
    let mut failures = Vec::new();
    for (i, (name, corrupt, expect)) in cases().into_iter().enumerate() {
        let dir = copy(&format!("table-{i}"));
        corrupt(&dir);
        let r = std::panic::catch_unwind(|| check(name, &dir, expect));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(msg);
        } else {
            let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// xorshift64*: the tests' random numbers, reproducible by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Which file of a session: "session", "names" or "block".
fn file_of(dir: &Path, which: &str) -> PathBuf {
    match which {
        "block" => busiest_block(dir),
        f => dir.join(f),
    }
}

#[test]
fn random_files_in_place_of_each_file() {
    for which in ["session", "names", "block"] {
        for seed in 1..=6u64 {
            let case = format!("random {which}, seed {seed}");
            let dir = copy(&format!("random-{which}-{seed}"));
            let path = file_of(&dir, which);
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            // Sizes around the ones that matter: a page, the real size.
            let real = std::fs::metadata(&path).unwrap().len() as usize;
            let len = match seed % 3 {
                0 => rng.next() as usize % 8192,
                1 => 4096,
                _ => real.min(1 << 20),
            };
            std::fs::write(&path, rng.bytes(len)).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            let r = guarded_read(&case, &dir);
            // Random bytes never have the magic; in the names file they
            // make an unknown record, a record too long, or one cut short.
            match which {
                "names" => {}
                _ => {
                    let e = r.expect_err(&case);
                    assert!(
                        e.contains("wrong magic") || e.contains("truncated"),
                        "{case}: {e}"
                    );
                }
            }
            let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        }
    }
}

#[test]
fn random_bytes_over_parts_of_valid_files() {
    // The headers stay valid, so the reader gets past the magic: random
    // bytes over the rest, and random single-byte changes anywhere.
    for which in ["session", "names", "block"] {
        for seed in 1..=8u64 {
            let case = format!("random bytes in {which}, seed {seed}");
            let dir = copy(&format!("spray-{which}-{seed}"));
            let path = file_of(&dir, which);
            let len = std::fs::metadata(&path).unwrap().len() as usize;
            let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) + 7);
            let limit = match which {
                // The header's first page and the nodes: past them are
                // the histograms.
                "block" => {
                    u64::from_le_bytes(read_at(&path, offset_of!(Header, off_hist))) as usize
                }
                _ => len,
            };
            let start = if which == "session" { 16 } else { 0 };
            for _ in 0..(1 + seed * 4) {
                let at = start + rng.next() as usize % (limit - start);
                let n = 1 + rng.next() as usize % 16;
                let n = n.min(len - at);
                patch(&path, at, &rng.bytes(n));
            }
            let _ = guarded_read(&case, &dir);
            let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        }
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Any names file contents, committed in full.
        #[test]
        fn any_names_file(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let dir = copy("prop-names");
            std::fs::write(dir.join("names"), &bytes).unwrap();
            std::fs::set_permissions(dir.join("names"), std::fs::Permissions::from_mode(0o600)).unwrap();
            patch(&dir.join("session"), offset_of!(SessionHeader, names_len), &u64le(bytes.len() as u64));
            let _ = guarded_read("proptest names", &dir);
        }

        /// Any values in the block header's fields (the first 128 bytes
        /// after the magic and version).
        #[test]
        fn any_block_header(bytes in proptest::collection::vec(any::<u8>(), 116), keep_sizes in any::<bool>()) {
            let dir = copy("prop-block");
            let b = busiest_block(&dir);
            let fields = if keep_sizes { offset_of!(Header, tid) } else { 12 };
            patch(&b, fields, &bytes[..116 - (fields - 12)]);
            let _ = guarded_read("proptest block header", &dir);
        }

        /// Any bytes in the session header after the magic, with the
        /// versions kept or not.
        #[test]
        fn any_session_header(bytes in proptest::collection::vec(any::<u8>(), 0..512), keep_versions in any::<bool>()) {
            let dir = copy("prop-session");
            let from = if keep_versions { offset_of!(SessionHeader, pid) } else { 8 };
            patch(&dir.join("session"), from, &bytes);
            let _ = guarded_read("proptest session header", &dir);
        }
    }
}

/// A block file that shrinks after the reader mapped it: the next read
/// is an error saying so, and the process lives (the SIGBUS guard).
#[test]
fn a_block_truncated_after_mapping_is_an_error_not_a_crash() {
    let dir = copy("truncate-after-map");
    let r = guarded("truncate after map", move || {
        let mut s = LiveSession::open(&dir).expect("opens");
        s.report(&Default::default()).expect("reads before");
        let mut out = Vec::new();
        for (i, len) in [8192u64, 4096, 100, 0].into_iter().enumerate() {
            let b = &blocks(&dir)[i % blocks(&dir).len()];
            let f = std::fs::OpenOptions::new().write(true).open(b).unwrap();
            f.set_len(len).unwrap();
            out.push((len, s.report(&Default::default()).map(|_| ())));
        }
        out
    });
    for (len, r) in r {
        let e = r.expect_err(&format!("a block cut to {len} bytes reads"));
        assert!(e.0.contains("truncated"), "cut to {len}: {e}");
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn files_open_to_others_are_refused() {
    for which in ["session", "names", "block"] {
        for mode in [0o644, 0o640, 0o604, 0o660, 0o610] {
            let case = format!("{which} mode {mode:o}");
            let dir = copy(&format!("mode-{which}-{mode:o}"));
            chmod(&file_of(&dir, which), mode);
            check(&case, &dir, Expect::Err(&["refused"]));
            let _ = std::fs::remove_dir_all(dir.parent().unwrap());
        }
    }
    // Stricter than 0600 is fine (root reads a 0400 file all the same;
    // other users get "cannot open", which is an error too).
    let dir = copy("mode-block-400");
    chmod(&busiest_block(&dir), 0o400);
    let _ = guarded_read("block mode 400", &dir);
}

#[test]
fn a_directory_open_to_others_is_refused() {
    for mode in [0o755, 0o750, 0o705, 0o711, 0o770] {
        let case = format!("directory mode {mode:o}");
        let dir = copy(&format!("dirmode-{mode:o}"));
        chmod(&dir, mode);
        check(&case, &dir, Expect::Err(&["refused"]));
        // `list` refuses a root open to others as a whole.
        chmod(&dir, 0o700);
        chmod(dir.parent().unwrap(), mode);
        let listed = guarded(&case, {
            let p = dir.parent().unwrap().to_path_buf();
            move || perflens_live::list(&p).len()
        });
        assert_eq!(listed, 0, "{case}: list read a root open to others");
        chmod(dir.parent().unwrap(), 0o700);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}

/// Files and directories of another user are refused. Only root can
/// give a file away: as another user only the mode cases above run.
#[test]
fn files_of_another_user_are_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: cannot chown a file to another user; only the mode cases ran");
        return;
    }
    let nobody = 65534;
    for which in ["dir", "session", "names", "block"] {
        let case = format!("{which} owned by uid {nobody}");
        let dir = copy(&format!("owner-{which}"));
        let path = match which {
            "dir" => dir.clone(),
            w => file_of(&dir, w),
        };
        std::os::unix::fs::chown(&path, Some(nobody), None).unwrap();
        check(&case, &dir, Expect::Err(&["belongs to uid 65534"]));
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}

#[test]
fn symlinks_are_refused() {
    // The session directory itself a symlink to a good copy.
    let dir = copy("symlink-dir");
    let parent = scratch().join("cases").join("symlink-dir-link");
    let _ = std::fs::remove_dir_all(&parent);
    private_dir(&parent);
    let link = parent.join("s");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    check(
        "session directory is a symlink",
        &link,
        Expect::Err(&["not a directory; refused"]),
    );
    // Each file a symlink to a good copy of itself (O_NOFOLLOW).
    for which in ["session", "names", "block"] {
        let case = format!("{which} is a symlink");
        let dir = copy(&format!("symlink-{which}"));
        let path = file_of(&dir, which);
        let moved = dir.parent().unwrap().join("real");
        std::fs::rename(&path, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &path).unwrap();
        check(&case, &dir, Expect::Err(&["cannot open", "refused"]));
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}

/// Each file a FIFO: opening one must not wait for a writer (the reader
/// opens with `O_NONBLOCK`), and it is refused as not a regular file.
#[test]
fn fifos_are_refused_without_waiting() {
    for which in ["session", "names", "block"] {
        let case = format!("{which} is a FIFO");
        let dir = copy(&format!("fifo-{which}"));
        let path = file_of(&dir, which);
        std::fs::remove_file(&path).unwrap();
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        check(&case, &dir, Expect::Err(&["not a regular file; refused"]));
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}

#[test]
fn a_hard_link_to_another_file_is_read_as_what_it_is() {
    // Hard links pass O_NOFOLLOW: a block file linked to the session
    // header is read, and refused by its magic.
    let dir = copy("hardlink");
    let b = busiest_block(&dir);
    std::fs::remove_file(&b).unwrap();
    std::fs::hard_link(dir.join("session"), &b).unwrap();
    check(
        "block is a hard link to the session file",
        &dir,
        Expect::Err(&["wrong magic"]),
    );
}

/// A block whose header is rewritten while the reader reads it (the file
/// is writable by its owner, who may race the reader): every read is a
/// report or an error, and the reader only ever uses the values it
/// checked (a crash here kills the test binary).
#[test]
fn a_block_header_rewritten_during_reads() {
    let dir = copy("rewritten-during-reads");
    let b = busiest_block(&dir);
    let fields = [
        (offset_of!(Header, node_cap), 4),
        (offset_of!(Header, off_nodes), 8),
        (offset_of!(Header, off_hist), 8),
        (offset_of!(Header, stack_cap), 4),
    ];
    let good: Vec<Vec<u8>> = fields
        .iter()
        .map(|&(at, n)| {
            let f = std::fs::File::open(&b).unwrap();
            let mut v = vec![0; n];
            f.read_exact_at(&mut v, at as u64).unwrap();
            v
        })
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (b, stop) = (b.clone(), stop.clone());
        std::thread::spawn(move || {
            let f = std::fs::OpenOptions::new().write(true).open(&b).unwrap();
            let mut i = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (at, n) = fields[i % fields.len()];
                f.write_all_at(&[0x7f; 8][..n], at as u64).unwrap();
                f.write_all_at(&good[i % fields.len()], at as u64).unwrap();
                i += 1;
            }
        })
    };
    let (mut ok, mut err) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let d = dir.clone();
        match guarded("header rewritten during reads", move || read(&d)) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    eprintln!("rewritten during reads: {ok} reports, {err} errors");
    assert!(ok + err > 0);
}
