//! Reading a session's blocks into a raw snapshot: the blocks first and
//! the names second (every name a block uses was appended before), the
//! histograms only as far as the view needs them, and the figures checked
//! for what can be true before a report is built from them.

use super::*;

impl LiveSession {
    /// A raw snapshot of the session now, as the program's own
    /// `Recording::snapshot` would take it (see [`LiveSession::report`]),
    /// with the CPU samples per path. `all_histograms: false` reads only
    /// the inclusive-time histograms (calls, time percentiles): the
    /// exclusive-time and bytes-per-call ones are then empty.
    pub fn raw_snapshot(&mut self, all_histograms: bool) -> Result<LiveSnapshot, LiveError> {
        self.raw_snapshot_with(if all_histograms {
            Histograms::All
        } else {
            Histograms::Inclusive
        })
    }

    /// [`LiveSession::raw_snapshot`], filling only the histograms `what`
    /// names (the others are left empty).
    pub fn raw_snapshot_with(&mut self, what: Histograms) -> Result<LiveSnapshot, LiveError> {
        // Threads first, then their blocks, then the names again: every
        // path a block's node names was written before the node.
        self.read_names()?;
        self.map_blocks()?;
        // Read once: the figures below are all of one state (a session
        // that finishes meanwhile is read as still running).
        let finished = self.header().state.load(Ordering::Acquire) == STATE_FINISHED;
        let alloc_counted = self.header().alloc_installed.load(Ordering::Acquire) == 1;
        let (epoch, ns_per_tick, boundary_alloc) = {
            // SAFETY: checked in `open`; the mapping lives as long as
            // `self` (a copy of the pointer, so that the calibration
            // below may be stored).
            let h = unsafe { &*(self.header.base() as *const SessionHeader) };
            let fin = f64::from_bits(h.ns_per_tick.load(Ordering::Acquire));
            let ns_per_tick = if finished && fin > 0.0 {
                // What the program's final report used.
                fin
            } else if h.clock == 1 {
                1.0
            } else {
                // Calibrated once, at the first read, and kept: a factor
                // that moved between reads would make figures that did
                // not change look as if they shrank.
                let (tsc, mono) = (h.anchor_tsc, h.anchor_mono_ns);
                *self
                    .ns_per_tick
                    .get_or_insert_with(|| perflens_sys::clock::ns_per_tick_since(tsc, mono))
            };
            (h.epoch, ns_per_tick, h.alloc_feature == 1)
        };
        let how = perflens_format::read::LiveBlockRead {
            epoch,
            ns_per_tick,
            boundary_alloc,
            all_histograms: what == Histograms::All,
            total_counts_only: what == Histograms::Counts,
            alloc_counted,
        };
        let read = self.next_read();
        let mut threads = Vec::with_capacity(self.blocks.len());
        let mut block_of = Vec::with_capacity(self.blocks.len());
        for (i, b) in self.blocks.iter().enumerate() {
            let m = &b.map;
            let page_ok = |off: usize| b.page_ok(off, read);
            let mut memo = b.memo.borrow_mut();
            // SAFETY: the mapping is readable for `len` bytes (a shrinking
            // file is caught by the SIGBUS guard) and page aligned.
            let t = unsafe {
                perflens_format::read::read_live_block_again(
                    m.base(),
                    m.len(),
                    &how,
                    &page_ok,
                    self.remember.then_some(&mut *memo),
                )
            }
            .map_err(|e| {
                // A block that shrank reads as zeros where it was cut:
                // say so rather than what the zeros look like.
                if m.faulted() {
                    self.truncated()
                } else {
                    LiveError(format!("{}: {e}", self.dir.display()))
                }
            })?;
            if let Some(t) = t {
                block_of.push((t.index, i));
                threads.push(ThreadSnapshot {
                    name: b.name.clone(),
                    ..t
                });
            }
        }
        // Any mapping that ever faulted: its patched pages read as zeros
        // from then on, on every read, without faulting again.
        if self.header.faulted() || self.blocks.iter().any(|b| b.map.faulted()) {
            return Err(self.truncated());
        }
        check_sums(&threads).map_err(|e| LiveError(format!("{}: {e}", self.dir.display())))?;
        self.read_names()?;
        threads.sort_by_key(|t| t.index);
        block_of.sort_by_key(|&(index, _)| index);
        let block_of = block_of.into_iter().map(|(_, b)| b).collect();
        let callsites = self.names.callsites();
        let paths = self.names.paths(callsites.len())?;
        for t in &threads {
            if let Some(n) = t.nodes.iter().find(|n| n.path as usize >= paths.len()) {
                return Err(LiveError(format!(
                    "{}: thread {} has a node of path {} of {} (corrupt)",
                    self.dir.display(),
                    t.index,
                    n.path,
                    paths.len()
                )));
            }
        }
        // A finished session's profile as it was at its end (the table
        // changes after it); a running one's from its table.
        let heap = (finished)
            .then(|| self.names.extras.get(&perflens_format::names::EXTRA_HEAP))
            .flatten()
            .and_then(|b| perflens_format::heap::decode_heap(b))
            .or_else(|| self.read_heap());
        let h = self.header();
        let mode = match h.mode {
            1 => Mode::Count,
            2 => Mode::Sampled {
                every: h.sample_every.max(1),
            },
            _ => Mode::Timed,
        };
        let elapsed_ns = if finished {
            h.elapsed_ns.load(Ordering::Relaxed)
        } else {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos() as u64;
            now.saturating_sub(h.start_unix_ns)
        };
        let alloc = (h.alloc_installed.load(Ordering::Relaxed) == 1).then(|| {
            if finished {
                AllocSummary {
                    live_bytes: h.alloc_live_bytes.load(Ordering::Relaxed),
                    peak_live_bytes: h.alloc_peak_bytes.load(Ordering::Relaxed),
                    peak_resolution_bytes: perflens_format::vocab::PUBLISH_STEP as u64,
                }
            } else {
                // The process-wide peak lives in the process: while it
                // runs, the largest thread peak (and the live bytes) bound it.
                // Saturating: a hostile file may hold any figures.
                let live = threads
                    .iter()
                    .fold(0i64, |sum, t| sum.saturating_add(t.live_bytes));
                let peak = threads.iter().map(|t| t.peak_live_bytes).max().unwrap_or(0);
                AllocSummary {
                    live_bytes: live,
                    peak_live_bytes: peak.max(live.max(0) as u64),
                    peak_resolution_bytes: perflens_format::vocab::PUBLISH_STEP as u64,
                }
            }
        });
        let cpu = self.cpu_input(&threads);
        let snapshot = RawSnapshot {
            mode,
            sample_warmup: h.sample_warmup,
            clock: if h.clock == 1 {
                ClockSource::Instant
            } else {
                ClockSource::Tsc
            },
            ns_per_tick,
            elapsed_ns,
            finished,
            callsites,
            paths,
            threads,
            path_capacity: h.path_capacity,
            overflow_paths: h.overflow_paths.load(Ordering::Relaxed),
            unrecorded_calls: h.unrecorded_calls.load(Ordering::Relaxed),
            alloc,
            heap,
        };
        Ok(LiveSnapshot {
            snapshot,
            await_sites: self.names.await_sites(),
            cpu,
            unread_threads: self.unread_threads,
            unpublished_threads: h.unpublished_threads.load(Ordering::Relaxed),
            names_lost: h.names_lost.load(Ordering::Relaxed),
            read: how,
            read_id: read,
            block_of,
        })
    }

