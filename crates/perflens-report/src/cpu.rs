//! CPU samples: what a sampler hands over ([`CpuInput`]) and how
//! [`Report::add_cpu`] attributes it to function rows and hot paths.
//!
//! A sampler interrupts each thread at a fixed rate of its CPU time and
//! records the thread's current calling-context path: the innermost
//! measured frame on its shadow stack, as an index into
//! [`RawSnapshot::paths`]. Aggregated by path, that is a count and a CPU
//! time per path, exactly like the exclusive allocation counters of a
//! node, and it is attributed the same way:
//!
//! - **exclusive** figures of a function sum the paths whose leaf callsite
//!   has its name, every frame of a recursion included;
//! - **inclusive** figures of a path are the sum over its subtree of the
//!   calling-context tree; those of a function sum its outermost paths
//!   only (no ancestor of the same name), so a sample taken inside a
//!   recursion counts once;
//! - samples on the root path (0) or reported as outside are outside any
//!   measured function: they count in the totals, never in a row. So do
//!   samples on the overflow path (1), on a path whose function has not
//!   completed a call yet (no row: they still count in its callers'
//!   inclusive figures), and on a path index out of range.
//!
//! Kernel time the sampler could not put on a stack (its perf events
//! excluded the kernel) is never added to a function: it is a total of
//! its own, [`CpuSummary::kernel_unattributed_ns`].
//!
//! CPU figures are never scaled: in sampled timing mode as in the others,
//! every CPU sample stands for itself.

use std::collections::HashMap;

use perflens_format::snapshot::RawSnapshot;

use crate::build::{Merged, Tree, merge_paths, resolve_rows, subtree_sums};
use crate::model::{CpuFigures, CpuSummary, CpuThreadRow, HotPath, KernelTime, Report};

/// CPU samples aggregated by calling context, for [`Report::add_cpu`].
/// Its serde form is how a live session keeps the sampler's final
/// figures for readers (see `perflens-live`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuInput {
    /// Sampling frequency per thread, in samples per second of CPU time.
    pub frequency_hz: u32,
    /// Where samples came from: `"perf_event"`, `"timer"`, or
    /// `"unavailable: <reason>"` when sampling could not start (then
    /// everything else is empty or 0, and is ignored).
    pub source: String,
    /// `(path, samples, cpu_ns)`: samples whose innermost measured frame
    /// was `path` (an index into the snapshot's
    /// [`paths`](RawSnapshot::paths)) and the CPU time they stand for. A
    /// path may appear more than once (the entries are summed); path 0
    /// (the root) counts as outside any measured function.
    pub by_path: Vec<(u32, u64, u64)>,
    /// Samples taken outside any measured function.
    pub outside_samples: u64,
    /// CPU time of those samples, in ns.
    pub outside_cpu_ns: u64,
    /// Per sampled thread.
    pub threads: Vec<CpuThreadInput>,
    /// Samples lost (full buffers) over all threads.
    pub dropped: u64,
    /// Where the sampled threads' kernel time went (`None`: unknown).
    pub kernel: Option<KernelTime>,
    /// CPU time of the threads that excluded the kernel that no sample
    /// stands for, in ns (see [`CpuSummary::kernel_unattributed_ns`]);
    /// kept only when `kernel` says some kernel time was not attributed.
    pub kernel_unattributed_ns: u64,
}

/// One sampled thread of a [`CpuInput`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuThreadInput {
    /// OS thread id.
    pub tid: u64,
    /// Thread name, if any.
    pub name: Option<String>,
    /// Samples taken on this thread.
    pub samples: u64,
    /// CPU time of this thread's samples, in ns.
    pub cpu_ns: u64,
    /// Samples of this thread lost because its buffer was full.
    pub dropped: u64,
}

