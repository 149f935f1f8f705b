//! The heap sections (feature `heap`): what is in use, by function and
//! by path, estimated from the sampled allocations; in a finished report
//! the paths are what was still live at exit.

use super::*;
use crate::model::{HeapPath, HeapProfile};

/// Name of the allocations made outside any measured function.
pub(crate) const OUTSIDE: &str = "(outside measured functions)";

/// Widest path in the heap path table.
const HEAP_PATH_WIDTH: usize = 60;

/// A path's frames as one cell.
fn path_cell(p: &HeapPath, max: usize) -> String {
    if p.frames.is_empty() {
        OUTSIDE.to_string()
    } else {
        chain(&p.frames, max)
    }
}

/// The heap section: a summary line, functions by estimated bytes in use
/// (with what they allocated, exactly), then the paths (titled "Still
/// live at exit" in a finished report).
pub(super) fn heap_section<W: Write>(
    report: &Report,
    heap: &HeapProfile,
    w: &mut W,
) -> io::Result<()> {
    let how = if heap.rate_bytes <= 1 {
        "every allocation sampled".to_string()
    } else {
        format!(
            "one sampled byte every {} on average",
            bytes(heap.rate_bytes)
        )
    };
    // An estimate resting on n samples is off by about 1/sqrt(n) (one
    // standard deviation); none when every allocation is sampled.
    let spread = if heap.rate_bytes > 1 && heap.inuse_samples > 0 {
        format!(
            ", so about ±{:.0}%",
            100.0 / (heap.inuse_samples as f64).sqrt()
        )
    } else {
        String::new()
    };
    if heap.inuse_samples == 0 {
        // No sample in use is no estimate: say how little was sampled
        // rather than print "~0 B" beside a nonzero live count.
        let allocated = (report.alloc.as_ref()).map_or(0, |a| a.total_bytes);
        writeln!(
            w,
            "Heap in use: no sampled allocation in use, so no estimate ({how}; {} sampled in all, \
             of {} allocated during the session){}",
            count(heap.sampled),
            bytes(allocated),
            if heap.rate_bytes > 1 && allocated < 16 * heap.rate_bytes {
                ": too few samples for this little memory; lower PERFLENS_HEAP_RATE to see it"
            } else {
                ""
            },
        )?;
    } else {
        writeln!(
            w,
            "Heap in use: ~{} in ~{} objects, estimated from {} sampled allocations in use{spread} \
             ({how}; {} sampled in all)",
            bytes(heap.inuse_bytes),
            count(heap.inuse_objects),
            count(heap.inuse_samples),
            count(heap.sampled),
        )?;
    }
    if heap.dropped > 0 {
        writeln!(
            w,
            "! {} sampled allocations were not kept: the sample table (room for {}) was full, \
             so the estimates miss them: raise PERFLENS_HEAP_TABLE (or PERFLENS_HEAP_RATE).",
            count(heap.dropped),
            count(u64::from(heap.capacity)),
        )?;
    }
    if heap.inuse_paths.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    heap_functions_table(report, heap, w)?;
    writeln!(w)?;
    heap_paths_table(report, heap, w)?;
    if !heap.inuse_stacks.is_empty() {
        writeln!(w)?;
        heap_sites_table(report, heap, w)?;
    }
    Ok(())
}

/// One row per allocation site: the function that asked for the memory
/// (the innermost frame of the native stack, below the allocator's) and
/// its caller, by estimated bytes in use.
fn heap_sites_table<W: Write>(report: &Report, heap: &HeapProfile, w: &mut W) -> io::Result<()> {
    // ((site, caller), bytes, objects, samples)
    let mut rows: Vec<((&str, &str), u64, u64, u64)> = Vec::new();
    for s in &heap.inuse_stacks {
        let site = match s.frames.as_slice() {
            [] => ("(no native stack)", ""),
            [.., caller, f] => (f.as_str(), caller.as_str()),
            [f] => (f.as_str(), ""),
        };
        match rows.iter_mut().find(|r| r.0 == site) {
            Some(r) => {
                r.1 += s.inuse_bytes;
                r.2 += s.inuse_objects;
                r.3 += s.samples;
            }
            None => rows.push((site, s.inuse_bytes, s.inuse_objects, s.samples)),
        }
    }
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    let title = if report.finished {
        "Still live at exit (by allocation site)"
    } else {
        "Heap in use (by allocation site)"
    };
    let headers = [
        title,
        "Called from",
        "In use",
        "Objects",
        "% In use",
        "Sampled",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, rows.len());
    for ((site, caller), b, o, samples) in &rows[..n] {
        grid.row(vec![
            truncate_left(site, NAME_WIDTH),
            truncate_left(caller, NAME_WIDTH),
            format!("~{}", bytes(*b)),
            format!("~{}", count(*o)),
            percent_cell(share(*b, heap.inuse_bytes)),
            count(*samples),
        ]);
    }
    grid.write(w)?;
    more(w, rows.len() - n, "allocation sites holding memory")?;
    writeln!(
        w,
        "Allocation site: the function that asked for the memory, from each sampled \
         allocation's native stack (the whole stacks are in PERFLENS_PPROF_HEAP)."
    )?;
    if heap.stacks_dropped > 0 {
        writeln!(
            w,
            "! {} sampled allocations have no native stack (none found, or the stack table \
             was full): they are the (no native stack) row.",
            count(heap.stacks_dropped)
        )?;
    }
    Ok(())
}

