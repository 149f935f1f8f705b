//! Native Perfetto traces (`.pftrace`): a small protobuf encoder and a
//! writer for the part of Perfetto's trace format that a timeline needs.
//!
//! # The file
//!
//! A `.pftrace` file is one `perfetto.protos.Trace` message, whose only
//! field here is `repeated TracePacket packet = 1`. A protobuf message is
//! the concatenation of its fields, so the file is a sequence of records
//! `0x0a <varint length> <TracePacket bytes>`. That is what lets
//! [`PftraceWriter`] stream: it holds one packet at a time, never the
//! whole trace.
//!
//! Each packet carries either a `TrackDescriptor` (a lane of the timeline:
//! a process, a thread, or a named track such as an async task) or a
//! `TrackEvent` (a slice's begin or end, or an instant) that names its
//! lane by `track_uuid`. Every packet is on one sequence
//! (`trusted_packet_sequence_id`), and the first one says that the
//! sequence's incremental state starts out cleared, which Perfetto
//! requires before it trusts anything on a sequence. Nothing is interned,
//! so no later packet depends on state from an earlier one.
//!
//! Arrows are flows: an event whose `flow_ids` holds an id starts an
//! arrow, and the event whose `terminating_flow_ids` holds the same id
//! ends it. These ids are global to the trace; the caller picks them.
//!
//! Timestamps are nanoseconds on the trace's default clock. A trace with
//! no clock snapshot has nothing to relate that clock to, so the session's
//! own clock can be written as is: viewers show times from the first event.
//!
//! # The encoder
//!
//! The subset written here is about twenty fields of three wire types
//! (varint, fixed64 and length-delimited), so the encoder is a few
//! functions over a `Vec<u8>` rather than a protobuf crate, which would
//! bring code generation (and `protoc`) or a large runtime for it. The
//! field numbers and wire types come from Perfetto's schema
//! (`protos/perfetto/trace/`); [`SCHEMA_NUMBERS`] lists every one, and the
//! tests check that list against Perfetto's own Python bindings.
//!
//! The schema is proto2, so repeated scalars are not packed: `flow_ids`
//! and `terminating_flow_ids` (`repeated fixed64`) are written as one
//! tagged field per id, as the schema declares them.
//!
//! A nested message is written in place: its tag, then its body, then its
//! length appended after the body and rotated in front of it. That needs
//! no length computed ahead and no scratch buffer per nesting level, and
//! the rotation moves only the few bytes of one small message.
//!
//! ```
//! use perflens_report::trace::pftrace::{Annotation, AnnotationValue, TrackEvent, PftraceWriter};
//!
//! let mut w = PftraceWriter::new(Vec::new());
//! w.process(1, 4242, "demo")?;
//! w.thread(2, 1, 4242, 4243, "main")?;
//! let bytes = [Annotation { name: "bytes", value: AnnotationValue::Uint(4096) }];
//! w.slice_begin(1_000, 2, &TrackEvent { name: "parse", annotations: &bytes, ..TrackEvent::default() })?;
//! w.slice_end(2_000, 2)?;
//! let file = w.finish()?;
//! assert_eq!(file[0], 0x0a); // every packet is field 1 of `Trace`
//! # Ok::<(), std::io::Error>(())
//! ```

use perflens_format::proto::{put_bytes, put_fixed64, put_int, put_message, put_uint};
use std::io::{self, Write};

/// Field numbers of `perfetto.protos.Trace`.
mod trace {
    /// `repeated TracePacket packet = 1`.
    pub const PACKET: u32 = 1;
}

/// Field numbers and flag values of `perfetto.protos.TracePacket`.
mod packet {
    /// `optional uint64 timestamp = 8`.
    pub const TIMESTAMP: u32 = 8;
    /// `uint32 trusted_packet_sequence_id = 10`.
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    /// `TrackEvent track_event = 11`.
    pub const TRACK_EVENT: u32 = 11;
    /// `optional uint32 sequence_flags = 13`.
    pub const SEQUENCE_FLAGS: u32 = 13;
    /// `TrackDescriptor track_descriptor = 60`.
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// `SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
}

/// Field numbers of `perfetto.protos.TrackDescriptor` and of the process
/// and thread descriptors it nests.
mod track {
    /// `optional uint64 uuid = 1`.
    pub const UUID: u32 = 1;
    /// `string name = 2`.
    pub const NAME: u32 = 2;
    /// `optional ProcessDescriptor process = 3`.
    pub const PROCESS: u32 = 3;
    /// `optional ThreadDescriptor thread = 4`.
    pub const THREAD: u32 = 4;
    /// `optional uint64 parent_uuid = 5`.
    pub const PARENT_UUID: u32 = 5;
    /// `ProcessDescriptor.pid = 1` (int32).
    pub const PROCESS_PID: u32 = 1;
    /// `ProcessDescriptor.process_name = 6`.
    pub const PROCESS_NAME: u32 = 6;
    /// `ThreadDescriptor.pid = 1` (int32).
    pub const THREAD_PID: u32 = 1;
    /// `ThreadDescriptor.tid = 2` (int64).
    pub const THREAD_TID: u32 = 2;
    /// `ThreadDescriptor.thread_name = 5`.
    pub const THREAD_NAME: u32 = 5;
}

