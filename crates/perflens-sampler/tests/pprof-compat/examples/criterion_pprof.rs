//! Criterion with pprof-rs's profiler. Shapes: zesterer/chumsky
//! (benches/utils.rs) and CraftSpider/numeric (crates/bench-util): a
//! `make_criterion()` adding `PProfProfiler::new(freq,
//! Output::Flamegraph(None))` then `configure_from_args()`; tikv/pprof-rs's
//! README: `Output::Flamegraph(Some(options))` with
//! `pprof::flamegraph::Options`; project-oak/oak (a criterion config of
//! its own): `Output::Protobuf`.
//! Run with `--bench --profile-time 1`: each benchmark's files go to
//! `$CRITERION_HOME/<group>/<bench>/profile/`.

use criterion::{criterion_group, criterion_main, Criterion};
use pprof::criterion::{Output, PProfProfiler};

pub fn make_criterion() -> Criterion {
    Criterion::default()
        .with_profiler(PProfProfiler::new(1000, Output::Flamegraph(None)))
        .configure_from_args()
}

fn with_options() -> Criterion {
    let mut options = pprof::flamegraph::Options::default();
    options.image_width = Some(2500);
    options.title = "primes, options from the bench".to_string();
    Criterion::default()
        .with_profiler(PProfProfiler::new(100, Output::Flamegraph(Some(options))))
        .configure_from_args()
}

fn protobuf() -> Criterion {
    Criterion::default()
        .with_profiler(PProfProfiler::new(100, Output::Protobuf))
        .configure_from_args()
}

fn primes(c: &mut Criterion) {
    c.bench_function("primes", |b| b.iter(|| pprof_compat::count_primes(2_000)));
}

criterion_group! { name = flame; config = make_criterion(); targets = primes }
fn primes_with_options(c: &mut Criterion) {
    c.bench_function("primes_options", |b| {
        b.iter(|| pprof_compat::count_primes(2_000))
    });
}

fn primes_proto(c: &mut Criterion) {
    c.bench_function("primes_proto", |b| {
        b.iter(|| pprof_compat::count_primes(2_000))
    });
}

criterion_group! { name = flame_options; config = with_options(); targets = primes_with_options }
criterion_group! { name = proto; config = protobuf(); targets = primes_proto }
criterion_main!(flame, flame_options, proto);
