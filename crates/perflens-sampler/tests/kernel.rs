//! Kernel time and perf events: with the kernel excluded a sample weighs
//! one period of user time and the rest of the thread's CPU time is a
//! `[kernel]` frame of its own in the folded stacks and the pprof
//! profile (never on a sampled stack); with it included, a system call's
//! time is on the samples and there is no `[kernel]` frame.
// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod common;
use common::*;
use perflens_sampler::{
    CpuSource, KERNEL_FRAME, KernelMode, ProfilerGuardBuilder, SourcePreference,
};
use std::io::Read;
use std::time::Duration;

/// About `cpu` of this thread's CPU time in `read`s of /dev/zero (mostly
/// kernel time), then as much in user-mode work.
fn read_then_spin(cpu: Duration) {
    let mut f = std::fs::File::open("/dev/zero").unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let end = thread_cpu() + cpu;
    while thread_cpu() < end {
        for _ in 0..8 {
            f.read_exact(&mut buf).unwrap();
        }
    }
    busy_for(cpu);
}

fn profile(kernel: KernelMode) -> (perflens_sampler::CpuProfile, u64) {
    let guard = ProfilerGuardBuilder::default()
        .frequency(1000)
        .source(SourcePreference::PerfEvent)
        .kernel(kernel)
        .build()
        .expect("start");
    let me = tid();
    read_then_spin(Duration::from_millis(300));
    (guard.stop().build().expect("report"), me)
}

#[test]
fn kernel_excluded_is_a_frame_of_its_own() {
    let _s = serial();
    let (report, me) = profile(KernelMode::Exclude);
    let t = thread(&report, me);
    eprintln!(
        "{t:?}: sampled {:.1} ms, kernel {:.1} ms of {:.1} ms",
        t.sampled_cpu_ns as f64 / 1e6,
        t.kernel_ns as f64 / 1e6,
        t.cpu_ns as f64 / 1e6
    );
    assert_eq!(t.source, CpuSource::PerfEvent);
    assert!(!t.kernel_included);
    // One period per sample: kernel time is on no sampled stack.
    let period = report.timing.period_ns;
    for (f, v) in &report.data {
        assert_eq!(v.cpu_ns, v.samples * period, "{f:?}: {v:?}");
        assert!(f.frames.iter().flatten().all(|s| s.name != KERNEL_FRAME));
    }
    // Most of the 300 ms of reads is kernel time; the rest of the thread's
    // CPU time is what the samples do not stand for.
    assert!(t.kernel_ns > 150_000_000, "{t:?}");
    assert_eq!(t.kernel_ns, t.cpu_ns.saturating_sub(t.sampled_cpu_ns));
    assert_eq!(
        report.kernel_unattributed_ns(),
        report.threads.iter().map(|t| t.kernel_ns).sum::<u64>()
    );
    let kernel_line = (report.folded_lines().into_iter())
        .find(|l| l.starts_with(&format!("{};{KERNEL_FRAME} ", t.name)))
        .unwrap_or_else(|| panic!("no kernel line: {:?}", report.folded_lines()));
    let us: u64 = kernel_line.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(us, t.kernel_ns / 1000);
    let proto = report.pprof_proto();
    assert!(
        proto
            .windows(KERNEL_FRAME.len())
            .any(|w| w == KERNEL_FRAME.as_bytes())
    );
}

/// Whether this process may sample kernel mode for sure: root, or
/// `perf_event_paranoid` ≤ 1 (`CAP_PERFMON` alone is not looked for).
fn may_sample_kernel() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    root || paranoid.is_some_and(|p| p <= 1)
}

#[test]
fn kernel_included_puts_system_calls_on_the_samples() {
    let _s = serial();
    if !may_sample_kernel() {
        eprintln!("skipped: this process may not sample kernel mode");
        return;
    }
    let (report, me) = profile(KernelMode::Include);
    let t = thread(&report, me);
    eprintln!(
        "{t:?}: sampled {:.1} ms of {:.1} ms",
        t.sampled_cpu_ns as f64 / 1e6,
        t.cpu_ns as f64 / 1e6
    );
    assert_eq!(t.source, CpuSource::PerfEvent);
    assert!(
        t.kernel_included,
        "this machine may sample kernel mode (root)"
    );
    assert_eq!(t.kernel_ns, 0);
    // The samples' weights cover the reads too.
    let err = (t.sampled_cpu_ns as f64 - t.cpu_ns as f64).abs() / t.cpu_ns as f64;
    assert!(err < 0.05, "{t:?}");
    assert!(
        report
            .folded_lines()
            .iter()
            .all(|l| !l.contains(KERNEL_FRAME))
    );
}
