//! Percentile lists, their labels (`p50`, `p99.9`) and the ordered
//! label -> nanoseconds map written to JSON.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ReportError;

/// The label of a percentile: `p` followed by the shortest decimal that
/// reads back as the same number (`50.0` -> `p50`, `99.9` -> `p99.9`).
pub fn percentile_label(p: f64) -> String {
    format!("p{p}")
}

/// Keeps the values in `(0, 100]`, sorted ascending, without duplicates.
pub fn sanitize_percentiles(values: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = values
        .iter()
        .copied()
        .filter(|p| *p > 0.0 && *p <= 100.0)
        .collect();
    out.sort_by(f64::total_cmp);
    out.dedup();
    out
}

/// Parses a comma-separated list such as `"50,95,99.9"` (an optional `p`
/// before each value is accepted), as given on a command line or in an
/// environment variable.
pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, ReportError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let number = part.strip_prefix(['p', 'P']).unwrap_or(part);
        match number.parse::<f64>() {
            Ok(p) if p > 0.0 && p <= 100.0 => out.push(p),
            _ => {
                return Err(ReportError::InvalidOption {
                    message: format!(
                        "The percentile {part:?} is not a number in (0, 100]; \
                         write a list such as \"50,95,99.9\"."
                    ),
                });
            }
        }
    }
    if out.is_empty() {
        return Err(ReportError::InvalidOption {
            message: "The percentile list is empty; write a list such as \"50,95,99.9\".".into(),
        });
    }
    Ok(sanitize_percentiles(&out))
}

/// Configured percentiles of one row, in the configured order, as
/// `(label, ns)` pairs. Written to JSON as an object (`{"p50": 1200, ...}`)
/// whose key order is kept on read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Percentiles(pub Vec<(String, u64)>);

impl Percentiles {
    /// The value for a label such as `"p99.9"`.
    pub fn get(&self, label: &str) -> Option<u64> {
        self.0.iter().find(|(l, _)| l == label).map(|&(_, v)| v)
    }

    /// Pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(l, v)| (l.as_str(), *v))
    }
}

impl Serialize for Percentiles {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (label, ns) in &self.0 {
            map.serialize_entry(label, ns)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Percentiles {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedMap;

        impl<'de> Visitor<'de> for OrderedMap {
            type Value = Percentiles;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object mapping percentile labels to nanoseconds")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Percentiles, A::Error> {
                let mut out = Vec::new();
                while let Some((label, ns)) = access.next_entry::<String, u64>()? {
                    out.push((label, ns));
                }
                Ok(Percentiles(out))
            }
        }

        deserializer.deserialize_map(OrderedMap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_use_the_shortest_decimal() {
        assert_eq!(percentile_label(50.0), "p50");
        assert_eq!(percentile_label(99.9), "p99.9");
        assert_eq!(percentile_label(99.99), "p99.99");
        assert_eq!(percentile_label(100.0), "p100");
    }

    #[test]
    fn sanitize_drops_out_of_range_and_sorts() {
        let got = sanitize_percentiles(&[99.0, 0.0, 50.0, f64::NAN, 101.0, 50.0, -3.0, 100.0]);
        assert_eq!(got, vec![50.0, 99.0, 100.0]);
    }

    #[test]
    fn parse_accepts_p_prefix_and_rejects_garbage() {
        assert_eq!(
            parse_percentiles("p99.9, 50,95").unwrap(),
            vec![50.0, 95.0, 99.9]
        );
        let err = parse_percentiles("50,abc").unwrap_err().to_string();
        assert!(err.contains("\"abc\""), "{err}");
        assert!(parse_percentiles("0").is_err());
        assert!(parse_percentiles(" , ").is_err());
    }
}