    /// A number for the next read of the blocks, never 0 (a chunk never
    /// asked about).
    pub(super) fn next_read(&self) -> u32 {
        let n = self.reads.get().wrapping_add(1).max(1);
        self.reads.set(n);
        n
    }

    /// The exclusive-time histograms of some nodes of `live`, a snapshot
    /// this session read with `all_histograms: false` (a view that shows
    /// their percentiles only for the rows on screen reads those after
    /// the rest). `nodes`: each one's thread and node, as indices into
    /// `live.snapshot.threads` and that thread's `nodes`. Each histogram
    /// holds at most as many entries as the snapshot's timed calls of its
    /// node, so that it agrees with the rest of the snapshot. A node out
    /// of range, or of a block of another session generation since,
    /// reads as empty.
    pub fn self_histograms(
        &self,
        live: &LiveSnapshot,
        nodes: &[(usize, usize)],
    ) -> Result<Vec<Histogram>, LiveError> {
        // The pages' residency as the snapshot's read found it, not asked
        // again: a view reads these in several steps (the rows that order
        // the screen, then the rows on it), and each asked anew cost a
        // system call per histogram. A page first written since (a
        // histogram's first entries on it, in the moments since) shows
        // in the next snapshot's read.
        let read = live.read_id;
        let mut out = vec![Histogram::default(); nodes.len()];
        // By thread: one validation of each block read.
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.sort_by_key(|&i| nodes[i]);
        let mut at = 0;
        while at < order.len() {
            let thread = nodes[order[at]].0;
            let end = at + order[at..].partition_point(|&i| nodes[i].0 == thread);
            let (Some(t), Some(b)) = (
                live.snapshot.threads.get(thread),
                live.block_of.get(thread).and_then(|&b| self.blocks.get(b)),
            ) else {
                at = end;
                continue;
            };
            let wanted: Vec<(usize, (u32, u64))> = (order[at..end].iter())
                .filter_map(|&i| {
                    let n = t.nodes.get(nodes[i].1)?;
                    Some((i, (n.index, n.timed_calls)))
                })
                .collect();
            let ask: Vec<(u32, u64)> = wanted.iter().map(|&(_, w)| w).collect();
            let m = &b.map;
            let page_ok = |off: usize| b.page_ok(off, read);
            // SAFETY: as in `raw_snapshot`.
            let read = unsafe {
                perflens_format::read::read_live_self_histograms(
                    m.base(),
                    m.len(),
                    &live.read,
                    &page_ok,
                    &ask,
                )
            }
            .map_err(|e| LiveError(format!("{}: {e}", self.dir.display())))?;
            if m.faulted() {
                return Err(self.truncated());
            }
            for ((i, _), h) in wanted.iter().zip(read.into_iter().flatten()) {
                out[*i] = h;
            }
            at = end;
        }
        Ok(out)
    }

