//! Where `perflens top` gets its pictures from.
//!
//! The view depends only on a [`Frame`]: a [`Report`] and a few facts
//! about the target. A [`Source`] hands out a new frame on every refresh;
//! [`JsonFile`] reads the JSON report a program rewrites while it runs
//! (`PERFLENS_JSON=path PERFLENS_JSON_EVERY=seconds`). A source that
//! reads a running process directly plugs in with one more `impl Source`.

use perflens_report::Report;
use std::path::PathBuf;

/// One picture of the target.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// What the target measured so far.
    pub report: Report,
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
}

impl Target {
    /// `program (pid N)`, or just `program` without a pid.
    pub fn label(&self) -> String {
        match self.pid {
            Some(pid) => format!("{} (pid {pid})", self.program),
            None => self.program.clone(),
        }
    }
}

/// A supplier of pictures of one target.
pub trait Source {
    /// The current picture, or why there is none (one line).
    fn read(&mut self) -> Result<Frame, String>;
    /// What is being watched, for the header (one line).
    fn describe(&self) -> String;
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
        };
        Ok(Frame { report, target })
    }

    fn describe(&self) -> String {
        format!("JSON report {}", self.path.display())
    }
}
