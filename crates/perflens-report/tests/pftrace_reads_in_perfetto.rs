//! A `.pftrace` written by `PftraceWriter` reads in Perfetto's own
//! protobuf bindings: every field number and wire type is the schema's,
//! the tracks, nested slices, instants, annotations and flows come back
//! exactly as written, and the trace passes the checks Perfetto needs to
//! draw it (`scripts/check_pftrace.py`).
//!
//! The bindings are the `perfetto` package on PyPI, which `scripts/test`
//! installs into `~/.cache/perflens-py`; this test looks there and on
//! `PYTHONPATH`, and fails without them, saying how to install them.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use perflens_report::trace::pftrace::{
    Annotation, AnnotationValue, PftraceWriter, SCHEMA_NUMBERS, TrackEvent,
};

/// The module the script imports.
const BINDINGS: &str = "perfetto.protos.perfetto.trace.perfetto_trace_pb2";

const PROCESS: u64 = 1;
const MAIN: u64 = 2;
const WORKER: u64 = 3;
const TASK: u64 = 10;
/// The arrow from the task's await to the poll it waited on.
const FLOW: u64 = 0xdead_beef_0000_0007;

/// Writes the trace this test checks to `path`.
fn write_trace(path: &Path) -> std::io::Result<()> {
    let file = BufWriter::new(std::fs::File::create(path)?);
    let mut w = PftraceWriter::new(file);
    w.process(PROCESS, 4242, "demo")?;
    w.thread(MAIN, PROCESS, 4242, 4243, "main")?;
    w.thread(WORKER, PROCESS, 4242, 4244, "tokio-runtime-worker")?;
    w.track(TASK, PROCESS, "task 1: fetch")?;

    let parse = [
        Annotation {
            name: "file",
            value: AnnotationValue::Str("a.toml"),
        },
        Annotation {
            name: "bytes",
            value: AnnotationValue::Uint(4096),
        },
    ];
    let dropped = [
        Annotation {
            name: "cancelled",
            value: AnnotationValue::Bool(true),
        },
        Annotation {
            name: "delta",
            value: AnnotationValue::Int(-3),
        },
    ];
    w.slice_begin(
        1_000,
        MAIN,
        &TrackEvent {
            name: "main",
            ..TrackEvent::default()
        },
    )?;
    w.slice_begin(
        1_100,
        MAIN,
        &TrackEvent {
            name: "parse",
            annotations: &parse,
            ..TrackEvent::default()
        },
    )?;
    let await_fetch = TrackEvent {
        name: "await fetch",
        flow_ids: &[FLOW],
        ..TrackEvent::default()
    };
    w.slice_begin(1_200, TASK, &await_fetch)?;
    let poll = TrackEvent {
        name: "poll fetch",
        terminating_flow_ids: &[FLOW],
        ..TrackEvent::default()
    };
    w.slice_begin(1_300, WORKER, &poll)?;
    w.slice_end(1_400, WORKER)?;
    w.slice_end(1_500, TASK)?;
    let select = TrackEvent {
        name: "select branch dropped",
        annotations: &dropped,
        ..TrackEvent::default()
    };
    w.instant(1_600, TASK, &select)?;
    w.slice_end(1_700, MAIN)?;
    w.slice_end(1_800, MAIN)?;
    w.finish()?.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// `python3` with `~/.cache/perflens-py` (where `scripts/test` installs
/// the bindings) ahead of any `PYTHONPATH` of the caller's.
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

/// Fails, saying how to install them, if `python3` cannot import the
/// bindings.
fn require_bindings() {
    let import = python3()
        .args(["-c", &format!("import {BINDINGS}")])
        .output();
    assert!(
        import.is_ok_and(|o| o.status.success()),
        "python3 cannot import {BINDINGS} (Perfetto's protobuf bindings), which this test \
         needs: run `scripts/test --tools-only`, or `python3 -m pip install --target \
         ~/.cache/perflens-py perfetto`"
    );
}

#[test]
fn pftrace_reads_in_perfetto() {
    require_bindings();
    let path =
        std::env::temp_dir().join(format!("perflens-pftrace-{}.pftrace", std::process::id()));
    write_trace(&path).unwrap();

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_pftrace.py");
    let mut cmd = python3();
    cmd.arg(&script).arg(&path);
    for n in SCHEMA_NUMBERS {
        cmd.arg("--schema")
            .arg(format!("{}={}/{}", n.name, n.number, n.kind));
    }
    let out = cmd.output().unwrap();
    std::fs::remove_file(&path).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "check_pftrace.py failed:\n{stderr}");

    let want = r#"{
 "flows": [
  ["await fetch", "poll fetch"]
 ],
 "slices": {
  "10": [
   ["await fetch", 1200, 1500, {}],
   ["select branch dropped", 1600, null, {"cancelled": ["bool", true], "delta": ["int", -3]}]
  ],
  "2": [
   ["main", 1000, 1800, {}],
   ["parse", 1100, 1700, {"bytes": ["uint", 4096], "file": ["string", "a.toml"]}]
  ],
  "3": [
   ["poll fetch", 1300, 1400, {}]
  ]
 },
 "tracks": [
  {"name": "demo", "parent": null, "pid": 4242, "tid": null, "uuid": 1},
  {"name": "main", "parent": 1, "pid": 4242, "tid": 4243, "uuid": 2},
  {"name": "tokio-runtime-worker", "parent": 1, "pid": 4242, "tid": 4244, "uuid": 3},
  {"name": "task 1: fetch", "parent": 1, "pid": null, "tid": null, "uuid": 10}
 ]
}
"#;
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}
