//! The sampler's one error type, [`SamplerError`]: what starting,
//! arming a thread or building a profile can fail with, each variant
//! with the message a user reads (an unsupported platform, a session
//! already running, a signal taken by the program, a refused perf event
//! or timer, an invalid setting).

use std::fmt;

/// Errors of the sampler.
#[derive(Debug)]
#[non_exhaustive]
pub enum SamplerError {
    /// This platform or build has no sampler (Linux on x86_64 and aarch64,
    /// not the portable build), with why.
    Unsupported(&'static str),
    /// A profiling session is already running in this process.
    AlreadyRunning,
    /// The chosen real-time signal already has a handler that is not ours.
    SignalInUse(i32),
    /// A configuration value is out of range.
    InvalidConfig(String),
    /// Neither perf_event_open nor timer_create worked for a thread.
    NoSource(std::io::Error),
    /// I/O error (writing a report, reading /proc).
    Io(std::io::Error),
}

impl fmt::Display for SamplerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SamplerError::Unsupported(why) => {
                write!(f, "CPU sampling is not supported here: {why}")
            }
            SamplerError::AlreadyRunning => {
                f.write_str("a CPU profiling session is already running")
            }
            SamplerError::SignalInUse(sig) => {
                write!(
                    f,
                    "signal {sig} already has a handler; choose another with .signal()"
                )
            }
            SamplerError::InvalidConfig(msg) => write!(f, "invalid sampler configuration: {msg}"),
            SamplerError::NoSource(e) => write!(
                f,
                "cannot arm a sampling source (perf_event_open and timer_create failed): {e}"
            ),
            SamplerError::Io(e) => write!(f, "I/O error: {e}"),
        }
    }
}

impl std::error::Error for SamplerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SamplerError::NoSource(e) | SamplerError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for SamplerError {
    fn from(e: std::io::Error) -> Self {
        SamplerError::Io(e)
    }
}
