//! Where `perflens top` gets its pictures from.
//!
//! The view depends only on a [`Frame`]: a [`Report`] and a few facts
//! about the target. A [`Source`] hands out a new frame on every refresh;
//! [`JsonFile`] reads the JSON report a program rewrites while it runs
//! (`PERFLENS_JSON=path PERFLENS_JSON_EVERY=seconds`); [`LiveSource`]
//! maps a live session (`PERFLENS_LIVE=1`) read-only and reads it at
//! every refresh, without touching the process.

use perflens_live::{LiveSession, State};
use perflens_report::{FrameTree, Report, ReportOptions};
use std::path::{Path, PathBuf};

/// One picture of the target.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// What the target measured so far.
    pub report: Report,
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
    /// screen come from the others).
    pub all_histograms: bool,
}

/// A supplier of pictures of one target.
pub trait Source {
    /// The current picture, or why there is none (one line).
    fn read(&mut self) -> Result<Frame, String>;
    /// What is being watched, for the header (one line).
    fn describe(&self) -> String;
    /// What the next reads must hold (all of it unless told).
    fn set_needs(&mut self, _needs: Needs) {}
}

/// A live session, mapped read-only (see `perflens-live`).
pub struct LiveSource {
    session: LiveSession,
    needs: Needs,
}

impl LiveSource {
    /// Opens the live session in directory `dir`.
    pub fn open(dir: &Path) -> Result<LiveSource, String> {
        let session = LiveSession::open(dir).map_err(|e| e.0)?;
        Ok(LiveSource {
            session,
            needs: Needs {
                hot_paths: true,
                all_histograms: true,
            },
        })
    }
}

impl Source for LiveSource {
    fn read(&mut self) -> Result<Frame, String> {
        let live = self
            .session
            .raw_snapshot(self.needs.all_histograms)
            .map_err(|e| e.0)?;
        // The tab shows the tree, not the paths: made straight from the
        // snapshot, it costs a fraction of the paths it would be made from.
        let report = live.report(&ReportOptions {
            hot_paths: false,
            ..ReportOptions::default()
        });
        let tree = (self.needs.hot_paths).then(|| FrameTree::from_snapshot(&live.snapshot));
        // Asked after the read: a session that finished meanwhile shows
        // this picture as running, and its final one next time.
        let state = self.session.state();
        let target = Target {
            pid: Some(self.session.pid()),
            program: self.session.program(),
            running: !report.finished && state != State::Stale,
            warning: live.missing(),
        };
        Ok(Frame {
            report,
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
    fn read(&mut self) -> Result<Frame, String> {
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
        Ok(Frame {
            report,
            tree: None,
            target,
        })
    }

    fn describe(&self) -> String {
        format!("JSON report {}", self.path.display())
    }
}
