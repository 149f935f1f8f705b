//! The timeline a trace's events make: for each thread, the slices of its
//! measured calls and of the polls of its measured futures, nested, in
//! nanoseconds from the session's start.
//!
//! Each thread's events are replayed with a stack. The flight recorder
//! may have dropped a thread's oldest events, and a session may end while
//! calls are open, so the replay accepts any stream:
//! - an end whose begin was dropped begins at the thread's first kept
//!   event;
//! - a begin still open at the end ends at the thread's last event if it
//!   exited, else at the session's end;
//! - an end that closes a call below open ones (their guards were leaked)
//!   ends those at the same time; an end of a call not open is ignored.
//!
//! All of these slices are marked `truncated`.

use super::collapse::{Lane, ThreadSpan, assign_lanes};
use perflens_format::RawSnapshot;
use perflens_format::trace::{
    AWAIT_BEGIN, AWAIT_DROP, AWAIT_END, FUT_DROP, FUT_NEW, POLL_BEGIN, POLL_END, READY, RawTrace,
    SPAN_BEGIN, SPAN_END,
};
use std::collections::HashMap;

/// A trace laid out for viewers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// One per thread that wrote events, by thread index.
    pub threads: Vec<ThreadTrack>,
    /// One per async task: the futures polled inside one another, from
    /// the one an executor polled directly (the task's root), whatever
    /// threads polled them.
    pub tasks: Vec<TaskTrack>,
    /// Arrows from a future's creation (on the thread that made it) to
    /// its first poll (on the thread that polled it).
    pub flows: Vec<Flow>,
    /// The session's length.
    pub end_ns: u64,
    /// The trace buffer's size.
    pub buffer_bytes: u64,
    /// Events dropped because no room could be made at all.
    pub dropped_without_room: u64,
}

/// One thread's lane.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadTrack {
    /// The thread's index in the session.
    pub index: u32,
    /// Its OS id (0: not known).
    pub tid: u64,
    /// Its name, or `thread #index`.
    pub name: String,
    /// Whether it had exited when the session ended.
    pub exited: bool,
    /// Slices sorted by begin, a parent before its children.
    pub slices: Vec<Slice>,
    /// Events of this thread the flight recorder dropped.
    pub dropped: u64,
    /// The time of the last of those.
    pub dropped_until_ns: Option<u64>,
    /// Its first and last kept events' times.
    pub first_ns: u64,
    /// See `first_ns`.
    pub last_ns: u64,
    /// Its own track, or a track shared with other short-lived threads
    /// ([`Timeline::collapse_short_threads`]).
    pub lane: Lane,
}

/// One async task's lane: each of its futures a slice from its first
/// poll to its completion (or its drop, when cancelled).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskTrack {
    /// `task #k` (k from 1, in the order their roots were first polled).
    pub index: u32,
    /// The root future's name.
    pub name: String,
    /// The task whose future made this task's root, if a measured one
    /// did (a spawn inside it).
    pub spawned_by: Option<u32>,
    /// The futures' slices, by begin, parents first.
    pub slices: Vec<FutureSlice>,
}

/// One measured future's life on its task's lane.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FutureSlice {
    /// The measured async function.
    pub name: String,
    /// Its first poll's begin.
    pub begin_ns: u64,
    /// The end of the poll that completed it, or its drop.
    pub end_ns: u64,
    /// Nesting on the lane: 0 for the task's root.
    pub depth: u32,
    /// Dropped before it completed.
    pub cancelled: bool,
    /// Still pending when the trace ended (or its end was dropped).
    pub truncated: bool,
    /// Polls it took (0 for an await).
    pub polls: u32,
    /// The future's (or the await's) id in the trace.
    pub id: u64,
    /// An await span (`await file:line:col`, from its first suspension
    /// to its completion or drop, nested in the future that awaited):
    /// the ticks it spent suspended, in ns, as its site's wait counts
    /// them. `None` for a future.
    pub wait_ns: Option<u64>,
}

