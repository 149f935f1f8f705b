//! A minimal protobuf encoder for `profile.proto` (the pprof format),
//! for the CPU sampler's profiles and the allocation profile.
//!
//! Field numbers follow github.com/google/pprof/proto/profile.proto.

use std::collections::HashMap;

pub use perflens_format::proto::{Msg, Strings};

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
