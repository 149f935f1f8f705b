//! Where `perflens top` gets its pictures from.
//!
//! The view depends only on a [`Capture`]: a [`Report`] and a few facts
//! about the target. A [`Source`] hands out a new capture on every refresh;
//! [`JsonFile`] reads the JSON report a program rewrites while it runs
//! (`PERFLENS_JSON=path PERFLENS_JSON_EVERY=seconds`); [`LiveSource`]
//! maps a live session (`PERFLENS_LIVE=1`) read-only and reads it at
//! every refresh, without touching the process.

use perflens_live::{Histograms, LiveSession, LiveSnapshot, State};
use perflens_report::{FrameTree, Report, ReportOptions};
use std::path::{Path, PathBuf};

/// One refresh of the target: one picture of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Capture {
    /// What the target measured so far.
    pub report: Report,
    /// What the source was asked to put in it (a live source leaves out
    /// what the view does not show; a report file holds everything).
    pub holds: Needs,
    /// The hot paths as a tree of frames, when the source made it (a
    /// live session's, straight from its snapshot; then the report has
    /// no paths). `None`: made from the report's paths where needed.
    pub tree: Option<FrameTree>,
    /// Who the target is and whether it still runs.
    pub target: Target,
}

/// Facts about the target program that the report does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its process id, when known.
    pub pid: Option<u32>,
    /// Its name, or what stands for it (the report file's path).
    pub program: String,
    /// False once the target has ended: no newer picture will come.
    pub running: bool,
    /// What the picture lacks, when it is incomplete (one line).
    pub warning: Option<String>,
}

impl Target {
    /// `program (pid N)`, or just `program` without a pid; then the
    /// warning, if any.
    pub fn label(&self) -> String {
        let who = match self.pid {
            Some(pid) => format!("{} (pid {pid})", self.program),
            None => self.program.clone(),
        };
        match &self.warning {
            Some(w) => format!("{who} ({w})"),
            None => who,
        }
    }
}

/// What the view needs from the next picture, so that a source that can
/// leave work out (a live session's reader) does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The hot paths' tree of frames (their tab is on screen).
    pub hot_paths: bool,
    /// Every histogram, not only the inclusive-time one (columns on
    /// screen come from the others). The Hot paths tab never asks: its
    /// Self percentiles are read apart, for the rows on screen and the
    /// rows whose order they decide ([`Source::fill_self_percentiles`]).
    pub all_histograms: bool,
    /// The function rows (the Functions and Async tabs), and with them
    /// the inclusive-time histograms (their time percentiles; without,
    /// those are only counted).
    pub functions: bool,
    /// The data-flow rows' percentiles (the Data flow tab): the
    /// inclusive-time histograms (channel latency, lock holds), and the
    /// exclusive-time ones of the lock sites' nodes alone (their waits).
    /// A flow site's counts are exact without.
    pub flow: bool,
}

impl Needs {
    /// Everything a report can hold.
    pub const ALL: Needs = Needs {
        hot_paths: true,
        all_histograms: true,
        functions: true,
        flow: true,
    };
}

/// A supplier of pictures of one target.
pub trait Source {
    /// The current picture, or why there is none (one line).
    fn read(&mut self) -> Result<Capture, String>;
    /// What is being watched, for the header (one line).
    fn describe(&self) -> String;
    /// What the next reads must hold (all of it unless told).
    fn set_needs(&mut self, _needs: Needs) {}

    /// Fills in the Self percentiles of nodes `nodes` of `tree` (the
    /// last picture's, from this source), which the read left out to be
    /// read only where they are seen: the rows on screen, and the rows
    /// whose order they decide (see [`Needs`]). A source that never
    /// leaves them out has nothing to do.
    fn fill_self_percentiles(
        &mut self,
        _tree: &mut FrameTree,
        _nodes: &[u32],
    ) -> Result<(), String> {
        Ok(())
    }
}

/// The largest quantile of a node's exclusive times a view shows (the
/// Hot paths tab's Self p99): the read of those times stops at its rank.
const SELF_QUANTILE: f64 = 0.99;

