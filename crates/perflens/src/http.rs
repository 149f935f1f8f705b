//! The opt-in HTTP server (feature `http`): `PERFLENS_HTTP=127.0.0.1:PORT`
//! or `Session::builder().http(..)`.
//!
//! - `/metrics`: the running session in Prometheus's text format (see
//!   `perflens_report::prometheus`);
//! - `/debug/perflens/report`: the JSON report (`PERFLENS_JSON`'s schema);
//! - `/debug/pprof/profile?seconds=N`: with the `cpu` feature, a CPU
//!   profile of the next N seconds (default 30, at most 300), in the pprof
//!   format and Go's URL convention that `go tool pprof`, Parca and
//!   Pyroscope read; one at a time (a second gets 429);
//! - `/debug/pprof/allocs`: with allocations counted, the bytes and
//!   counts allocated per call path so far, as pprof sample types
//!   (`alloc_space`, `alloc_objects`).
//!
//! Bounds: it binds loopback unless told otherwise, and any other address
//! needs `PERFLENS_HTTP_TOKEN` (else the session does not start, and says
//! why); with a token, a request without it (`Authorization: Bearer T`,
//! or `?token=T` for clients that cannot set a header, such as `go tool
//! pprof`) gets 401. Headers must arrive within 5 s, a connection lives at
//! most the longest profile plus 30 s, and at most 64 connections are
//! open at once (more are closed on accept): a slow or hostile client
//! neither stalls the program nor grows its memory, and a slow one does
//! not hold up the others. hyper parses HTTP; the server runs on a
//! single-threaded tokio runtime on a thread of its own, which is left
//! out of the report (its allocations and samples are not the program's).

use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use perflens_core::Snapshotter;
use perflens_report::{Report, ReportOptions};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

type Body = http_body_util::Full<Bytes>;

/// Headers must arrive within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest CPU profile a request may ask for, in seconds.
pub const MAX_PROFILE_SECONDS: u64 = 300;
/// A connection's whole life, at most.
const CONNECTION_MAX: Duration = Duration::from_secs(MAX_PROFILE_SECONDS + 30);
/// Connections open at once, at most.
const MAX_CONNECTIONS: usize = 64;

/// What the server needs of the session.
pub(crate) struct State {
    pub(crate) snapshotter: Snapshotter,
    pub(crate) options: ReportOptions,
    pub(crate) token: Option<String>,
    /// `/metrics` with per-path labels (`PERFLENS_HTTP_PATH_LABELS=1`).
    pub(crate) path_labels: bool,
    /// A CPU profile is being taken.
    pub(crate) profiling: AtomicBool,
    /// The session's own sampler, when it samples CPU: a profile is then
    /// a window of it.
    #[cfg(feature = "cpu")]
    pub(crate) cpu: Option<Arc<perflens_sampler::ProfilerGuard<'static>>>,
}

/// The running server; stopped (and its thread joined) when dropped.
pub(crate) struct HttpServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpServer {
    /// The address it listens on (the port chosen, for port 0).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether `addr` may be served without a token.
fn loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Parses `PERFLENS_HTTP`'s value: `HOST:PORT`, or a bare port (then on
/// 127.0.0.1).
pub(crate) fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| {
        format!("PERFLENS_HTTP={s}: expected HOST:PORT (for example 127.0.0.1:9464) or a port")
    })
}

