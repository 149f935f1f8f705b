//! The names file of a live session: callsites, paths, threads and extra
//! records (`perflens_format::names`), appended by the writer, parsed
//! here incrementally: each refresh reads only the bytes committed since
//! the last one.

use perflens_format::names::{REC_AWAIT, REC_CALLSITE, REC_EXTRA, REC_HEAD, REC_PATH, REC_THREAD};
use perflens_format::{AwaitSiteInfo, CallsiteInfo, PathInfo};
use std::collections::BTreeMap;

/// A thread's block file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadRecord {
    pub index: u32,
    pub tid: u64,
    pub name: Option<String>,
    /// File name in the session directory.
    pub file: String,
}

/// Everything parsed so far.
#[derive(Clone, Debug, Default)]
pub struct Names {
    callsites: BTreeMap<u32, CallsiteInfo>,
    paths: BTreeMap<u32, PathInfo>,
    /// Where each await site is, by callsite id.
    awaits: BTreeMap<u32, AwaitSiteInfo>,
    pub threads: Vec<ThreadRecord>,
    /// Extra records by tag (the last one of each tag).
    pub extras: BTreeMap<u32, Vec<u8>>,
    /// Bytes of the file parsed (always a whole number of records).
    pub parsed: u64,
    /// The callsites and paths `0..n` for the longest run without a gap
    /// so far, kept as they grow: made from the maps at every read, they
    /// were a tenth of a large session's refresh.
    callsite_run: Vec<CallsiteInfo>,
    path_run: Vec<PathInfo>,
    /// How many of `path_run` [`Names::paths`] checked.
    paths_checked: usize,
}

/// At most this many bytes in one record: names are short.
const MAX_RECORD: usize = 1 << 20;

/// The reader reads the names file this many bytes at a time at most:
/// room for a record of [`MAX_RECORD`] bytes, and some.
pub const READ_CHUNK: usize = 4 * MAX_RECORD;

impl Names {
    /// Parses the records in `bytes`, the file's committed contents from
    /// [`Names::parsed`] on (`last`: up to the committed length; else a
    /// chunk of them, whose last record may go on in the next chunk).
    /// The writer commits whole records only, so a record cut short by
    /// the committed length is an error, as are an unknown kind and a
    /// malformed payload: the file is not what this reader reads.
    /// Records parsed before an error stay parsed: a later read starts at
    /// the failing record again (and fails again), and never applies a
    /// record twice.
    pub fn parse(&mut self, bytes: &[u8], last: bool) -> Result<(), String> {
        let mut done = 0usize;
        let r = self.parse_from(bytes, last, &mut done);
        self.parsed += done as u64;
        extend_run(&self.callsites, &mut self.callsite_run);
        extend_run(&self.paths, &mut self.path_run);
        r
    }

    /// [`Names::parse`], counting in `done` the bytes of the records
    /// parsed.
    fn parse_from(&mut self, bytes: &[u8], last: bool, done: &mut usize) -> Result<(), String> {
        while *done < bytes.len() {
            let at = *done;
            if bytes.len() - at < REC_HEAD {
                if !last {
                    break;
                }
                return Err(format!(
                    "names record at byte {}: cut short by the committed length (corrupt)",
                    self.parsed + at as u64
                ));
            }
            let kind = bytes[at];
            let len = u32::from_le_bytes(bytes[at + 1..at + REC_HEAD].try_into().unwrap_or([0; 4]))
                as usize;
            if len > MAX_RECORD {
                return Err(format!("names record of {len} bytes: corrupt"));
            }
            let Some(payload) = bytes.get(at + REC_HEAD..at + REC_HEAD + len) else {
                if !last {
                    break;
                }
                return Err(format!(
                    "names record at byte {} of {len} bytes runs past the committed length (corrupt)",
                    self.parsed + at as u64
                ));
            };
            self.record(kind, payload)
                .map_err(|e| format!("names record at byte {}: {e}", self.parsed + at as u64))?;
            *done = at + REC_HEAD + len;
        }
        Ok(())
    }