/// Where an arrow starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Track {
    /// A thread's track, by the thread's index.
    Thread(u32),
    /// A task's lane, by its number.
    Task(u32),
}

/// An arrow to a poll on a thread's track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// `created`: from a future's creation (on the thread that made it)
    /// to its first poll; `waited on`: from an await span (on its lane)
    /// to each poll, inside it, of the future it awaited.
    pub name: &'static str,
    /// Where and when it starts.
    pub from: (Track, u64),
    /// Thread index and time where it ends: a poll's begin.
    pub to: (u32, u64),
}

/// What a slice is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SliceKind {
    /// A call of a measured sync function.
    #[default]
    Call,
    /// A poll of a measured future; `ready`: it completed there.
    Poll {
        /// The poll returned `Ready`.
        ready: bool,
    },
}

/// One measured call, or one poll of a measured future.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slice {
    /// The measured function.
    pub name: String,
    /// A call or a poll.
    pub kind: SliceKind,
    /// When it began, from the session's start.
    pub begin_ns: u64,
    /// When it ended.
    pub end_ns: u64,
    /// Nesting on its track: 0 for an outermost call.
    pub depth: u32,
    /// Its begin or end was not recorded (see the module's doc).
    pub truncated: bool,
}

impl Timeline {
    /// The timeline of `trace`, named with `snap`, the session's final
    /// snapshot (its callsites, paths, threads and clock rate).
    pub fn new(trace: &RawTrace, snap: &RawSnapshot) -> Timeline {
        let to_ns = |ticks: u64| {
            (ticks.saturating_sub(trace.start_ticks) as f64 * snap.ns_per_tick).round() as u64
        };
        let end_ns = to_ns(trace.end_ticks);
        let name_of = |paths: &[u32], node: u32| -> String {
            (paths.get(node as usize))
                .and_then(|&p| snap.paths.get(p as usize))
                .and_then(|p| snap.callsites.get(p.callsite as usize))
                .map_or_else(|| format!("node #{node}"), |c| c.name.clone())
        };
        let threads = (trace.threads.iter())
            .map(|t| {
                let info = snap.threads.iter().find(|s| s.index == t.index);
                let exited = info.is_some_and(|s| s.exited);
                let first = t.events.first().map_or(0, |e| to_ns(e.ticks));
                let last = t.events.last().map_or(0, |e| to_ns(e.ticks));
                // A call still open ends with its thread, or the session.
                let end = if exited { last } else { end_ns.max(last) };
                let events = (t.events.iter()).map(|e| (e.kind, e.flags, e.arg, to_ns(e.ticks)));
                let mut slices = replay(events, first, end);
                // Parents began no later than their children, and end
                // after them: by begin, then depth.
                slices.sort_by_key(|s| (s.begin_ns, s.depth));
                let slices = (slices.into_iter())
                    .map(|s| Slice {
                        name: name_of(&t.node_paths, s.node),
                        kind: s.kind,
                        begin_ns: s.begin_ns,
                        end_ns: s.end_ns,
                        depth: s.depth,
                        truncated: s.truncated,
                    })
                    .collect();
                ThreadTrack {
                    index: t.index,
                    tid: info.map_or(0, |s| s.tid),
                    name: (info.and_then(|s| s.name.clone()))
                        .unwrap_or_else(|| format!("thread #{}", t.index)),
                    exited,
                    slices,
                    dropped: t.dropped,
                    dropped_until_ns: (t.dropped != 0).then(|| to_ns(t.dropped_until_ticks)),
                    first_ns: first,
                    last_ns: last,
                    lane: Lane::Own,
                }
            })
            .collect();
        let (tasks, flows) = tasks(trace, snap, &to_ns, end_ns);
        Timeline {
            threads,
            tasks,
            flows,
            end_ns,
            buffer_bytes: trace.buffer_bytes as u64,
            dropped_without_room: trace.dropped_without_room,
        }
    }