/// One row per function (the last frame of the paths that hold memory),
/// by estimated bytes in use.
fn heap_functions_table<W: Write>(
    report: &Report,
    heap: &HeapProfile,
    w: &mut W,
) -> io::Result<()> {
    struct Row<'a> {
        name: &'a str,
        inuse_bytes: u64,
        inuse_objects: u64,
        alloc_bytes: u64,
        alloc_objects: u64,
    }
    let mut rows: Vec<Row> = Vec::new();
    for p in &heap.inuse_paths {
        let name = p.frames.last().map_or(OUTSIDE, String::as_str);
        match rows.iter_mut().find(|r| r.name == name) {
            Some(r) => {
                r.inuse_bytes += p.inuse_bytes;
                r.inuse_objects += p.inuse_objects;
                r.alloc_bytes += p.alloc_bytes;
                r.alloc_objects += p.alloc_objects;
            }
            None => rows.push(Row {
                name,
                inuse_bytes: p.inuse_bytes,
                inuse_objects: p.inuse_objects,
                alloc_bytes: p.alloc_bytes,
                alloc_objects: p.alloc_objects,
            }),
        }
    }
    rows.sort_by(|a, b| {
        (b.inuse_bytes.cmp(&a.inuse_bytes))
            .then(b.inuse_objects.cmp(&a.inuse_objects))
            .then(a.name.cmp(b.name))
    });
    let headers = [
        "Heap in use (by function)",
        "In use",
        "Objects",
        "% In use",
        "Allocated",
        "Allocs",
    ];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, rows.len());
    for r in &rows[..n] {
        // What the function allocated while innermost (exact), as the
        // allocation table's Bytes (self); outside any function, what
        // the root path allocated.
        let alloc = (report.functions.iter())
            .find(|f| f.name == r.name)
            .and_then(|f| f.alloc)
            .map_or((r.alloc_bytes, r.alloc_objects), |a| (a.bytes, a.count));
        grid.row(vec![
            truncate_left(r.name, NAME_WIDTH),
            format!("~{}", bytes(r.inuse_bytes)),
            format!("~{}", count(r.inuse_objects)),
            percent_cell(share(r.inuse_bytes, heap.inuse_bytes)),
            bytes(alloc.0),
            count(alloc.1),
        ]);
    }
    grid.write(w)?;
    more(w, rows.len() - n, "functions holding memory")
}

/// The paths that hold memory, by estimated bytes in use.
fn heap_paths_table<W: Write>(report: &Report, heap: &HeapProfile, w: &mut W) -> io::Result<()> {
    let title = if report.finished {
        "Still live at exit (by path)"
    } else {
        "Heap in use (by path)"
    };
    let headers = [title, "In use", "Objects", "Sampled", "Allocated", "Allocs"];
    let mut grid = Grid::new(headers.map(String::from).into());
    let n = shown(report, heap.inuse_paths.len());
    for p in &heap.inuse_paths[..n] {
        grid.row(vec![
            path_cell(p, HEAP_PATH_WIDTH),
            format!("~{}", bytes(p.inuse_bytes)),
            format!("~{}", count(p.inuse_objects)),
            count(p.samples),
            bytes(p.alloc_bytes),
            count(p.alloc_objects),
        ]);
    }
    grid.write(w)?;
    more(w, heap.inuse_paths.len() - n, "paths holding memory")?;
    if report.finished {
        writeln!(
            w,
            "Allocated during the session and not freed when it ended: leaks, or what the \
             program still held (after a stop signal, what it held then). In use and Objects \
             are estimates (~); Allocated and Allocs are exact."
        )
    } else {
        writeln!(
            w,
            "In use and Objects are estimates (~) from the sampled allocations; Allocated and \
             Allocs are exact."
        )
    }
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}