impl Report {
    /// Adds the CPU section: fills [`Report::cpu`] and the CPU figures
    /// ([`CpuFigures`]: `cpu_samples`, `cpu_ns` and `cpu_incl_ns`) of every
    /// function row and hot path (all 0 for those never sampled).
    ///
    /// `snap` must be the snapshot the report was built from (or a later
    /// one of the same session): `cpu.by_path` indexes its paths. Hot
    /// paths are matched to the snapshot's paths by id and frames, rows
    /// by name; a row or path with no counterpart gets 0.
    ///
    /// When `cpu.source` starts with `"unavailable"`, only the frequency
    /// and source are kept, and the CPU figures of every row and path are
    /// `None`: there are no figures, not zero ones.
    ///
    /// Replaces CPU data added before. Never panics; sums saturate.
    pub fn add_cpu(&mut self, snap: &RawSnapshot, cpu: &CpuInput) {
        let mut summary = CpuSummary {
            frequency_hz: cpu.frequency_hz,
            source: cpu.source.clone(),
            ..CpuSummary::default()
        };
        if !summary.is_available() {
            self.functions.iter_mut().for_each(|f| f.cpu = None);
            self.paths.iter_mut().for_each(|p| p.cpu = None);
            self.cpu = Some(summary);
            return;
        }

        let n = snap.paths.len();
        let (mut samples, mut ns) = (vec![0u64; n], vec![0u64; n]);
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        (summary.outside_samples, summary.outside_cpu_ns) =
            (cpu.outside_samples, cpu.outside_cpu_ns);
        (summary.samples, summary.cpu_ns) = (cpu.outside_samples, cpu.outside_cpu_ns);
        for &(path, s, t) in &cpu.by_path {
            add(&mut summary.samples, s);
            add(&mut summary.cpu_ns, t);
            match path as usize {
                0 => {
                    add(&mut summary.outside_samples, s);
                    add(&mut summary.outside_cpu_ns, t);
                }
                p if p < n => {
                    add(&mut samples[p], s);
                    add(&mut ns[p], t);
                }
                _ => {}
            }
        }
        summary.dropped = cpu.dropped;
        summary.kernel = cpu.kernel;
        summary.kernel_unattributed_ns = match cpu.kernel {
            Some(KernelTime::NotAttributed | KernelTime::Partly) => {
                Some(cpu.kernel_unattributed_ns)
            }
            _ => None,
        };
        summary.threads = (cpu.threads.iter())
            .map(|t| CpuThreadRow {
                tid: t.tid,
                name: t.name.clone(),
                samples: t.samples,
                cpu_ns: t.cpu_ns,
                dropped: t.dropped,
            })
            .collect();
        let incl_ns = subtree_sums(snap, &ns);

        let (tree, rows) = resolve_rows(snap);
        let mut acc = vec![CpuFigures::default(); rows.len()];
        for (path, row) in tree.row_of_path.iter().enumerate() {
            let Some(row) = *row else { continue };
            let a = &mut acc[row];
            add(&mut a.samples, samples[path]);
            add(&mut a.ns, ns[path]);
            if incl_ns[path] > 0 && tree.is_outermost(path, row) {
                add(&mut a.incl_ns, incl_ns[path]);
            }
        }
        let row_of_name: HashMap<&str, usize> = (rows.iter().enumerate())
            .map(|(i, r)| (r.name.as_str(), i))
            .collect();
        for f in &mut self.functions {
            let row = row_of_name.get(f.name.as_str());
            f.cpu = Some(row.map_or_else(CpuFigures::default, |&row| acc[row]));
        }

        let merged = merge_paths(snap);
        let ends = hot_path_ends(&tree, &merged, &self.paths);
        for (hp, end) in self.paths.iter_mut().zip(ends) {
            hp.cpu = Some(end.map_or_else(CpuFigures::default, |p| CpuFigures {
                samples: samples[p],
                ns: ns[p],
                incl_ns: incl_ns[p],
            }));
        }
        self.cpu = Some(summary);
    }
}

/// The snapshot path each hot path ends at (its last frame, leaf or
/// interior, whose exclusive samples are the path's `cpu_ns`): one with
/// the same id and frames, used at most once. Two callsites with the same name under the
/// same caller make two paths with the same id and frames (and two hot
/// paths); then the one whose merged calls and times match is preferred.
fn hot_path_ends(tree: &Tree<'_>, merged: &[Merged], paths: &[HotPath]) -> Vec<Option<usize>> {
    let snap = tree.snap;
    let mut by_id: HashMap<u64, Vec<usize>> = HashMap::new();
    for (p, info) in snap.paths.iter().enumerate().skip(1) {
        by_id.entry(info.id).or_default().push(p);
    }
    let frames_match = |p: usize, frames: &[String]| {
        tree.chain(p).is_some_and(|chain| {
            chain.len() == frames.len()
                && chain.iter().zip(frames).all(|(&q, name)| {
                    let cs = snap.paths[q].callsite as usize;
                    snap.callsites.get(cs).is_some_and(|c| c.name == *name)
                })
        })
    };
    let mut used = vec![false; snap.paths.len()];
    (paths.iter())
        .map(|hp| {
            let candidates: Vec<usize> = (by_id.get(&hp.id).into_iter().flatten())
                .copied()
                .filter(|&p| !used[p] && frames_match(p, &hp.frames))
                .collect();
            let same_figures = |&p: &usize| {
                let m = &merged[p];
                (m.calls, m.total_ns, m.self_ns) == (hp.calls, hp.total_ns, hp.self_ns)
            };
            let pick = (candidates.iter().copied().find(same_figures))
                .or_else(|| candidates.first().copied());
            if let Some(p) = pick {
                used[p] = true;
            }
            pick
        })
        .collect()
}
