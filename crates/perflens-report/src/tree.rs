//! The calling contexts as one tree of frames: what the hot paths'
//! segments describe, one node per distinct chain of frame names instead
//! of one path per leaf.
//!
//! A report's hot paths repeat every prefix they share (each path carries
//! its whole chain of segments), which is what a JSON reader wants and
//! what a tree view does not: `perflens top` shows the tree, and rebuilt
//! it from the paths at every refresh. [`FrameTree::from_snapshot`] makes
//! it straight from a snapshot (no path, no name copied per node), and
//! [`FrameTree::from_report`] from a report that only has the paths (a
//! saved JSON report); both give the same tree when no two callsites of
//! one chain share a name (see [`FrameTree::from_report`] for when they
//! do).

use std::borrow::Cow;
use std::collections::HashMap;

use perflens_format::histogram::Histogram;
use perflens_format::snapshot::{Mode, RawSnapshot};

use crate::build::{merge_hist, merge_paths, resolve_rows, subtree_sums};
use crate::model::Report;

/// The merged calling-context tree, by frame name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameTree {
    /// Frame names, each once; [`FrameNode::name`] indexes them.
    pub names: Vec<String>,
    /// The nodes, every parent before its children.
    pub nodes: Vec<FrameNode>,
    /// The node of each path of the snapshot it was made from (index =
    /// path), `None` for a path left out; empty when made from a report.
    pub node_of_path: Vec<Option<u32>>,
}

/// One chain of frame names (the chain of its ancestors, then its own):
/// the figures of the hot paths' [`Segment`](crate::Segment) at that
/// place, summed over the calling contexts with that chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameNode {
    /// The parent's index in [`FrameTree::nodes`], `None` for a
    /// top-level frame.
    pub parent: Option<u32>,
    /// The frame's name, an index into [`FrameTree::names`].
    pub name: u32,
    /// Completed calls.
    pub calls: u64,
    /// Inclusive time.
    pub total_ns: u64,
    /// Exclusive time.
    pub self_ns: u64,
    /// Median exclusive duration of one call (0 without a completed
    /// call, or in count mode). `None`: not known (a live reader that
    /// reads these only for the rows on screen).
    pub self_p50_ns: Option<u64>,
    /// 99th percentile of the exclusive duration of one call.
    pub self_p99_ns: Option<u64>,
    /// The deepest folded recursion here, when the function recursed.
    pub max_depth: Option<u32>,
    /// Bytes allocated while this frame was innermost; `None` when
    /// allocations were not counted.
    pub alloc_bytes: Option<u64>,
    /// Bytes allocated by this frame's subtree.
    pub alloc_incl_bytes: Option<u64>,
}

impl FrameTree {
    /// A node's name.
    pub fn name(&self, node: &FrameNode) -> &str {
        self.names
            .get(node.name as usize)
            .map_or("", String::as_str)
    }

    /// The tree of a snapshot: every calling context that ran (a call
    /// completed or a future was dropped) and its ancestors, merged
    /// across threads and then by chain of frame names, with the same
    /// figures as the report's hot-path segments (contexts with the same
    /// chain summed, their exclusive-time histograms merged for the
    /// percentiles). Contexts under an internal callsite (the overflow)
    /// are left out, as from the hot paths. Never fails: a malformed
    /// part of the snapshot is left out.
    pub fn from_snapshot(snap: &RawSnapshot) -> FrameTree {
        let merged = merge_paths(snap);
        let (tree, _) = resolve_rows(snap);
        let alloc = snap.alloc.is_some();
        let incl = alloc.then(|| {
            let own: Vec<u64> = merged.iter().map(|m| m.alloc_bytes).collect();
            subtree_sums(snap, &own)
        });
        // Frame names by callsite, each name once.
        let mut names: Vec<String> = Vec::new();
        let mut name_ids: HashMap<&str, u32> = HashMap::new();
        let name_of_callsite: Vec<u32> = (snap.callsites.iter())
            .map(|cs| {
                *name_ids.entry(cs.name.as_str()).or_insert_with(|| {
                    names.push(cs.name.clone());
                    (names.len() - 1) as u32
                })
            })
            .collect();
        let mut out = FrameTree {
            names,
            nodes: Vec::new(),
            node_of_path: Vec::new(),
        };
        // Per node: the exclusive-time histogram, borrowed while one
        // calling context has values (most nodes), merged beyond.
        // At most one node per path: room made once (growing these, and
        // rehashing the map, was a tenth of a large tree's build).
        let paths = snap.paths.len();
        out.nodes.reserve(paths);
        let mut hists: Vec<Cow<Histogram>> = Vec::with_capacity(paths);
        let mut node_of_path: Vec<Option<u32>> = vec![None; paths];
        let mut child = ChildMap::with_capacity_and_hasher(paths, Default::default());
        // The paths in index order, each after its parent (a path names
        // an earlier one: a live reader checks it, and a path whose parent
        // is not earlier is left out, as is everything below it). A path
        // has a frame when its chain (await sites left out: they are
        // transparent) holds only functions, and it or a path below it
        // ran.
        let parent_of = |p: usize| snap.paths[p].parent as usize;
        let is_await = |p: usize| tree.is_await.get(p).copied().unwrap_or(false);
        let mut chained = vec![false; paths];
        if let Some(root) = chained.first_mut() {
            *root = true;
        }
        for p in 1..paths {
            let q = parent_of(p);
            chained[p] = q < p
                && chained[q]
                && (is_await(p) || tree.row_of_path.get(p).copied().flatten().is_some());
        }
        let mut wanted = vec![false; paths];
        for p in (1..paths).rev() {
            if chained[p] && (wanted[p] || merged[p].ran()) {
                wanted[p] = true;
                wanted[parent_of(p)] = true;
            }
        }
        // The frame of each wanted path: its own node, or an await site's
        // caller's.
        let mut frame_of: Vec<Option<u32>> = vec![None; paths];
        for p in 1..paths {
            if !wanted[p] {
                continue;
            }
            let parent = frame_of[parent_of(p)];
            if is_await(p) {
                frame_of[p] = parent;
                continue;
            }
            let name = (name_of_callsite.get(snap.paths[p].callsite as usize))
                .copied()
                .unwrap_or(0);
            let (n, new) = out.child(&mut child, parent, name);
            if new {
                hists.push(Cow::Owned(Histogram::new()));
            }
            node_of_path[p] = Some(n);
            frame_of[p] = Some(n);
            let (f, m) = (&mut out.nodes[n as usize], &merged[p]);
            f.calls = f.calls.saturating_add(m.calls);
            f.total_ns = f.total_ns.saturating_add(m.total_ns);
            f.self_ns = f.self_ns.saturating_add(m.self_ns);
            if m.max_depth >= 2 {
                f.max_depth = Some(f.max_depth.unwrap_or(0).max(m.max_depth));
            }
            if let Some(incl) = &incl {
                let add = |v: &mut Option<u64>, x: u64| {
                    *v = Some(v.unwrap_or(0).saturating_add(x));
                };
                add(&mut f.alloc_bytes, m.alloc_bytes);
                add(&mut f.alloc_incl_bytes, incl[p]);
            }
            merge_hist(&mut hists[n as usize], &m.hist_self);
        }
        for (f, h) in out.nodes.iter_mut().zip(&hists) {
            (f.self_p50_ns, f.self_p99_ns) = FrameTree::self_percentiles(h, snap);
        }
        out.node_of_path = node_of_path;
        out
    }

