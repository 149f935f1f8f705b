//! The programmatic session: start, snapshot at any time, finish.

use crate::settings::Settings;
use perflens_core::{ClockSource, Mode, Recording, RecordingOptions, Recursion};
use perflens_report::{Report, ReportOptions};

/// Why a session could not start.
pub use perflens_core::StartError as Error;

/// Settings for a [`Session`]. Environment variables (`PERFLENS_*`, see
/// docs/configuration.md) override what is set here unless
/// [`SessionBuilder::ignore_env`] is called.
#[derive(Clone, Debug)]
pub struct SessionBuilder {
    config: RecordingOptions,
    options: ReportOptions,
    use_env: bool,
    live: bool,
    live_keep: bool,
    trace: Option<std::path::PathBuf>,
    /// Threads that lived less than this share tracks in the trace.
    short_thread_ns: u64,
    /// One message in this many carries its send time (0: no flow clock).
    flow_latency: u32,
    /// Where the HTTP server listens, and its token (feature `http`).
    #[cfg(feature = "http")]
    http: Option<String>,
    #[cfg(feature = "http")]
    http_token: Option<String>,
    #[cfg(feature = "cpu")]
    cpu: bool,
}

/// `PERFLENS_FLOW_LATENCY`: `Some(n)` for a number, `off`/`false`
/// (0) or `on`/`true` (the default); a warning and `None` for anything
/// else.
fn env_flow_latency(env: &Settings) -> Option<u32> {
    let v = env.text("PERFLENS_FLOW_LATENCY")?;
    match v.trim() {
        "" => None,
        "true" | "yes" | "on" => Some(perflens_core::flow::DEFAULT_LATENCY_EVERY),
        "false" | "no" | "off" => Some(0),
        other => match other.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                eprintln!(
                    "[perflens] PERFLENS_FLOW_LATENCY={other} is not a number (1: every message, N: one in N, 0: none), on or off; ignored."
                );
                None
            }
        },
    }
}

/// `PERFLENS_LIVE` / `PERFLENS_LIVE_KEEP`: `Some(on)` when set to a
/// boolean; a warning and `None` for anything else.
fn env_flag(env: &Settings, name: &'static str) -> Option<bool> {
    let v = env.text(name)?;
    match v.trim() {
        "" => None,
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        other => {
            eprintln!("[perflens] {name}={other} is not one of 1, 0, true, false; ignored.");
            None
        }
    }
}

impl SessionBuilder {
    /// Timing mode: timed (default), count-only or sampled.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Sampled mode: every call of a calling context is timed until it
    /// has been called this many times (default 64, the same as
    /// `PERFLENS_SAMPLE_WARMUP`), and only then one in N; 0 samples from
    /// the first call.
    pub fn sample_warmup(mut self, calls: u32) -> Self {
        self.config.sample_warmup = calls;
        self
    }

    /// Heap profiling (feature `heap`): the mean bytes between sampled
    /// allocated bytes (default 512 KiB, as Go's and tcmalloc's; the same
    /// as `PERFLENS_HEAP_RATE`), or 0 for none.
    #[cfg(feature = "heap")]
    pub fn heap_rate(mut self, bytes: u64) -> Self {
        self.config.heap = (bytes > 0).then(|| perflens_core::HeapOptions {
            rate: bytes,
            ..self.config.heap.unwrap_or_default()
        });
        self
    }

    /// Heap profiling (feature `heap`): the seed of the random gaps
    /// between samples (the same as `PERFLENS_HEAP_SEED`): a program that
    /// allocates the same way samples the same allocations.
    #[cfg(feature = "heap")]
    pub fn heap_seed(mut self, seed: u64) -> Self {
        if let Some(heap) = &mut self.config.heap {
            heap.seed = seed;
        }
        self
    }

    /// Heap profiling (feature `heap`): whether each sampled allocation
    /// also keeps its native stack (default on; the same as
    /// `PERFLENS_HEAP_STACKS`): the report's allocation sites and the
    /// pprof heap profile's stacks. Off, the heap profile has measured
    /// paths only, and a sample costs no stack walk.
    #[cfg(feature = "heap")]
    pub fn heap_stacks(mut self, on: bool) -> Self {
        if let Some(heap) = &mut self.config.heap {
            heap.stacks = on;
        }
        self
    }

