//! The Prometheus text exposition format (version 0.0.4) of a running
//! session, for `/metrics`.
//!
//! Per function (label `function`, the row name):
//! - `perflens_calls_total`: completed calls (exact);
//! - `perflens_duration_seconds`: a histogram of one call's inclusive
//!   duration over the timed calls (all of them in timed mode), its
//!   cumulative buckets read from perflens's own log-linear histogram at
//!   fixed bounds from 1 µs to 10 s (each of perflens's buckets counts
//!   under the first bound at or above its midpoint: within 1/64 of the
//!   bound), `_sum` the exact sum of those durations;
//! - `perflens_self_seconds_total`: exclusive time;
//! - `perflens_alloc_bytes_total`, `perflens_allocs_total` (allocations
//!   counted) and `perflens_cpu_seconds_total` (CPU sampled), exclusive;
//! - `perflens_heap_inuse_bytes` (a gauge, feature `heap`): bytes in use
//!   that the function allocated, estimated from sampled allocations
//!   (plus a series for what was allocated outside any function).
//!
//! Per channel (label `channel`) and lock (label `lock`): messages sent,
//! received and dropped, queued now, time spent waiting; acquisitions,
//! contended ones, wait and hold time. With `path_labels`, also per hot
//! path (label `path`, its frames joined by `;`): calls and self time.
//! Durations are seconds and counters end in `_total`, as Prometheus
//! names them. In count mode no duration is exported.

use crate::build::row_histograms;
use crate::model::Report;
use perflens_format::RawSnapshot;
use perflens_format::histogram::bucket_value;
use std::io::{self, Write};

/// The histogram's upper bounds, in seconds.
pub const DURATION_BOUNDS: [f64; 22] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A label value, escaped as the format asks (`\\`, `\"`, `\n`).
fn label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Seconds from ns, as the format writes floats.
fn secs(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    format!("{s}")
}

