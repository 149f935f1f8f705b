//! The crate's one error type.

use std::{error, fmt, io};

/// Why a report could not be read (or an option not parsed).
///
/// Every message is a whole sentence that says what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReportError {
    /// Reading the input failed.
    Io(io::Error),
    /// The input is empty.
    Empty,
    /// The input ends before the JSON document does.
    Truncated {
        /// 1-based line where the input ended.
        line: usize,
        /// 1-based column where the input ended.
        column: usize,
    },
    /// The input is not valid JSON.
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The parser's description.
        message: String,
    },
    /// The JSON has no `schema` string, so it is not a perflens report.
    NotAReport,
    /// The JSON is a perflens report of a schema version this build cannot
    /// read.
    UnsupportedSchema {
        /// The `schema` string found.
        found: String,
    },
    /// The JSON has the right schema string but a field is missing or has
    /// the wrong type.
    InvalidReport {
        /// The deserializer's description, naming the field.
        message: String,
    },
    /// An option value (such as a percentile list) is malformed.
    InvalidOption {
        /// A whole-sentence description.
        message: String,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io(e) => write!(f, "Could not read the report: {e}."),
            ReportError::Empty => write!(
                f,
                "The report is empty; the program may have been killed before it wrote the \
                 report. Run it again to get a complete report."
            ),
            ReportError::Truncated { line, column } => write!(
                f,
                "The report ends early (line {line}, column {column}); the file is truncated, \
                 perhaps because the program was killed while writing it. Run it again to \
                 get a complete report."
            ),
            ReportError::Syntax {
                line,
                column,
                message,
            } => write!(
                f,
                "The report is not valid JSON ({message} at line {line}, column {column}); \
                 check that the file is a perflens JSON report."
            ),
            ReportError::NotAReport => write!(
                f,
                "The JSON has no \"schema\" string, so it is not a perflens report; \
                 write one with PERFLENS_JSON=<path>."
            ),
            ReportError::UnsupportedSchema { found } => write!(
                f,
                "The report has schema {found:?}, but this perflens reads only {:?}; \
                 use the perflens version that wrote it.",
                crate::schema::SCHEMA
            ),
            ReportError::InvalidReport { message } => write!(
                f,
                "The report is not a valid {} document ({message}); it may have been \
                 edited or written by a broken tool.",
                crate::schema::SCHEMA
            ),
            ReportError::InvalidOption { message } => f.write_str(message),
        }
    }
}

impl error::Error for ReportError {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        match self {
            ReportError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for ReportError {
    fn from(e: io::Error) -> Self {
        ReportError::Io(e)
    }
}
