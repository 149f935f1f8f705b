//! A minimal protobuf encoder for `profile.proto` (the pprof format),
//! for the CPU sampler's profiles and the allocation profile.
//!
//! Field numbers follow github.com/google/pprof/proto/profile.proto.

use std::collections::HashMap;

/// Protobuf writer for one message.
#[derive(Default)]
pub struct Msg {
    buf: Vec<u8>,
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Msg {
    fn key(&mut self, field: u32, wire: u8) {
        varint(&mut self.buf, (u64::from(field) << 3) | u64::from(wire));
    }

    /// Varint field (uint64/int64; negative int64 as two's complement).
    /// Zero is skipped (proto3 default).
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        if v != 0 {
            self.key(field, 0);
            varint(&mut self.buf, v);
        }
        self
    }

    /// Varint field of an `int64`.
    pub fn int(&mut self, field: u32, v: i64) -> &mut Self {
        self.uint(field, v as u64)
    }

    /// Varint field of a `bool` (false skipped).
    pub fn bool(&mut self, field: u32, v: bool) -> &mut Self {
        self.uint(field, u64::from(v))
    }

    /// Length-delimited bytes (always written, even if empty, so repeated
    /// string entries keep their index).
    pub fn bytes(&mut self, field: u32, b: &[u8]) -> &mut Self {
        self.key(field, 2);
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    /// An embedded message.
    pub fn msg(&mut self, field: u32, m: &Msg) -> &mut Self {
        self.bytes(field, &m.buf)
    }

    /// Packed repeated varints.
    pub fn packed(&mut self, field: u32, vs: impl IntoIterator<Item = u64>) -> &mut Self {
        let mut inner = Vec::new();
        for v in vs {
            varint(&mut inner, v);
        }
        if !inner.is_empty() {
            self.bytes(field, &inner);
        }
        self
    }

    /// The encoded message.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// The string table (index 0 is "").
pub struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Default for Strings {
    fn default() -> Self {
        Strings::new()
    }
}

impl Strings {
    /// A table holding only "".
    pub fn new() -> Self {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.id("");
        s
    }

    /// The index of `s`, added if new.
    pub fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    /// Writes the table as repeated `field` entries of `profile`.
    pub fn write(&self, profile: &mut Msg, field: u32) {
        for s in &self.table {
            profile.bytes(field, s.as_bytes());
        }
    }
}

/// The allocation profile of `report`, as `profile.proto` bytes (what Go
/// serves at `/debug/pprof/allocs`): sample types `alloc_objects`
/// (count) and `alloc_space` (bytes, the default), one sample per
/// allocation path (its last frame's own allocations, the stack its
/// frames, innermost first), and one for what was allocated outside any
/// measured function, so the samples add up to the session's totals.
/// `None` when allocations were not counted.
pub fn allocations(report: &crate::Report) -> Option<Vec<u8>> {
    let totals = report.alloc.as_ref()?;
    let paths: &[crate::HotPath] = report.alloc_paths.as_deref().unwrap_or(&[]);
    let mut st = Strings::new();
    let mut profile = Msg::default();
    for (ty, unit) in [("alloc_objects", "count"), ("alloc_space", "bytes")] {
        let mut vt = Msg::default();
        vt.int(1, st.id(ty)).int(2, st.id(unit));
        profile.msg(1, &vt);
    }
    // One function and one location (same id) per frame name.
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut id_of = |name: &str, st: &mut Strings, profile: &mut Msg| -> u64 {
        if let Some(&id) = ids.get(name) {
            return id;
        }
        let id = ids.len() as u64 + 1;
        let mut f = Msg::default();
        f.uint(1, id).int(2, st.id(name)).int(3, st.id(name));
        profile.msg(5, &f);
        let mut line = Msg::default();
        line.uint(1, id);
        let mut loc = Msg::default();
        loc.uint(1, id).msg(4, &line);
        profile.msg(4, &loc);
        ids.insert(name.to_string(), id);
        id
    };
    let (mut count, mut bytes) = (0u64, 0u64);
    for p in paths {
        let Some(a) = p.alloc else { continue };
        if a.count == 0 && a.bytes == 0 {
            continue;
        }
        let stack: Vec<u64> = (p.frames.iter().rev())
            .map(|f| id_of(f, &mut st, &mut profile))
            .collect();
        let mut sample = Msg::default();
        sample.packed(1, stack).packed(2, [a.count, a.bytes]);
        profile.msg(2, &sample);
        count += a.count;
        bytes += a.bytes;
    }
    let (out_count, out_bytes) = (
        totals.total_count.saturating_sub(count),
        totals.total_bytes.saturating_sub(bytes),
    );
    if out_count > 0 || out_bytes > 0 {
        let id = id_of("(outside measured functions)", &mut st, &mut profile);
        let mut sample = Msg::default();
        sample.packed(1, [id]).packed(2, [out_count, out_bytes]);
        profile.msg(2, &sample);
    }
    let (space, bytes_unit) = (st.id("alloc_space"), st.id("bytes"));
    let mut period = Msg::default();
    period.int(1, space).int(2, bytes_unit);
    profile.msg(11, &period);
    profile.int(14, space);
    st.write(&mut profile, 6);
    Some(profile.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut m = Msg::default();
        m.uint(1, 300);
        assert_eq!(m.into_bytes(), vec![0x08, 0xac, 0x02]);
        let mut m = Msg::default();
        m.int(2, -1);
        assert_eq!(m.into_bytes().len(), 11);
        let mut m = Msg::default();
        m.packed(1, [1, 2, 3]);
        assert_eq!(m.into_bytes(), vec![0x0a, 3, 1, 2, 3]);
    }
}