    /// Maximum calling contexts per thread (default 1024).
    pub fn node_capacity(mut self, nodes: u32) -> Self {
        self.config.node_capacity = nodes;
        self
    }

    /// Maximum nesting of measured calls per thread. The default, 0, is
    /// as deep as each thread's own stack allows (the shadow stack is
    /// address space reserved without memory, sized from the thread's
    /// stack); a non-zero depth is a fixed limit, and deeper calls are
    /// counted as dropped.
    pub fn stack_depth(mut self, depth: u32) -> Self {
        self.config.stack_depth = depth;
        self
    }

    /// How a call to a function already on the stack is recorded:
    /// folded into the node where the function is outermost (default),
    /// or one node per depth (the same as `PERFLENS_RECURSION=expand`).
    pub fn recursion(mut self, recursion: Recursion) -> Self {
        self.config.recursion = recursion;
        self
    }

    /// Maximum distinct call paths in the process (default 65536).
    pub fn path_capacity(mut self, paths: u32) -> Self {
        self.config.path_capacity = paths;
        self
    }

    /// Clock for timed calls: the TSC when the CPU has an invariant one
    /// (default), or `Instant`, which is slower per call but never
    /// depends on the CPU (the same as `PERFLENS_CLOCK=instant`).
    pub fn clock(mut self, clock: ClockSource) -> Self {
        self.config.clock = Some(clock);
        self
    }

    /// Percentiles shown in reports, each in (0, 100].
    pub fn percentiles(mut self, percentiles: &[f64]) -> Self {
        self.options.percentiles = percentiles.to_vec();
        self
    }

    /// Rows per terminal table (the JSON report always has every row).
    pub fn limit(mut self, rows: usize) -> Self {
        self.options.limit = Some(rows);
        self
    }

