//! Chrome Trace Event JSON, which Perfetto UI and `chrome://tracing`
//! load: one process, a track per thread (named, in the session's
//! order), each measured call (`cat` `sync`) and each poll of a measured
//! future (`poll`, with `ready` on the one that completed it) a complete
//! (`"X"`) event, so that no begin is ever left without its end.
//!
//! Times are microseconds from the session's start, written with exactly
//! three decimals (whole nanoseconds). `otherData.perflens` holds the
//! buffer size and the dropped events; each thread that lost events has
//! an instant saying how many, at the time of the last one lost.

use super::collapse::{Lane, lane_name};
use super::model::{SliceKind, ThreadTrack, Timeline, Track};
use std::io::{self, Write};

/// Writes `timeline` (of process `pid`, named `program`) to `out`.
pub fn write_chrome_json(
    timeline: &Timeline,
    pid: u32,
    program: &str,
    out: impl Write,
) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    let text = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    writeln!(
        out,
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"perflens\":{{\"buffer_bytes\":{},\
         \"dropped_events\":{},\"dropped_without_room\":{},\"end_us\":{}}}}},\"traceEvents\":[",
        timeline.buffer_bytes,
        timeline.dropped(),
        timeline.dropped_without_room,
        us(timeline.end_ns),
    )?;
    write!(
        out,
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
        text(program)
    )?;
    let mut lanes_named = std::collections::BTreeSet::new();
    for (k, t) in timeline.threads.iter().enumerate() {
        let tid = shown_tid(t);
        let (title, sort) = match t.lane {
            Lane::Own => (t.name.clone(), k),
            Lane::Shared(lane) => (lane_name(lane), timeline.threads.len() + lane as usize),
        };
        // A shared lane is named once.
        if t.lane == Lane::Own || lanes_named.insert(tid) {
            write!(
                out,
                ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\
                 \"args\":{{\"name\":{}}}}}",
                text(&title)
            )?;
            write!(
                out,
                ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\
                 \"args\":{{\"sort_index\":{sort}}}}}"
            )?;
        }
        // On a shared lane, each slice says whose it is.
        let whose = match t.lane {
            Lane::Own => String::new(),
            Lane::Shared(_) => format!(
                "\"thread\":{},\"tid\":{}",
                text(&t.name),
                tid_of(t.tid, t.index)
            ),
        };
        if let Some(at) = t.dropped_until_ns {
            write!(
                out,
                ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{}}}",
                text(&dropped_label(t.dropped)),
                us(at)
            )?;
        }
        for s in &t.slices {
            let cat = match s.kind {
                SliceKind::Call => "sync",
                SliceKind::Poll { .. } => "poll",
            };
            write!(
                out,
                ",\n{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{},\"pid\":{pid},\"tid\":{tid},\
                 \"ts\":{},\"dur\":{}",
                text(&s.name),
                us(s.begin_ns),
                us(s.end_ns - s.begin_ns)
            )?;
            let mut args: Vec<&str> = Vec::new();
            if s.kind == (SliceKind::Poll { ready: true }) {
                args.push("\"ready\":true");
            }
            if s.truncated {
                args.push("\"truncated\":true");
            }
            if !whose.is_empty() {
                args.push(&whose);
            }
            if !args.is_empty() {
                write!(out, ",\"args\":{{{}}}", args.join(","))?;
            }
            out.write_all(b"}")?;
        }
    }
    write_tasks(&mut out, timeline, pid, program)?;
    out.write_all(b"\n]}\n")?;
    out.flush()
}

/// The pseudo-process of the task lanes: the program's pid plus
/// 1,000,000,000, above any real pid, so a viewer shows the tasks apart
/// from the threads.
pub(crate) fn tasks_pid(pid: u32) -> u64 {
    u64::from(pid) + 1_000_000_000
}

/// A task lane's title.
pub(crate) fn task_title(t: &super::model::TaskTrack) -> String {
    match t.spawned_by {
        Some(by) => format!("task #{}: {} (spawned by #{by})", t.index, t.name),
        None => format!("task #{}: {}", t.index, t.name),
    }
}

/// A future slice's name: its function's, `(cancelled)` added.
pub(crate) fn future_name(s: &super::model::FutureSlice) -> String {
    if s.cancelled {
        format!("{} (cancelled)", s.name)
    } else {
        s.name.clone()
    }
}