/// Field numbers and enum values of `perfetto.protos.TrackEvent` and of
/// its `DebugAnnotation`s.
mod event {
    /// `repeated DebugAnnotation debug_annotations = 4`.
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    /// `optional Type type = 9`.
    pub const TYPE: u32 = 9;
    /// `optional uint64 track_uuid = 11`.
    pub const TRACK_UUID: u32 = 11;
    /// `string name = 23`.
    pub const NAME: u32 = 23;
    /// `repeated fixed64 flow_ids = 47` (not packed).
    pub const FLOW_IDS: u32 = 47;
    /// `repeated fixed64 terminating_flow_ids = 48` (not packed).
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    /// `Type.TYPE_SLICE_BEGIN`.
    pub const TYPE_SLICE_BEGIN: u64 = 1;
    /// `Type.TYPE_SLICE_END`.
    pub const TYPE_SLICE_END: u64 = 2;
    /// `Type.TYPE_INSTANT`.
    pub const TYPE_INSTANT: u64 = 3;
    /// `DebugAnnotation.name = 10`.
    pub const ANNOTATION_NAME: u32 = 10;
    /// `DebugAnnotation.bool_value = 2`.
    pub const ANNOTATION_BOOL: u32 = 2;
    /// `DebugAnnotation.uint_value = 3`.
    pub const ANNOTATION_UINT: u32 = 3;
    /// `DebugAnnotation.int_value = 4`.
    pub const ANNOTATION_INT: u32 = 4;
    /// `DebugAnnotation.string_value = 6`.
    pub const ANNOTATION_STRING: u32 = 6;
}

/// The one packet sequence every packet is written on. Any non-zero value
/// works: a trace written by one writer has one sequence.
const SEQUENCE_ID: u64 = 1;

/// One number this writer takes from Perfetto's schema, with how it is
/// used, so that a test can compare it with the schema itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaNumber {
    /// `Message.field` for a field (`"TrackEvent.flow_ids"`), or
    /// `Message.VALUE` for an enum value declared in that message
    /// (`"TrackEvent.TYPE_SLICE_BEGIN"`).
    pub name: &'static str,
    /// The field number, or the enum value.
    pub number: u64,
    /// How the field is written: `"varint"`, `"fixed64"` or `"len"`
    /// (length-delimited); `"enum"` for an enum value.
    pub kind: &'static str,
}

/// Every field number and enum value that [`PftraceWriter`] writes.
pub const SCHEMA_NUMBERS: &[SchemaNumber] = {
    /// A field and its wire type.
    const fn f(name: &'static str, number: u32, kind: &'static str) -> SchemaNumber {
        SchemaNumber {
            name,
            number: number as u64,
            kind,
        }
    }
    /// An enum value.
    const fn e(name: &'static str, number: u64) -> SchemaNumber {
        SchemaNumber {
            name,
            number,
            kind: "enum",
        }
    }
    &[
        f("Trace.packet", trace::PACKET, "len"),
        f("TracePacket.timestamp", packet::TIMESTAMP, "varint"),
        f(
            "TracePacket.trusted_packet_sequence_id",
            packet::TRUSTED_PACKET_SEQUENCE_ID,
            "varint",
        ),
        f("TracePacket.track_event", packet::TRACK_EVENT, "len"),
        f(
            "TracePacket.sequence_flags",
            packet::SEQUENCE_FLAGS,
            "varint",
        ),
        f(
            "TracePacket.track_descriptor",
            packet::TRACK_DESCRIPTOR,
            "len",
        ),
        e(
            "TracePacket.SEQ_INCREMENTAL_STATE_CLEARED",
            packet::SEQ_INCREMENTAL_STATE_CLEARED,
        ),
        f("TrackDescriptor.uuid", track::UUID, "varint"),
        f("TrackDescriptor.name", track::NAME, "len"),
        f("TrackDescriptor.process", track::PROCESS, "len"),
        f("TrackDescriptor.thread", track::THREAD, "len"),
        f("TrackDescriptor.parent_uuid", track::PARENT_UUID, "varint"),
        f("ProcessDescriptor.pid", track::PROCESS_PID, "varint"),
        f("ProcessDescriptor.process_name", track::PROCESS_NAME, "len"),
        f("ThreadDescriptor.pid", track::THREAD_PID, "varint"),
        f("ThreadDescriptor.tid", track::THREAD_TID, "varint"),
        f("ThreadDescriptor.thread_name", track::THREAD_NAME, "len"),
        f(
            "TrackEvent.debug_annotations",
            event::DEBUG_ANNOTATIONS,
            "len",
        ),
        f("TrackEvent.type", event::TYPE, "varint"),
        f("TrackEvent.track_uuid", event::TRACK_UUID, "varint"),
        f("TrackEvent.name", event::NAME, "len"),
        f("TrackEvent.flow_ids", event::FLOW_IDS, "fixed64"),
        f(
            "TrackEvent.terminating_flow_ids",
            event::TERMINATING_FLOW_IDS,
            "fixed64",
        ),
        e("TrackEvent.TYPE_SLICE_BEGIN", event::TYPE_SLICE_BEGIN),
        e("TrackEvent.TYPE_SLICE_END", event::TYPE_SLICE_END),
        e("TrackEvent.TYPE_INSTANT", event::TYPE_INSTANT),
        f("DebugAnnotation.name", event::ANNOTATION_NAME, "len"),
        f(
            "DebugAnnotation.bool_value",
            event::ANNOTATION_BOOL,
            "varint",
        ),
        f(
            "DebugAnnotation.uint_value",
            event::ANNOTATION_UINT,
            "varint",
        ),
        f("DebugAnnotation.int_value", event::ANNOTATION_INT, "varint"),
        f(
            "DebugAnnotation.string_value",
            event::ANNOTATION_STRING,
            "len",
        ),
    ]
};

