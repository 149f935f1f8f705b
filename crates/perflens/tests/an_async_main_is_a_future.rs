//! `#[perflens::main]` under `#[tokio::main]` on an async `main`: the
//! runtime's attribute runs first and makes `main` sync, blocking on its
//! body; that body is measured as a future, so `main`'s self time is its
//! own busy time, its waiting is Wait, and its awaits are sites (issue
//! 13, item 5). Run in a child process (its session is the process's),
//! reading the JSON report it writes.
#![cfg(feature = "enabled")]

mod common;

use std::time::Duration;

#[perflens::measure]
async fn step() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[tokio::main(flavor = "current_thread")]
#[perflens::main(format = "none")]
async fn async_main() {
    for _ in 0..5 {
        step().await;
    }
    // Waited at here, inside no measured function.
    tokio::time::sleep(Duration::from_millis(30)).await;
}

#[test]
fn an_async_main_is_measured_as_a_future() {
    if std::env::var_os("PERFLENS_ASYNC_MAIN_CHILD").is_some() {
        async_main();
        return;
    }
    let json =
        std::env::temp_dir().join(format!("perflens-async-main-{}.json", std::process::id()));
    let mut cmd = common::rerun_self("an_async_main_is_measured_as_a_future");
    let out = (cmd
        .env("PERFLENS_ASYNC_MAIN_CHILD", "1")
        .env("PERFLENS_JSON", &json))
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let row = |name: &str| {
        (report["functions"].as_array().unwrap().iter())
            .find(|f| f["name"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {report}"))
            .clone()
    };
    let main = row("::async_main");
    let ms = 1_000_000u64;
    // A future: one call, polled once a wake-up (six sleeps, and the
    // first poll), its waiting Wait, not Self.
    assert_eq!(main["kind"], "async");
    assert_eq!(main["calls"], 1);
    assert_eq!(main["polls"], 7);
    let (total, self_ns) = (
        main["total_ns"].as_u64().unwrap(),
        main["self_ns"].as_u64().unwrap(),
    );
    assert!(total >= 80 * ms, "{main}");
    // Its time is its polls' (busy) and its waits' (wait); its Self is
    // busy time only (less the measured steps polled inside), never the
    // waiting.
    let (busy, wait) = (
        main["busy_ns"].as_u64().unwrap(),
        main["wait_ns"].as_u64().unwrap(),
    );
    assert!(busy.abs_diff(total - wait) <= 2, "{main}");
    assert!(self_ns <= busy, "self {self_ns} of busy {busy}: {main}");
    assert!(wait >= (80 * ms).saturating_sub(busy), "{main}");
    assert_eq!(row("::step")["calls"], 5);
    // Its awaits are sites: the measured step() lists step; the sleep
    // in main itself is uninstrumented.
    let waits = report["waits"].as_array().unwrap();
    let site = |expr: &str| {
        (waits.iter())
            .find(|w| {
                w["function"].as_str().unwrap().ends_with("::async_main")
                    && w["expr"].as_str().unwrap().starts_with(expr)
            })
            .unwrap_or_else(|| panic!("no wait {expr}: {waits:?}"))
            .clone()
    };
    let on_step = site("step()");
    assert_eq!(on_step["count"], 5);
    assert!(
        on_step["measured_children"][0]
            .as_str()
            .unwrap()
            .ends_with("::step")
    );
    let slept = site("tokio::time::sleep(");
    assert_eq!(slept["count"], 1);
    // The sleep's deadline is set when it is made, its wait starts when
    // its first poll returns Pending, in the same poll of main: what
    // passed between the two (a preemption, on a loaded machine or
    // under qemu) is in main's busy time, not in this wait.
    let busy = main["busy_ns"].as_u64().unwrap();
    let slept_ns = slept["wait_ns"].as_u64().unwrap();
    assert!(
        slept_ns + busy >= 30 * ms,
        "slept {slept_ns} ns, main busy {busy} ns"
    );
    assert!(slept["measured_children"].as_array().unwrap().is_empty());
}
