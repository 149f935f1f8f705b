//! A written trace read back the way a viewer reads it, from either
//! format, and checked against the format's rules on the way:
//!
//! - Chrome JSON: every slice is a complete (`X`) event, so a begin
//!   always has its end; per track the slices come in time order and
//!   nest (none crosses another); every flow id has exactly one start
//!   (`s`) and one end (`f`), and each end binds to a slice of its track
//!   (the end's `bp: "e"`: the slice that encloses its timestamp).
//! - `.pftrace`: parsed by Perfetto's own protobuf bindings
//!   (`scripts/check_pftrace.py`), which check the same per track (ends
//!   match begins, time never goes back) and that every flow has both
//!   ends.
//!
//! Both give the same [`Trace`], so a test checks one workload's timeline
//! the same way in both formats.

#![allow(dead_code)] // each test binary uses a part

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A slice: name, begin and end (ns), and its arguments (annotations).
#[derive(Clone, Debug)]
pub struct Slice {
    pub name: String,
    pub begin: u64,
    pub end: u64,
    pub args: BTreeMap<String, Value>,
}

/// A track: a thread's (`tid`), a shared lane of short-lived threads, or
/// an async task's lane (`task`).
#[derive(Clone, Debug, Default)]
pub struct Track {
    pub name: String,
    pub task: bool,
    pub tid: Option<u64>,
    /// In the order they began.
    pub slices: Vec<Slice>,
    /// Instants: (name, ns).
    pub instants: Vec<(String, u64)>,
}

/// A trace: its tracks and its arrows, each arrow as (the slice or
/// instant it starts at, the slice it ends at), by name. In both formats
/// a creation arrow starts at `created`, a wait arrow at its await.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub tracks: Vec<Track>,
    pub flows: Vec<(String, String)>,
}

impl Trace {
    /// The tracks of async tasks.
    pub fn tasks(&self) -> impl Iterator<Item = &Track> {
        self.tracks.iter().filter(|t| t.task)
    }

    /// The tracks of threads (their own or shared).
    pub fn threads(&self) -> impl Iterator<Item = &Track> {
        self.tracks.iter().filter(|t| !t.task)
    }
}

/// Microseconds written with three decimals, as ns.
fn ns(v: &Value) -> u64 {
    (v.as_f64().expect("a number") * 1000.0).round() as u64
}

/// Checks that `slices` (of one track, in the order written) come in time
/// order and nest: each begins inside the open one, or after it ended.
pub fn check_nesting(track: &str, slices: &[Slice]) {
    let mut open: Vec<&Slice> = Vec::new();
    for (k, s) in slices.iter().enumerate() {
        if k > 0 {
            assert!(
                slices[k - 1].begin <= s.begin,
                "{track}: out of order at {s:?}"
            );
        }
        assert!(s.begin <= s.end, "{track}: {s:?}");
        while open
            .last()
            .is_some_and(|o| o.end <= s.begin && o.begin != s.begin)
        {
            open.pop();
        }
        if let Some(o) = open.last() {
            assert!(s.end <= o.end, "{track}: {s:?} crosses {o:?}");
        }
        open.push(s);
    }
}

/// The innermost slice of `slices` (nested, in begin order) that encloses
/// `ts`.
fn enclosing(slices: &[Slice], ts: u64) -> Option<&Slice> {
    (slices.iter()).rfind(|s| s.begin <= ts && ts <= s.end)
}

