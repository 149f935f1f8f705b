//! The protobuf wire format, written by hand: the pprof profiles
//! (`profile.proto`) and the Perfetto traces (`.pftrace`) both go through
//! these functions, so there is one encoder of varints, tags and nested
//! lengths.
//!
//! Two layers: `put_*` append one field to a `Vec<u8>` (a nested message
//! is written in place, its length rotated in front of it afterwards, so
//! no scratch buffer per message), and [`Msg`] builds one message with
//! proto3's defaults (zero varints left out), as pprof's writers use it,
//! with [`Strings`], pprof's string table.

use std::collections::HashMap;

/// Protobuf wire types: the low three bits of a field's tag.
#[derive(Clone, Copy)]
pub enum Wire {
    /// Integers, booleans and enums, as base-128 varints.
    Varint = 0,
    /// Eight bytes, little-endian.
    Fixed64 = 1,
    /// A varint length, then that many bytes: strings and messages.
    Len = 2,
}

/// Appends `v` as a varint: seven bits a byte, least significant first,
/// the high bit set on every byte but the last.
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends the tag of field `field` with wire type `wire`.
pub fn put_tag(buf: &mut Vec<u8>, field: u32, wire: Wire) {
    put_varint(buf, (u64::from(field) << 3) | wire as u64);
}

/// Appends an unsigned varint field (uint32, uint64, bool, enum).
pub fn put_uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_tag(buf, field, Wire::Varint);
    put_varint(buf, v);
}

/// Appends a signed varint field (int32, int64): protobuf writes the
/// two's complement as a u64, so a negative int32 is sign-extended and
/// takes ten bytes, which is what every reader expects of an int32.
pub fn put_int(buf: &mut Vec<u8>, field: u32, v: i64) {
    put_uint(buf, field, v as u64);
}

/// Appends a fixed64 field: eight bytes, little-endian.
pub fn put_fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_tag(buf, field, Wire::Fixed64);
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends a length-delimited field holding `bytes` (a string's UTF-8).
pub fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(buf, field, Wire::Len);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends a nested message field whose body `body` appends: the body is
/// written first, its length after it, and the length is then rotated in
/// front of the body.
pub fn put_message(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    put_tag(buf, field, Wire::Len);
    let start = buf.len();
    body(buf);
    let len = buf.len() - start;
    put_varint(buf, len as u64);
    let len_bytes = buf.len() - start - len;
    buf[start..].rotate_right(len_bytes);
}

/// Protobuf writer for one message.
#[derive(Default)]
pub struct Msg {
    buf: Vec<u8>,
}

impl Msg {
    /// Varint field (uint64/int64; negative int64 as two's complement).
    /// Zero is skipped (proto3 default).
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        if v != 0 {
            put_uint(&mut self.buf, field, v);
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
        put_bytes(&mut self.buf, field, b);
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
            put_varint(&mut inner, v);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        put_varint(&mut buf, v);
        buf
    }

    #[test]
    fn varints() {
        assert_eq!(varint(0), [0x00]);
        assert_eq!(varint(1), [0x01]);
        assert_eq!(varint(127), [0x7f]);
        assert_eq!(varint(128), [0x80, 0x01]);
        // 300 = 0b10_0101100: low seven bits 0x2c with the high bit, then 2.
        assert_eq!(varint(300), [0xac, 0x02]);
        // 64 bits take ten bytes: nine of seven bits and a last single bit.
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(varint(u64::MAX), max);
    }

    #[test]
    fn negative_int32_is_sign_extended_to_ten_bytes() {
        let mut buf = Vec::new();
        put_int(&mut buf, 1, (-1i32).into());
        // Tag 0x08 (field 1, varint), then -1 as u64::MAX.
        let mut want = vec![0x08];
        want.extend(varint(u64::MAX));
        assert_eq!(buf, want);
    }

    #[test]
    fn fixed64_is_little_endian() {
        let mut buf = Vec::new();
        put_fixed64(&mut buf, 1, 0x0102_0304_0506_0708);
        // Tag 0x09 (field 1, wire type 1), then the low byte first.
        assert_eq!(buf, [0x09, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]);
    }

    #[test]
    fn nested_message_length_of_two_bytes() {
        // A body of 200 bytes needs a two-byte length (0xc8 0x01), so the
        // rotation moves two bytes in front of it.
        let mut buf = Vec::new();
        put_message(&mut buf, 2, |b| put_bytes(b, 1, &[0xab; 197]));
        assert_eq!(buf[..6], [0x12, 0xc8, 0x01, 0x0a, 0xc5, 0x01]);
        assert_eq!(buf.len(), 3 + 200);
        assert!(buf[6..].iter().all(|&b| b == 0xab));
    }

    #[test]
    fn msg_skips_zero_and_packs() {
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
