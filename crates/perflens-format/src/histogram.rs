//! Log-linear latency histograms.
//!
//! A value `v` (clock ticks) falls into one of [`BUCKETS`] buckets: values
//! below 64 get a bucket each, and every power-of-two range above that is
//! split into 32 equal sub-buckets (the HdrHistogram layout with 5
//! significant bits). A bucket's representative value is its midpoint, so
//! a quantile read back from the histogram is within `1/64` (1.6%) of the
//! exact value, for any distribution. The whole `u64` range is covered:
//! nothing is clamped.
//!
//! The hot path only computes [`bucket_index`] and bumps a counter in the
//! thread's own block (see `block.rs`); [`Histogram`] is the owned, sparse
//! form used by snapshots, which can be merged across nodes and threads.

/// log2 of the number of sub-buckets per power of two.
pub const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Number of buckets needed to cover every `u64`.
pub const BUCKETS: usize = ((64 - SUB_BITS as usize) << SUB_BITS as usize) + SUB as usize;

/// The bucket a value falls into. Branch-free: one `lzcnt`, two shifts.
///
/// With `s = max(0, floor(log2 v) - SUB_BITS)`, the index is
/// `s * 32 + (v >> s)`: values below 64 map to themselves, and above that
/// `v >> s` lies in `[32, 64)`, the sub-bucket plus 32.
#[inline(always)]
pub fn bucket_index(v: u64) -> usize {
    let s = (63 - SUB_BITS) - (v | (2 * SUB - 1)).leading_zeros();
    ((s as usize) << SUB_BITS) + (v >> s) as usize
}

/// Smallest value and width of bucket `idx`.
pub fn bucket_bounds(idx: usize) -> (u64, u64) {
    if idx < SUB as usize {
        (idx as u64, 1)
    } else {
        let e = (idx >> SUB_BITS) as u32 + SUB_BITS - 1;
        let sub = (idx as u64) & (SUB - 1);
        let shift = e - SUB_BITS;
        ((SUB | sub) << shift, 1u64 << shift)
    }
}

/// The value reported for bucket `idx`: its midpoint (exact below 64).
pub fn bucket_value(idx: usize) -> u64 {
    let (low, width) = bucket_bounds(idx);
    low + width / 2
}

