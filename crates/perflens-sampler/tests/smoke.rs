mod common;
use common::*;
use std::time::Duration;

#[test]
fn smoke() {
    let _s = serial();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    busy_for(Duration::from_millis(300));
    let report = guard.stop().build().expect("report");
    for t in &report.threads {
        eprintln!("{t:?}");
    }
    let lines = report.folded_lines();
    for l in lines.iter().take(10) {
        eprintln!("{l}");
    }
    eprintln!(
        "total samples {} cpu {}",
        report.total_samples(),
        report.total_cpu_ns()
    );
}
