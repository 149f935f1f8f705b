//! A minimal protobuf encoder for `profile.proto` (the pprof format),
//! for the CPU sampler's profiles, the allocation profile and the heap
//! profile.
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
    sample_types(
        &mut profile,
        &mut st,
        &[("alloc_objects", "count"), ("alloc_space", "bytes")],
    );
    let mut locations = Locations::default();
    let mut id_of =
        |name: &str, st: &mut Strings, profile: &mut Msg| locations.id(name, st, profile);
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

/// The heap profile of `report` (feature `heap`), as `profile.proto`
/// bytes in the shape of Go's `/debug/pprof/heap`: sample types
/// `alloc_objects`, `alloc_space`, `inuse_objects` and `inuse_space`
/// (the default), period type `space` with the sampling rate as period.
/// The in-use values are the report's estimates, one sample per native
/// stack and path where native stacks were taken (the stack's functions
/// the locations, innermost first), else one per measured path (its
/// frames the stack); either way the measured path, its frames joined
/// by ` -> `, is the `perflens_path` label. The allocated ones are
/// exact, one sample per path that allocated (what the allocation
/// profile has), so `-sample_index=alloc_space` adds up to the session's
/// bytes allocated. `None` when the heap was not sampled.
pub fn heap(report: &crate::Report) -> Option<Vec<u8>> {
    let heap = report.heap.as_ref()?;
    const OUTSIDE: &str = "(outside measured functions)";
    let joined = |frames: &[String]| {
        if frames.is_empty() {
            OUTSIDE.to_string()
        } else {
            frames.join(" -> ")
        }
    };
    // (stack, path label) -> [alloc_objects, alloc_space, inuse_objects,
    // inuse_space].
    type Key = (Vec<String>, String);
    let mut samples: Vec<(Key, [u64; 4])> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut entry = |samples: &mut Vec<(Key, [u64; 4])>, key: Key| -> usize {
        *index.entry(key.clone()).or_insert_with(|| {
            samples.push((key, [0; 4]));
            samples.len() - 1
        })
    };
    // Allocated: every path that allocated, exactly; the root gets the
    // rest of the session's totals.
    let (mut alloc_count, mut alloc_bytes) = (0u64, 0u64);
    for p in report.alloc_paths.as_deref().unwrap_or(&[]) {
        let Some(a) = p.alloc.filter(|a| a.count > 0 || a.bytes > 0) else {
            continue;
        };
        let i = entry(&mut samples, (p.frames.clone(), joined(&p.frames)));
        samples[i].1[0] = a.count;
        samples[i].1[1] = a.bytes;
        alloc_count += a.count;
        alloc_bytes += a.bytes;
    }
    if let Some(totals) = &report.alloc {
        let i = entry(&mut samples, (Vec::new(), joined(&[])));
        samples[i].1[0] = totals.total_count.saturating_sub(alloc_count);
        samples[i].1[1] = totals.total_bytes.saturating_sub(alloc_bytes);
    }
    // In use: the estimates, by native stack where the stacks were taken
    // (a stack not kept stands on its path), else by path.
    if heap.inuse_stacks.is_empty() {
        for p in &heap.inuse_paths {
            let i = entry(&mut samples, (p.frames.clone(), joined(&p.frames)));
            samples[i].1[2] = p.inuse_objects;
            samples[i].1[3] = p.inuse_bytes;
        }
    } else {
        for s in &heap.inuse_stacks {
            let stack = if s.frames.is_empty() {
                &s.path
            } else {
                &s.frames
            };
            let i = entry(&mut samples, (stack.clone(), joined(&s.path)));
            samples[i].1[2] += s.inuse_objects;
            samples[i].1[3] += s.inuse_bytes;
        }
    }
    let mut st = Strings::new();
    let mut profile = Msg::default();
    sample_types(
        &mut profile,
        &mut st,
        &[
            ("alloc_objects", "count"),
            ("alloc_space", "bytes"),
            ("inuse_objects", "count"),
            ("inuse_space", "bytes"),
        ],
    );
    let mut locations = Locations::default();
    let mut id_of =
        |name: &str, st: &mut Strings, profile: &mut Msg| locations.id(name, st, profile);
    for ((frames, path), values) in &samples {
        if values.iter().all(|&v| v == 0) {
            continue;
        }
        let stack: Vec<u64> = if frames.is_empty() {
            vec![id_of(OUTSIDE, &mut st, &mut profile)]
        } else {
            (frames.iter().rev())
                .map(|f| id_of(f, &mut st, &mut profile))
                .collect()
        };
        let mut sample = Msg::default();
        sample.packed(1, stack).packed(2, *values);
        let mut label = Msg::default();
        label.int(1, st.id("perflens_path")).int(2, st.id(path));
        sample.msg(3, &label);
        profile.msg(2, &sample);
    }
    let (space, bytes_unit) = (st.id("space"), st.id("bytes"));
    let mut period = Msg::default();
    period.int(1, space).int(2, bytes_unit);
    profile.msg(11, &period);
    profile.int(12, heap.rate_bytes as i64);
    let inuse_space = st.id("inuse_space");
    profile.int(14, inuse_space);
    st.write(&mut profile, 6);
    Some(profile.into_bytes())
}

/// Writes the profile's sample types, `(type, unit)` each.
fn sample_types(profile: &mut Msg, st: &mut Strings, types: &[(&str, &str)]) {
    for (ty, unit) in types {
        let mut vt = Msg::default();
        vt.int(1, st.id(ty)).int(2, st.id(unit));
        profile.msg(1, &vt);
    }
}

/// One function and one location (the same id) per frame name, written
/// to the profile the first time a name is seen.
#[derive(Default)]
struct Locations {
    ids: HashMap<String, u64>,
}

impl Locations {
    fn id(&mut self, name: &str, st: &mut Strings, profile: &mut Msg) -> u64 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.ids.len() as u64 + 1;
        let mut f = Msg::default();
        f.uint(1, id).int(2, st.id(name)).int(3, st.id(name));
        profile.msg(5, &f);
        let mut line = Msg::default();
        line.uint(1, id);
        let mut loc = Msg::default();
        loc.uint(1, id).msg(4, &line);
        profile.msg(4, &loc);
        self.ids.insert(name.to_string(), id);
        id
    }
}