    /// The p50 and p99 of a node's exclusive-time histogram (merged over
    /// its calling contexts) of `snap`, in ns: as the hot paths' segments
    /// have them (0 when empty or in count mode).
    pub fn self_percentiles(h: &Histogram, snap: &RawSnapshot) -> (Option<u64>, Option<u64>) {
        let ns = |t: Option<u64>| match snap.mode {
            Mode::Count => 0,
            _ => t.map_or(0, |t| snap.ticks_to_ns(t)),
        };
        let [p50, p99] = h.quantiles([0.50, 0.99]);
        (Some(ns(p50)), Some(ns(p99)))
    }

    /// The node named `name` under `parent`, and whether it is new (made
    /// now, with no figures).
    fn child(&mut self, children: &mut ChildMap, parent: Option<u32>, name: u32) -> (u32, bool) {
        let next = self.nodes.len() as u32;
        let n = *children.entry(child_key(parent, name)).or_insert(next);
        if n == next {
            self.nodes.push(FrameNode {
                parent,
                name,
                ..FrameNode::default()
            });
        }
        (n, n == next)
    }

    /// The tree of a report's hot paths: one node per distinct chain of
    /// frame names among the paths' prefixes, with the figures of the
    /// segment there. The paths repeat a prefix's segment in every path
    /// through it; two calling contexts with the same chain (two
    /// callsites of one name under one parent) are two segments, and the
    /// node has the first path's ([`FrameTree::from_snapshot`] sums
    /// them: prefer it where the snapshot is at hand).
    pub fn from_report(report: &Report) -> FrameTree {
        let mut out = FrameTree::default();
        let mut name_ids: HashMap<&str, u32> = HashMap::new();
        let frames: usize = report.paths.iter().map(|p| p.segments.len()).sum();
        let mut child = ChildMap::with_capacity_and_hasher(frames, Default::default());
        for path in &report.paths {
            let mut parent = None;
            for seg in &path.segments {
                let name = *name_ids.entry(seg.name.as_str()).or_insert_with(|| {
                    out.names.push(seg.name.clone());
                    (out.names.len() - 1) as u32
                });
                let (n, new) = out.child(&mut child, parent, name);
                if new {
                    out.nodes[n as usize] = FrameNode {
                        parent,
                        name,
                        calls: seg.calls,
                        total_ns: seg.total_ns,
                        self_ns: seg.self_ns,
                        self_p50_ns: Some(seg.self_p50_ns),
                        self_p99_ns: Some(seg.self_p99_ns),
                        max_depth: seg.max_depth,
                        alloc_bytes: seg.alloc_bytes,
                        alloc_incl_bytes: seg.alloc_incl_bytes,
                    };
                }
                parent = Some(n);
            }
        }
        out
    }
}

/// A node's children by name: the key is the parent's index plus one (0
/// for a top-level frame) and the name's index, in one word.
type ChildMap = HashMap<u64, u32, std::hash::BuildHasherDefault<WordHasher>>;

fn child_key(parent: Option<u32>, name: u32) -> u64 {
    (parent.map_or(0, |p| u64::from(p) + 1) << 32) | u64::from(name)
}

/// Hashes one word with a multiply (keys are indices, not chosen by an
/// adversary): SipHash cost more than the rest of a tree's build.
#[derive(Default, Clone, Copy)]
struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        // The high half mixed into the low bits hashbrown takes.
        self.0 = (v ^ (v >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 ^= self.0 >> 29;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
