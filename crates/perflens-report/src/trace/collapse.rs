//! Packing short-lived threads into the fewest shared tracks.
//!
//! A program that spawns a thread per request or per blocking job leaves a
//! trace with hundreds of threads that each lived a few milliseconds.
//! Drawn one track per thread, the timeline becomes a wall of near-empty
//! rows and the long-lived workers scroll out of sight. So a thread that
//! exited after living less than `PERFLENS_TRACE_SHORT_THREAD_MS` (10 ms
//! by default) is drawn on a shared track named `short-lived threads (k)`
//! instead; each of its slices keeps its own thread's name and id in its
//! arguments, so nothing is lost. A thread still running when the trace
//! ends, or one that lived longer, keeps its own track: a pool worker is
//! what a reader looks for by name.
//!
//! # The packing
//!
//! This is interval partitioning, which is optimal. Short threads are
//! taken in order of `(start, thread index)`. A min-heap holds, for every
//! shared track opened so far, `(end of its last thread, k)`. A thread
//! reuses the track at the top of the heap when that track's last thread
//! ended *strictly* before this one starts; otherwise it opens track
//! `k = tracks + 1`. Either way the track's end becomes this thread's end.
//!
//! Why it is optimal: a new track is opened only when every open track's
//! last thread is still alive at this thread's start (the heap's minimum
//! end is not before it), so at that instant `tracks + 1` short threads
//! are alive at once, and no packing can use fewer tracks than that.
//! Why the inequality is strict: a slice that ends at `t` and one that
//! starts at `t` on the same track would touch, and a viewer may draw
//! them as one bar or nest them; with distinct threads' slices never
//! touching, each slice stays readable as its own thread's.
//!
//! Ties are broken so the result depends only on the set of spans, never
//! on their order in the input: equal starts by thread index, equal heap
//! entries by the smaller `k`. It costs one sort and one heap operation
//! per short thread, O(n log n), and runs once per export.
//!
//! ```
//! use perflens_report::trace::collapse::{Lane, ThreadSpan, assign_lanes, lane_name};
//!
//! let span = |thread, start_ns, end_ns| ThreadSpan { thread, start_ns, end_ns, exited: true };
//! let ms = 1_000_000;
//! // Two overlapping 2 ms threads, a third after both, and a 1 s worker.
//! let threads = [
//!     span(0, 0, 2 * ms),
//!     span(1, ms, 3 * ms),
//!     span(2, 4 * ms, 5 * ms),
//!     span(3, 0, 1_000 * ms),
//! ];
//! let lanes = assign_lanes(&threads, 10 * ms);
//! assert_eq!(lanes, [Lane::Shared(1), Lane::Shared(2), Lane::Shared(1), Lane::Own]);
//! assert_eq!(lane_name(2), "short-lived threads (2)");
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::ReportError;

/// Threads that lived less than this many milliseconds are collapsed when
/// `PERFLENS_TRACE_SHORT_THREAD_MS` is not set. A session worth tracing
/// runs for seconds; at the zoom that shows it whole, a thread under
/// 10 ms is a sliver on its own track, while a pool worker lives for most
/// of the session and stays far above the threshold.
pub const DEFAULT_SHORT_THREAD_MS: u64 = 10;

/// When one thread ran, as the trace saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ThreadSpan {
    /// The thread's index in the trace's thread table. It breaks ties
    /// between threads that start at the same instant.
    pub thread: u32,
    /// The thread's first event, in nanoseconds on the session's clock.
    pub start_ns: u64,
    /// The thread's exit, or its last event when it had not exited, in
    /// nanoseconds on the session's clock. A value before `start_ns` is
    /// read as `start_ns` (a zero-length thread).
    pub end_ns: u64,
    /// Whether the thread exited before the trace ended. A thread still
    /// running may go on for long, so it is never collapsed.
    pub exited: bool,
}

impl ThreadSpan {
    /// The end, never before the start: a malformed span is a zero-length
    /// thread at its start rather than a reason to fail the export.
    fn end(&self) -> u64 {
        self.end_ns.max(self.start_ns)
    }

    /// Whether the thread exited and lived less than `short_below_ns`.
    /// A threshold of 0 makes no thread short.
    fn is_short(&self, short_below_ns: u64) -> bool {
        self.exited && self.end() - self.start_ns < short_below_ns
    }
}

