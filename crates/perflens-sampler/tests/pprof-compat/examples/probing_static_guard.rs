//! Shape from reiase/probing (src/handlers/pprof_handler.rs): a guard in a
//! process-wide static `Mutex<ProfilerGuard<'static>>`, started on first
//! use by a builder at 10 kHz, read later from another thread (the
//! project uses `lazy_static!`; `LazyLock` is the standard library's).

use std::sync::{LazyLock, Mutex};

use pprof::{ProfilerGuard, ProfilerGuardBuilder};

static PPROF_HOLDER: LazyLock<Mutex<ProfilerGuard<'static>>> = LazyLock::new(|| {
    Mutex::new(
        ProfilerGuardBuilder::default()
            .frequency(10000)
            .build()
            .unwrap(),
    )
});

fn pprof_handler(path: std::path::PathBuf) {
    let guard = PPROF_HOLDER.lock().unwrap();
    let report = guard.report().build().unwrap();
    report
        .flamegraph(std::fs::File::create(path).unwrap())
        .unwrap();
}

fn main() {
    let out = pprof_compat::out_dir();
    LazyLock::force(&PPROF_HOLDER);
    pprof_compat::burn_cpu(200);
    std::thread::spawn(move || pprof_handler(out.join("flamegraph.svg")))
        .join()
        .unwrap();
}
