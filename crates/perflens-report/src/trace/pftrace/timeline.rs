//! A whole timeline written as `.pftrace`: a track per thread and per
//! task, the slices on them, and the arrows between them.

use super::*;

/// Writes `timeline` (of process `pid`, named `program`) as a `.pftrace`
/// to `out`: a process track, a thread track per thread (uuid 2 + its
/// index), each measured call and each poll of a measured future a slice
/// (annotated `ready` on the poll that completed its future, `truncated`
/// where its begin or end was not recorded), and for a thread that lost events an
/// instant saying how many, at the time of the last one lost.
pub fn write_timeline(
    timeline: &crate::trace::model::Timeline,
    pid: u32,
    program: &str,
    out: impl Write,
) -> io::Result<()> {
    use crate::trace::chrome::{dropped_label, future_name, task_title, tasks_pid, tid_of};
    use crate::trace::collapse::{Lane, lane_name};
    use crate::trace::model::SliceKind;
    use std::collections::HashMap;
    const PROCESS: u64 = 1;
    /// Task lanes' uuids start here, under their own process track.
    const TASKS: u64 = 1 << 40;
    /// Shared lanes of short-lived threads: uuids from here.
    const SHARED: u64 = 1 << 41;
    let pid32 = i32::try_from(pid).unwrap_or(i32::MAX);
    let mut w = PftraceWriter::new(io::BufWriter::new(out));
    w.process(PROCESS, pid32, program)?;
    let flag = |name| Annotation {
        name,
        value: AnnotationValue::Bool(true),
    };
    // Arrows (ids from 1) end at a poll's slice; a creation arrow
    // starts at an instant on the maker's track, a `waited on` one at its
    // await's slice on the task's lane.
    let mut starts: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    let mut from_awaits: HashMap<(u32, u64), Vec<u64>> = HashMap::new();
    let mut ends: HashMap<(u32, u64), Vec<u64>> = HashMap::new();
    for (k, f) in timeline.flows.iter().enumerate() {
        let id = k as u64 + 1;
        match f.from.0 {
            crate::trace::model::Track::Thread(index) => {
                starts.entry(index).or_default().push((f.from.1, id));
            }
            crate::trace::model::Track::Task(lane) => {
                from_awaits.entry((lane, f.from.1)).or_default().push(id);
            }
        }
        ends.entry(f.to).or_default().push(id);
    }
    // Threads on their own tracks first, then the shared lanes of
    // short-lived threads, each lane's threads in the order they ran.
    let mut order: Vec<&crate::trace::model::ThreadTrack> = timeline.threads.iter().collect();
    order.sort_by_key(|t| match t.lane {
        Lane::Own => (0, 0, t.index),
        Lane::Shared(k) => (1 + u64::from(k), t.first_ns, t.index),
    });
    let mut lanes_named = std::collections::BTreeSet::new();
    for t in order {
        let tid = i64::try_from(tid_of(t.tid, t.index)).unwrap_or(i64::MAX);
        let track = match t.lane {
            Lane::Own => {
                let track = 2 + u64::from(t.index);
                w.thread(track, PROCESS, pid32, tid, &t.name)?;
                track
            }
            Lane::Shared(k) => {
                let track = SHARED + u64::from(k);
                if lanes_named.insert(k) {
                    w.track(track, PROCESS, &lane_name(k))?;
                }
                track
            }
        };
        // On a shared lane, each slice says whose it is.
        let whose = [
            Annotation {
                name: "thread",
                value: AnnotationValue::Str(&t.name),
            },
            Annotation {
                name: "tid",
                value: AnnotationValue::Uint(tid_of(t.tid, t.index)),
            },
        ];
        let whose: &[Annotation<'_>] = match t.lane {
            Lane::Own => &[],
            Lane::Shared(_) => &whose,
        };
        if let Some(at) = t.dropped_until_ns {
            let label = dropped_label(t.dropped);
            w.instant(
                at,
                track,
                &TrackEvent {
                    name: &label,
                    ..TrackEvent::default()
                },
            )?;
        }
        // Creations, in time order, each written just before the first
        // begin or end that comes after it (so inside the slice that was
        // open when the future was made).
        let mut made = starts.remove(&t.index).unwrap_or_default();
        made.sort_unstable();
        let mut made = made.into_iter().peekable();
        let mut creations_before = |w: &mut PftraceWriter<_>, ts: u64, inclusive: bool| {
            while let Some(&(at, id)) = made.peek() {
                if at > ts || (at == ts && !inclusive) {
                    break;
                }
                let ids = [id];
                let ev = TrackEvent {
                    name: "created",
                    flow_ids: &ids,
                    ..TrackEvent::default()
                };
                w.instant(at, track, &ev)?;
                made.next();
            }
            Ok::<(), io::Error>(())
        };
        // Slices come parent first: a slice ends every open one at its
        // depth or deeper (its earlier siblings and their children).
        let mut open: Vec<(u32, u64)> = Vec::new();
        for s in &t.slices {
            while open.last().is_some_and(|&(depth, _)| depth >= s.depth) {
                let (_, end) = open.pop().unwrap_or_default();
                creations_before(&mut w, end, false)?;
                w.slice_end(end, track)?;
            }
            creations_before(&mut w, s.begin_ns, false)?;
            let completed = s.kind == SliceKind::Poll { ready: true };
            let no_ids: Vec<u64> = Vec::new();
            let arriving = match s.kind {
                SliceKind::Poll { .. } => ends.get(&(t.index, s.begin_ns)).unwrap_or(&no_ids),
                SliceKind::Call => &no_ids,
            };
            let mut marks: Vec<Annotation<'_>> = Vec::new();
            if completed {
                marks.push(flag("ready"));
            }
            if s.truncated {
                marks.push(flag("truncated"));
            }
            marks.extend_from_slice(whose);
            let ev = TrackEvent {
                name: &s.name,
                annotations: &marks,
                terminating_flow_ids: arriving,
                ..TrackEvent::default()
            };
            w.slice_begin(s.begin_ns, track, &ev)?;
            open.push((s.depth, s.end_ns));
        }
        while let Some((_, end)) = open.pop() {
            creations_before(&mut w, end, false)?;
            w.slice_end(end, track)?;
        }
        creations_before(&mut w, u64::MAX, true)?;
    }
    if !timeline.tasks.is_empty() {
        let tasks_pid = i32::try_from(tasks_pid(pid)).unwrap_or(i32::MAX);
        w.process(TASKS, tasks_pid, &format!("{program}: async tasks"))?;
        for t in &timeline.tasks {
            let track = TASKS + u64::from(t.index);
            w.track(track, TASKS, &task_title(t))?;
            let mut open: Vec<(u32, u64)> = Vec::new();
            for s in &t.slices {
                while open.last().is_some_and(|&(depth, _)| depth >= s.depth) {
                    let (_, end) = open.pop().unwrap_or_default();
                    w.slice_end(end, track)?;
                }
                let figure = match s.wait_ns {
                    Some(wait) => Annotation {
                        name: "wait_ns",
                        value: AnnotationValue::Uint(wait),
                    },
                    None => Annotation {
                        name: "polls",
                        value: AnnotationValue::Uint(s.polls.into()),
                    },
                };
                let marks = [figure, flag("cancelled"), flag("truncated")];
                let shown = 1 + usize::from(s.cancelled) + usize::from(s.truncated);
                let picked: Vec<Annotation<'_>> = (marks.iter().copied())
                    .filter(|a| match a.name {
                        "cancelled" => s.cancelled,
                        "truncated" => s.truncated,
                        _ => true,
                    })
                    .collect();
                debug_assert_eq!(picked.len(), shown);
                let name = future_name(s);
                let no_ids: Vec<u64> = Vec::new();
                let leaving = match s.wait_ns {
                    Some(_) => from_awaits.get(&(t.index, s.begin_ns)).unwrap_or(&no_ids),
                    None => &no_ids,
                };
                let ev = TrackEvent {
                    name: &name,
                    annotations: &picked,
                    flow_ids: leaving,
                    ..TrackEvent::default()
                };
                w.slice_begin(s.begin_ns, track, &ev)?;
                open.push((s.depth, s.end_ns));
            }
            while let Some((_, end)) = open.pop() {
                w.slice_end(end, track)?;
            }
        }
    }
    w.finish()?.flush()
}
