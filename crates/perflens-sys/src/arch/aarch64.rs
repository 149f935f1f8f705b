//! aarch64: the generic timer's virtual counter (`cntvct_el0`), readable
//! from user space on Linux and macOS. Its rate is fixed by the
//! architecture (constant, the same on every core, running in every
//! power state), and `cntfrq_el0` says what it is, so no calibration is
//! needed.

/// The virtual counter. Not ordered against earlier loads (no `isb`):
/// as with `rdtsc` on x86_64, for spans of tens of nanoseconds and up the
/// skew is well below the cost of a barrier at every read.
#[inline(always)]
pub fn read_tsc() -> u64 {
    let t: u64;
    // SAFETY: `cntvct_el0` is readable at EL0 on Linux and macOS (the
    // kernel sets CNTKCTL_EL1.EL0VCTEN); reading it has no side effects.
    unsafe {
        core::arch::asm!(
            "mrs {}, cntvct_el0",
            out(reg) t,
            options(nomem, nostack, preserves_flags)
        )
    };
    t
}

/// The virtual counter is constant-rate and shared by every core by the
/// architecture's definition; it is usable whenever its rate is known.
pub fn tsc_is_invariant() -> bool {
    counter_hz().is_some()
}

/// The counter's frequency in Hz, from `cntfrq_el0` (`None` if the
/// firmware left it 0).
pub fn counter_hz() -> Option<u64> {
    let f: u64;
    // SAFETY: `cntfrq_el0` is readable at EL0; no side effects.
    unsafe {
        core::arch::asm!(
            "mrs {}, cntfrq_el0",
            out(reg) f,
            options(nomem, nostack, preserves_flags)
        )
    };
    (f != 0).then_some(f)
}

/// The counter's name in reports.
pub const COUNTER_NAME: &str = "cntvct";
