//! Start/stop, late signals, threads that start or exit mid-profile.
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
use std::time::Duration;

fn builder() -> perflens_sampler::ProfilerGuardBuilder {
    perflens_sampler::ProfilerGuardBuilder::default().frequency(1000)
}

#[test]
fn start_stop_repeatedly_and_late_signals_are_harmless() {
    let _s = serial();
    for round in 0..5 {
        let guard = builder().build().expect("start");
        assert!(
            matches!(
                builder().build(),
                Err(perflens_sampler::SamplerError::AlreadyRunning)
            ),
            "second session must be refused"
        );
        busy_for(Duration::from_millis(60));
        // A live report while sampling goes on, then the final one.
        let live = guard.profile().build().expect("live report");
        busy_for(Duration::from_millis(20));
        let report = guard.stop().build().expect("report");
        assert!(
            report.total_samples() >= live.total_samples(),
            "round {round}"
        );
        assert!(
            report.total_samples() >= 60,
            "round {round}: {} samples",
            report.total_samples()
        );
    }
    // A signal after stop (as a late overflow would deliver it) must be
    // handled harmlessly, on this thread and on another one.
    let sig = libc::SIGRTMIN() + 4;
    let before = perflens_sampler::late_signals();
    // SAFETY: sending our own real-time signal to this thread.
    assert_eq!(unsafe { libc::raise(sig) }, 0);
    let other = std::thread::spawn(move || {
        // SAFETY: same, from another thread.
        unsafe { libc::raise(sig) };
        std::thread::sleep(Duration::from_millis(5));
    });
    other.join().unwrap();
    assert!(perflens_sampler::late_signals() >= before + 2);
    // And sampling still works afterwards.
    let guard = builder().build().expect("restart");
    busy_for(Duration::from_millis(50));
    assert!(guard.stop().build().unwrap().total_samples() >= 40);
}

#[test]
fn threads_started_after_start_and_exited_threads_are_kept() {
    let _s = serial();
    let guard = builder().build().expect("start");
    // Started after the session, found by the watcher (no explicit arm),
    // exits before the report.
    let watched = std::thread::Builder::new()
        .name("late-watched".into())
        .spawn(|| {
            // Give the watcher (10 ms rescans) time to arm this thread.
            std::thread::sleep(Duration::from_millis(40));
            busy_for(Duration::from_millis(200));
            tid()
        })
        .unwrap();
    // Started after the session, arms itself at once.
    let armed = std::thread::Builder::new()
        .name("late-armed".into())
        .spawn(|| {
            assert!(perflens_sampler::arm_current_thread().unwrap());
            busy_for(Duration::from_millis(200));
            tid()
        })
        .unwrap();
    let watched_tid = watched.join().unwrap();
    let armed_tid = armed.join().unwrap();
    // Let the watcher notice the exits.
    std::thread::sleep(Duration::from_millis(50));
    let report = guard.stop().build().expect("report");
    for (tid, name) in [(watched_tid, "late-watched"), (armed_tid, "late-armed")] {
        let t = thread(&report, tid);
        eprintln!("{t:?}");
        assert!(t.exited, "{name} exited before the report");
        assert_eq!(t.name, name);
        let expected = t.cpu_ns as f64 / 1e6;
        assert!(
            t.cpu_ns >= 190_000_000,
            "{name}: cpu {} ns while armed",
            t.cpu_ns
        );
        // The thread's CPU time is all accounted for by sample weights.
        // The sample count itself can fall a few percent short when the
        // two busy threads contend for this machine's 2 vCPUs: the kernel
        // then merges an overflow with one still pending and the merged
        // sample carries both periods (delivery is measured, uncontended,
        // in `delivery.rs`).
        assert!(
            t.sampled_cpu_ns as f64 >= 0.97 * t.cpu_ns as f64,
            "{name}: samples weigh {} ns of {} ns CPU",
            t.sampled_cpu_ns,
            t.cpu_ns
        );
        // An exited thread's CPU is read on the clock its samples were
        // weighed with (at its exit, or up to its last sample once it is
        // gone): they stand for all of it but the last, unfinished period
        // (perf's own count, used before for a thread gone, ran 3% ahead
        // of that clock under load).
        if t.dropped == 0 && t.source == perflens_sampler::CpuSource::PerfEvent {
            let tail = t.cpu_ns as i64 - t.sampled_cpu_ns as i64;
            assert!((0..=1_000_000).contains(&tail), "{name}: {t:?}");
        }
        assert!(
            t.samples as f64 >= 0.85 * expected,
            "{name}: {} samples, expected {expected:.0}",
            t.samples
        );
        assert_eq!(samples_of(&report, tid), t.samples, "{name}: stacks kept");
        // Stack bounds were known (from /proc/self/maps for the watched
        // thread, pthread_getattr_np for the self-armed one): full stacks.
        assert_eq!(t.truncated, 0, "{name}: stacks walked");
        assert!(
            samples_through(&report, tid, "busy_for", |n| n.contains("thread_start")) > 0,
            "{name}: unwound to the thread entry"
        );
        assert!(
            report
                .data
                .keys()
                .any(|f| f.thread_id == tid && f.thread_name == name),
            "{name} stacks carry the thread name"
        );
    }
}
