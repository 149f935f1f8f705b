//! Human units for the terminal: durations, byte sizes, counts,
//! percentages, and names cut to a column width.
//!
//! Each unit also writes into any [`fmt::Write`] (`write_*`): what a
//! caller that only measures or appends needs, without a `String` a
//! value.

use std::fmt::{self, Write};

/// A duration in the largest unit that keeps it at or above 1:
/// `850 ns`, `12.35 µs`, `3.20 ms`, `15.61 s` (two decimals above ns).
pub fn duration(ns: u64) -> String {
    to_string(|s| write_duration(s, ns))
}

/// [`duration`], written into `out`.
pub fn write_duration<W: Write + ?Sized>(out: &mut W, ns: u64) -> fmt::Result {
    if ns < 1_000 {
        return write!(out, "{ns} ns");
    }
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    let v = ns as f64;
    for (i, &(scale, unit)) in UNITS.iter().enumerate() {
        let x = v / scale;
        // Move up a unit when rounding would print "1000.00".
        if x < 999.995 || i == UNITS.len() - 1 {
            return write!(out, "{x:.2} {unit}");
        }
    }
    unreachable!("the last unit always returns")
}

/// A byte size in binary units: `512 B`, then the largest of KiB, MiB,
/// GiB and TiB that keeps it at or above 1, with two decimals:
/// `1.50 KiB`, `3.25 MiB`, `4.00 GiB`.
pub fn bytes(n: u64) -> String {
    to_string(|s| write_bytes(s, n))
}

/// [`bytes`], written into `out`.
pub fn write_bytes<W: Write + ?Sized>(out: &mut W, n: u64) -> fmt::Result {
    if n < 1024 {
        return write!(out, "{n} B");
    }
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let v = n as f64;
    let mut scale = 1024.0;
    for (i, unit) in UNITS.iter().enumerate() {
        let x = v / scale;
        // Move up a unit when rounding would print "1024.00".
        if x < 1023.995 || i == UNITS.len() - 1 {
            return write!(out, "{x:.2} {unit}");
        }
        scale *= 1024.0;
    }
    unreachable!("the last unit always returns")
}

/// [`bytes`] of a signed size, with a `-` when negative.
pub fn signed_bytes(n: i64) -> String {
    to_string(|s| write_signed_bytes(s, n))
}

/// [`signed_bytes`], written into `out`.
pub fn write_signed_bytes<W: Write + ?Sized>(out: &mut W, n: i64) -> fmt::Result {
    if n < 0 {
        out.write_char('-')?;
    }
    write_bytes(out, n.unsigned_abs())
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: u64) -> String {
    to_string(|s| write_count(s, n))
}

/// [`count`], written into `out`.
pub fn write_count<W: Write + ?Sized>(out: &mut W, n: u64) -> fmt::Result {
    // u64::MAX has 20 digits.
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut rest = n;
    loop {
        digits[len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for i in 0..len {
        if i > 0 && (len - i).is_multiple_of(3) {
            out.write_char(',')?;
        }
        out.write_char(char::from(digits[len - 1 - i]))?;
    }
    Ok(())
}

/// A percentage with one decimal, capped at `>999%` (several threads can
/// spend more than the session's wall time in one function).
pub fn percent(p: f64) -> String {
    to_string(|s| write_percent(s, p))
}

/// [`percent`], written into `out`.
pub fn write_percent<W: Write + ?Sized>(out: &mut W, p: f64) -> fmt::Result {
    if p >= 999.95 {
        out.write_str(">999%")
    } else {
        write!(out, "{p:.1}%")
    }
}

fn to_string(write: impl FnOnce(&mut String) -> fmt::Result) -> String {
    let mut s = String::new();
    // Writing into a String does not fail.
    let _ = write(&mut s);
    s
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
    fn bytes_pick_the_binary_unit() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.00 KiB");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(1_048_570), "1023.99 KiB");
        assert_eq!(bytes(1_048_575), "1.00 MiB");
        assert_eq!(bytes(3 * 1024 * 1024 + 256 * 1024), "3.25 MiB");
        assert_eq!(bytes(4 << 30), "4.00 GiB");
        assert_eq!(bytes(5 << 40), "5.00 TiB");
        assert_eq!(bytes(u64::MAX), "16777216.00 TiB");
        assert_eq!(signed_bytes(-1536), "-1.50 KiB");
        assert_eq!(signed_bytes(i64::MIN), "-8388608.00 TiB");
        assert_eq!(signed_bytes(7), "7 B");
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
    fn counts_keep_every_digit() {
        let mut n = 1u64;
        for _ in 0..20 {
            for v in [n - 1, n, n + 1, n.saturating_mul(7), u64::MAX] {
                let plain: String = count(v).chars().filter(|&c| c != ',').collect();
                assert_eq!(plain, v.to_string());
                assert_eq!(count(v).len(), plain.len() + (plain.len() - 1) / 3);
            }
            n = n.saturating_mul(10);
        }
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
