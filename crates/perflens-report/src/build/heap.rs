//! The heap profile of a snapshot: its sampled allocations in use, by
//! path, with each path's exact allocation totals beside them.

use super::*;
use crate::model::{HeapPath, HeapProfile};
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
    Some(HeapProfile {
        rate_bytes: heap.rate_bytes,
        inuse_bytes: round_u64(heap.paths.iter().map(|p| p.inuse_bytes).sum()),
        inuse_objects: round_u64(heap.paths.iter().map(|p| p.inuse_objects).sum()),
        inuse_samples: heap.paths.iter().map(|p| p.samples).sum(),
        sampled: heap.sampled,
        dropped: heap.dropped,
        capacity: heap.capacity,
        inuse_paths,
    })
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
