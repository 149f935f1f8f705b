//! `tracing` as input: spans of a program instrumented with `tracing`
//! only become perflens rows and paths. A span entered once is a call; a
//! span entered once per poll is a future, whose parent is where it was
//! created.
#![cfg(feature = "tracing")]

use perflens::{FunctionKind, Report, Session};
use std::sync::Mutex;
use tracing_subscriber::layer::SubscriberExt;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const HERE: &str = module_path!();

fn row<'a>(r: &'a Report, name: &str) -> &'a perflens::FunctionRow {
    r.function(&format!("{HERE}::{name}")).unwrap_or_else(|| {
        panic!(
            "no row {name}: {:?}",
            r.functions.iter().map(|f| &f.name).collect::<Vec<_>>()
        )
    })
}

/// Runs `f` with the layer installed, as a program installs it: the
/// global default (a runtime's workers see it too), set once.
fn with_layer<T>(f: impl FnOnce() -> T) -> T {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(perflens::tracing::layer());
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
    f()
}

#[tracing::instrument]
fn outer(n: u64) -> u64 {
    (0..n).map(inner).sum()
}

#[tracing::instrument]
fn inner(i: u64) -> u64 {
    std::hint::black_box(i * 2)
}

#[test]
fn sync_spans_are_calls_with_their_paths() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Session::builder().ignore_env().start().unwrap();
    with_layer(|| {
        for _ in 0..3 {
            outer(4);
        }
        for _ in 0..2 {
            tracing::info_span!("load").in_scope(|| std::hint::black_box(7));
        }
    });
    let r = s.finish();
    let (o, i, load) = (row(&r, "outer"), row(&r, "inner"), row(&r, "load"));
    assert_eq!((o.calls, i.calls, load.calls), (3, 12, 2));
    for f in [o, i, load] {
        assert_eq!(f.kind, FunctionKind::Sync, "{f:?}");
        assert_eq!(f.timed_calls, f.calls);
    }
    assert!(o.total_ns >= i.total_ns && o.self_ns <= o.total_ns);
    // inner runs under outer: one path, 12 calls.
    let path = r
        .path(&[&format!("{HERE}::outer"), &format!("{HERE}::inner")])
        .expect("outer > inner");
    assert_eq!(path.calls, 12);
}

#[tracing::instrument]
async fn fetch(id: u32) -> u32 {
    // Suspends once: two polls.
    tokio::task::yield_now().await;
    id
}

/// Makes a future and its span here, under `handler`; the runtime's
/// thread polls it later.
#[tracing::instrument(skip(rt))]
fn handler(rt: &tokio::runtime::Runtime) -> tokio::task::JoinHandle<u32> {
    use tracing::Instrument;
    rt.spawn(
        async {
            tokio::task::yield_now().await;
            7
        }
        .instrument(tracing::info_span!("spawned")),
    )
}

/// An instrumented `async fn` awaited in another: its span is made at
/// its first poll, inside `serve`'s.
#[tracing::instrument]
async fn serve() -> u32 {
    fetch(1).await + fetch(2).await
}

#[test]
fn polled_spans_are_futures_under_where_they_were_made() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Session::builder().ignore_env().start().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    with_layer(|| {
        let handles: Vec<_> = (0..3).map(|_| handler(&rt)).collect();
        for h in handles {
            assert_eq!(rt.block_on(h).unwrap(), 7);
        }
        assert_eq!(rt.block_on(rt.spawn(serve())).unwrap(), 3);
    });
    drop(rt);
    let r = s.finish();
    let spawned = row(&r, "spawned");
    assert_eq!(spawned.kind, FunctionKind::Async, "{spawned:?}");
    assert_eq!(
        (spawned.calls, spawned.polls),
        (3, Some(6)),
        "each polled twice"
    );
    assert!(spawned.busy_ns.unwrap() <= spawned.total_ns);
    let path = r
        .path(&[&format!("{HERE}::handler"), &format!("{HERE}::spawned")])
        .expect("spawned under handler, where it was made, not under the worker");
    assert_eq!(path.calls, 3);
    assert_eq!(row(&r, "handler").kind, FunctionKind::Sync);
    let fetch = row(&r, "fetch");
    assert_eq!(
        (fetch.kind, fetch.calls, fetch.polls),
        (FunctionKind::Async, 2, Some(4))
    );
    assert_eq!(row(&r, "serve").kind, FunctionKind::Async);
    let path = r
        .path(&[&format!("{HERE}::serve"), &format!("{HERE}::fetch")])
        .expect("fetch under serve");
    assert_eq!(path.calls, 2);
}

#[test]
fn spans_outside_a_session_record_nothing_and_do_no_harm() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // No session: the layer does nothing.
    with_layer(|| outer(2));
    // A span made before the session and entered in it is not recorded;
    // the ones made in it are.
    let early = with_layer(|| tracing::info_span!("early"));
    let s = Session::builder().ignore_env().start().unwrap();
    with_layer(|| {
        early.in_scope(|| outer(1));
    });
    drop(early);
    let r = s.finish();
    assert!(r.function(&format!("{HERE}::early")).is_none());
    assert_eq!(row(&r, "outer").calls, 1);
}

/// In trace mode the spans are on the timeline: each enter a slice of
/// its thread's track, named after the span.
#[test]
fn spans_are_on_the_timeline() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::temp_dir().join(format!("perflens-tracing-{}.json", std::process::id()));
    let s = Session::builder()
        .ignore_env()
        .trace(&path)
        .start()
        .unwrap();
    with_layer(|| {
        for _ in 0..2 {
            outer(3);
        }
    });
    drop(s.finish());
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let slices = |name: &str| {
        (trace["traceEvents"].as_array().unwrap().iter())
            .filter(|e| e["ph"] == "X" && e["name"] == format!("{HERE}::{name}").as_str())
            .count()
    };
    let cats: Vec<String> = (trace["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["ph"] == "X")
        .map(|e| format!("{} {} {} {}", e["name"], e["cat"], e["pid"], e["tid"]))
        .collect();
    assert_eq!((slices("outer"), slices("inner")), (2, 6), "{cats:#?}");
}
