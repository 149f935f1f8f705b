//! The offline report: one HTML file with everything inline (its script,
//! its style, the report and the trace as JSON), that opens from disk and
//! makes no request of any kind (its Content-Security-Policy forbids
//! every fetch, and it has nothing to fetch). It shows the function table
//! (sortable, filterable), the hot paths as a tree, a flamegraph of the
//! CPU samples, the Waits section, the channels and locks, and the
//! timeline with its arrows when a Chrome JSON trace is given.

use crate::model::Report;
use std::io::{self, Write};

const TEMPLATE: &str = include_str!("html/report.html");
const STYLE: &str = include_str!("html/report.css");
const SCRIPT: &str = include_str!("html/report.js");

/// JSON made safe inside a `<script>` element: every `<` written as
/// `\u003c` (the same string to a JSON reader), so no `</script>` or
/// `<!--` in a name can end or change the element.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// Text made safe inside HTML.
fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes `report` as a self-contained HTML page titled `title`; with
/// `trace`, the text of a Chrome JSON trace (`PERFLENS_TRACE=x.json`),
/// its timeline too. A trace that is not JSON is an error (nothing is
/// written).
pub fn write_html<W: Write + ?Sized>(
    report: &Report,
    title: &str,
    trace: Option<&str>,
    out: &mut W,
) -> io::Result<()> {
    // Compact: the page parses it, nobody reads it (a third of the
    // pretty-printed size for a large report).
    let json = serde_json::to_string(report).map_err(io::Error::other)?;
    let trace = match trace {
        Some(text) => {
            let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the trace is not JSON: {e}"),
                )
            })?;
            if !(value.get("traceEvents").is_some_and(|v| v.is_array()) || value.is_array()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the trace is not a Chrome trace (no traceEvents)",
                ));
            }
            script_safe(text)
        }
        None => String::new(),
    };
    let title = html_text(title);
    // Placeholders are replaced in one pass over the template, so the
    // report's own text is never searched for them.
    let mut rest = TEMPLATE;
    while let Some(at) = rest.find("{{") {
        out.write_all(&rest.as_bytes()[..at])?;
        let after = &rest[at + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| io::Error::other("bad template"))?;
        let value: &str = match &after[..end] {
            "TITLE" => &title,
            "STYLE" => STYLE,
            "SCRIPT" => SCRIPT,
            "REPORT" => &script_safe(json.trim_end()),
            "TRACE" => &trace,
            other => return Err(io::Error::other(format!("unknown placeholder {other}"))),
        };
        out.write_all(value.as_bytes())?;
        rest = &after[end + 2..];
    }
    out.write_all(rest.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::script_safe;

    #[test]
    fn no_name_can_close_the_script_element() {
        let json = r#"{"name":"</script><script>alert(1)</script><!--"}"#;
        let safe = script_safe(json);
        assert!(!safe.contains('<'));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["name"], "</script><script>alert(1)</script><!--");
    }
}
