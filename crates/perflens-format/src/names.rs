//! The live session's names file: framed records (a kind byte, a
//! little-endian `u32` payload length, the payload) that name what the
//! blocks hold by index. The runtime appends them; the live reader parses
//! them.

/// A names record: callsite `id: u32, kind: u8, name`.
pub const REC_CALLSITE: u8 = 1;
/// A names record: path `index: u32, parent: u32, callsite: u32, id: u64`.
pub const REC_PATH: u8 = 2;
/// A names record: thread `index: u32, tid: u64, name_len: u16, name,
/// file` (the block file's name in the session directory).
pub const REC_THREAD: u8 = 3;
/// A names record: extra data for readers `tag: u32, bytes` (see
/// `perflens_core::LiveEnd::record`).
pub const REC_EXTRA: u8 = 4;
/// A names record: where await site `id` is, `id: u32, line: u32,
/// column: u32, file_len: u16, file, expr`. Follows the site's
/// [`REC_CALLSITE`] record.
pub const REC_AWAIT: u8 = 5;
/// [`REC_EXTRA`] tag: the CPU sampler's final figures, as the JSON of
/// `perflens_report::CpuInput` (written by the `perflens` crate).
pub const EXTRA_CPU: u32 = 1;
/// Bytes before a record's payload: kind and length.
pub const REC_HEAD: usize = 5;