    fn record(&mut self, kind: u8, p: &[u8]) -> Result<(), String> {
        let u32_at = |i: usize| -> Result<u32, String> {
            p.get(i..i + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
                .ok_or_else(|| "too short".to_string())
        };
        let u64_at = |i: usize| -> Result<u64, String> {
            p.get(i..i + 8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                .ok_or_else(|| "too short".to_string())
        };
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match kind {
            REC_CALLSITE => {
                let id = u32_at(0)?;
                let code = *p.get(4).ok_or("too short")?;
                let kind = perflens_format::names::kind_from_code(code)
                    .ok_or_else(|| format!("unknown callsite kind {code}"))?;
                self.callsites.entry(id).or_insert(CallsiteInfo {
                    name: text(&p[5..]),
                    kind,
                });
            }
            REC_PATH => {
                let index = u32_at(0)?;
                let info = PathInfo {
                    parent: u32_at(4)?,
                    callsite: u32_at(8)?,
                    id: u64_at(12)?,
                };
                self.paths.entry(index).or_insert(info);
            }
            REC_THREAD => {
                let index = u32_at(0)?;
                let tid = u64_at(4)?;
                let name_len = p
                    .get(12..14)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                    .ok_or("too short")?;
                let name = p.get(14..14 + name_len).ok_or("too short")?;
                let file = text(&p[14 + name_len..]);
                let plain = !file.is_empty()
                    && file
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
                    && !file.starts_with('.');
                if !plain {
                    return Err(format!("block file name {file:?} refused"));
                }
                self.threads.push(ThreadRecord {
                    index,
                    tid,
                    name: (!name.is_empty()).then(|| text(name)),
                    file,
                });
            }
            REC_AWAIT => {
                let callsite = u32_at(0)?;
                let line = u32_at(4)?;
                let column = u32_at(8)?;
                let file_len = p
                    .get(12..14)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                    .ok_or("too short")?;
                let file = p.get(14..14 + file_len).ok_or("too short")?;
                let expr = &p[14 + file_len..];
                self.awaits.entry(callsite).or_insert(AwaitSiteInfo {
                    callsite,
                    file: text(file),
                    line,
                    column,
                    expr: text(expr),
                });
            }
            REC_EXTRA => {
                let tag = u32_at(0)?;
                self.extras.insert(tag, p[4..].to_vec());
            }
            other => return Err(format!("unknown record kind {other}")),
        }
        Ok(())
    }

    /// Where the await sites parsed so far are, by callsite id.
    pub fn await_sites(&self) -> Vec<AwaitSiteInfo> {
        self.awaits.values().cloned().collect()
    }

    /// The callsites `0..n` for the longest run without a gap.
    pub fn callsites(&self) -> Vec<CallsiteInfo> {
        self.callsite_run.clone()
    }

    /// The paths `0..n` for the longest run without a gap, each checked:
    /// its parent comes before it (so parents never form a cycle) and
    /// its callsite is one of `callsites`. The first path that fails
    /// ends the list with an error.
    /// Paths checked once are not checked again: `callsites` only grows.
    pub fn paths(&mut self, callsites: usize) -> Result<Vec<PathInfo>, String> {
        let paths = &self.path_run;
        for (i, p) in paths.iter().enumerate().skip(self.paths_checked) {
            let parent_ok = p.parent < i as u32 || (i == 0 && p.parent == 0);
            if !parent_ok {
                return Err(format!(
                    "path {i} has parent {}: not an earlier path (corrupt)",
                    p.parent
                ));
            }
            if p.callsite as usize >= callsites {
                return Err(format!(
                    "path {i} names callsite {} of {callsites} (corrupt)",
                    p.callsite
                ));
            }
        }
        self.paths_checked = paths.len();
        Ok(paths.clone())
    }
}

/// Extends `run`, the entries `0..run.len()` of `map`, with the entries
/// of `map` that follow it without a gap.
fn extend_run<T: Clone>(map: &BTreeMap<u32, T>, run: &mut Vec<T>) {
    let Ok(next) = u32::try_from(run.len()) else {
        return;
    };
    for (i, (&k, v)) in (next..).zip(map.range(next..)) {
        if k != i {
            break;
        }
        run.push(v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One record: kind, length, payload.
    fn rec(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut r = vec![kind];
        r.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        r.extend_from_slice(payload);
        r
    }

    fn await_payload(file: &[u8], expr: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(&17u32.to_le_bytes());
        p.extend_from_slice(&(file.len() as u16).to_le_bytes());
        p.extend_from_slice(file);
        p.extend_from_slice(expr);
        p
    }

    #[test]
    fn an_await_record_names_its_site() {
        let mut names = Names::default();
        let bytes = rec(REC_AWAIT, &await_payload(b"src/a.rs", b"db.get(k)"));
        names.parse(&bytes, true).unwrap();
        assert_eq!(
            names.await_sites(),
            [AwaitSiteInfo {
                callsite: 7,
                file: "src/a.rs".into(),
                line: 42,
                column: 17,
                expr: "db.get(k)".into(),
            }]
        );
        assert_eq!(names.parsed, bytes.len() as u64);
    }

    #[test]
    fn an_await_record_cut_short_is_refused() {
        let mut p = await_payload(b"src/a.rs", b"");
        p.truncate(16);
        let mut names = Names::default();
        let e = names.parse(&rec(REC_AWAIT, &p), true).unwrap_err();
        assert!(e.contains("too short"), "{e}");
        assert!(names.await_sites().is_empty());
        let mut names = Names::default();
        let e = names.parse(&rec(REC_AWAIT, &[1, 2, 3]), true).unwrap_err();
        assert!(e.contains("too short"), "{e}");
    }

    #[test]
    fn kind_code_3_is_an_await_site() {
        let mut p = 9u32.to_le_bytes().to_vec();
        p.push(3);
        p.extend_from_slice(b"src/a.rs:42:17");
        let mut names = Names::default();
        names.parse(&rec(REC_CALLSITE, &p), true).unwrap();
        assert_eq!(
            names.callsites.get(&9).map(|c| c.kind),
            Some(perflens_format::CallsiteKind::Await)
        );
    }
}
