//! A program with its own SIGPROF handler driven by
//! `setitimer(ITIMER_PROF)`, profiled with CPU sampling and allocation
//! counting on: its handler keeps firing and perflens keeps sampling,
//! whether the program set its timer up before the session or during it.
// SIGPROF, setitimer and the sampler's timer signal: Linux only.
#![cfg(target_os = "linux")]
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

static PROFS: AtomicU64 = AtomicU64::new(0);
/// SIGPROFs the program's own timer must bring during the spin.
const MIN_PROFS: u64 = 20;

extern "C" fn on_sigprof(_: libc::c_int) {
    PROFS.fetch_add(1, Ordering::Relaxed);
}

/// Installs the program's SIGPROF handler and a 4 ms ITIMER_PROF.
fn program_timer(on: bool) {
    // SAFETY: installing a handler that only bumps an atomic, and setting
    // the process's profiling timer, with valid structs.
    unsafe {
        if on {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigprof as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGPROF, &sa, std::ptr::null_mut()), 0);
        }
        let us = if on { 4000 } else { 0 };
        let t = libc::timeval {
            tv_sec: 0,
            tv_usec: us,
        };
        let it = libc::itimerval {
            it_interval: t,
            it_value: t,
        };
        assert_eq!(
            libc::setitimer(libc::ITIMER_PROF, &it, std::ptr::null_mut()),
            0
        );
    }
}

#[perflens::measure]
fn spin(ms: u64) -> Duration {
    let start = thread_cpu();
    spin_cpu(ms);
    thread_cpu() - start
}

/// Spins 200 ms of CPU; returns (SIGPROFs seen, spun).
fn run(timer_first: bool) -> (u64, Duration, perflens::Report) {
    PROFS.store(0, Ordering::Relaxed);
    if timer_first {
        program_timer(true);
    }
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    if !timer_first {
        program_timer(true);
    }
    // 200 ms of CPU, then more until the program's timer fired 20 times
    // (at most 5 s of CPU): ITIMER_PROF is charged at the kernel tick, so
    // on a loaded machine 200 ms of this thread's CPU time may bring a
    // fifth of the 50 signals it brings on a quiet one.
    let mut spun = spin(200);
    while PROFS.load(Ordering::Relaxed) < MIN_PROFS && spun < Duration::from_secs(5) {
        spun += spin(20);
    }
    program_timer(false);
    let report = session.finish();
    (PROFS.load(Ordering::Relaxed), spun, report)
}

#[test]
fn a_program_sigprof_handler_and_itimer_keep_firing() {
    for timer_first in [true, false] {
        let (profs, spun, report) = run(timer_first);
        // What matters is that the program's timer and handler keep
        // firing beside perflens's sampler (a broken handler or timer
        // gives none): at the kernel tick (250 Hz here) they do within
        // the spin's first 200 ms on a quiet machine, and the spin goes on
        // until they have on a loaded one.
        assert!(
            profs >= MIN_PROFS,
            "timer first: {timer_first}: {profs} SIGPROFs in {spun:?}"
        );
        // Without CPU sampling (the portable build) the report says so,
        // and the program's timer and handler fired alone.
        if !common::capabilities::cpu_sampled(&report) {
            continue;
        }
        let cpu = report.cpu.as_ref().unwrap();
        assert!(cpu.is_available(), "{}", cpu.source);
        // perflens keeps sampling: its samples stand for the CPU time the
        // spin used. Weights, not counts: when a handler runs late (two
        // handlers here) the kernel merges overflows into one sample that
        // weighs more, so the count alone falls a few percent short.
        let row = report.function(&name("spin")).unwrap();
        let (samples, cpu) = (row.cpu.unwrap().samples as f64, row.cpu.unwrap().ns as f64);
        let spun_ns = spun.as_nanos() as f64;
        assert!(
            samples >= 0.8 * spun.as_secs_f64() * 1000.0,
            "timer first: {timer_first}: {samples} samples in {spun:?}"
        );
        assert!(
            cpu >= 0.95 * spun_ns && cpu <= 1.05 * spun_ns + 2e6,
            "timer first: {timer_first}: samples weigh {cpu} ns for {spun_ns} ns spun"
        );
    }
    // The program's handler is still the one it installed.
    assert_eq!(
        disposition(libc::SIGPROF).0,
        on_sigprof as *const () as usize
    );
}