/// Where a thread's slices are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Lane {
    /// On the thread's own track, under its own name.
    #[default]
    Own,
    /// On shared track `k` (from 1), named by [`lane_name`]`(k)`, together
    /// with other short threads that never overlap or touch it.
    Shared(u32),
}

/// Chooses a lane for every thread, in the order of `threads`.
///
/// A thread is short when it exited and `end_ns - start_ns <
/// short_below_ns`; short threads are packed into shared lanes as the
/// [module docs](self) describe, so the number of shared lanes is the
/// largest number of short threads alive at one instant, and two threads
/// on one lane never overlap or touch. Every other thread gets
/// [`Lane::Own`]; a `short_below_ns` of 0 therefore gives every thread its
/// own lane.
///
/// The result depends only on the spans, not on their order in `threads`.
/// Any input is accepted: an end before its start is read as a
/// zero-length thread at its start.
pub fn assign_lanes(threads: &[ThreadSpan], short_below_ns: u64) -> Vec<Lane> {
    let mut lanes = vec![Lane::Own; threads.len()];
    let mut short: Vec<usize> = (0..threads.len())
        .filter(|&i| threads[i].is_short(short_below_ns))
        .collect();
    // The end and then the input position only order duplicate thread
    // indices, whose spans the caller did not tell apart; for distinct
    // indices `(start, thread)` alone decides.
    short.sort_unstable_by_key(|&i| {
        let t = &threads[i];
        (t.start_ns, t.thread, t.end(), i)
    });

    // `(end of the lane's last thread, k)`, smallest end first, then
    // smallest k, so equal ends reuse lanes in a fixed order.
    let mut open: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    for i in short {
        let t = &threads[i];
        let k = match open.peek() {
            Some(&Reverse((end, k))) if end < t.start_ns => {
                open.pop();
                k
            }
            // There are never more lanes than threads, which fit in
            // memory far below u32::MAX; saturate rather than panic.
            _ => u32::try_from(open.len() + 1).unwrap_or(u32::MAX),
        };
        open.push(Reverse((t.end(), k)));
        lanes[i] = Lane::Shared(k);
    }
    lanes
}

/// The name of shared lane `k`: `short-lived threads (k)`.
pub fn lane_name(k: u32) -> String {
    format!("short-lived threads ({k})")
}

