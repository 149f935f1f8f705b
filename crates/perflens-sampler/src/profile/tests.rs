//! Tests of the report's figures and outputs.

use super::*;

fn stack(name: &str, tid: u64) -> Frames {
    Frames {
        frames: vec![vec![Symbol::unknown(name.into())]],
        addresses: vec![0x1000],
        thread_name: "t".into(),
        thread_id: tid,
        context: 0,
        context_name: None,
    }
}

fn thread(tid: u64, samples: u64, cpu_ns: u64) -> ThreadProfile {
    ThreadProfile {
        tid,
        name: "t".into(),
        source: CpuSource::Timer,
        signal: 0,
        kernel_included: true,
        samples,
        sampled_cpu_ns: cpu_ns,
        kernel_ns: 0,
        cpu_ns,
        dropped: 0,
        truncated: 0,
        off_stack: 0,
        exited: false,
        moved_to_timer: false,
        nudged: 0,
    }
}

fn report(data: &[(&str, u64)], threads: Vec<ThreadProfile>, secs: u64) -> CpuProfile {
    CpuProfile {
        data: (data.iter())
            .map(|&(n, s)| {
                let v = SampleValue {
                    samples: s,
                    cpu_ns: s * 1_000_000,
                };
                (stack(n, 7), v)
            })
            .collect(),
        threads,
        timing: ProfileTiming {
            frequency: 1000,
            period_ns: 1_000_000,
            start_time: SystemTime::UNIX_EPOCH,
            duration: Duration::from_secs(secs),
        },
        sampler_cpu_ns: 0,
        handler_ns: 0,
        handler_calls: 0,
        handler_hist: Vec::new(),
        modules: Vec::new(),
    }
}

/// A window of a running session: each stack's samples and each
/// thread's counters minus the earlier report's; stacks that did not
/// move are gone; the window starts where the earlier report ended.
#[test]
fn since_keeps_what_was_sampled_in_between() {
    let earlier = report(&[("a", 10), ("b", 5)], vec![thread(7, 15, 15_000_000)], 3);
    let later = report(
        &[("a", 30), ("b", 5), ("c", 2)],
        vec![thread(7, 37, 37_000_000), thread(8, 4, 4_000_000)],
        5,
    );
    let w = later.since(&earlier);
    let mut got: Vec<(String, u64)> = (w.data.iter())
        .map(|(k, v)| (k.frames[0][0].name.clone(), v.samples))
        .collect();
    got.sort();
    assert_eq!(got, [("a".to_string(), 20), ("c".to_string(), 2)]);
    let t7 = w.threads.iter().find(|t| t.tid == 7).unwrap();
    assert_eq!((t7.samples, t7.cpu_ns), (22, 22_000_000));
    let t8 = w.threads.iter().find(|t| t.tid == 8).unwrap();
    assert_eq!(t8.samples, 4, "a thread born in between counts whole");
    assert_eq!(w.timing.duration, Duration::from_secs(2));
    assert_eq!(
        w.timing.start_time,
        SystemTime::UNIX_EPOCH + Duration::from_secs(3)
    );
}