/// The task lanes (a thread each of the pseudo-process [`tasks_pid`],
/// futures `cat` `future` with their polls, awaits `cat` `await` with
/// their wait) and the arrows (`s` and `f` events, bound to the
/// enclosing slices): `created`, from each future's creation to its
/// first poll; `waited on`, from each await span to the polls, inside
/// it, of the future it awaited.
fn write_tasks(
    out: &mut impl Write,
    timeline: &Timeline,
    pid: u32,
    program: &str,
) -> io::Result<()> {
    let text = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    if !timeline.tasks.is_empty() {
        let tasks = tasks_pid(pid);
        write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{tasks},\"args\":{{\"name\":{}}}}}",
            text(&format!("{program}: async tasks"))
        )?;
        for t in &timeline.tasks {
            let tid = t.index;
            write!(
                out,
                ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{tasks},\"tid\":{tid},\
                 \"args\":{{\"name\":{}}}}}",
                text(&task_title(t))
            )?;
            for s in &t.slices {
                let (cat, figure) = match s.wait_ns {
                    Some(wait) => ("await", format!("\"wait_ns\":{wait}")),
                    None => ("future", format!("\"polls\":{}", s.polls)),
                };
                write!(
                    out,
                    ",\n{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{},\"pid\":{tasks},\
                     \"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{{figure},\
                     \"cancelled\":{},\"truncated\":{}}}}}",
                    text(&future_name(s)),
                    us(s.begin_ns),
                    us(s.end_ns - s.begin_ns),
                    s.cancelled,
                    s.truncated
                )?;
            }
        }
    }
    let tid_of_thread = |index: u32| {
        (timeline.threads.iter())
            .find(|t| t.index == index)
            .map_or(u64::from(index), shown_tid)
    };
    for (k, f) in timeline.flows.iter().enumerate() {
        let id = k + 1;
        let (from_pid, from_tid) = match f.from.0 {
            Track::Thread(index) => (u64::from(pid), tid_of_thread(index)),
            Track::Task(lane) => (tasks_pid(pid), u64::from(lane)),
        };
        write!(
            out,
            ",\n{{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"{}\",\"id\":{id},\"pid\":{from_pid},\
             \"tid\":{from_tid},\"ts\":{}}}",
            f.name,
            us(f.from.1)
        )?;
        write!(
            out,
            ",\n{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"{}\",\"id\":{id},\
             \"pid\":{pid},\"tid\":{},\"ts\":{}}}",
            f.name,
            tid_of_thread(f.to.0),
            us(f.to.1)
        )?;
    }
    Ok(())
}

/// Nanoseconds as microseconds with three decimals.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A track's id: the OS thread id, or the thread's index where it is not
/// known (ids are distinct either way: an OS id is never below the
/// process's).
pub(crate) fn tid_of(tid: u64, index: u32) -> u64 {
    if tid != 0 { tid } else { u64::from(index) }
}

/// The first track id of the shared lanes of short-lived threads: above
/// any OS thread id.
const SHARED_TID: u64 = 1 << 32;

/// The track id a thread's slices are drawn on: its own, or its shared
/// lane's (`SHARED_TID + k`).
pub(crate) fn shown_tid(t: &ThreadTrack) -> u64 {
    match t.lane {
        Lane::Own => tid_of(t.tid, t.index),
        Lane::Shared(k) => SHARED_TID + u64::from(k),
    }
}

/// What a thread's instant for its dropped events says.
pub(crate) fn dropped_label(n: u64) -> String {
    format!("perflens: {n} events dropped before this (trace buffer full)")
}

#[cfg(test)]
mod tests {
    use super::super::model::{Slice, ThreadTrack, Timeline};
    use super::*;

    #[test]
    fn exact_bytes() {
        let slice = |name: &str, begin_ns, end_ns, depth, truncated| Slice {
            name: name.into(),
            kind: SliceKind::Call,
            begin_ns,
            end_ns,
            depth,
            truncated,
        };
        let timeline = Timeline {
            threads: vec![ThreadTrack {
                index: 1,
                tid: 0,
                name: "w\"1".into(),
                exited: true,
                slices: vec![
                    slice("a", 1_500, 9_001, 0, true),
                    slice("b", 2_000, 2_999, 1, false),
                    Slice {
                        kind: SliceKind::Poll { ready: true },
                        ..slice("f", 9_500, 9_600, 0, false)
                    },
                ],
                dropped: 7,
                dropped_until_ns: Some(1_000),
                ..ThreadTrack::default()
            }],
            end_ns: 12_345_678,
            buffer_bytes: 1 << 20,
            dropped_without_room: 1,
            ..Timeline::default()
        };
        let mut out = Vec::new();
        write_chrome_json(&timeline, 42, "demo", &mut out).unwrap();
        let want = r#"{"displayTimeUnit":"ns","otherData":{"perflens":{"buffer_bytes":1048576,"dropped_events":8,"dropped_without_room":1,"end_us":12345.678}},"traceEvents":[
{"ph":"M","name":"process_name","pid":42,"args":{"name":"demo"}},
{"ph":"M","name":"thread_name","pid":42,"tid":1,"args":{"name":"w\"1"}},
{"ph":"M","name":"thread_sort_index","pid":42,"tid":1,"args":{"sort_index":0}},
{"ph":"i","s":"t","name":"perflens: 7 events dropped before this (trace buffer full)","pid":42,"tid":1,"ts":1.000},
{"ph":"X","cat":"sync","name":"a","pid":42,"tid":1,"ts":1.500,"dur":7.501,"args":{"truncated":true}},
{"ph":"X","cat":"sync","name":"b","pid":42,"tid":1,"ts":2.000,"dur":0.999},
{"ph":"X","cat":"poll","name":"f","pid":42,"tid":1,"ts":9.500,"dur":0.100,"args":{"ready":true}}
]}
"#;
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
