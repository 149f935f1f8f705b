//! The live session's names file: framed records (a kind byte, a
//! little-endian `u32` payload length, the payload) that name what the
//! blocks hold by index. The runtime appends them; the live reader parses
//! them.

use crate::snapshot::CallsiteKind;
use crate::vocab::FlowKind;

/// A names record: callsite `id: u32, kind: u8, name`.
pub const REC_CALLSITE: u8 = 1;
/// A names record: path `index: u32, parent: u32, callsite: u32, id: u64`.
pub const REC_PATH: u8 = 2;
/// A names record: thread `index: u32, tid: u64, name_len: u16, name,
/// file` (the block file's name in the session directory).
pub const REC_THREAD: u8 = 3;
/// A names record: extra data for readers `tag: u32, bytes` (see
/// `perflens_core::PublicationEnd::record`).
pub const REC_EXTRA: u8 = 4;
/// A names record: where await site `id` is, `id: u32, line: u32,
/// column: u32, file_len: u16, file, expr`. Follows the site's
/// [`REC_CALLSITE`] record.
pub const REC_AWAIT: u8 = 5;
/// [`REC_EXTRA`] tag: the CPU sampler's final figures, as the JSON of
/// `perflens_report::CpuInput` (written by the `perflens` crate).
pub const EXTRA_CPU: u32 = 1;
/// [`REC_EXTRA`] tag: the heap profile at the session's end
/// (`heap::encode_heap`): the table keeps changing after it (frees),
/// so a reader of a finished session reads this instead.
pub const EXTRA_HEAP: u32 = 2;
/// Bytes before a record's payload: kind and length.
pub const REC_HEAD: usize = 5;

/// A callsite kind as the live names file stores it.
pub fn kind_code(kind: CallsiteKind) -> u8 {
    match kind {
        CallsiteKind::Sync => 0,
        CallsiteKind::Async => 1,
        CallsiteKind::Internal => 2,
        CallsiteKind::Await => 3,
        CallsiteKind::Flow(FlowKind::Channel) => 4,
        CallsiteKind::Flow(FlowKind::Stream) => 5,
        CallsiteKind::Flow(FlowKind::Future) => 6,
        CallsiteKind::Flow(FlowKind::Lock) => 7,
    }
}

/// The kind a live names file's code stands for.
pub fn kind_from_code(code: u8) -> Option<CallsiteKind> {
    match code {
        0 => Some(CallsiteKind::Sync),
        1 => Some(CallsiteKind::Async),
        2 => Some(CallsiteKind::Internal),
        3 => Some(CallsiteKind::Await),
        4 => Some(CallsiteKind::Flow(FlowKind::Channel)),
        5 => Some(CallsiteKind::Flow(FlowKind::Stream)),
        6 => Some(CallsiteKind::Flow(FlowKind::Future)),
        7 => Some(CallsiteKind::Flow(FlowKind::Lock)),
        _ => None,
    }
}