    /// Draws the threads that exited after living less than
    /// `short_below_ns` (from their first to their last event) on the
    /// fewest shared tracks, `short-lived threads (k)`, none overlapping
    /// another on its track (see [`collapse`](super::collapse)); 0 keeps
    /// every thread on its own track.
    pub fn collapse_short_threads(&mut self, short_below_ns: u64) {
        let spans: Vec<ThreadSpan> = (self.threads.iter())
            .map(|t| ThreadSpan {
                thread: t.index,
                start_ns: t.first_ns,
                end_ns: t.last_ns,
                exited: t.exited,
            })
            .collect();
        for (t, lane) in self
            .threads
            .iter_mut()
            .zip(assign_lanes(&spans, short_below_ns))
        {
            t.lane = lane;
        }
    }

    /// Slices on all tracks.
    pub fn slices(&self) -> usize {
        self.threads.iter().map(|t| t.slices.len()).sum()
    }

    /// Events dropped, on all threads.
    pub fn dropped(&self) -> u64 {
        (self.threads.iter().map(|t| t.dropped)).sum::<u64>() + self.dropped_without_room
    }
}

/// What the trace says of one await that suspended (by its id).
#[derive(Default)]
struct Await {
    site: String,
    awaiting: u64,
    begin: u64,
    end: Option<u64>,
    wait_ns: u64,
    cancelled: bool,
}

/// What the trace says of one future (by its id).
#[derive(Default)]
struct Future {
    name: String,
    /// Thread and time of its creation, and the future polled there.
    made: Option<(u32, u64, u64)>,
    first_poll: Option<(u32, u64)>,
    end: Option<u64>,
    cancelled: bool,
    polls: u32,
    /// Each poll's thread and begin.
    polled: Vec<(u32, u64)>,
    task: Option<u32>,
}

