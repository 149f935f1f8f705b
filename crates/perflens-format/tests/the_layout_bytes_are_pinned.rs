//! The bytes of a block and of a live session's header are read by
//! another process, possibly built from another version of perflens: a
//! reader checks `LAYOUT_VERSION` and `SESSION_VERSION` and trusts the
//! rest. This test pins every field's offset and every type's size, so a
//! change to the layout fails here until its version is bumped (and the
//! pins updated with it), and a refactor that moves these types between
//! crates can be seen to leave every byte where it was.

use perflens_format::block::*;
use perflens_format::session_file::*;
use std::mem::offset_of;

/// Asserts `$ty`'s size, alignment and each field's offset.
macro_rules! pin {
    ($ty:ident, $size:expr, $align:expr, [$($field:ident: $off:expr),* $(,)?]) => {{
        let mut wrong = Vec::<String>::new();
        if size_of::<$ty>() != $size {
            wrong.push(format!("size {} (pinned {})", size_of::<$ty>(), $size));
        }
        if align_of::<$ty>() != $align {
            wrong.push(format!("align {} (pinned {})", align_of::<$ty>(), $align));
        }
        $(
            if offset_of!($ty, $field) != $off {
                wrong.push(format!(
                    "{} at {} (pinned {})",
                    stringify!($field),
                    offset_of!($ty, $field),
                    $off
                ));
            }
        )*
        wrong.into_iter().map(|w| format!("{}: {w}", stringify!($ty))).collect::<Vec<_>>()
    }};
}

#[test]
fn the_block_layout_is_version_7_byte_for_byte() {
    assert_eq!(
        LAYOUT_VERSION, 7,
        "a new layout version: update the pins below"
    );
    assert_eq!(MAGIC, u64::from_le_bytes(*b"PERFLENS"));
    assert_eq!(FRAMES_OFFSET, 320);
    assert_eq!(HISTS, 3);
    let mut wrong = Vec::new();
    wrong.extend(pin!(
        Header,
        320,
        64,
        [
            magic: 0,
            layout_version: 8,
            header_size: 12,
            size: 16,
            node_cap: 24,
            table_mask: 28,
            stack_cap: 32,
            thread_index: 36,
            off_frames: 40,
            off_table: 48,
            off_nodes: 56,
            off_hist: 64,
            tid: 72,
            live: 80,
            _reserved: 84,
            epoch: 88,
            node_count: 92,
            mode: 96,
            sample_every: 100,
            sample_warmup: 104,
            exited: 108,
            excluded: 112,
            dropped_frames: 120,
            table_keys: 128,
            pending: 136,
            alloc: 192,
            mark: 256,
        ]
    ));
    wrong.extend(pin!(
        ThreadAlloc,
        64,
        64,
        [
            allocated: 0,
            allocs: 8,
            live: 16,
            frees: 24,
            above: 32,
            below: 40,
            peak: 48,
            published: 56,
        ]
    ));
    wrong.extend(pin!(
        AllocMark,
        64,
        64,
        [
            allocated: 0,
            allocs: 8,
            freed: 16,
            frees: 24,
            ops: 32,
            min_live: 40,
            top: 48,
        ]
    ));
    wrong.extend(pin!(
        ShadowFrame,
        64,
        64,
        [
            np: 0,
            timed: 8,
            cache_cs: 12,
            cache_np: 16,
            start: 24,
            child: 32,
            alloc_start: 40,
        ]
    ));
    wrong.extend(pin!(
        Slot,
        16,
        8,
        [
            key: 0,
            np: 8,
        ]
    ));
    wrong.extend(pin!(
        Node,
        128,
        64,
        [
            path: 0,
            countdown: 4,
            calls: 8,
            total: 16,
            self_: 24,
            busy: 32,
            polls: 40,
            cancelled: 48,
            cancelled_timed: 56,
            alloc_bytes: 64,
            alloc_count: 72,
            free_bytes: 80,
            free_count: 88,
            cancelled_wall: 96,
            rec_open: 104,
            rec_max: 108,
            cpu_samples: 112,
            cpu_ns: 120,
        ]
    ));
    wrong.extend(pin!(
        NodePath,
        8,
        8,
        [
            node: 0,
            path: 4,
        ]
    ));
    assert!(
        wrong.is_empty(),
        "the block layout moved: bump LAYOUT_VERSION and update the pins:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_session_file_is_version_2_byte_for_byte() {
    assert_eq!(
        SESSION_VERSION, 2,
        "a new session version: update the pins below"
    );
    assert_eq!(SESSION_MAGIC, u64::from_le_bytes(*b"PLLIVE01"));
    assert_eq!(SESSION_FILE_BYTES, 4096);
    let mut wrong = Vec::new();
    wrong.extend(pin!(
        SessionHeader,
        448,
        64,
        [
            magic: 0,
            version: 8,
            header_size: 12,
            block_layout: 16,
            pid: 20,
            proc_start: 24,
            start_unix_ns: 32,
            epoch: 40,
            mode: 44,
            sample_every: 48,
            sample_warmup: 52,
            clock: 56,
            path_capacity: 60,
            anchor_tsc: 64,
            anchor_mono_ns: 72,
            program_len: 80,
            alloc_feature: 84,
            alloc_installed: 88,
            cpu_hz: 92,
            state: 96,
            names_len: 104,
            names_lost: 112,
            unpublished_threads: 120,
            outside_samples: 128,
            outside_cpu_ns: 136,
            ns_per_tick: 144,
            elapsed_ns: 152,
            overflow_paths: 160,
            unrecorded_calls: 168,
            alloc_live_bytes: 176,
            alloc_peak_bytes: 184,
            program: 192,
        ]
    ));
    assert!(
        wrong.is_empty(),
        "the session header moved: bump SESSION_VERSION and update the pins:\n{}",
        wrong.join("\n")
    );
}