/// A live session, mapped read-only (see `perflens-live`).
pub struct LiveSource {
    session: LiveSession,
    needs: Needs,
    /// The last read, while its tree lacks Self percentiles (read later,
    /// where they are seen), and the calling contexts of each of its
    /// tree's nodes, once asked for.
    last: Option<(LiveSnapshot, Option<Contexts>)>,
}

/// The calling contexts (thread, node: indices into a snapshot's threads
/// and their nodes) of each node of a tree made from that snapshot:
/// node `n`'s are `of[start[n]..start[n + 1]]`.
struct Contexts {
    start: Vec<u32>,
    of: Vec<(usize, usize)>,
}

impl Contexts {
    fn new(live: &LiveSnapshot, tree: &FrameTree) -> Contexts {
        let node_of = |path: u32| tree.node_of_path.get(path as usize).copied().flatten();
        let nodes = || {
            (live.snapshot.threads.iter().enumerate()).flat_map(|(t, thread)| {
                (thread.nodes.iter().enumerate())
                    .filter_map(move |(j, n)| Some((node_of(n.path)?, (t, j))))
            })
        };
        let mut start = vec![0u32; tree.nodes.len() + 1];
        for (n, _) in nodes() {
            if let Some(s) = start.get_mut(n as usize + 1) {
                *s += 1;
            }
        }
        for i in 0..tree.nodes.len() {
            start[i + 1] += start[i];
        }
        let mut next = start.clone();
        let mut of = vec![(0, 0); start[tree.nodes.len()] as usize];
        for (n, at) in nodes() {
            if let Some(k) = next
                .get_mut(n as usize)
                .filter(|_| (n as usize) < tree.nodes.len())
            {
                of[*k as usize] = at;
                *k += 1;
            }
        }
        Contexts { start, of }
    }

    fn of(&self, node: u32) -> &[(usize, usize)] {
        let n = node as usize;
        match (self.start.get(n), self.start.get(n + 1)) {
            (Some(&a), Some(&b)) => &self.of[a as usize..b as usize],
            _ => &[],
        }
    }
}

impl LiveSource {
    /// Opens the live session in directory `dir`.
    pub fn open(dir: &Path) -> Result<LiveSource, String> {
        let session = LiveSession::open(dir).map_err(|e| e.0)?;
        Ok(LiveSource {
            session,
            needs: Needs::ALL,
            last: None,
        })
    }
}

impl Source for LiveSource {
    fn read(&mut self) -> Result<Capture, String> {
        // The function rows' time percentiles come from the inclusive
        // histograms; without those rows, their counts (the timed calls)
        // are all a view needs of them.
        let what = match self.needs {
            Needs {
                all_histograms: true,
                ..
            } => Histograms::All,
            Needs {
                functions: true, ..
            }
            | Needs { flow: true, .. } => Histograms::Inclusive,
            _ => Histograms::Counts,
        };
        let mut live = self.session.raw_snapshot_with(what).map_err(|e| e.0)?;
        if self.needs.flow && what != Histograms::All {
            // The lock sites' waits: their nodes' exclusive-time
            // histograms, read alone (a few nodes of thousands).
            lock_waits(&self.session, &mut live)?;
        }
        // The tab shows the tree, not the paths: made straight from the
        // snapshot, it costs a fraction of the paths it would be made from.
        let report = live.report(&ReportOptions {
            hot_paths: false,
            functions: self.needs.functions,
            ..ReportOptions::default()
        });
        let mut tree = (self.needs.hot_paths).then(|| FrameTree::from_snapshot(&live.snapshot));
        // Asked after the read: a session that finished meanwhile shows
        // this picture as running, and its final one next time.
        let state = self.session.state();
        let target = Target {
            pid: Some(self.session.pid()),
            program: self.session.program(),
            running: !report.finished && state != State::Stale,
            warning: live.missing(),
        };
        self.last = None;
        if let Some(tree) = &mut tree {
            if !self.needs.all_histograms {
                // The exclusive-time histograms were not read: their
                // percentiles come later, for the rows on screen.
                for n in &mut tree.nodes {
                    (n.self_p50_ns, n.self_p99_ns) = (None, None);
                }
                self.last = Some((live, None));
            }
        }
        Ok(Capture {
            report,
            holds: self.needs,
            tree,
            target,
        })
    }

