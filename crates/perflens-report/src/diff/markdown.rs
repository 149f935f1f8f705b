//! The comparison as a markdown table, for a pull request.

use super::*;

/// A change in %, as the table shows it.
fn show_percent(p: f64) -> String {
    if p.is_infinite() {
        "new".into()
    } else if p == 0.0 {
        "0%".into()
    } else if p.abs() < 0.1 {
        format!("{}<0.1%", if p > 0.0 { '+' } else { '-' })
    } else {
        format!("{p:+.1}%")
    }
}

/// Escapes what would break a markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

/// Writes the comparison as a markdown table (at most `limit` rows, 0:
/// all), with a line saying what was compared and what regressed.
pub fn write_markdown(
    d: &Diff,
    base_name: &str,
    new_name: &str,
    fail_on: &[Threshold],
    limit: usize,
) -> String {
    let mut out = String::new();
    let regressed = d.rows.iter().filter(|r| !r.regressions.is_empty()).count();
    let added = d
        .rows
        .iter()
        .filter(|r| matches!(r.diff, RowDiff::Added(_)))
        .count();
    let removed = d
        .rows
        .iter()
        .filter(|r| matches!(r.diff, RowDiff::Removed(_)))
        .count();
    let _ = writeln!(
        out,
        "**perflens diff** `{}` → `{}`: {} functions, {added} added, {removed} removed",
        cell(base_name),
        cell(new_name),
        d.rows.len()
    );
    if !fail_on.is_empty() {
        let rules: Vec<String> = fail_on.iter().map(|t| t.to_string()).collect();
        let verdict = match regressed {
            0 => "no regression".to_string(),
            1 => "**1 function regressed**".to_string(),
            n => format!("**{n} functions regressed**"),
        };
        let _ = writeln!(out, "\n--fail-on `{}`: {verdict}", rules.join(","));
        let unchecked: Vec<&str> = (fail_on.iter())
            .filter(|t| !d.metrics.contains(&t.metric))
            .map(|t| t.metric.name())
            .collect();
        if !unchecked.is_empty() {
            let _ = writeln!(
                out,
                "\nNot checked: {} (not measured in both reports).",
                unchecked.join(", ")
            );
        }
    }
    let _ = writeln!(out);
    let _ = write!(out, "| Function |");
    for m in &d.metrics {
        let _ = write!(out, " {} |", m.header());
    }
    let _ = writeln!(out, " Status |");
    let _ = write!(out, "|---|");
    for _ in &d.metrics {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out, "---|");
    let shown = if limit == 0 { d.rows.len() } else { limit };
    for row in d.rows.iter().take(shown) {
        let _ = write!(out, "| `{}` |", cell(&row.name));
        let status = match &row.diff {
            RowDiff::Both(changes) => {
                for m in &d.metrics {
                    match changes.iter().find(|c| c.metric == *m) {
                        Some(c) => {
                            let pct = show_percent(c.percent);
                            let flagged = row.regressions.iter().any(|(t, _)| t.metric == *m);
                            let _ = if flagged {
                                write!(out, " {} (**{pct}**) |", m.show(c.new))
                            } else if c.resolved || c.percent == 0.0 {
                                write!(out, " {} ({pct}) |", m.show(c.new))
                            } else {
                                // Within the reports' resolution.
                                write!(out, " {} (≈) |", m.show(c.new))
                            };
                        }
                        None => {
                            let _ = write!(out, " - |");
                        }
                    }
                }
                let broke: Vec<String> = row
                    .regressions
                    .iter()
                    .map(|(t, p)| format!("{} {}", t.metric.name(), show_percent(*p)))
                    .collect();
                if broke.is_empty() {
                    String::new()
                } else {
                    format!("regressed: {}", broke.join(", "))
                }
            }
            RowDiff::Added(figures) | RowDiff::Removed(figures) => {
                for m in &d.metrics {
                    let _ = match figures.iter().find(|(k, _)| k == m) {
                        Some((_, v)) => write!(out, " {} |", m.show(*v)),
                        None => write!(out, " - |"),
                    };
                }
                if matches!(row.diff, RowDiff::Added(_)) {
                    "added".into()
                } else {
                    "removed (base figures)".into()
                }
            }
        };
        let _ = writeln!(out, " {status} |");
    }
    if shown < d.rows.len() {
        let _ = writeln!(
            out,
            "\n{} more functions not shown (--limit 0 shows all).",
            d.rows.len() - shown
        );
    }
    let _ = writeln!(
        out,
        "\nNew figures, with the change against the base; ≈: within what the reports can tell apart (a percentile's histogram bucket, a tick per call, a CPU sample), never flagged. By impact: the largest change of total, self, allocated bytes or CPU as a share of the whole report's."
    );
    out
}
