//! Tests of the timeline model: replayed events, nesting, tasks and arrows.

use super::*;

/// `(node, begin, end, depth, truncated)` of each slice, by begin.
fn slices(events: &[(u8, u32, u64)], end: u64) -> Vec<(u32, u64, u64, u32, bool)> {
    let first = events.first().map_or(0, |e| e.2);
    let events = events.iter().map(|&(k, n, t)| (k, 0, n, t));
    let mut out: Vec<_> = replay(events, first, end)
        .into_iter()
        .map(|s| (s.node, s.begin_ns, s.end_ns, s.depth, s.truncated))
        .collect();
    out.sort_by_key(|s| (s.1, s.3));
    out
}

const B: u8 = SPAN_BEGIN;
const E: u8 = SPAN_END;

#[test]
fn whole_calls_nest() {
    let ev = [
        (B, 1, 10),
        (B, 2, 11),
        (E, 2, 15),
        (B, 2, 16),
        (E, 2, 17),
        (E, 1, 20),
    ];
    assert_eq!(
        slices(&ev, 99),
        [
            (1, 10, 20, 0, false),
            (2, 11, 15, 1, false),
            (2, 16, 17, 1, false)
        ]
    );
}

#[test]
fn an_end_whose_begin_was_dropped_begins_at_the_first_event() {
    // `1` began before the kept events; `2` ran inside it.
    let ev = [(B, 2, 5), (E, 2, 7), (E, 1, 9), (B, 3, 12), (E, 3, 13)];
    assert_eq!(
        slices(&ev, 99),
        [
            (1, 5, 9, 0, true),
            (2, 5, 7, 1, false),
            (3, 12, 13, 0, false)
        ]
    );
}

#[test]
fn calls_open_at_the_end_end_there() {
    let ev = [(B, 1, 1), (B, 2, 2)];
    assert_eq!(slices(&ev, 10), [(1, 1, 10, 0, true), (2, 2, 10, 1, true)]);
}

#[test]
fn leaked_calls_end_with_the_call_below_and_stray_ends_are_ignored() {
    // `2`'s guard was leaked: it ends when `1` does. `3` never began
    // while `1` is open.
    let ev = [(B, 1, 1), (B, 2, 2), (E, 3, 3), (E, 1, 5)];
    assert_eq!(slices(&ev, 10), [(1, 1, 5, 0, false), (2, 2, 5, 1, true)]);
}

#[test]
fn polls_are_slices_that_say_whether_they_completed() {
    let ev = [
        (POLL_BEGIN, 0, 1, 10),
        (SPAN_BEGIN, 0, 2, 11),
        (SPAN_END, 0, 2, 12),
        (POLL_END, 0, 1, 13),
        (POLL_BEGIN, 0, 1, 20),
        (POLL_END, READY, 1, 25),
    ];
    let got: Vec<(u32, SliceKind, u64, u64, u32)> = replay(ev.into_iter(), 10, 99)
        .into_iter()
        .map(|s| (s.node, s.kind, s.begin_ns, s.end_ns, s.depth))
        .collect();
    assert_eq!(
        got,
        [
            (2, SliceKind::Call, 11, 12, 1),
            (1, SliceKind::Poll { ready: false }, 10, 13, 0),
            (1, SliceKind::Poll { ready: true }, 20, 25, 0),
        ]
    );
}

mod random_streams {
    use super::*;
    use proptest::prelude::*;

    /// A thread's stream of well-nested calls and polls (`ops`: true
    /// opens a call of `node % 4`, as a poll when `node` is even and
    /// above 3; false closes the innermost), one tick apart; then the
    /// flight recorder drops the oldest `drop` events and the stream
    /// is cut after `keep` (calls left open).
    fn stream(ops: &[(bool, u32)], drop: usize, keep: usize) -> Vec<(u8, u8, u32, u64)> {
        let mut out = Vec::new();
        let mut open: Vec<(u32, bool)> = Vec::new();
        for (k, &(begin, node)) in ops.iter().enumerate() {
            let at = k as u64 * 10;
            if begin {
                let (node, poll) = (node % 4, node > 3 && node % 2 == 0);
                open.push((node, poll));
                out.push((if poll { POLL_BEGIN } else { SPAN_BEGIN }, 0, node, at));
            } else if let Some((node, poll)) = open.pop() {
                let kind = if poll { POLL_END } else { SPAN_END };
                out.push((kind, if poll { READY } else { 0 }, node, at));
            }
        }
        let start = drop.min(out.len());
        let end = (start + keep).min(out.len());
        out[start..end].to_vec()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Whatever was dropped or left open, the slices nest: two
        /// are disjoint or one holds the other, a slice's depth is
        /// the number of slices holding it, and all lie between the
        /// first kept event and the end.
        #[test]
        fn slices_always_nest(
            ops in prop::collection::vec((any::<bool>(), 0u32..8), 0..60),
            drop in 0usize..40,
            keep in 0usize..60,
        ) {
            let events = stream(&ops, drop, keep);
            let first = events.first().map_or(0, |e| e.3);
            let end = events.last().map_or(0, |e| e.3) + 5;
            let slices = replay(events.iter().copied(), first, end);
            let holds = |a: &Raw, b: &Raw| a.begin_ns <= b.begin_ns && b.end_ns <= a.end_ns;
            for (i, a) in slices.iter().enumerate() {
                prop_assert!(first <= a.begin_ns && a.begin_ns <= a.end_ns && a.end_ns <= end);
                let mut holders = 0;
                for (j, b) in slices.iter().enumerate() {
                    if i == j {
                        continue;
                    }
                    let disjoint = a.end_ns <= b.begin_ns || b.end_ns <= a.begin_ns;
                    prop_assert!(disjoint || holds(a, b) || holds(b, a), "{i} {j}");
                    // Among slices of some length, the ones holding
                    // `a` (on equal spans, the shallower one holds).
                    let longer = b.end_ns - b.begin_ns > a.end_ns - a.begin_ns;
                    if b.end_ns > b.begin_ns && holds(b, a) && (longer || b.depth < a.depth) {
                        holders += 1;
                    }
                }
                // A slice of no length (begun and cut at one instant)
                // may touch slices it is not inside.
                if a.end_ns > a.begin_ns {
                    prop_assert_eq!(holders, a.depth);
                }
            }
            // Every kept begin and end is some slice's (nothing lost):
            // a slice per begin, plus one per end whose begin went.
            let begins = events.iter().filter(|e| matches!(e.0, SPAN_BEGIN | POLL_BEGIN)).count();
            prop_assert!(slices.len() >= begins);
        }
    }
}
