//! The heap profile of a snapshot: its sampled allocations in use, by
//! path, with each path's exact allocation totals beside them.

use super::*;
use crate::model::{HeapPath, HeapProfile, HeapStack};
use perflens_format::snapshot::round_u64;

/// The report's heap profile, `None` unless the snapshot has one.
pub(super) fn heap_profile(tree: &Tree<'_>) -> Option<HeapProfile> {
    let snap = tree.snap;
    let heap = snap.heap.as_ref()?;
    let (alloc_bytes, alloc_objects) = path_allocations(snap);
    let mut inuse_paths: Vec<HeapPath> = (heap.paths.iter())
        .filter(|p| (p.path as usize) < snap.paths.len())
        .map(|p| {
            let i = p.path as usize;
            HeapPath {
                frames: frames(tree, i),
                inuse_bytes: round_u64(p.inuse_bytes),
                inuse_objects: round_u64(p.inuse_objects),
                alloc_bytes: alloc_bytes[i],
                alloc_objects: alloc_objects[i],
                samples: p.samples,
            }
        })
        .collect();
    inuse_paths.sort_by(|a, b| {
        (b.inuse_bytes.cmp(&a.inuse_bytes))
            .then(b.inuse_objects.cmp(&a.inuse_objects))
            .then(a.frames.cmp(&b.frames))
    });
    let inuse_stacks = stacks(tree, heap);
    Some(HeapProfile {
        rate_bytes: heap.rate_bytes,
        inuse_bytes: round_u64(heap.paths.iter().map(|p| p.inuse_bytes).sum()),
        inuse_objects: round_u64(heap.paths.iter().map(|p| p.inuse_objects).sum()),
        inuse_samples: heap.paths.iter().map(|p| p.samples).sum(),
        sampled: heap.sampled,
        dropped: heap.dropped,
        capacity: heap.capacity,
        inuse_paths,
        inuse_stacks,
        stacks_dropped: heap.stacks_dropped,
    })
}

/// The allocations in use by named native stack and path, the largest
/// first; empty unless the snapshot's stacks were named. Stacks whose
/// names agree (the same functions from different return addresses)
/// are one row.
fn stacks(tree: &Tree<'_>, heap: &perflens_format::snapshot::HeapSnapshot) -> Vec<HeapStack> {
    let snap = tree.snap;
    if heap.stacks.iter().all(|s| s.names.is_empty()) {
        return Vec::new();
    }
    let mut rows: HashMap<(Vec<String>, u32), (f64, f64, u64)> = HashMap::new();
    for s in heap
        .stacks
        .iter()
        .filter(|s| (s.path as usize) < snap.paths.len())
    {
        let outermost_first: Vec<String> = s.names.iter().rev().cloned().collect();
        let r = rows.entry((outermost_first, s.path)).or_default();
        r.0 += s.inuse_bytes;
        r.1 += s.inuse_objects;
        r.2 += s.samples;
    }
    let mut out: Vec<HeapStack> = rows
        .into_iter()
        .map(|((frames, path), (bytes, objects, samples))| HeapStack {
            frames,
            path: self::frames(tree, path as usize),
            inuse_bytes: round_u64(bytes),
            inuse_objects: round_u64(objects),
            samples,
        })
        .collect();
    out.sort_by(|a, b| {
        (b.inuse_bytes.cmp(&a.inuse_bytes))
            .then(b.inuse_objects.cmp(&a.inuse_objects))
            .then(a.frames.cmp(&b.frames))
            .then(a.path.cmp(&b.path))
    });
    out
}

/// The measured frames of `path`, outermost first (empty for the root:
/// outside any measured function). A path whose chain passes through an
/// internal callsite (the overflow path) is named by its own callsite.
pub(super) fn frames(tree: &Tree<'_>, path: usize) -> Vec<String> {
    let snap = tree.snap;
    if path == perflens_format::vocab::ROOT_PATH as usize {
        return Vec::new();
    }
    let name = |p: usize| {
        (snap.callsites.get(snap.paths[p].callsite as usize))
            .map_or_else(|| format!("[path {p}]"), |c| c.name.clone())
    };
    match tree.chain(path) {
        Some(chain) if !chain.is_empty() => chain.into_iter().map(name).collect(),
        _ => vec![name(path)],
    }
}

/// Bytes and allocations made at each path (its last frame innermost),
/// over every thread.
fn path_allocations(snap: &RawSnapshot) -> (Vec<u64>, Vec<u64>) {
    let mut bytes = vec![0u64; snap.paths.len()];
    let mut count = vec![0u64; snap.paths.len()];
    for node in snap.threads.iter().flat_map(|t| &t.nodes) {
        if let Some(b) = bytes.get_mut(node.path as usize) {
            *b = b.saturating_add(node.alloc_bytes);
            count[node.path as usize] = count[node.path as usize].saturating_add(node.alloc_count);
        }
    }
    (bytes, count)
}
