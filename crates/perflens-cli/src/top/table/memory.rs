//! The Memory tab's rows: the heap profile's paths (feature `heap`).

use super::{Raw, RawRow, RowKey};
use perflens_report::Report;
use std::rc::Rc;

/// What the heap profile's paths hold: one row per path, keyed by its
/// frames (the allocations made outside any measured function under a
/// name of their own).
pub(super) fn memory(report: &Report) -> Vec<RawRow> {
    (report.heap.iter().flat_map(|h| &h.inuse_paths))
        .map(|p| {
            let frames: Vec<&str> = if p.frames.is_empty() {
                vec![OUTSIDE]
            } else {
                p.frames.iter().map(String::as_str).collect()
            };
            RawRow {
                key: RowKey::of(&frames),
                name: Rc::from(frames.join(" -> ")),
                parent: None,
                values: vec![
                    Raw::Name,
                    Raw::U(p.inuse_bytes),
                    Raw::U(p.inuse_objects),
                    Raw::U(p.samples),
                    Raw::U(p.alloc_bytes),
                    Raw::U(p.alloc_objects),
                ],
            }
        })
        .collect()
}

/// The Memory tab's name for what no measured function allocated.
const OUTSIDE: &str = "(outside measured functions)";
