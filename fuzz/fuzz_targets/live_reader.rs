//! The live-session reader (issue 12) on arbitrary session directories:
//! `LiveSession::open`, `report` and `list` return a report or an error,
//! never panic, hang or crash.
//!
//! The input is a session directory, written into a private directory
//! under /dev/shm (tmpfs, as real sessions are) before each run:
//!
//! ```text
//! flags: u8            bit 0: the session file is exactly the bytes
//!                      given (else zero-padded to SESSION_FILE_BYTES)
//! session_len: u16, names_len: u16, block_pages: u16  (little-endian)
//! session: [u8; session_len]
//! names: [u8; names_len]
//! then block chunks, to the end: { offset: u32, len: u16, [u8; len] }
//! ```
//!
//! The block file `b0` is `block_pages` pages long (sparse: a real
//! block is mostly holes), with each chunk written at its offset; `b1`
//! to `b7` are hard links to it, so that the thread records of a real
//! session's names file find a block. The seeds in `seeds/live_reader`
//! are real sessions in this format (see `scripts/live-fuzz-seed`), so
//! that mutations start past the magic numbers and versions.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Largest block file: 64 MiB (a default block is about 56 MiB).
const MAX_BLOCK: u64 = 64 << 20;

/// The parent (the root `list` reads) and the session directory.
fn dirs() -> &'static (PathBuf, PathBuf) {
    static DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIRS.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        // Directories of earlier runs whose process is gone.
        for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("perflens-fuzz-live-")
                && !Path::new(&format!("/proc/{pid}")).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let root = base.join(format!("perflens-fuzz-live-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("s");
        for d in [&root, &dir] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        (root, dir)
    })
}

fn create(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap()
}

struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }

    fn u16(&mut self) -> u16 {
        let b = self.take(2);
        u16::from_le_bytes([
            b.first().copied().unwrap_or(0),
            b.get(1).copied().unwrap_or(0),
        ])
    }

    fn u32(&mut self) -> u32 {
        let mut v = [0u8; 4];
        let b = self.take(4);
        v[..b.len()].copy_from_slice(b);
        u32::from_le_bytes(v)
    }
}

/// Writes the session directory of `data`.
fn write_session(dir: &Path, data: &[u8]) {
    for e in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let mut input = Input(data);
    let flags = input.take(1).first().copied().unwrap_or(0);
    let session_len = input.u16() as usize;
    let names_len = input.u16() as usize;
    let block_pages = input.u16() as u64;
    let session = input.take(session_len);
    let names = input.take(names_len);

    let mut f = create(&dir.join("session"));
    f.write_all(session).unwrap();
    if flags & 1 == 0 {
        let len = (perflens_format::session_file::SESSION_FILE_BYTES as u64).max(session.len() as u64);
        f.set_len(len).unwrap();
    }
    create(&dir.join("names")).write_all(names).unwrap();

    let b0 = dir.join("b0");
    let f = create(&b0);
    f.set_len((block_pages * 4096).min(MAX_BLOCK)).unwrap();
    while !input.0.is_empty() {
        let offset = input.u32() as u64;
        let len = input.u16() as usize;
        let bytes = input.take(len);
        if offset + bytes.len() as u64 <= MAX_BLOCK {
            f.write_all_at(bytes, offset).unwrap();
        }
    }
    for i in 1..8 {
        std::fs::hard_link(&b0, dir.join(format!("b{i}"))).unwrap();
    }
}

fuzz_target!(|data: &[u8]| {
    let (root, dir) = dirs();
    write_session(dir, data);
    if let Ok(mut live) = perflens_live::LiveSession::open(dir) {
        let _ = live.info();
        if live.report(&Default::default()).is_ok() {
            // A second read: the incremental names parse and the mapped
            // blocks are reused.
            let _ = live.raw_snapshot(false);
        }
    }
    for s in perflens_live::list(root) {
        assert_eq!(&s.dir, dir, "list found only the one session");
    }
});
