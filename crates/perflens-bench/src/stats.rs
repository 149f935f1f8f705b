//! Helpers shared by the three benchmark packages (`perflens-bench`,
//! `perflens-bench-alloc`, `perflens-bench-cpu`). They are separate
//! packages so that their dependencies' features do not unify, so the
//! other two include this file by path rather than depending on this
//! package.

/// `PERFLENS_BENCH_ROUNDS`, or `default` when unset or not a number.
pub fn rounds(default: usize) -> usize {
    std::env::var("PERFLENS_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Median of the values that are numbers (NaN when there are none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), 0 if absent.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