/// Binds `addr` and starts serving `state` on a thread of its own.
/// Refuses an address beyond loopback without a token.
pub(crate) fn start(addr: SocketAddr, state: State) -> Result<HttpServer, String> {
    if !loopback(&addr) && state.token.as_deref().is_none_or(str::is_empty) {
        return Err(format!(
            "the HTTP server would listen on {addr}, beyond loopback, where anyone who reaches it could read the profile: set PERFLENS_HTTP_TOKEN (requests then need `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        ));
    }
    let listener = TcpListener::bind(addr)
        .map_err(|e| format!("the HTTP server cannot listen on {addr}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let state = Arc::new(state);
    let thread = std::thread::Builder::new()
        .name("perflens-http".into())
        .spawn(move || {
            // The server is the profiler's, not the program's.
            perflens_core::exclude_current_thread();
            #[cfg(feature = "cpu")]
            crate::cpu::leave_out_current_thread();
            serve(listener, state, stopped);
        })
        .map_err(|e| format!("the HTTP server's thread did not start: {e}"))?;
    Ok(HttpServer {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// The server's thread: accepts until told to stop.
fn serve(
    listener: TcpListener,
    state: Arc<State>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("[perflens] HTTP server: no runtime: {e}");
            return;
        }
    };
    rt.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("[perflens] HTTP server: {e}");
                return;
            }
        };
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    // Full: closed at once, nothing kept for it.
                    let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
                    let state = state.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let state = state.clone();
                            async move { Ok::<_, Infallible>(handle(&state, req).await) }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(HEADER_TIMEOUT)
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                        let _ = tokio::time::timeout(CONNECTION_MAX, conn).await;
                        drop(slot);
                    });
                }
            }
        }
    });
    // Dropping the runtime ends every connection still open.
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Body> {
    let mut r = Response::new(Body::new(Bytes::from(body.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn typed(body: Vec<u8>, content_type: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::new(Bytes::from(body)));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    r
}

/// The value of query parameter `key`, percent-decoded
/// (`application/x-www-form-urlencoded`, by the `form_urlencoded` crate).
fn query(req: &Request<Incoming>, key: &str) -> Option<String> {
    form_urlencoded::parse(req.uri().query()?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Equal in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether the request carries the token (when one is set).
fn authorized(state: &State, req: &Request<Incoming>) -> bool {
    let Some(token) = state.token.as_deref().filter(|t| !t.is_empty()) else {
        return true;
    };
    let header = (req.headers().get(hyper::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query_token = query(req, "token");
    let given = header.or(query_token.as_deref());
    given.is_some_and(|g| same(g.as_bytes(), token.as_bytes()))
}

/// The session's report now, or why there is none.
fn report(state: &State) -> Option<(perflens_core::RawSnapshot, Report)> {
    #[allow(unused_mut)]
    let mut snap = state.snapshotter.snapshot()?;
    #[cfg(feature = "heap")]
    crate::heap_stacks::name(&mut snap);
    let report =
        Report::from_snapshot_with_sites(&snap, &perflens_core::await_sites(), &state.options);
    Some((snap, report))
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n");
    }
    if !authorized(state, &req) {
        let mut r = text(
            StatusCode::UNAUTHORIZED,
            "a token is needed: Authorization: Bearer <token>\n",
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    match req.uri().path() {
        "/metrics" => match report(state) {
            Some((snap, report)) => {
                let mut out = Vec::new();
                match perflens_report::write_prometheus(&snap, &report, state.path_labels, &mut out)
                {
                    Ok(()) => typed(out, "text/plain; version=0.0.4; charset=utf-8"),
                    Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
                }
            }
            None => ended(),
        },
        "/debug/perflens/report" => match report(state) {
            Some((_, report)) => {
                let mut out = Vec::new();
                match perflens_report::write_json(&report, &mut out) {
                    Ok(()) => typed(out, "application/json"),
                    Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
                }
            }
            None => ended(),
        },
        "/debug/pprof/profile" => profile(state, &req).await,
        "/debug/pprof/allocs" => match report(state) {
            Some((_, report)) => match perflens_report::pprof::allocations(&report) {
                Some(bytes) => typed(bytes, "application/octet-stream"),
                None => text(
                    StatusCode::NOT_FOUND,
                    "allocations are not counted in this session (feature alloc, with perflens's counting allocator)\n",
                ),
            },
            None => ended(),
        },
        "/debug/pprof/heap" => match report(state) {
            Some((_, report)) => match perflens_report::pprof::heap(&report) {
                Some(bytes) => typed(bytes, "application/octet-stream"),
                None => text(
                    StatusCode::NOT_FOUND,
                    "the heap is not sampled in this session (feature heap, with perflens's counting allocator, and PERFLENS_HEAP_RATE not 0)\n",
                ),
            },
            None => ended(),
        },
        "/" => text(
            StatusCode::OK,
            "perflens: /metrics, /debug/perflens/report, /debug/pprof/profile?seconds=N, /debug/pprof/allocs, /debug/pprof/heap\n",
        ),
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn ended() -> Response<Body> {
    text(StatusCode::SERVICE_UNAVAILABLE, "the session has ended\n")
}

/// `/debug/pprof/profile?seconds=N`.
async fn profile(state: &State, req: &Request<Incoming>) -> Response<Body> {
    let seconds = match query(req, "seconds").as_deref() {
        None => 30,
        Some(s) => match s.parse::<u64>() {
            Ok(n) if (1..=MAX_PROFILE_SECONDS).contains(&n) => n,
            _ => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "seconds={s}: expected a whole number from 1 to {MAX_PROFILE_SECONDS}\n"
                    ),
                );
            }
        },
    };
    if state.profiling.swap(true, Ordering::AcqRel) {
        return text(
            StatusCode::TOO_MANY_REQUESTS,
            "a profile is being taken: one at a time\n",
        );
    }
    #[cfg(feature = "cpu")]
    let r = match &state.cpu {
        Some(guard) => window_profile(guard, seconds).await,
        None => cpu_profile(seconds).await,
    };
    #[cfg(not(feature = "cpu"))]
    let r = cpu_profile(seconds).await;
    state.profiling.store(false, Ordering::Release);
    r
}

/// A profile of the next `seconds` of the session's own sampler: its
/// report now and then, the second minus the first.
#[cfg(feature = "cpu")]
async fn window_profile(
    guard: &perflens_sampler::ProfilerGuard<'_>,
    seconds: u64,
) -> Response<Body> {
    let build = || {
        let _internal = perflens_core::Internal::enter();
        guard.profile().quiet().build()
    };
    // The window runs from the first report's samples to the second's:
    // the time the first took to build counts in the seconds asked for.
    let began = std::time::Instant::now();
    let before = match build() {
        Ok(r) => r,
        Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    };
    tokio::time::sleep(Duration::from_secs(seconds).saturating_sub(began.elapsed())).await;
    let _internal = perflens_core::Internal::enter();
    let profile = build().map(|after| crate::cpu::without_own_threads(after.since(&before)));
    match profile.and_then(|p| p.pprof()) {
        Ok(bytes) => typed(bytes, "application/octet-stream"),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

/// A profile of the next `seconds` with a sampler of its own (the
/// session does not sample CPU).
#[cfg(feature = "cpu")]
async fn cpu_profile(seconds: u64) -> Response<Body> {
    let guard = {
        let _internal = perflens_core::Internal::enter();
        perflens_sampler::ProfilerGuardBuilder::default()
            .ignore_env()
            .frequency(100)
            .blocklist(&["libc", "libgcc", "pthread", "vdso"])
            .build()
    };
    let guard = match guard {
        Ok(g) => g,
        Err(e) => {
            return text(
                StatusCode::CONFLICT,
                format!("CPU sampling could not start: {e}\n"),
            );
        }
    };
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let _internal = perflens_core::Internal::enter();
    let profile = guard
        .stop()
        .quiet()
        .build()
        .map(crate::cpu::without_own_threads);
    match profile.and_then(|p| p.pprof()) {
        Ok(bytes) => typed(bytes, "application/octet-stream"),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

#[cfg(not(feature = "cpu"))]
async fn cpu_profile(_seconds: u64) -> Response<Body> {
    text(
        StatusCode::NOT_IMPLEMENTED,
        "built without the cpu feature: no CPU sampler\n",
    )
}
