//! Tests of the `.pftrace` writer: the encoding, read back by a decoder of its own.

use super::*;

#[test]
fn slice_end_then_slice_begin_exact_bytes() {
    let mut w = PftraceWriter::new(Vec::new());
    w.slice_end(5, 3).unwrap();
    let ann = [Annotation {
        name: "c",
        value: AnnotationValue::Bool(true),
    }];
    let ev = TrackEvent {
        name: "a",
        annotations: &ann,
        flow_ids: &[0x0102_0304_0506_0708],
        ..TrackEvent::default()
    };
    w.slice_begin(300, 3, &ev).unwrap();
    let got = w.finish().unwrap();

    #[rustfmt::skip]
    let want = [
        // Trace.packet (field 1, len): 0x0a, 12 bytes.
        0x0a, 0x0c,
        0x40, 0x05, //       timestamp (8, varint) = 5
        0x50, 0x01, //       trusted_packet_sequence_id (10, varint) = 1
        0x68, 0x01, //       sequence_flags (13, varint) = CLEARED, first packet only
        0x5a, 0x04, //       track_event (11, len), 4 bytes:
        0x48, 0x02, //         type (9, varint) = SLICE_END
        0x58, 0x03, //         track_uuid (11, varint) = 3
        // Second packet: 3 + 2 + 2 + 25 = 32 bytes.
        0x0a, 0x20,
        0x40, 0xac, 0x02, // timestamp = 300
        0x50, 0x01, //       trusted_packet_sequence_id = 1; no flags now
        0x5a, 0x19, //       track_event, 2 + 2 + 4 + 7 + 10 = 25 bytes:
        0x48, 0x01, //         type = SLICE_BEGIN
        0x58, 0x03, //         track_uuid = 3
        0xba, 0x01, 0x01, b'a', //  name (23 << 3 | 2 = 186 = 0xba 0x01), "a"
        0x22, 0x05, //         debug_annotations (4, len), 5 bytes:
        0x52, 0x01, b'c', //     name (10, len) = "c"
        0x10, 0x01, //           bool_value (2, varint) = true
        0xf9, 0x02, //         flow_ids (47 << 3 | 1 = 377 = 0xf9 0x02), fixed64:
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
    ];
    assert_eq!(got, want);
}

#[test]
fn descriptors_exact_bytes() {
    let mut w = PftraceWriter::new(Vec::new());
    w.process(1, 7, "p").unwrap();
    w.thread(2, 1, 7, 8, "").unwrap();
    w.track(3, 1, "k").unwrap();
    let got = w.finish().unwrap();

    #[rustfmt::skip]
    let want = [
        0x0a, 0x10, //       packet, 2 + 2 + 3 + 9 = 16 bytes:
        0x50, 0x01, //       trusted_packet_sequence_id = 1
        0x68, 0x01, //       sequence_flags = CLEARED
        0xe2, 0x03, 0x09, // track_descriptor (60 << 3 | 2 = 482 = 0xe2 0x03), 9 bytes:
        0x08, 0x01, //         uuid (1) = 1
        0x1a, 0x05, //         process (3, len), 5 bytes:
        0x08, 0x07, //           pid (1) = 7
        0x32, 0x01, b'p', //     process_name (6, len) = "p"
        0x0a, 0x11, //       packet, 2 + 3 + 12 = 17 bytes:
        0x50, 0x01,
        0xe2, 0x03, 0x0c, // track_descriptor, 12 bytes:
        0x08, 0x02, //         uuid = 2
        0x28, 0x01, //         parent_uuid (5) = 1
        0x22, 0x06, //         thread (4, len), 6 bytes:
        0x08, 0x07, //           pid (1) = 7
        0x10, 0x08, //           tid (2) = 8
        0x2a, 0x00, //           thread_name (5, len) = "", written as given
        0x0a, 0x0c, //       packet, 2 + 3 + 7 = 12 bytes:
        0x50, 0x01,
        0xe2, 0x03, 0x07, // track_descriptor, 7 bytes:
        0x08, 0x03, //         uuid = 3
        0x28, 0x01, //         parent_uuid = 1
        0x12, 0x01, b'k', //   name (2, len) = "k"
    ];
    assert_eq!(got, want);
}

#[test]
fn write_errors_propagate() {
    /// A writer whose every write fails.
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::other("disk full"))
        }
    }
    let mut w = PftraceWriter::new(Broken);
    assert_eq!(
        w.instant(1, 1, &TrackEvent::default())
            .unwrap_err()
            .to_string(),
        "disk full"
    );
    assert!(w.finish().is_err());
}
