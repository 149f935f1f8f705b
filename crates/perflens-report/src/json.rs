//! The JSON report (`perflens.report/1`): written with serde from the
//! [`Report`] model itself, read back into the same model.
//!
//! The format is documented field by field in `docs/report-schema.md` and
//! as a JSON Schema (draft 2020-12) in `schema/perflens.report.1.json`.
//! Versioning: adding a field keeps `/1` (readers ignore fields they do
//! not know); removing, renaming or changing the meaning or type of a
//! field bumps the version, and a reader refuses a version it does not
//! know rather than guess.

use std::io::{self, BufRead, BufWriter, Write};

use serde_json::Value;
use serde_json::error::Category;

use crate::error::ReportError;
use crate::model::{Report, SCHEMA};

/// Writes the report as pretty-printed JSON followed by a newline.
///
/// Output is buffered internally, so an unbuffered `File` is fine.
pub fn write_json<W: Write>(report: &Report, w: &mut W) -> io::Result<()> {
    let mut out = BufWriter::new(w);
    serde_json::to_writer_pretty(&mut out, report)?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Report {
    /// Reads a JSON report written by [`write_json`].
    ///
    /// Fails with a [`ReportError`] (never a panic) when the input is
    /// empty, truncated, not JSON, not a perflens report, of another
    /// schema version, or missing a required field. Unknown fields are
    /// ignored, as the versioning rule requires.
    pub fn from_json_reader<R: BufRead>(reader: R) -> Result<Report, ReportError> {
        let value: Value = serde_json::from_reader(reader).map_err(parse_error)?;
        let schema = value
            .get("schema")
            .and_then(Value::as_str)
            .ok_or(ReportError::NotAReport)?;
        if schema != SCHEMA {
            return Err(ReportError::UnsupportedSchema {
                found: schema.to_string(),
            });
        }
        serde_json::from_value(value).map_err(|e| ReportError::InvalidReport {
            message: e.to_string(),
        })
    }

    /// [`Report::from_json_reader`] on a string.
    pub fn from_json_str(text: &str) -> Result<Report, ReportError> {
        Report::from_json_reader(text.as_bytes())
    }
}

fn parse_error(e: serde_json::Error) -> ReportError {
    let (line, column) = (e.line(), e.column());
    match e.classify() {
        Category::Io => ReportError::Io(e.into()),
        Category::Eof if line <= 1 && column == 0 => ReportError::Empty,
        Category::Eof => ReportError::Truncated { line, column },
        Category::Syntax => {
            // serde_json appends " at line L column C"; we say it ourselves.
            let text = e.to_string();
            let message = text.split(" at line ").next().unwrap_or(&text).to_string();
            ReportError::Syntax {
                line,
                column,
                message,
            }
        }
        Category::Data => ReportError::InvalidReport {
            message: e.to_string(),
        },
    }
}

/// Path ids as 16 lowercase hex digits: JSON numbers are doubles in most
/// readers and would lose the low bits of a 64-bit hash.
pub(crate) mod hex_id {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(id: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{id:016x}"))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(D::Error::custom(format_args!(
                "path id {text:?} is not 16 hexadecimal digits"
            )));
        }
        u64::from_str_radix(&text, 16).map_err(D::Error::custom)
    }
}

/// A group of fields written flat into their row or path (serde
/// `flatten`): either all present or all absent. `None` when none of the
/// group's fields is there; an error naming the first missing one when
/// only some are (the JSON Schema requires all of them together), rather
/// than silently reading the group as absent.
pub(crate) mod all_or_none {
    use serde::de::{DeserializeOwned, Error};
    use serde::{Deserialize, Deserializer, Serialize};
    use serde_json::{Map, Value};

    pub(crate) fn deserialize<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Default + Serialize + DeserializeOwned,
    {
        let rest = Map::<String, Value>::deserialize(d)?;
        let names = match serde_json::to_value(T::default()) {
            Ok(Value::Object(names)) => names,
            _ => return Err(D::Error::custom("a field group is not a JSON object")),
        };
        let group: Map<String, Value> = (rest.into_iter())
            .filter(|(name, _)| names.contains_key(name))
            .collect();
        if group.is_empty() {
            return Ok(None);
        }
        T::deserialize(Value::Object(group))
            .map(Some)
            .map_err(D::Error::custom)
    }
}