    /// For each of `frames` (each a list of calling contexts: thread and
    /// node, as in [`LiveSession::self_histograms`]), a histogram of the
    /// exclusive times of its contexts merged that gives the same
    /// quantiles up to `q` as their whole histograms merged: the contexts
    /// are read in step, a cache line (8 buckets) at a time from the
    /// smallest, and the read stops once the merged count reaches the
    /// rank of `q`; the entries left unread (each context's timed calls
    /// beyond those seen) lie above it and are counted in the last
    /// bucket. Reading each whole histogram went on to its largest value,
    /// a preempted call's, many lines past the percentiles a view shows.
    pub fn self_quantile_histograms(
        &self,
        live: &LiveSnapshot,
        frames: &[&[(usize, usize)]],
        q: f64,
    ) -> Result<Vec<Histogram>, LiveError> {
        use perflens_format::histogram::BUCKETS;
        use perflens_format::read::{HIST_LINES, LiveSelfLines};
        let read = live.read_id;
        let oks: Vec<_> = (self.blocks.iter())
            .map(|b| move |off: usize| b.page_ok(off, read))
            .collect();
        let mut lines: Vec<Option<Option<LiveSelfLines>>> = Vec::new();
        lines.resize_with(self.blocks.len(), || None);
        let mut out = Vec::with_capacity(frames.len());
        for contexts in frames {
            // Each context: its block's lines, its node, the entries left
            // to see (its timed calls in the snapshot).
            let mut at: Vec<(usize, u32, u64)> = Vec::with_capacity(contexts.len());
            for &(t, j) in contexts.iter() {
                let (Some(node), Some(&b)) = (
                    live.snapshot.threads.get(t).and_then(|th| th.nodes.get(j)),
                    live.block_of.get(t),
                ) else {
                    continue;
                };
                let Some(file) = self.blocks.get(b) else {
                    continue;
                };
                if lines[b].is_none() {
                    let m = &file.map;
                    // SAFETY: as in `raw_snapshot`; the mapping outlives
                    // this call.
                    let l = unsafe { LiveSelfLines::open(m.base(), m.len(), &live.read, &oks[b]) }
                        .map_err(|e| LiveError(format!("{}: {e}", self.dir.display())))?;
                    lines[b] = Some(l);
                }
                if node.timed_calls > 0 && matches!(lines[b], Some(Some(_))) {
                    at.push((b, node.index, node.timed_calls));
                }
            }
            let total = at.iter().fold(0u64, |s, &(_, _, n)| s.saturating_add(n));
            let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total.max(1));
            let mut merged = Histogram::default();
            // Counts cut to fit a u64 in all (a hostile file's; real
            // counts always fit).
            let mut room = u64::MAX;
            let mut add = |h: &mut Histogram, bucket: usize, c: u64| {
                let c = c.min(room);
                room -= c;
                h.record_n(perflens_format::histogram::bucket_value(bucket), c);
                c
            };
            let mut seen = 0u64;
            for line in 0..HIST_LINES {
                if seen >= rank || at.iter().all(|&(_, _, left)| left == 0) {
                    break;
                }
                let mut sum = [0u64; 8];
                for (b, node, left) in at.iter_mut().filter(|(_, _, left)| *left > 0) {
                    let Some(Some(l)) = &lines[*b] else {
                        continue;
                    };
                    for (s, c) in sum.iter_mut().zip(l.line(*node, line)) {
                        *s = s.saturating_add(c);
                        *left = left.saturating_sub(c);
                    }
                }
                for (i, &c) in sum.iter().enumerate() {
                    if c != 0 {
                        seen = seen.saturating_add(add(&mut merged, line * 8 + i, c));
                    }
                }
            }
            let unread = at
                .iter()
                .fold(0u64, |s, &(_, _, left)| s.saturating_add(left));
            if unread > 0 && seen >= rank {
                add(&mut merged, BUCKETS - 1, unread);
            }
            out.push(merged);
        }
        // A file that shrank while this read it read as zeros from there.
        if self.blocks.iter().any(|b| b.map.faulted()) {
            return Err(self.truncated());
        }
        Ok(out)
    }
}