    fn describe(&self) -> String {
        format!("live session {}", self.session.dir().display())
    }

    fn set_needs(&mut self, needs: Needs) {
        self.needs = needs;
    }

    fn fill_self_percentiles(&mut self, tree: &mut FrameTree, nodes: &[u32]) -> Result<(), String> {
        let LiveSource { session, last, .. } = self;
        let Some((live, contexts)) = last else {
            return Ok(());
        };
        let contexts = contexts.get_or_insert_with(|| Contexts::new(live, tree));
        // Each node asked for once, if it lacks them; its calling
        // contexts on every thread.
        let mut asked: Vec<u32> = (nodes.iter().copied())
            .filter(|&n| (tree.nodes.get(n as usize)).is_some_and(|x| x.self_p50_ns.is_none()))
            .collect();
        asked.sort_unstable();
        asked.dedup();
        // Each node's contexts read in step, only up to the rank of the
        // largest percentile shown (p99).
        let frames: Vec<&[(usize, usize)]> = asked.iter().map(|&n| contexts.of(n)).collect();
        let merged = session
            .self_quantile_histograms(live, &frames, SELF_QUANTILE)
            .map_err(|e| e.0)?;
        for (&n, h) in asked.iter().zip(&merged) {
            if let Some(node) = tree.nodes.get_mut(n as usize) {
                (node.self_p50_ns, node.self_p99_ns) =
                    FrameTree::self_percentiles(h, &live.snapshot);
            }
        }
        Ok(())
    }
}

/// Reads the exclusive-time histograms (the waits) of the lock sites'
/// nodes of `live`, read without them, into its snapshot.
fn lock_waits(session: &LiveSession, live: &mut LiveSnapshot) -> Result<(), String> {
    use perflens_format::FlowKind;
    use perflens_format::snapshot::CallsiteKind;
    let snap = &live.snapshot;
    let is_lock: Vec<bool> = (snap.paths.iter().enumerate())
        .map(|(i, p)| {
            i != 0
                && (snap.callsites.get(p.callsite as usize))
                    .is_some_and(|c| c.kind == CallsiteKind::Flow(FlowKind::Lock))
        })
        .collect();
    if !is_lock.contains(&true) {
        return Ok(());
    }
    let at: Vec<(usize, usize)> = (snap.threads.iter().enumerate())
        .flat_map(|(t, thread)| {
            (thread.nodes.iter().enumerate())
                .filter(|(_, n)| is_lock.get(n.path as usize) == Some(&true))
                .map(move |(j, _)| (t, j))
        })
        .collect();
    let hists = session.self_histograms(live, &at).map_err(|e| e.0)?;
    for ((t, j), h) in at.into_iter().zip(hists) {
        if let Some(n) = live
            .snapshot
            .threads
            .get_mut(t)
            .and_then(|t| t.nodes.get_mut(j))
        {
            n.hist_self = h;
        }
    }
    Ok(())
}

/// A JSON report file that the target rewrites atomically every
/// `PERFLENS_JSON_EVERY` seconds; its last write has `"finished": true`.
pub struct JsonFile {
    path: PathBuf,
}

impl JsonFile {
    /// Watches `path`; nothing is read until [`Source::read`].
    pub fn new(path: impl Into<PathBuf>) -> JsonFile {
        JsonFile { path: path.into() }
    }
}

impl Source for JsonFile {
    fn read(&mut self) -> Result<Capture, String> {
        let path = self.path.display();
        let file =
            std::fs::File::open(&self.path).map_err(|e| format!("cannot open {path}: {e}"))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(format!("{path} is a directory, not a report"));
        }
        let report = Report::from_json_reader(std::io::BufReader::new(file))
            .map_err(|e| format!("{path}: {e}"))?;
        let target = Target {
            pid: None,
            program: self.path.display().to_string(),
            running: !report.finished,
            warning: None,
        };
        Ok(Capture {
            report,
            holds: Needs::ALL,
            tree: None,
            target,
        })
    }

    fn describe(&self) -> String {
        format!("JSON report {}", self.path.display())
    }
}
