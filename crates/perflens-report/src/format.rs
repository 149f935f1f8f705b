//! Human units for the terminal: durations, counts, percentages, and
//! names cut to a column width.

/// A duration in the largest unit that keeps it at or above 1:
/// `850 ns`, `12.35 µs`, `3.20 ms`, `15.61 s` (two decimals above ns).
pub fn duration(ns: u64) -> String {
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    let v = ns as f64;
    for (i, &(scale, unit)) in UNITS.iter().enumerate() {
        let x = v / scale;
        // Move up a unit when rounding would print "1000.00".
        if x < 999.995 || i == UNITS.len() - 1 {
            return format!("{x:.2} {unit}");
        }
    }
    unreachable!("the last unit always returns")
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A percentage with one decimal, capped at `>999%` (several threads can
/// spend more than the session's wall time in one function).
pub fn percent(p: f64) -> String {
    if p >= 999.95 {
        ">999%".to_string()
    } else {
        format!("{p:.1}%")
    }
}

/// Display width of a string, counting each `char` as one column.
pub fn width(s: &str) -> usize {
    s.chars().count()
}

/// Cuts `s` to at most `max` columns by dropping characters on the left
/// and marking the cut with `…`: the end of a name (the function, the
/// leaf of a path) is the part worth keeping.
pub fn truncate_left(s: &str, max: usize) -> String {
    let n = width(s);
    if n <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let keep: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{keep}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_the_unit() {
        assert_eq!(duration(0), "0 ns");
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_000), "1.00 µs");
        assert_eq!(duration(12_345), "12.35 µs");
        assert_eq!(duration(999_994), "999.99 µs");
        assert_eq!(duration(999_995), "1.00 ms");
        assert_eq!(duration(3_200_000), "3.20 ms");
        assert_eq!(duration(15_610_000_000), "15.61 s");
        assert_eq!(duration(4_000_000_000_000), "4000.00 s");
    }

    #[test]
    fn counts_get_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn percent_caps() {
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(42.26), "42.3%");
        assert_eq!(percent(812.5), "812.5%");
        assert_eq!(percent(5000.0), ">999%");
    }

    #[test]
    fn truncation_keeps_the_end() {
        assert_eq!(truncate_left("app::parse", 20), "app::parse");
        assert_eq!(truncate_left("app::module::parse", 10), "…le::parse");
        assert_eq!(width(&truncate_left("µµµµµµ", 4)), 4);
        assert_eq!(truncate_left("abc", 0), "");
    }
}