/// The task lanes and creation arrows of a trace: its events of every
/// thread replayed in time order, each thread with its stack of open
/// polls (a future first polled inside another's poll joins that one's
/// task; one polled with none open is a task's root).
fn tasks(
    trace: &RawTrace,
    snap: &RawSnapshot,
    to_ns: &dyn Fn(u64) -> u64,
    end_ns: u64,
) -> (Vec<TaskTrack>, Vec<Flow>) {
    let mut events: Vec<(u64, u32, usize, &perflens_format::trace::TraceEvent)> = Vec::new();
    for t in &trace.threads {
        for (k, e) in t.events.iter().enumerate() {
            if matches!(
                e.kind,
                FUT_NEW | POLL_BEGIN | POLL_END | FUT_DROP | AWAIT_BEGIN | AWAIT_END | AWAIT_DROP
            ) {
                events.push((e.ticks, t.index, k, e));
            }
        }
    }
    events.sort_by_key(|&(ticks, thread, k, _)| (ticks, thread, k));
    let name_of = |callsite: u32| {
        (snap.callsites.get(callsite as usize))
            .map_or_else(|| format!("callsite #{callsite}"), |c| c.name.clone())
    };
    let mut futures: HashMap<u64, Future> = HashMap::new();
    let mut awaits: HashMap<u64, Await> = HashMap::new();
    let mut await_order: Vec<u64> = Vec::new();
    let wait_ns = |ticks: u64| (ticks as f64 * snap.ns_per_tick).round() as u64;
    let mut order: Vec<u64> = Vec::new();
    let mut polling: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut tasks: Vec<TaskTrack> = Vec::new();
    for &(ticks, thread, _, e) in &events {
        let at = to_ns(ticks);
        let fid = e.ids[0];
        match e.kind {
            FUT_NEW => {
                let f = futures.entry(fid).or_default();
                f.name = name_of(e.arg);
                f.made = Some((thread, at, e.ids[1]));
            }
            POLL_BEGIN => {
                let stack = polling.entry(thread).or_default();
                let outer = stack.last().copied();
                stack.push(fid);
                let outer_task = outer.and_then(|o| futures.get(&o)).and_then(|o| o.task);
                let f = futures.entry(fid).or_default();
                f.polls += 1;
                f.polled.push((thread, at));
                if f.first_poll.is_none() {
                    f.first_poll = Some((thread, at));
                    order.push(fid);
                }
                if f.task.is_none() {
                    f.task = Some(match outer_task {
                        Some(t) => t,
                        None => {
                            tasks.push(TaskTrack {
                                index: tasks.len() as u32 + 1,
                                ..TaskTrack::default()
                            });
                            tasks.len() as u32
                        }
                    });
                }
            }
            POLL_END => {
                // The poll's future is the innermost open one here.
                if let Some(fid) = polling.get_mut(&thread).and_then(Vec::pop) {
                    if e.flags & READY != 0 {
                        if let Some(f) = futures.get_mut(&fid) {
                            f.end = Some(at);
                        }
                    }
                }
            }
            FUT_DROP => {
                let f = futures.entry(fid).or_default();
                f.end = Some(at);
                f.cancelled = true;
            }
            AWAIT_BEGIN => {
                await_order.push(fid);
                awaits.insert(
                    fid,
                    Await {
                        site: format!("await {}", name_of(e.arg)),
                        awaiting: e.ids[1],
                        begin: at,
                        ..Await::default()
                    },
                );
            }
            AWAIT_END | AWAIT_DROP => {
                if let Some(a) = awaits.get_mut(&fid) {
                    a.end = Some(at);
                    a.wait_ns = wait_ns(e.ids[1]);
                    a.cancelled = e.kind == AWAIT_DROP;
                }
            }
            _ => {}
        }
    }
    // Polls name their future by node: a future whose creation was
    // dropped takes the name of its first poll's node.
    let mut flows = Vec::new();
    for fid in &order {
        let f = &futures[fid];
        let Some(task) = f.task else { continue };
        let Some((thread, begin)) = f.first_poll else {
            continue;
        };
        let lane = &mut tasks[task as usize - 1];
        if lane.slices.is_empty() {
            lane.name = f.name.clone();
            lane.spawned_by = (f.made)
                .and_then(|(_, _, maker)| futures.get(&maker))
                .and_then(|m| m.task)
                .filter(|&t| t != task);
        }
        lane.slices.push(FutureSlice {
            name: f.name.clone(),
            begin_ns: begin,
            end_ns: f.end.unwrap_or(end_ns).max(begin),
            depth: 0,
            cancelled: f.cancelled,
            truncated: f.end.is_none(),
            polls: f.polls,
            id: *fid,
            wait_ns: None,
        });
        if let Some((made_on, made_at, _)) = f.made {
            flows.push(Flow {
                name: "created",
                from: (Track::Thread(made_on), made_at),
                to: (thread, begin),
            });
        }
    }
    // Each await on the lane of the future that awaited (an await in no
    // measured future has no lane).
    for aid in &await_order {
        let a = &awaits[aid];
        let Some(task) = futures.get(&a.awaiting).and_then(|f| f.task) else {
            continue;
        };
        tasks[task as usize - 1].slices.push(FutureSlice {
            name: a.site.clone(),
            begin_ns: a.begin,
            end_ns: a.end.unwrap_or(end_ns).max(a.begin),
            depth: 0,
            cancelled: a.cancelled,
            truncated: a.end.is_none(),
            polls: 0,
            id: *aid,
            wait_ns: Some(a.wait_ns),
        });
    }
    // Nesting on each lane: by begin (an outer future first), a slice
    // inside the ones still open; one that would cross its parent's end
    // is cut there.
    for lane in &mut tasks {
        lane.slices
            .sort_by_key(|s| (s.begin_ns, std::cmp::Reverse(s.end_ns)));
        // Open slices: their end, and their place in the lane.
        let mut open: Vec<(u64, usize)> = Vec::new();
        for k in 0..lane.slices.len() {
            let s = &mut lane.slices[k];
            while open.last().is_some_and(|&(end, _)| end <= s.begin_ns) {
                open.pop();
            }
            if let Some(&(parent_end, _)) = open.last() {
                if s.end_ns > parent_end {
                    s.end_ns = parent_end;
                    s.truncated = true;
                }
            }
            s.depth = open.len() as u32;
            let (is_future, id) = (s.wait_ns.is_none(), s.id);
            // A future right inside an await span is what it waited on:
            // an arrow to each of its polls during the await.
            if let Some(&(_, parent)) = open.last() {
                let p = &lane.slices[parent];
                if is_future && p.wait_ns.is_some() {
                    let polls = futures.get(&id).map_or(&[][..], |f| &f.polled[..]);
                    for &(thread, at) in polls {
                        if (p.begin_ns..=p.end_ns).contains(&at) {
                            flows.push(Flow {
                                name: "waited on",
                                from: (Track::Task(lane.index), p.begin_ns),
                                to: (thread, at),
                            });
                        }
                    }
                }
            }
            open.push((lane.slices[k].end_ns, k));
        }
    }
    (tasks, flows)
}

