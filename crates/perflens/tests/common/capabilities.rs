//! What a test asserts where this build lacks a mechanism
//! (`perflens_sys::CAPABILITIES`; the portable, std-only build lacks
//! them all): the documented degraded behaviour, in one place, so that a
//! test checks its full subject on Linux and the degraded one elsewhere,
//! never neither.
#![allow(dead_code)]

use perflens_sys::CAPABILITIES;

/// Whether this build samples CPU time. Where it does not, asserts what
/// the report says instead: a CPU section whose source is "unavailable",
/// naming the portable implementation as the reason. The caller checks
/// samples only when this is true.
pub fn cpu_sampled(report: &perflens::Report) -> bool {
    if CAPABILITIES.cpu_sampling {
        return true;
    }
    let cpu = report.cpu.as_ref().expect("a CPU section saying why");
    assert_cpu_unavailable(&cpu.source);
    false
}

/// Asserts that `source` (a CPU section's, or a report's JSON `cpu.source`)
/// says sampling is unavailable in this build, and why.
pub fn assert_cpu_unavailable(source: &str) {
    assert!(
        source.starts_with("unavailable:")
            && source.contains("not supported here")
            && source.contains(CAPABILITIES.platform),
        "{source}"
    );
}

/// The line a session (`#[perflens::main]`'s too) prints on stderr when
/// CPU sampling cannot start in this build.
pub const CPU_UNAVAILABLE_LINE: &str =
    "[perflens] CPU sampling unavailable: CPU sampling is not supported here";

/// The line a session prints on stderr when this build writes no report
/// on SIGTERM or SIGINT.
pub const NO_STOP_SIGNALS_LINE: &str =
    "[perflens] no report on SIGTERM/SIGINT: signals are not handled on this platform";