/// Reads the value of `PERFLENS_TRACE_SHORT_THREAD_MS` as a threshold in
/// nanoseconds for [`assign_lanes`].
///
/// Unset or blank gives the default, [`DEFAULT_SHORT_THREAD_MS`]; `0`
/// turns collapsing off; any other whole number of milliseconds is taken
/// as is, with surrounding spaces ignored. A value too large to count in
/// nanoseconds (over 500 years) saturates, which still means "every
/// exited thread is short". Anything else is an
/// [`InvalidOption`](ReportError::InvalidOption) error whose message says
/// what to write instead.
pub fn short_thread_ns(value: Option<&str>) -> Result<u64, ReportError> {
    const NS_PER_MS: u64 = 1_000_000;
    let text = value.map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Ok(DEFAULT_SHORT_THREAD_MS * NS_PER_MS);
    }
    match text.parse::<u64>() {
        Ok(ms) => Ok(ms.saturating_mul(NS_PER_MS)),
        Err(_) => Err(ReportError::InvalidOption {
            message: format!(
                "PERFLENS_TRACE_SHORT_THREAD_MS={text:?} is not a whole number of \
                 milliseconds; write a number such as 10, or 0 to keep every thread \
                 on its own track."
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exited(thread: u32, start_ns: u64, end_ns: u64) -> ThreadSpan {
        ThreadSpan {
            thread,
            start_ns,
            end_ns,
            exited: true,
        }
    }

    /// Each thread's lane, sorted by thread index, so two inputs in
    /// different orders compare equal when every thread got the same lane.
    fn lanes_by_thread(threads: &[ThreadSpan], short_below_ns: u64) -> Vec<(u32, Lane)> {
        let mut pairs: Vec<(u32, Lane)> = threads
            .iter()
            .map(|t| t.thread)
            .zip(assign_lanes(threads, short_below_ns))
            .collect();
        pairs.sort_by_key(|&(thread, _)| thread);
        pairs
    }

    /// The spec's definition of short, written apart from the code under
    /// test: exited, and `end - start` (a backwards span read as zero)
    /// under the threshold.
    fn short_by_spec(t: &ThreadSpan, short_below_ns: u64) -> bool {
        t.exited && t.end_ns.saturating_sub(t.start_ns) < short_below_ns
    }

    /// The design note's example. Walking the algorithm: t0 [0,5] opens
    /// lane 1; t1 [1,3] starts while lane 1 (ends 5) is busy, opens lane
    /// 2; t2 [4,9] takes lane 2, whose t1 ended at 3 < 4; t3 [6,7] takes
    /// lane 1, whose t0 ended at 5 < 6.
    #[test]
    fn design_note_intervals_use_two_lanes_exactly_so() {
        let threads = [
            exited(0, 0, 5),
            exited(1, 1, 3),
            exited(2, 4, 9),
            exited(3, 6, 7),
        ];
        assert_eq!(
            assign_lanes(&threads, 10),
            [
                Lane::Shared(1),
                Lane::Shared(2),
                Lane::Shared(2),
                Lane::Shared(1)
            ]
        );
    }

    #[test]
    fn touching_threads_need_two_lanes() {
        let threads = [exited(0, 0, 5), exited(1, 5, 8)];
        assert_eq!(
            assign_lanes(&threads, 10),
            [Lane::Shared(1), Lane::Shared(2)]
        );
        // One nanosecond apart, they share.
        let threads = [exited(0, 0, 5), exited(1, 6, 8)];
        assert_eq!(
            assign_lanes(&threads, 10),
            [Lane::Shared(1), Lane::Shared(1)]
        );
    }

    #[test]
    fn long_and_running_threads_keep_their_own_lanes() {
        let running = ThreadSpan {
            exited: false,
            ..exited(2, 1, 2)
        };
        let threads = [
            exited(0, 0, 10), // exactly the threshold: not short
            exited(1, 0, 9),
            running,
            exited(3, 0, 100),
        ];
        assert_eq!(
            assign_lanes(&threads, 10),
            [Lane::Own, Lane::Shared(1), Lane::Own, Lane::Own]
        );
    }

    #[test]
    fn zero_threshold_keeps_every_thread_on_its_own_lane() {
        let threads = [exited(0, 0, 0), exited(1, 1, 3), exited(2, 4, 9)];
        assert_eq!(assign_lanes(&threads, 0), [Lane::Own; 3]);
        assert_eq!(assign_lanes(&[], 10), []);
    }

    #[test]
    fn end_before_start_is_a_zero_length_thread() {
        let threads = [
            exited(0, 7, 2),
            exited(1, 7, 7),
            exited(2, 8, 0),
            exited(3, u64::MAX, 0),
        ];
        // t0 and t1 both sit at instant 7 (touching: two lanes); t2 at 8
        // could follow either, and takes the smaller k; t3 then takes
        // lane 2, which ended earlier (7) than lane 1 (8).
        assert_eq!(
            assign_lanes(&threads, 1),
            [
                Lane::Shared(1),
                Lane::Shared(2),
                Lane::Shared(1),
                Lane::Shared(2)
            ]
        );
    }

    #[test]
    fn extreme_timestamps_and_thresholds_do_not_panic() {
        let threads = [
            exited(0, 0, u64::MAX),
            exited(1, u64::MAX, u64::MAX),
            exited(u32::MAX, u64::MAX - 1, u64::MAX),
        ];
        // t0 lives u64::MAX: not short. t2 starts first and opens lane 1;
        // t1 starts at its end, so touches it and opens lane 2.
        assert_eq!(
            assign_lanes(&threads, u64::MAX),
            [Lane::Own, Lane::Shared(2), Lane::Shared(1)]
        );
    }

    #[test]
    fn input_order_does_not_change_any_threads_lane() {
        let threads = [
            exited(0, 0, 5),
            exited(1, 1, 3),
            exited(2, 4, 9),
            exited(3, 6, 7),
            exited(4, 0, 2),
            exited(5, 3, 3),
            exited(6, 0, 50),
        ];
        let by_thread = |threads: &[ThreadSpan]| lanes_by_thread(threads, 10);
        let expected = by_thread(&threads);
        // Every rotation of the input and its reverse.
        for r in 0..threads.len() {
            let mut shuffled = threads;
            shuffled.rotate_left(r);
            assert_eq!(by_thread(&shuffled), expected, "rotated by {r}");
            shuffled.reverse();
            assert_eq!(by_thread(&shuffled), expected, "rotated by {r}, reversed");
        }
    }

    #[test]
    fn lane_names_are_exact() {
        assert_eq!(lane_name(1), "short-lived threads (1)");
        assert_eq!(lane_name(12), "short-lived threads (12)");
    }

    #[test]
    fn threshold_parses_milliseconds() {
        let ns = |v| short_thread_ns(v).map_err(|e| e.to_string());
        assert_eq!(ns(None), Ok(10_000_000));
        assert_eq!(ns(Some("")), Ok(10_000_000));
        assert_eq!(ns(Some("  ")), Ok(10_000_000));
        assert_eq!(ns(Some("0")), Ok(0));
        assert_eq!(ns(Some(" 25 ")), Ok(25_000_000));
        assert_eq!(ns(Some("18446744073709551615")), Ok(u64::MAX));
        for bad in ["-1", "1.5", "10ms", "ten", "99999999999999999999"] {
            let message = ns(Some(bad)).unwrap_err();
            assert!(
                message.starts_with(&format!("PERFLENS_TRACE_SHORT_THREAD_MS={bad:?} is not")),
                "{message}"
            );
            assert!(!message.contains('\n'), "{message}");
        }
    }

    /// The largest number of short threads alive at one instant, by a
    /// sweep over closed intervals: at equal times starts count before
    /// ends, because a thread ending at `t` and one starting at `t` are
    /// both alive at `t`.
    fn max_alive(threads: &[ThreadSpan], short_below_ns: u64) -> u32 {
        let mut events: Vec<(u64, bool)> = Vec::new();
        for t in threads.iter().filter(|t| short_by_spec(t, short_below_ns)) {
            events.push((t.start_ns, false)); // false sorts first: a start
            events.push((t.end_ns.max(t.start_ns), true));
        }
        events.sort_unstable();
        let (mut alive, mut most) = (0u32, 0u32);
        for (_, is_end) in events {
            if is_end {
                alive -= 1;
            } else {
                alive += 1;
                most = most.max(alive);
            }
        }
        most
    }

    /// Spans with distinct thread indices: mostly well-formed, some with
    /// the end before the start, some still running.
    fn spans() -> impl Strategy<Value = Vec<ThreadSpan>> {
        let span = (
            0u64..200,
            0u64..40,
            prop::bool::weighted(0.85),
            prop::bool::weighted(0.1),
        );
        prop::collection::vec(span, 0..60).prop_map(|raw| {
            raw.into_iter()
                .zip(0u32..)
                .map(|((start_ns, len, exited, malformed), thread)| ThreadSpan {
                    thread,
                    start_ns,
                    end_ns: if malformed {
                        start_ns.saturating_sub(len + 1)
                    } else {
                        start_ns + len
                    },
                    exited,
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn packing_is_disjoint_minimal_and_complete(
            threads in spans(),
            short_below_ns in 0u64..40,
        ) {
            let lanes = assign_lanes(&threads, short_below_ns);
            prop_assert_eq!(lanes.len(), threads.len());

            // (c) short exited threads are shared, every other is own.
            for (t, lane) in threads.iter().zip(&lanes) {
                let short = short_by_spec(t, short_below_ns);
                prop_assert_eq!(matches!(lane, Lane::Shared(_)), short, "{:?} -> {:?}", t, lane);
            }

            // (a) threads on one shared lane neither overlap nor touch.
            let mut on_lanes: Vec<(u32, u64, u64)> = threads
                .iter()
                .zip(&lanes)
                .filter_map(|(t, lane)| match lane {
                    Lane::Shared(k) => Some((*k, t.start_ns, t.end_ns.max(t.start_ns))),
                    Lane::Own => None,
                })
                .collect();
            on_lanes.sort_unstable();
            for pair in on_lanes.windows(2) {
                let ((k1, _, end1), (k2, start2, _)) = (pair[0], pair[1]);
                if k1 == k2 {
                    prop_assert!(end1 < start2, "lane {} holds {:?}", k1, pair);
                }
            }

            // (b) lanes are numbered 1..=n with n the most alive at once.
            let used: std::collections::BTreeSet<u32> = on_lanes.iter().map(|l| l.0).collect();
            let n = max_alive(&threads, short_below_ns);
            prop_assert_eq!(used.len(), n as usize);
            prop_assert!(used.iter().copied().eq(1..=n), "lanes {:?}", used);
        }

        #[test]
        fn input_order_never_changes_the_assignment(
            (threads, shuffled) in spans().prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
            short_below_ns in 0u64..40,
        ) {
            prop_assert_eq!(
                lanes_by_thread(&shuffled, short_below_ns),
                lanes_by_thread(&threads, short_below_ns)
            );
        }
    }
}
