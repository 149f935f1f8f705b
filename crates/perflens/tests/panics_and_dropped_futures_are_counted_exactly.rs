//! Under CPU sampling and allocation counting: a panic unwinding through
//! measured sync frames completes each of them (counted, its frees
//! charged to the frame that made them); a measured future whose poll
//! panics is cancelled; futures dropped before their first poll are
//! cancelled with no poll.
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::hint::black_box;
use std::panic::catch_unwind;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

const PANICS: u64 = 25;

#[perflens::measure]
fn unwound_through() {
    let buf = black_box(Vec::<u8>::with_capacity(512));
    panics();
    drop(buf);
}

#[perflens::measure]
fn panics() {
    let _buf = black_box(Vec::<u8>::with_capacity(1000));
    std::panic::panic_any(());
}

#[perflens::measure]
async fn async_panics_on_second_poll() {
    YieldOnce(false).await;
    std::panic::panic_any(());
}

#[perflens::measure]
async fn async_parent() {
    async_panics_on_second_poll().await;
}

#[perflens::measure]
async fn never_polled() -> u64 {
    black_box(1)
}

#[perflens::measure]
async fn polled_once_then_dropped() {
    YieldOnce(false).await;
}

#[perflens::measure]
async fn completes() {
    YieldOnce(false).await;
}

#[perflens::measure]
fn after() {}

#[test]
fn panics_and_dropped_futures_are_counted_exactly() {
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    quietly(|| {
        for _ in 0..PANICS {
            assert!(catch_unwind(unwound_through).is_err());
            assert!(catch_unwind(|| block_on(async_parent())).is_err());
        }
        // A whole thread that dies of it.
        assert!(std::thread::spawn(unwound_through).join().is_err());
    });
    for _ in 0..PANICS {
        drop(black_box(never_polled()));
        let mut f = Box::pin(polled_once_then_dropped());
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(f.as_mut().poll(&mut cx).is_pending());
        drop(f);
        block_on(completes());
    }
    after();
    let report = session.finish();

    let row = |f: &str| {
        report
            .function(&name(f))
            .unwrap_or_else(|| panic!("no row {f}"))
    };
    let n = PANICS + 1;
    // Sync: every unwound frame is a completed call, with its time.
    assert_eq!(row("unwound_through").calls, n);
    assert_eq!(row("panics").calls, n);
    assert!(row("panics").total_ns > 0);
    let path = |frames: &[&str]| {
        let names: Vec<String> = frames.iter().map(|f| name(f)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report.path(&names).map(|p| p.calls)
    };
    assert_eq!(path(&["unwound_through", "panics"]), Some(n));
    // `after` is a top-level call: the unwinding left no frame behind.
    assert_eq!(path(&["after"]), Some(1));
    // Each frame's buffer is freed while unwinding, in that frame.
    assert_eq!(row("unwound_through").alloc.map(|a| a.bytes), Some(512 * n));
    assert_eq!(
        row("unwound_through").alloc.map(|a| a.free_bytes),
        Some(512 * n)
    );
    assert_eq!(row("panics").alloc.map(|a| a.free_bytes), Some(1000 * n));
    // `panics` also allocates the panic's exception object (freed where
    // it is caught, outside any measured frame).
    assert!(row("panics").alloc.unwrap().bytes > 1000 * n);
    assert_eq!(row("panics").alloc.map(|a| a.count), Some(2 * n));

    // Async: a future whose poll panics did not complete: cancelled, and
    // so is its parent. The poll that panicked is a poll (its time was
    // spent), like a sync call that unwinds.
    let inner = row("async_panics_on_second_poll");
    assert_eq!(
        (inner.calls, inner.cancelled, inner.polls),
        (0, Some(PANICS), Some(2 * PANICS))
    );
    let parent = row("async_parent");
    assert_eq!(
        (parent.calls, parent.cancelled, parent.polls),
        (0, Some(PANICS), Some(2 * PANICS))
    );

    // Dropped before any poll: cancelled, no poll; after one: one poll.
    let unpolled = row("never_polled");
    assert_eq!(
        (unpolled.calls, unpolled.cancelled, unpolled.polls),
        (0, Some(PANICS), Some(0))
    );
    let once = row("polled_once_then_dropped");
    assert_eq!(
        (once.calls, once.cancelled, once.polls),
        (0, Some(PANICS), Some(PANICS))
    );
    let done = row("completes");
    assert_eq!(
        (done.calls, done.cancelled, done.polls),
        (PANICS, Some(0), Some(2 * PANICS))
    );
    if common::capabilities::cpu_sampled(&report) {
        assert!(report.cpu.as_ref().unwrap().is_available());
    }
}
