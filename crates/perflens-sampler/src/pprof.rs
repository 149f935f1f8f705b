//! A minimal protobuf encoder for `profile.proto` (the pprof format).
//!
//! Field numbers follow github.com/google/pprof/proto/profile.proto.

use std::collections::HashMap;

/// Protobuf writer for one message.
#[derive(Default)]
pub(crate) struct Msg {
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
    pub(crate) fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        if v != 0 {
            self.key(field, 0);
            varint(&mut self.buf, v);
        }
        self
    }

    pub(crate) fn int(&mut self, field: u32, v: i64) -> &mut Self {
        self.uint(field, v as u64)
    }

    pub(crate) fn bool(&mut self, field: u32, v: bool) -> &mut Self {
        self.uint(field, u64::from(v))
    }

    /// Length-delimited bytes (always written, even if empty, so repeated
    /// string entries keep their index).
    pub(crate) fn bytes(&mut self, field: u32, b: &[u8]) -> &mut Self {
        self.key(field, 2);
        varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
        self
    }

    pub(crate) fn msg(&mut self, field: u32, m: &Msg) -> &mut Self {
        self.bytes(field, &m.buf)
    }

    /// Packed repeated varints.
    pub(crate) fn packed(&mut self, field: u32, vs: impl IntoIterator<Item = u64>) -> &mut Self {
        let mut inner = Vec::new();
        for v in vs {
            varint(&mut inner, v);
        }
        if !inner.is_empty() {
            self.bytes(field, &inner);
        }
        self
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// The string table (index 0 is "").
pub(crate) struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    pub(crate) fn new() -> Self {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.id("");
        s
    }

    pub(crate) fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    pub(crate) fn write(&self, profile: &mut Msg, field: u32) {
        for s in &self.table {
            profile.bytes(field, s.as_bytes());
        }
    }
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