/// A named value shown with an event in the viewer's details panel (a
/// `DebugAnnotation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Annotation<'a> {
    /// The label, e.g. `"cancelled"`.
    pub name: &'a str,
    /// The value.
    pub value: AnnotationValue<'a>,
}

/// The value of an [`Annotation`]. Each variant is its own protobuf field,
/// so the viewer shows a boolean as `true`, not `1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnotationValue<'a> {
    /// `bool_value`.
    Bool(bool),
    /// `uint_value`.
    Uint(u64),
    /// `int_value`.
    Int(i64),
    /// `string_value`.
    Str(&'a str),
}

/// What a slice's begin or an instant says besides its time and track.
///
/// Every field may be left at its default (`..TrackEvent::default()`): an
/// empty name is written as an empty string, and empty lists write
/// nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackEvent<'a> {
    /// The slice's label in the viewer.
    pub name: &'a str,
    /// Values shown with the event.
    pub annotations: &'a [Annotation<'a>],
    /// Arrows that start at this event, one per id.
    pub flow_ids: &'a [u64],
    /// Arrows that end at this event: each id was in the `flow_ids` of an
    /// earlier event.
    pub terminating_flow_ids: &'a [u64],
}

/// Streams a `.pftrace` file to `W`, one packet per call.
///
/// The writer encodes what it is given and checks nothing: describing a
/// track before its events, ending every slice on the track where it
/// began (last begun, first ended) and keeping each track's timestamps in
/// order are the caller's job, as is pairing flow ids. Any `u64` is a
/// valid uuid or id, and any string a valid name.
///
/// Each call makes one `write_all` of the whole packet, so a `W` that is
/// a file should be wrapped in a [`std::io::BufWriter`].
#[derive(Debug)]
pub struct PftraceWriter<W: Write> {
    /// Where packets go.
    out: W,
    /// The packet being encoded, reused so that a long trace allocates
    /// only as much as its largest packet.
    buf: Vec<u8>,
    /// Whether a packet was written, so that only the first one carries
    /// `SEQ_INCREMENTAL_STATE_CLEARED`.
    started: bool,
}

impl<W: Write> PftraceWriter<W> {
    /// A writer that writes a trace to `out`. Nothing is written until
    /// the first packet.
    pub fn new(out: W) -> Self {
        PftraceWriter {
            out,
            buf: Vec::new(),
            started: false,
        }
    }

    /// Describes a process track: the lane that groups the threads and
    /// tracks whose parent it is.
    pub fn process(&mut self, uuid: u64, pid: i32, name: &str) -> io::Result<()> {
        self.packet(None, |p| {
            put_message(p, packet::TRACK_DESCRIPTOR, |d| {
                put_uint(d, track::UUID, uuid);
                put_message(d, track::PROCESS, |proc| {
                    put_int(proc, track::PROCESS_PID, pid.into());
                    put_bytes(proc, track::PROCESS_NAME, name.as_bytes());
                });
            });
        })
    }