/// A slice of a node, before it is named.
struct Raw {
    node: u32,
    kind: SliceKind,
    begin_ns: u64,
    end_ns: u64,
    depth: u32,
    truncated: bool,
}

/// The slices of one thread's events (`(kind, node, ns)`, oldest first);
/// `first` is its first kept event's time, `end` when calls still open
/// end (see the module's doc).
fn replay(events: impl Iterator<Item = (u8, u8, u32, u64)>, first: u64, end: u64) -> Vec<Raw> {
    let mut slices: Vec<Raw> = Vec::new();
    // Open slices: node, kind, begin, whether their begin was lost.
    let mut open: Vec<(u32, SliceKind, u64, bool)> = Vec::new();
    let close = |open: &mut Vec<(u32, SliceKind, u64, bool)>,
                 slices: &mut Vec<Raw>,
                 end: u64,
                 cut: bool,
                 ready: bool| {
        if let Some((node, kind, begin, lost)) = open.pop() {
            let kind = match kind {
                SliceKind::Poll { .. } => SliceKind::Poll { ready },
                k => k,
            };
            slices.push(Raw {
                node,
                kind,
                begin_ns: begin,
                end_ns: end.max(begin),
                depth: open.len() as u32,
                truncated: cut || lost,
            });
        }
    };
    for (kind, flags, node, at) in events {
        let slice = match kind {
            SPAN_BEGIN | SPAN_END => SliceKind::Call,
            POLL_BEGIN | POLL_END => SliceKind::Poll { ready: false },
            _ => continue,
        };
        let same = |o: &(u32, SliceKind, u64, bool)| {
            o.0 == node && matches!(o.1, SliceKind::Call) == matches!(slice, SliceKind::Call)
        };
        if matches!(kind, SPAN_BEGIN | POLL_BEGIN) {
            open.push((node, slice, at, false));
            continue;
        }
        let ready = kind == POLL_END && flags & READY != 0;
        match open.iter().rposition(same) {
            Some(k) => {
                while open.len() > k + 1 {
                    close(&mut open, &mut slices, at, true, false);
                }
                close(&mut open, &mut slices, at, false, ready);
            }
            // Its begin was dropped: it began before every kept event,
            // and the slices that ended so far were inside it.
            None if open.is_empty() => {
                for s in &mut slices {
                    s.depth += 1;
                }
                open.push((node, slice, first, true));
                close(&mut open, &mut slices, at, true, ready);
            }
            None => {}
        }
    }
    while !open.is_empty() {
        close(&mut open, &mut slices, end, true, false);
    }
    slices
}

#[cfg(test)]
mod tests;
