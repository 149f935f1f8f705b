//! The schema every JSON report carries: its name and version, which
//! readers check before anything else (the errors name it too).

/// The schema string written to and required in every JSON report.
pub const SCHEMA: &str = "perflens.report/1";