/// One metric family: its help and type lines, then `lines`.
fn family<W: Write + ?Sized>(
    out: &mut W,
    name: &str,
    kind: &str,
    help: &str,
    lines: &[String],
) -> io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} {kind}")?;
    for l in lines {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// Writes `report` (made from `snap`) in the exposition format.
pub fn write_prometheus<W: Write + ?Sized>(
    snap: &RawSnapshot,
    report: &Report,
    path_labels: bool,
    out: &mut W,
) -> io::Result<()> {
    let timed = report.has_timing();
    let per_fn = |f: &dyn Fn(&crate::FunctionRow) -> Option<String>| -> Vec<(String, String)> {
        (report.functions.iter())
            .filter_map(|r| f(r).map(|v| (label(&r.name), v)))
            .collect()
    };
    let lines = |name: &str, key: &str, values: Vec<(String, String)>| -> Vec<String> {
        (values.into_iter())
            .map(|(l, v)| format!("{name}{{{key}=\"{l}\"}} {v}"))
            .collect()
    };
    family(
        out,
        "perflens_calls_total",
        "counter",
        "Completed calls of a measured function.",
        &lines(
            "perflens_calls_total",
            "function",
            per_fn(&|r| Some(r.calls.to_string())),
        ),
    )?;
    if timed {
        let hists = row_histograms(snap);
        let mut h_lines = Vec::new();
        for r in &report.functions {
            let Some((h, sum_ns)) = hists.get(&r.name) else {
                continue;
            };
            let name = label(&r.name);
            let mut counts = [0u64; DURATION_BOUNDS.len()];
            for &(i, c) in h.buckets() {
                let ns = snap.ticks_to_ns(bucket_value(i as usize));
                let s = ns as f64 / 1e9;
                if let Some(k) = DURATION_BOUNDS.iter().position(|&b| s <= b) {
                    counts[k] += c;
                }
            }
            let mut cumulative = 0;
            for (b, c) in DURATION_BOUNDS.iter().zip(counts) {
                cumulative += c;
                h_lines.push(format!(
                    "perflens_duration_seconds_bucket{{function=\"{name}\",le=\"{b}\"}} {cumulative}"
                ));
            }
            h_lines.push(format!(
                "perflens_duration_seconds_bucket{{function=\"{name}\",le=\"+Inf\"}} {}",
                h.count()
            ));
            h_lines.push(format!(
                "perflens_duration_seconds_sum{{function=\"{name}\"}} {}",
                secs(*sum_ns)
            ));
            h_lines.push(format!(
                "perflens_duration_seconds_count{{function=\"{name}\"}} {}",
                h.count()
            ));
        }
        family(
            out,
            "perflens_duration_seconds",
            "histogram",
            "Inclusive duration of one call of a measured function (its timed calls).",
            &h_lines,
        )?;
        family(
            out,
            "perflens_self_seconds_total",
            "counter",
            "Exclusive time of a measured function (inclusive minus measured callees).",
            &lines(
                "perflens_self_seconds_total",
                "function",
                per_fn(&|r| Some(secs(r.self_ns))),
            ),
        )?;
    }
    if report.alloc.is_some() {
        family(
            out,
            "perflens_alloc_bytes_total",
            "counter",
            "Bytes allocated while a measured function was the innermost measured frame.",
            &lines(
                "perflens_alloc_bytes_total",
                "function",
                per_fn(&|r| r.alloc.map(|a| a.bytes.to_string())),
            ),
        )?;
        family(
            out,
            "perflens_allocs_total",
            "counter",
            "Allocations made while a measured function was the innermost measured frame.",
            &lines(
                "perflens_allocs_total",
                "function",
                per_fn(&|r| r.alloc.map(|a| a.count.to_string())),
            ),
        )?;
    }
    if let Some(heap) = &report.heap {
        // By the last frame of each path holding memory (every function
        // row, 0 when it holds nothing), and outside any function.
        let mut held: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
        let mut outside = 0;
        for p in &heap.inuse_paths {
            match p.frames.last() {
                Some(f) => *held.entry(f.as_str()).or_default() += p.inuse_bytes,
                None => outside += p.inuse_bytes,
            }
        }
        let mut values =
            per_fn(&|r| Some(held.get(r.name.as_str()).copied().unwrap_or(0).to_string()));
        values.push((label("(outside measured functions)"), outside.to_string()));
        family(
            out,
            "perflens_heap_inuse_bytes",
            "gauge",
            "Bytes in use that a measured function allocated (innermost measured frame), \
             estimated from sampled allocations (feature heap).",
            &lines("perflens_heap_inuse_bytes", "function", values),
        )?;
    }
    if report.cpu.is_some() {
        family(
            out,
            "perflens_cpu_seconds_total",
            "counter",
            "CPU time sampled while a measured function was the innermost measured frame.",
            &lines(
                "perflens_cpu_seconds_total",
                "function",
                per_fn(&|r| r.cpu.map(|c| secs(c.ns))),
            ),
        )?;
    }
    let ch = |f: &dyn Fn(&crate::ChannelRow) -> String| -> Vec<(String, String)> {
        (report.channels.iter())
            .map(|c| (label(&c.name), f(c)))
            .collect()
    };
    for (name, kind, help, values) in [
        (
            "perflens_channel_sent_total",
            "counter",
            "Messages a measured channel accepted.",
            ch(&|c| c.sent.to_string()),
        ),
        (
            "perflens_channel_received_total",
            "counter",
            "Messages received from a measured channel.",
            ch(&|c| c.received.to_string()),
        ),
        (
            "perflens_channel_dropped_total",
            "counter",
            "Messages still queued when their channel was dropped.",
            ch(&|c| c.dropped.to_string()),
        ),
        (
            "perflens_channel_queued",
            "gauge",
            "Messages queued now (sent - received - dropped).",
            ch(&|c| c.queued.to_string()),
        ),
        (
            "perflens_channel_send_wait_seconds_total",
            "counter",
            "Time senders waited for room.",
            ch(&|c| secs(c.send_wait_ns)),
        ),
        (
            "perflens_channel_recv_wait_seconds_total",
            "counter",
            "Time receivers waited for a message.",
            ch(&|c| secs(c.recv_wait_ns)),
        ),
    ] {
        family(out, name, kind, help, &lines(name, "channel", values))?;
    }
    let lk = |f: &dyn Fn(&crate::LockRow) -> String| -> Vec<(String, String)> {
        (report.locks.iter())
            .map(|l| (label(&l.name), f(l)))
            .collect()
    };
    for (name, help, values) in [
        (
            "perflens_lock_acquisitions_total",
            "Acquisitions of a measured lock (released).",
            lk(&|l| l.acquisitions.to_string()),
        ),
        (
            "perflens_lock_contended_total",
            "Acquisitions whose first attempt failed.",
            lk(&|l| l.contended.to_string()),
        ),
        (
            "perflens_lock_wait_seconds_total",
            "Time contended acquisitions waited.",
            lk(&|l| secs(l.wait_ns)),
        ),
        (
            "perflens_lock_hold_seconds_total",
            "Time the lock was held.",
            lk(&|l| secs(l.hold_ns)),
        ),
    ] {
        family(out, name, "counter", help, &lines(name, "lock", values))?;
    }
    if path_labels {
        let path_lines = |f: &dyn Fn(&crate::HotPath) -> String, name: &str| -> Vec<String> {
            (report.paths.iter())
                .map(|p| format!("{name}{{path=\"{}\"}} {}", label(&p.frames.join(";")), f(p)))
                .collect()
        };
        family(
            out,
            "perflens_path_calls_total",
            "counter",
            "Completed calls of the last function of a hot path.",
            &path_lines(&|p| p.calls.to_string(), "perflens_path_calls_total"),
        )?;
        if timed {
            family(
                out,
                "perflens_path_self_seconds_total",
                "counter",
                "Exclusive time of the last function of a hot path.",
                &path_lines(&|p| secs(p.self_ns), "perflens_path_self_seconds_total"),
            )?;
        }
    }
    Ok(())
}