/// An owned, sparse histogram: `(bucket, count)` pairs sorted by bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    buckets: Vec<(u16, u64)>,
    count: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a histogram from dense counts (index = bucket).
    pub fn from_dense(counts: impl IntoIterator<Item = u64>) -> Self {
        let mut h = Histogram::new();
        for (i, c) in counts.into_iter().enumerate() {
            if c != 0 && i < BUCKETS {
                h.buckets.push((i as u16, c));
                h.count += c;
            }
        }
        h
    }

    /// Builds a histogram from `(bucket, count)` pairs sorted by bucket,
    /// with no zero counts (as a reader of dense counters finds them).
    #[doc(hidden)]
    pub fn from_sorted(buckets: Vec<(u16, u64)>) -> Self {
        debug_assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0));
        let count = buckets.iter().map(|&(_, c)| c).sum();
        Histogram { buckets, count }
    }

    /// Adds one value.
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Adds `n` occurrences of a value.
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let idx = bucket_index(v) as u16;
        match self.buckets.binary_search_by_key(&idx, |&(b, _)| b) {
            Ok(pos) => self.buckets[pos].1 += n,
            Err(pos) => self.buckets.insert(pos, (idx, n)),
        }
        self.count += n;
    }

    /// Adds every value of `other` to `self`.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        let mut out = Vec::with_capacity(self.buckets.len() + other.buckets.len());
        let (mut a, mut b) = (
            self.buckets.iter().peekable(),
            other.buckets.iter().peekable(),
        );
        loop {
            match (a.peek(), b.peek()) {
                (Some(&&(ia, ca)), Some(&&(ib, cb))) => {
                    if ia == ib {
                        out.push((ia, ca + cb));
                        a.next();
                        b.next();
                    } else if ia < ib {
                        out.push((ia, ca));
                        a.next();
                    } else {
                        out.push((ib, cb));
                        b.next();
                    }
                }
                (Some(&&x), None) => {
                    out.push(x);
                    a.next();
                }
                (None, Some(&&x)) => {
                    out.push(x);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.buckets = out;
        self.count += other.count;
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bounds of the sum of the recorded values, `(lowest, highest,
    /// midpoints)`: each value lies in its bucket, so the exact sum is in
    /// `[lowest, highest]`, and the sum of the buckets' midpoints is
    /// within 1/64 of it.
    pub fn sum_bounds(&self) -> (u128, u128, u128) {
        let (mut lo, mut hi, mut mid) = (0u128, 0u128, 0u128);
        for &(idx, n) in &self.buckets {
            let (low, width) = bucket_bounds(idx as usize);
            let n = n as u128;
            lo += low as u128 * n;
            hi += (low as u128 + width as u128 - 1) * n;
            mid += bucket_value(idx as usize) as u128 * n;
        }
        (lo, hi, mid)
    }

    /// The non-empty buckets as `(bucket index, count)`, ascending.
    pub fn buckets(&self) -> &[(u16, u64)] {
        &self.buckets
    }

    /// [`Histogram::quantile`] of each of `qs`, in one walk of the
    /// buckets (`qs` ascending; out of order, each is still right, the
    /// walk only restarts).
    pub fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        let mut at = 0;
        let mut seen = 0u64;
        for (k, &q) in qs.iter().enumerate() {
            if self.count == 0 {
                break;
            }
            let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
            let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
            // `seen` counts the values before bucket `at`, where the walk
            // stands: a rank among them lies behind it, so start again.
            if rank <= seen {
                (at, seen) = (0, 0);
            }
            while let Some(&(idx, c)) = self.buckets.get(at) {
                if seen + c >= rank {
                    out[k] = Some(bucket_value(idx as usize));
                    break;
                }
                seen += c;
                at += 1;
            }
            if out[k].is_none() {
                out[k] = self
                    .buckets
                    .last()
                    .map(|&(idx, _)| bucket_value(idx as usize));
            }
        }
        out
    }

    /// The nearest-rank quantile `q` in `[0, 1]`: the value at rank
    /// `ceil(q * count)` (at least 1) of the sorted values, read as its
    /// bucket's midpoint. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for &(idx, c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return Some(bucket_value(idx as usize));
            }
        }
        self.buckets
            .last()
            .map(|&(idx, _)| bucket_value(idx as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn index_covers_all_u64_and_bounds_round_trip() {
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
        for v in (0..5000u64).chain([u64::MAX, u64::MAX / 3, 1 << 40, (1 << 40) - 1]) {
            let idx = bucket_index(v);
            let (low, width) = bucket_bounds(idx);
            assert!(
                low <= v && v - low < width,
                "v={v} idx={idx} low={low} w={width}"
            );
        }
        // Indices are contiguous and monotonic.
        let mut last = 0;
        for shift in 0..64 {
            let v = 1u64 << shift;
            assert!(bucket_index(v) >= last);
            last = bucket_index(v);
        }
    }

    /// What a live reader's scan relies on: the buckets whose smallest
    /// value is at most `v` are exactly those up to `bucket_index(v)`.
    #[test]
    fn buckets_starting_at_most_v_end_at_its_index() {
        let lows: Vec<u64> = (0..BUCKETS).map(|b| bucket_bounds(b).0).collect();
        assert!(lows.windows(2).all(|w| w[0] < w[1]), "smallest values grow");
        let mut v = 1u64;
        let mut values: Vec<u64> = (0..5000).chain([u64::MAX, u64::MAX - 1]).collect();
        for _ in 0..10_000 {
            v = v
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            values.push(v >> (v % 64));
        }
        values.extend(lows.iter().flat_map(|&l| [l, l.saturating_sub(1), l + 1]));
        for v in values {
            let below = lows.partition_point(|&low| low <= v);
            assert_eq!(below, bucket_index(v) + 1, "v={v}");
        }
    }

    #[test]
    fn quantiles_in_one_walk_are_the_quantiles() {
        let mut h = Histogram::new();
        for v in [5u64, 5, 7, 100, 3_000, 3_000, 3_000, 70_000] {
            h.record(v);
        }
        let qs = [0.0, 0.1, 0.5, 0.5, 0.875, 0.99, 1.0];
        let one = h.quantiles(qs);
        for (k, q) in qs.iter().enumerate() {
            assert_eq!(one[k], h.quantile(*q), "q = {q}");
        }
        // Descending and NaN: each still right.
        let back = h.quantiles([0.99, 0.5, f64::NAN, 0.1]);
        assert_eq!(
            back,
            [
                h.quantile(0.99),
                h.quantile(0.5),
                h.quantile(0.0),
                h.quantile(0.1)
            ]
        );
        assert_eq!(Histogram::new().quantiles([0.5, 0.99]), [None, None]);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 0..64 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), Some(31));
        assert_eq!(h.quantile(1.0), Some(63));
        assert_eq!(h.quantile(0.0), Some(0));
    }

    #[test]
    fn merge_equals_recording_everything_into_one() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in [5u64, 900, 1_000_000, 77, 900] {
            a.record(v);
            all.record(v);
        }
        for v in [3u64, 900, 12_345_678_901] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(a.count(), 8);
    }

    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        let n = sorted.len() as u64;
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize]
    }

    /// The documented bound: a quantile read back is within `1/64` of the
    /// exact one (exact below 64). Checked in integers, so values near
    /// `u64::MAX` are not rounded.
    fn check_within_1_64th(mut values: Vec<u64>) {
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            let exact = exact_quantile(&values, q);
            let got = h.quantile(q).unwrap();
            assert!(
                u128::from(got.abs_diff(exact)) * 64 <= u128::from(exact),
                "q={q} exact={exact} got={got}"
            );
        }
    }

    #[test]
    fn the_bound_is_tight_at_a_power_of_two() {
        // 2^e is the low edge of a bucket 2^(e-5) wide, read back as its
        // midpoint: exactly 1/64 too high, the worst case.
        for e in 6..64 {
            let v = 1u64 << e;
            let mut h = Histogram::new();
            h.record(v);
            assert_eq!(h.quantile(0.5), Some(v + v / 64), "2^{e}");
        }
        // The last value of a bucket is read back low, by less than 1/64:
        // 131 lies in [128, 132), read as 130.
        let mut h = Histogram::new();
        h.record(131);
        assert_eq!(h.quantile(0.5), Some(130));
        h = Histogram::new();
        h.record(u64::MAX);
        assert_eq!(h.quantile(1.0), Some(u64::MAX - (1 << 57) + 1));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn quantiles_within_1_64th_any_values(values in prop::collection::vec(any::<u64>(), 1..400)) {
            check_within_1_64th(values);
        }

        #[test]
        fn quantiles_within_1_64th_latency_like(
            values in prop::collection::vec((0u32..48, any::<u64>()), 1..2000)
        ) {
            // Log-uniform values: every octave from 1 to 2^48 ticks.
            check_within_1_64th(values.into_iter().map(|(e, m)| (1u64 << e) | (m & ((1u64 << e) - 1))).collect());
        }

        /// The exact sum of the values lies within the bounds, and the
        /// midpoints' sum within 1/64 of it.
        #[test]
        fn the_sum_lies_within_its_bounds(values in prop::collection::vec(any::<u64>(), 0..300)) {
            let mut h = Histogram::new();
            for &v in &values {
                h.record(v);
            }
            let exact: u128 = values.iter().map(|&v| v as u128).sum();
            let (lo, hi, mid) = h.sum_bounds();
            prop_assert!(lo <= exact && exact <= hi, "{lo} <= {exact} <= {hi}");
            prop_assert!(lo <= mid && mid <= hi);
            prop_assert!(mid.abs_diff(exact) * 64 <= exact.max(1), "{mid} vs {exact}");
        }

        /// One walk gives what one call per quantile gives, in any
        /// order of the quantiles.
        #[test]
        fn quantiles_in_one_walk_match_each_quantile(
            values in prop::collection::vec(0u64..1_000_000, 0..200),
            qs in prop::array::uniform4(0.0f64..=1.0),
        ) {
            let mut h = Histogram::new();
            for &v in &values {
                h.record(v);
            }
            let one = h.quantiles(qs);
            for (k, q) in qs.iter().enumerate() {
                prop_assert_eq!(one[k], h.quantile(*q));
            }
        }

        /// Merging is recording everything into one, whether the two
        /// share every bucket, some or none.
        #[test]
        fn merge_is_recording_both(
            a in prop::collection::vec(0u64..5000, 0..60),
            b in prop::collection::vec(0u64..5000, 0..60),
            subset in any::<bool>(),
        ) {
            let record = |vs: &[u64]| {
                let mut h = Histogram::new();
                vs.iter().for_each(|&v| h.record(v));
                h
            };
            // `subset`: b's values drawn from a's (every bucket shared).
            let b: Vec<u64> = if subset && !a.is_empty() {
                b.iter().map(|&i| a[i as usize % a.len()]).collect()
            } else {
                b
            };
            let mut merged = record(&a);
            merged.merge(&record(&b));
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(merged, record(&all));
        }

        #[test]
        fn quantiles_within_1_64th_clustered(base in 1u64..10_000_000, spread in 0u64..1000, n in 1usize..3000, seed in any::<u64>()) {
            let mut x = seed | 1;
            let values = (0..n).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; base + x % (spread + 1) }).collect();
            check_within_1_64th(values);
        }
    }
}