    /// Describes a thread track under the process track `parent_uuid`.
    /// `pid` and `tid` have the schema's types (int32 and int64), so an
    /// OS id that does not fit is the caller's to map.
    pub fn thread(
        &mut self,
        uuid: u64,
        parent_uuid: u64,
        pid: i32,
        tid: i64,
        name: &str,
    ) -> io::Result<()> {
        self.packet(None, |p| {
            put_message(p, packet::TRACK_DESCRIPTOR, |d| {
                put_uint(d, track::UUID, uuid);
                put_uint(d, track::PARENT_UUID, parent_uuid);
                put_message(d, track::THREAD, |t| {
                    put_int(t, track::THREAD_PID, pid.into());
                    put_int(t, track::THREAD_TID, tid);
                    put_bytes(t, track::THREAD_NAME, name.as_bytes());
                });
            });
        })
    }

    /// Describes a named track that is not a thread (an async task, or a
    /// lane shared by short-lived threads) under the track `parent_uuid`.
    pub fn track(&mut self, uuid: u64, parent_uuid: u64, name: &str) -> io::Result<()> {
        self.packet(None, |p| {
            put_message(p, packet::TRACK_DESCRIPTOR, |d| {
                put_uint(d, track::UUID, uuid);
                put_uint(d, track::PARENT_UUID, parent_uuid);
                put_bytes(d, track::NAME, name.as_bytes());
            });
        })
    }

    /// Begins a slice on `track_uuid` at `ts_ns`.
    pub fn slice_begin(
        &mut self,
        ts_ns: u64,
        track_uuid: u64,
        ev: &TrackEvent<'_>,
    ) -> io::Result<()> {
        self.track_event(ts_ns, track_uuid, event::TYPE_SLICE_BEGIN, Some(ev))
    }

    /// Ends the slice last begun and not yet ended on `track_uuid`.
    pub fn slice_end(&mut self, ts_ns: u64, track_uuid: u64) -> io::Result<()> {
        self.track_event(ts_ns, track_uuid, event::TYPE_SLICE_END, None)
    }

    /// An event with no duration on `track_uuid` at `ts_ns`.
    pub fn instant(&mut self, ts_ns: u64, track_uuid: u64, ev: &TrackEvent<'_>) -> io::Result<()> {
        self.track_event(ts_ns, track_uuid, event::TYPE_INSTANT, Some(ev))
    }

    /// Flushes and returns the underlying writer. The trace is complete:
    /// the format has no trailer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Writes a `TrackEvent` packet of type `kind`; `ev` is `None` for a
    /// slice's end, which needs only its track.
    fn track_event(
        &mut self,
        ts_ns: u64,
        track_uuid: u64,
        kind: u64,
        ev: Option<&TrackEvent<'_>>,
    ) -> io::Result<()> {
        self.packet(Some(ts_ns), |p| {
            put_message(p, packet::TRACK_EVENT, |e| {
                put_uint(e, event::TYPE, kind);
                put_uint(e, event::TRACK_UUID, track_uuid);
                let Some(ev) = ev else { return };
                put_bytes(e, event::NAME, ev.name.as_bytes());
                for a in ev.annotations {
                    put_message(e, event::DEBUG_ANNOTATIONS, |d| put_annotation(d, a));
                }
                for &id in ev.flow_ids {
                    put_fixed64(e, event::FLOW_IDS, id);
                }
                for &id in ev.terminating_flow_ids {
                    put_fixed64(e, event::TERMINATING_FLOW_IDS, id);
                }
            });
        })
    }

    /// Encodes one `TracePacket` as field 1 of `Trace`, with the sequence
    /// fields every packet carries and the body `body` writes, and writes
    /// it out whole.
    fn packet(&mut self, ts_ns: Option<u64>, body: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let first = !self.started;
        self.buf.clear();
        put_message(&mut self.buf, trace::PACKET, |p| {
            if let Some(ts) = ts_ns {
                put_uint(p, packet::TIMESTAMP, ts);
            }
            put_uint(p, packet::TRUSTED_PACKET_SEQUENCE_ID, SEQUENCE_ID);
            if first {
                put_uint(
                    p,
                    packet::SEQUENCE_FLAGS,
                    packet::SEQ_INCREMENTAL_STATE_CLEARED,
                );
            }
            body(p);
        });
        self.out.write_all(&self.buf)?;
        self.started = true;
        Ok(())
    }
}

/// Encodes the fields of one `DebugAnnotation`.
fn put_annotation(buf: &mut Vec<u8>, a: &Annotation<'_>) {
    put_bytes(buf, event::ANNOTATION_NAME, a.name.as_bytes());
    match a.value {
        AnnotationValue::Bool(v) => put_uint(buf, event::ANNOTATION_BOOL, v.into()),
        AnnotationValue::Uint(v) => put_uint(buf, event::ANNOTATION_UINT, v),
        AnnotationValue::Int(v) => put_int(buf, event::ANNOTATION_INT, v),
        AnnotationValue::Str(v) => put_bytes(buf, event::ANNOTATION_STRING, v.as_bytes()),
    }
}

mod timeline;
pub use timeline::write_timeline;

#[cfg(test)]
mod tests;