/// Reads and checks a Chrome JSON trace. Its first event names its
/// process; its task lanes are process `pid + 1e9`.
pub fn from_json(json: &Value) -> Trace {
    let events = json["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(events[0]["name"], "process_name", "{}", events[0]);
    let pid = events[0]["pid"].as_u64().expect("a pid");
    let tasks_pid = pid + 1_000_000_000;
    let mut tracks: BTreeMap<(u64, u64), Track> = BTreeMap::new();
    let key = |e: &Value| {
        let p = e["pid"].as_u64().expect("a pid");
        assert!(
            p == pid || p == tasks_pid,
            "an event of another process: {e}"
        );
        (p, e["tid"].as_u64().expect("a tid"))
    };
    let mut starts: BTreeMap<u64, (String, (u64, u64), u64)> = BTreeMap::new();
    let mut ends: BTreeMap<u64, ((u64, u64), u64)> = BTreeMap::new();
    for e in events {
        match e["ph"].as_str().expect("a phase") {
            "M" if e["name"] == "process_name" => {}
            "M" if e["name"] == "thread_name" => {
                let k = key(e);
                let t = tracks.entry(k).or_default();
                t.name = e["args"]["name"].as_str().expect("a name").into();
                t.task = k.0 == tasks_pid;
                t.tid = (!t.task).then_some(k.1);
            }
            "M" => assert_eq!(e["name"], "thread_sort_index", "{e}"),
            "X" => {
                let begin = ns(&e["ts"]);
                let mut args: BTreeMap<String, Value> = (e["args"].as_object())
                    .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                args.insert("cat".into(), e["cat"].clone());
                let s = Slice {
                    name: e["name"].as_str().expect("a name").into(),
                    begin,
                    end: begin + ns(&e["dur"]),
                    args,
                };
                tracks.entry(key(e)).or_default().slices.push(s);
            }
            "i" => {
                let name = e["name"].as_str().expect("a name").into();
                (tracks.entry(key(e)).or_default().instants).push((name, ns(&e["ts"])));
            }
            "s" => {
                let id = e["id"].as_u64().expect("an id");
                let name = e["name"].as_str().expect("a name").into();
                let old = starts.insert(id, (name, key(e), ns(&e["ts"])));
                assert!(old.is_none(), "flow {id} starts twice");
            }
            "f" => {
                assert_eq!(e["bp"], "e", "{e}");
                let id = e["id"].as_u64().expect("an id");
                let old = ends.insert(id, (key(e), ns(&e["ts"])));
                assert!(old.is_none(), "flow {id} ends twice");
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    for ((pid, tid), t) in &tracks {
        assert!(!t.name.is_empty(), "track {pid}/{tid} has no name");
        check_nesting(&t.name, &t.slices);
    }
    assert_eq!(
        starts.keys().collect::<Vec<_>>(),
        ends.keys().collect::<Vec<_>>(),
        "every flow has both ends"
    );
    let mut flows = Vec::new();
    for (id, (name, from, at)) in starts {
        let (to, to_at) = ends[&id];
        let to = enclosing(&tracks[&to].slices, to_at)
            .unwrap_or_else(|| panic!("flow {id} ends outside any slice"));
        // A creation starts where the future was made (the pftrace
        // writes an instant `created` there); a wait at its await.
        let from = match name.as_str() {
            "created" => name,
            _ => {
                let s = enclosing(&tracks[&from].slices, at)
                    .unwrap_or_else(|| panic!("flow {id} ({name}) starts outside any slice"));
                s.name.clone()
            }
        };
        flows.push((from, to.name.clone()));
    }
    flows.sort();
    Trace {
        tracks: tracks.into_values().collect(),
        flows,
    }
}

/// `python3` with `~/.cache/perflens-py` (where `scripts/test` installs
/// Perfetto's bindings) ahead of any `PYTHONPATH` of the caller's.
fn python3() -> Command {
    let mut cmd = Command::new("python3");
    let mut path = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/perflens-py").into_os_string())
        .unwrap_or_default();
    if let Some(rest) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(rest);
    }
    cmd.env("PYTHONPATH", path);
    cmd
}

/// Fails, saying how to install them, unless `python3` can import
/// Perfetto's bindings (the `perfetto` package).
fn require_perfetto_bindings() {
    let available = python3()
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        available,
        "python3 cannot import Perfetto's bindings, which this test needs: run \
         `scripts/test --tools-only`, or `python3 -m pip install --target \
         ~/.cache/perflens-py perfetto`"
    );
}

/// The summary `scripts/check_pftrace.py` prints of `path`, which it has
/// parsed with Perfetto's bindings and checked.
pub fn pftrace_summary(path: &Path) -> Value {
    require_perfetto_bindings();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_pftrace.py");
    let out = python3()
        .arg(&script)
        .arg(path)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check_pftrace.py failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).expect("the script's JSON")
}

/// Reads and checks a `.pftrace`. Its first track is its process; its
/// task lanes are under process `pid + 1e9`.
pub fn from_pftrace(path: &Path) -> Trace {
    let summary = pftrace_summary(path);
    let described = summary["tracks"].as_array().expect("tracks");
    let pid = described[0]["pid"]
        .as_u64()
        .expect("the process's track first");
    let tasks_pid = pid + 1_000_000_000;
    let pid_of_uuid: BTreeMap<String, Option<u64>> = (described.iter())
        .map(|t| (t["uuid"].to_string(), t["pid"].as_u64()))
        .collect();
    let mut tracks = Vec::new();
    for t in described {
        // Process tracks hold no slices of their own.
        if t["parent"].is_null() {
            assert!(
                (summary["slices"].get(t["uuid"].to_string())).is_none(),
                "slices on a process track"
            );
            continue;
        }
        let task = pid_of_uuid[&t["parent"].to_string()] == Some(tasks_pid);
        let mut track = Track {
            name: t["name"].as_str().expect("a name").into(),
            task,
            tid: t["tid"].as_u64(),
            ..Track::default()
        };
        let slices = summary["slices"].get(t["uuid"].to_string());
        for s in slices.and_then(Value::as_array).into_iter().flatten() {
            let name: String = s[0].as_str().expect("a name").into();
            let begin = s[1].as_u64().expect("a timestamp");
            let Some(end) = s[2].as_u64() else {
                track.instants.push((name, begin));
                continue;
            };
            let args = (s[3].as_object().expect("annotations").iter())
                .map(|(k, v)| (k.clone(), v[1].clone()))
                .collect();
            track.slices.push(Slice {
                name,
                begin,
                end,
                args,
            });
        }
        check_nesting(&track.name, &track.slices);
        tracks.push(track);
    }
    let mut flows: Vec<(String, String)> = (summary["flows"].as_array().expect("flows").iter())
        .map(|f| (f[0].as_str().unwrap().into(), f[1].as_str().unwrap().into()))
        .collect();
    flows.sort();
    Trace { tracks, flows }
}

/// `file:line:col` of the `.await` in `snippet`, the first below the line
/// holding `function` in `source`, the text of `file` (the column is the
/// `.`'s, as the await site names it).
pub fn await_site(source: &str, file: &str, function: &str, snippet: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let start = (lines.iter().position(|l| l.contains(function)))
        .unwrap_or_else(|| panic!("no {function} in {file}"));
    let (k, line) = (lines.iter().enumerate().skip(start))
        .find(|(_, l)| l.contains(snippet))
        .unwrap_or_else(|| panic!("no {snippet} below {function} in {file}"));
    let column = line.find(".await").expect("an .await") + 1;
    format!("{file}:{}:{column}", k + 1)
}