/// A raw snapshot read from a live session, with its CPU samples.
#[derive(Clone, Debug)]
pub struct LiveSnapshot {
    pub snapshot: RawSnapshot,
    /// Where the await sites named so far are in the source (see
    /// [`LiveSession::await_sites`]): the report's Waits rows read them.
    pub await_sites: Vec<perflens_format::AwaitSiteInfo>,
    /// `None` when the session samples no CPU.
    pub cpu: Option<CpuInput>,
    /// Threads that could not be read: they started as the program
    /// ended, and their files were removed (the session was not kept)
    /// before this reader mapped them. Their figures are not in
    /// `snapshot`.
    pub unread_threads: usize,
    /// Threads the program could not publish (no room on the file
    /// system for their block file): they kept private memory, and their
    /// figures are not in `snapshot`.
    pub unpublished_threads: u64,
    /// Names the program could not append (the file system was full):
    /// paths and threads registered after that are missing.
    pub names_lost: u64,
    /// How the blocks were read.
    read: perflens_format::read::LiveBlockRead,
    /// Which read of the session it was (see `Block::page_ok`).
    read_id: u32,
    /// The session's block each thread of `snapshot` was read from.
    block_of: Vec<usize>,
}

impl LiveSnapshot {
    /// What this snapshot lacks, in one line, when it lacks anything.
    pub fn missing(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.unread_threads > 0 {
            parts.push(format!(
                "{} thread(s) not shown: they started as it ended, and its entry was removed first",
                self.unread_threads
            ));
        }
        if self.unpublished_threads > 0 {
            parts.push(format!(
                "{} thread(s) not published: no room for their files",
                self.unpublished_threads
            ));
        }
        if self.names_lost > 0 {
            parts.push(format!(
                "{} name record(s) lost: the file system was full",
                self.names_lost
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

impl LiveSnapshot {
    /// The report of this snapshot.
    pub fn report(&self, options: &ReportOptions) -> Report {
        let mut report =
            Report::from_snapshot_with_sites(&self.snapshot, &self.await_sites, options);
        if let Some(cpu) = &self.cpu {
            report.add_cpu(&self.snapshot, cpu);
        }
        report
    }
}

/// Refuses figures no program writes: every figure of every node and
/// thread, all added together, must fit a u64. The report adds figures
/// up by function, path and thread, and some of them together (calls
/// and cancelled calls), so any sum it makes then fits too. A hostile
/// file holding counters near `u64::MAX` is an error here rather than
/// an overflow there. (A real session is nowhere near: 2^64 ns is 584
/// years, 2^64 bytes 16 EiB.)
pub(super) fn check_sums(threads: &[ThreadSnapshot]) -> Result<(), String> {
    // Added up in 128 bits first (no overflow: at most 2^64 figures),
    // and only past 2^64 again one by one, for the figure to name: a
    // tenth of a large session's read was spent here.
    let mut wide = 0u128;
    figures(threads, |_, v| {
        wide += u128::from(v);
        Ok(())
    })?;
    if wide <= u128::from(u64::MAX) {
        return Ok(());
    }
    let mut sum = 0u64;
    figures(threads, |name, v| {
        sum = sum.checked_add(v).ok_or_else(|| {
            format!("the session's figures add up past 2^64 (at its {name}): corrupt")
        })?;
        Ok(())
    })
}

/// Calls `add` with every figure of `threads` and its name, until it
/// fails.
pub(super) fn figures(
    threads: &[ThreadSnapshot],
    mut add: impl FnMut(&str, u64) -> Result<(), String>,
) -> Result<(), String> {
    for t in threads {
        add("overflow calls", t.overflow_calls)?;
        add("dropped frames", t.dropped_frames)?;
        add("live bytes", t.live_bytes.unsigned_abs())?;
        add("peak live bytes", t.peak_live_bytes)?;
        for &(_, samples, ns) in &t.cpu_samples {
            add("CPU samples", samples)?;
            add("CPU ns", ns)?;
        }
        for n in &t.nodes {
            for (name, v) in [
                ("calls", n.calls),
                ("timed calls", n.timed_calls),
                ("total ns", n.total_ns),
                ("self ns", n.self_ns),
                ("busy ns", n.busy_ns),
                ("polls", n.polls),
                ("cancelled calls", n.cancelled),
                ("timed cancelled calls", n.timed_cancelled),
                ("cancelled ns", n.cancelled_ns),
                ("bytes allocated", n.alloc_bytes),
                ("allocations", n.alloc_count),
                ("bytes freed", n.free_bytes),
                ("frees", n.free_count),
                ("inclusive-time histogram counts", n.hist_total.count()),
                ("exclusive-time histogram counts", n.hist_self.count()),
                ("bytes histogram counts", n.hist_alloc.count()),
            ] {
                add(name, v)?;
            }
        }
    }
    Ok(())
}

impl LiveSession {
    /// The session's heap profile (feature `heap`): its sample table, in
    /// the file [`HEAP_FILE`] of the session's directory, summed as the
    /// program sums it. `None` when the program does not sample the heap
    /// (no such file), or the file is not a table (truncated, or not set
    /// up yet). Only the table's pages that hold data are read: reading a
    /// never-written page of a tmpfs file would make the file system
    /// allocate it.
    fn read_heap(&mut self) -> Option<perflens_format::snapshot::HeapSnapshot> {
        use perflens_format::heap::{
            HEAP_FILE, HEAP_MAGIC, HeapHeader, HeapSlot, heap_len, read_heap,
        };
        if self.heap.is_none() {
            self.heap = crate::map::Mapping::open(&self.dir.join(HEAP_FILE), heap_len(0)).ok();
        }
        let map = self.heap.as_ref()?;
        // SAFETY: the mapping is at least a header long, page aligned,
        // and lives as long as `map`; a header of atomics may hold any
        // bytes.
        let header = unsafe { &*(map.base() as *const HeapHeader) };
        if header.magic.load(Ordering::Acquire) != HEAP_MAGIC {
            return None;
        }
        let slots = header.slots.load(Ordering::Relaxed) as usize;
        if !slots.is_power_of_two() || heap_len(slots) > map.len() {
            return None;
        }
        // SAFETY: `slots` slots fit in the mapping after the header
        // (checked above), 8-aligned; any bytes are valid atomics.
        let all = unsafe {
            std::slice::from_raw_parts(
                map.base().add(size_of::<HeapHeader>()) as *const HeapSlot,
                slots,
            )
        };
        // The runs of slots that lie on pages holding data.
        let resident = map.resident(0, heap_len(slots));
        let page = perflens_sys::mem::PAGE;
        let readable = |i: usize| {
            let from = size_of::<HeapHeader>() + i * size_of::<HeapSlot>();
            let to = from + size_of::<HeapSlot>() - 1;
            resident.get(from / page).copied().unwrap_or(false)
                && resident.get(to / page).copied().unwrap_or(false)
        };
        let mut runs: Vec<&[HeapSlot]> = Vec::new();
        let mut i = 0;
        while i < slots {
            if !readable(i) {
                i += 1;
                continue;
            }
            let start = i;
            while i < slots && readable(i) {
                i += 1;
            }
            runs.push(&all[start..i]);
        }
        let heap = read_heap(header, &runs);
        // A file that shrank under the reader reads as zeros: not the
        // program's table.
        if map.faulted() { None } else { heap }
    }
}