    /// The report's Waits section lists the await sites that waited at
    /// least this long in total (default 1 ms, the same as
    /// `PERFLENS_WAIT_MIN`); zero lists every site that ran.
    pub fn wait_min(mut self, wait: std::time::Duration) -> Self {
        self.options.wait_min_ns = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// Also sample every thread's CPU time (feature `cpu`; off by default
    /// for sessions, on under `#[perflens::main]`): the report gains a CPU
    /// section, and `finish` writes `PERFLENS_PPROF`,
    /// `PERFLENS_FLAMEGRAPH` and `PERFLENS_FOLDED` when set.
    #[cfg(feature = "cpu")]
    pub fn cpu_sampling(mut self, on: bool) -> Self {
        self.cpu = on;
        self
    }

    /// Publish the session in shared memory, for `perflens top`,
    /// `perflens snapshot` and other readers of the same user (the same
    /// as `PERFLENS_LIVE=1`, which overrides this either way). Off by
    /// default. The entry is removed when the session ends, unless
    /// [`SessionBuilder::live_keep`] (or `PERFLENS_LIVE_KEEP=1`) keeps it.
    pub fn live(mut self, on: bool) -> Self {
        self.live = on;
        self
    }

    /// Keep the live entry, holding the final state, after the session
    /// ends (the same as `PERFLENS_LIVE_KEEP=1`).
    pub fn live_keep(mut self, keep: bool) -> Self {
        self.live_keep = keep;
        self
    }

    /// Trace mode: also record a timeline of the measured calls, each
    /// thread's in order, and write it to `path` when the session ends
    /// (the same as `PERFLENS_TRACE`, which overrides it): Chrome Trace
    /// Event JSON for a `.json` path, Perfetto's protobuf for `.pftrace`.
    /// The traced calls are the timed ones: a session in another mode is
    /// timed instead. The events go to a buffer of 64 MiB
    /// ([`SessionBuilder::trace_buffer`]) that keeps the newest ones.
    pub fn trace(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// The trace buffer's size in bytes (default 64 MiB, at least 1 MiB;
    /// the same as `PERFLENS_TRACE_BUFFER`, which overrides it). When it
    /// is full, the oldest events make room, and the trace says how many
    /// were dropped and up to when.
    pub fn trace_buffer(mut self, bytes: usize) -> Self {
        self.config.trace_buffer = Some(bytes);
        self
    }

    /// In the trace, threads that exited after living less than this
    /// (10 ms by default; the same as `PERFLENS_TRACE_SHORT_THREAD_MS`,
    /// which overrides it) are drawn on the fewest shared tracks,
    /// `short-lived threads (k)`, each slice naming its thread; zero keeps
    /// every thread on its own track.
    pub fn trace_short_threads(mut self, below: std::time::Duration) -> Self {
        self.short_thread_ns = u64::try_from(below.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// Which messages of a measured channel carry their send time, for
    /// the Channels section's latency (the same as
    /// `PERFLENS_FLOW_LATENCY`, which overrides it): 1 every message, `n`
    /// one in `n` of each sending thread and channel site after its first
    /// 256 (default 8: latency percentiles from a random eighth of a busy
    /// channel's messages, at an eighth of the clock reads), 0 none, and
    /// then channels, streams, futures and locks read no clock at all
    /// (counts only, no waits, hold times or latency). Counts are exact
    /// whatever the setting.
    pub fn flow_latency(mut self, one_in: u32) -> Self {
        self.flow_latency = one_in;
        self
    }

    /// Serves the session over HTTP at `addr` (`HOST:PORT`, or a port on
    /// 127.0.0.1; port 0 picks one, see [`Session::http_addr`]), the same
    /// as `PERFLENS_HTTP`, which overrides it: `/metrics` for Prometheus,
    /// `/debug/perflens/report`, and with the `cpu` feature
    /// `/debug/pprof/profile?seconds=N`. An address beyond loopback needs
    /// a token ([`SessionBuilder::http_token`] or `PERFLENS_HTTP_TOKEN`),
    /// else the session does not start. Feature `http`.
    #[cfg(feature = "http")]
    pub fn http(mut self, addr: impl Into<String>) -> Self {
        self.http = Some(addr.into());
        self
    }

    /// The token every HTTP request must carry (`Authorization: Bearer
    /// <token>`, or `?token=`); `PERFLENS_HTTP_TOKEN` overrides it.
    #[cfg(feature = "http")]
    pub fn http_token(mut self, token: impl Into<String>) -> Self {
        self.http_token = Some(token.into());
        self
    }

    /// Do not read `PERFLENS_*` variables.
    pub fn ignore_env(mut self) -> Self {
        self.use_env = false;
        self
    }

    /// Starts recording.
    pub fn start(self) -> Result<Session, Error> {
        if self.use_env {
            // A variable of a feature not compiled in, or a typo.
            crate::settings::warn_once();
        }
        // The program's settings, read once for everything decided here.
        let env = self.use_env.then(Settings::from_env);
        let (mut config, warnings) = match &env {
            Some(env) => self.config.apply_env(|name| env.text(name)),
            None => (self.config, Vec::new()),
        };
        let (mut live, mut keep) = (self.live, self.live_keep);
        if let Some(env) = &env {
            live = env_flag(env, "PERFLENS_LIVE").unwrap_or(live);
            keep = env_flag(env, "PERFLENS_LIVE_KEEP").unwrap_or(keep);
        }
        // Process-wide: each session sets it, so an earlier session's
        // setting does not linger.
        let mut flow_latency = self.flow_latency;
        if let Some(env) = &env {
            flow_latency = env_flow_latency(env).unwrap_or(flow_latency);
        }
        perflens_core::flow::set_latency_every(flow_latency);
        config.live = live.then_some(perflens_core::PublishOptions { keep, root: None });
        let (mut trace, mut short_thread_ns) = (self.trace, self.short_thread_ns);
        if self.use_env {
            crate::trace::apply_env(&mut trace, &mut config.trace_buffer, &mut short_thread_ns);
        }
        config.trace_buffer = trace.as_ref().map(|_| {
            config
                .trace_buffer
                .unwrap_or(perflens_core::trace::DEFAULT_BUFFER)
        });
        if trace.is_some() && config.mode != Mode::Timed {
            eprintln!(
                "[perflens] trace: the traced calls are the timed ones: {} mode becomes timed.",
                config.mode.name()
            );
        }
        let mut options = self.options;
        if self.use_env {
            crate::outputs::apply_report_env(&mut options);
        }
        for w in warnings {
            eprintln!("[perflens] {w}");
        }
        // The sampler starts first, so that its set-up (perf events,
        // unwind tables) is not part of the session's wall time, the
        // denominator of every "% Total".
        #[cfg(feature = "cpu")]
        let cpu = if self.cpu {
            if perflens_core::is_recording() {
                return Err(Error::AlreadyRecording);
            }
            Some(crate::cpu::CpuSession::start(self.use_env))
        } else {
            None
        };
        #[cfg(feature = "http")]
        let http_addr = {
            let var = |name: &'static str| env.as_ref().and_then(|env| env.text(name));
            let addr = var("PERFLENS_HTTP").or(self.http.clone());
            match addr.as_deref().map(crate::http::parse_addr).transpose() {
                Ok(a) => a.map(|a| {
                    let token = var("PERFLENS_HTTP_TOKEN").or(self.http_token.clone());
                    let labels = var("PERFLENS_HTTP_PATH_LABELS").is_some_and(|v| v.trim() == "1");
                    (a, token, labels)
                }),
                Err(e) => return Err(Error::Setting(e)),
            }
        };
        // The heap's stack walker, made before the session starts (its
        // set-up reads unwind tables); a running session keeps its own.
        #[cfg(feature = "heap")]
        if !perflens_core::is_recording() {
            crate::heap_stacks::install(config.heap.as_ref());
        }
        let recording = match perflens_core::start(&config) {
            #[cfg(feature = "cpu")]
            Ok(r) => {
                if let Some(hz) = cpu.as_ref().and_then(crate::cpu::CpuSession::frequency) {
                    perflens_core::publish::set_cpu_hz(hz);
                }
                r
            }
            #[cfg(not(feature = "cpu"))]
            Ok(r) => r,
            Err(e) => {
                // Another session started in between: undo the sampler.
                #[cfg(feature = "cpu")]
                if let Some(cpu) = cpu {
                    drop(cpu.stop());
                }
                return Err(e);
            }
        };
        #[cfg(feature = "http")]
        let http = match http_addr {
            None => None,
            Some((addr, token, path_labels)) => {
                let state = crate::http::State {
                    snapshotter: recording.snapshotter(),
                    options: options.clone(),
                    token,
                    path_labels,
                    profiling: Default::default(),
                    #[cfg(feature = "cpu")]
                    cpu: cpu.as_ref().and_then(crate::cpu::CpuSession::guard),
                };
                match crate::http::start(addr, state) {
                    Ok(server) => {
                        eprintln!("[perflens] HTTP: serving http://{}/metrics", server.addr());
                        Some(server)
                    }
                    Err(e) => {
                        // The session does not start without what it was
                        // asked to serve.
                        drop(recording.finish());
                        #[cfg(feature = "cpu")]
                        if let Some(cpu) = cpu {
                            drop(cpu.stop());
                        }
                        return Err(Error::Setting(e));
                    }
                }
            }
        };
        Ok(Session {
            recording,
            options,
            trace,
            short_thread_ns,
            use_env: self.use_env,
            #[cfg(feature = "cpu")]
            cpu,
            #[cfg(feature = "http")]
            http,
        })
    }
}

/// A recording session. Only one records at a time in a process.
pub struct Session {
    recording: Recording,
    options: ReportOptions,
    /// Where the trace goes (trace mode).
    trace: Option<std::path::PathBuf>,
    /// Threads that lived less than this share tracks in the trace.
    short_thread_ns: u64,
    /// Whether `PERFLENS_*` variables apply (`PERFLENS_JSON` at finish).
    use_env: bool,
    #[cfg(feature = "cpu")]
    cpu: Option<crate::cpu::CpuSession>,
    /// The HTTP server, when asked for.
    #[cfg(feature = "http")]
    http: Option<crate::http::HttpServer>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("recording", &self.recording)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A builder with default settings.
    pub fn builder() -> SessionBuilder {
        SessionBuilder {
            config: RecordingOptions {
                // Feature `heap`: the heap is sampled at the default rate.
                #[cfg(feature = "heap")]
                heap: Some(perflens_core::HeapOptions::default()),
                ..RecordingOptions::default()
            },
            options: ReportOptions::default(),
            use_env: true,
            live: false,
            live_keep: false,
            trace: None,
            short_thread_ns: perflens_report::trace::collapse::DEFAULT_SHORT_THREAD_MS * 1_000_000,
            flow_latency: perflens_core::flow::DEFAULT_LATENCY_EVERY,
            #[cfg(feature = "http")]
            http: None,
            #[cfg(feature = "http")]
            http_token: None,
            #[cfg(feature = "cpu")]
            cpu: false,
        }
    }

    /// Starts a session with default settings (and `PERFLENS_*` overrides).
    pub fn start() -> Result<Session, Error> {
        Session::builder().start()
    }

    /// A report of everything recorded so far; recording goes on.
    pub fn snapshot(&self) -> Report {
        // Building the report allocates, and freeing the raw snapshot
        // frees what the profiler allocated: neither is the program's.
        // (`_internal` is declared first so that it ends last, after
        // `snap` is dropped.)
        let _internal = perflens_core::Internal::enter();
        #[allow(unused_mut)]
        let mut snap = self.recording.snapshot();
        #[cfg(feature = "heap")]
        crate::heap_stacks::name(&mut snap);
        Report::from_snapshot_with_sites(&snap, &perflens_core::await_sites(), &self.options)
    }

    /// The raw per-thread data recorded so far.
    pub fn raw_snapshot(&self) -> perflens_core::RawSnapshot {
        self.recording.snapshot()
    }

    /// Stops recording and returns the final report. With `PERFLENS_JSON`
    /// or `PERFLENS_HTML` set (and the environment not ignored), also
    /// writes the JSON or HTML report there, saying so on stderr.
    pub fn finish(self) -> Report {
        let use_env = self.use_env;
        let trace = self.trace.clone();
        let report = self.finish_quietly();
        if use_env {
            crate::outputs::write_outputs_env(&report, trace.as_deref());
        }
        report
    }

    /// Where the HTTP server listens, when it runs (feature `http`).
    #[cfg(feature = "http")]
    pub fn http_addr(&self) -> Option<std::net::SocketAddr> {
        self.http.as_ref().map(crate::http::HttpServer::addr)
    }

    /// Where the session's trace is written when it ends (trace mode).
    pub(crate) fn trace_path(&self) -> Option<&std::path::Path> {
        self.trace.as_deref()
    }

    /// [`Session::finish`] without writing `PERFLENS_JSON`.
    #[allow(unused_mut)]
    pub(crate) fn finish_quietly(mut self) -> Report {
        // The server stops first: it reads the session.
        #[cfg(feature = "http")]
        drop(self.http.take());
        // Stop sampling first, so that building the report is not
        // sampled; the paths the samples refer to stay valid.
        #[cfg(feature = "cpu")]
        let cpu = self.cpu.take().map(crate::cpu::CpuSession::stop);
        #[allow(unused_mut)]
        let (mut snap, live, trace) = self.recording.finish_traced();
        let _internal = perflens_core::Internal::enter();
        #[cfg(feature = "heap")]
        crate::heap_stacks::name(&mut snap);
        let sites = perflens_core::await_sites();
        let mut report = Report::from_snapshot_with_sites(&snap, &sites, &self.options);
        #[cfg(feature = "cpu")]
        if let Some(cpu) = cpu {
            let input = cpu.finish(&snap, &mut report);
            // Readers of the live session get the sampler's own figures
            // (source, threads, losses); the samples per path they read
            // from the blocks.
            if let Ok(json) = serde_json::to_vec(&input) {
                live.record(perflens_core::publish::EXTRA_CPU, &json);
            }
        }
        live.close();
        if let Some(path) = &self.trace {
            crate::trace::write(path, trace.as_ref(), &snap, self.short_thread_ns);
        }
        report
    }

    /// The directory of this session's live entry (see
    /// [`SessionBuilder::live`]), when it is published.
    pub fn live_dir(&self) -> Option<&std::path::Path> {
        self.recording.live_dir()
    }

    /// Report options in force (percentiles, limit, wait threshold).
    pub fn options(&self) -> &ReportOptions {
        &self.options
    }
}
