//! x86_64: the time-stamp counter.

/// Raw TSC. Not serialising (`rdtsc`, not `rdtscp` + fence): for spans of
/// tens of nanoseconds and up, the out-of-order skew is well below the
/// cost of serialising every read.
#[inline(always)]
pub fn read_tsc() -> u64 {
    // SAFETY: `rdtsc` is available on every x86_64 CPU and has no
    // memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// True when CPUID reports an invariant TSC (constant rate, runs in every
/// C-state), which makes it a valid clock across cores.
pub fn tsc_is_invariant() -> bool {
    // `cpuid` is available on every x86_64 CPU (safe since Rust 1.87).
    let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    if max_ext < 0x8000_0007 {
        return false;
    }
    let edx = core::arch::x86_64::__cpuid(0x8000_0007).edx;
    edx & (1 << 8) != 0
}

/// The TSC's rate is not architectural: calibrated against the monotonic
/// clock instead.
pub fn counter_hz() -> Option<u64> {
    None
}

/// The counter's name in reports.
pub const COUNTER_NAME: &str = "tsc";
