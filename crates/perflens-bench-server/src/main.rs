//! What perflens costs a tokio TCP server, per mode, against timing
//! alone: the server (`src/bin/bench-server.rs`) is built once per mode
//! with its own features, and the rounds run every mode in turn against
//! the same client, so a noisy machine moves all of them alike.
//!
//! ```text
//! cargo run --release -p perflens-bench-server
//! ```
//!
//! Modes: `off` (perflens compiled out), `enabled` (timing),
//! `enabled-again` (the same build once more: its ratios are the
//! benchmark's own noise), `cpu` (timing and CPU sampling at the default
//! 1 kHz), `cpu-perf` and `cpu-timer` (`cpu` with every thread on a perf
//! event, or on a timer), `cpu-1hz` (the sampler's fixed costs, almost no
//! samples), `alloc`, `heap` (`alloc` and the sampled heap profile with its
//! native stacks), `flow` (the store's lock and the stats channel
//! measured), `all` (`heap`, so `alloc` too, `cpu` and `flow` together) and `hotpath`
//! (the same functions under hotpath 0.30.3, the leading peer, perflens
//! off). `PERFLENS_BENCH_MODES=enabled,cpu` picks some (`enabled` is
//! always run: it is the baseline). The client's thread is pinned to one
//! CPU (`PERFLENS_BENCH_PIN=0` frees it); the servers use every CPU.
//!
//! A run: start the server, open the connections, warm up, then each
//! connection sends a 16-byte request and waits for its 8-byte answer,
//! `PERFLENS_BENCH_REQUESTS` requests in all (default 200,000) over
//! `PERFLENS_BENCH_CONNS` connections (default 20, as `redis-benchmark
//! -c 20`), from one client thread (as `redis-benchmark`). The server's
//! CPU time (its threads' time on a CPU, `/proc/<pid>/task/*/schedstat`)
//! and context switches are read before and after the timed requests; then SIGTERM ends it,
//! and a perflens server writes its report (kept in
//! `target/release/bench-server-reports/<mode>.report` for reading). The table shows
//! medians over rounds (`PERFLENS_BENCH_ROUNDS`, default 5) of the
//! throughput and the server's CPU per request, and of each mode's
//! ratios to the `enabled` run of the same round.
//!
//! `perflens-bench-server --client PORT` runs only the client, against a
//! `target/release/bench-server-<mode>` started by hand (it prints its
//! port), to look at the server with `perf`, `strace -c -f` or `perflens
//! top` while it serves.
#[path = "../../perflens-bench/src/stats.rs"]
#[allow(dead_code)] // shared with the other benchmarks
mod stats;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A mode: its name, the features of its build, and environment
/// variables its server runs with.
struct Mode {
    name: &'static str,
    features: &'static str,
    env: &'static [(&'static str, &'static str)],
}

const fn mode(name: &'static str, features: &'static str) -> Mode {
    Mode {
        name,
        features,
        env: &[],
    }
}

const MODES: &[Mode] = &[
    mode("off", ""),
    mode("enabled", "enabled"),
    // The baseline once more, as a mode of its own: its ratios to
    // `enabled` are the benchmark's resolution on this machine (two runs
    // of one build), against which every other mode's ratios are read.
    mode("enabled-again", "enabled"),
    mode("cpu", "cpu"),
    // CPU sampling with a perf event on every thread, whatever it does
    // (what `cpu` did before it moved threads that switch often to the
    // timer source): what a perf event costs each context switch.
    Mode {
        name: "cpu-perf",
        features: "cpu",
        env: &[("PERFLENS_CPU_SOURCE", "perf")],
    },
    Mode {
        name: "cpu-timer",
        features: "cpu",
        env: &[("PERFLENS_CPU_SOURCE", "timer")],
    },
    // The sampler's fixed costs (its thread, the watcher, the timers
    // armed) with almost no samples: what `cpu` costs beyond its samples.
    Mode {
        name: "cpu-1hz",
        features: "cpu",
        env: &[("PERFLENS_CPU_HZ", "1")],
    },
    mode("alloc", "alloc"),
    // Allocations and the sampled heap profile, native stacks included.
    mode("heap", "heap"),
    mode("flow", "flow"),
    mode("all", "heap,cpu,flow"),
    // The same six functions under hotpath 0.30.3, perflens off.
    mode("hotpath", "hotpath"),
];

/// Requests sent before the timed ones (per connection).
const WARMUP_PER_CONN: u64 = 200;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("{name}={v} is not a whole number; using {default}");
            default
        }),
        Err(_) => default,
    }
}

fn main() {
    let rounds = stats::rounds(5);
    let requests = env_u64("PERFLENS_BENCH_REQUESTS", 200_000).max(1);
    let conns = env_u64("PERFLENS_BENCH_CONNS", 20).clamp(1, 1000);
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--client") && args.len() != 2 {
        eprintln!("usage: perflens-bench-server --client PORT");
        std::process::exit(2);
    }
    if let Some(other) = args.first().filter(|a| *a != "--client") {
        eprintln!("unknown argument {other:?}; usage: perflens-bench-server [--client PORT]");
        std::process::exit(2);
    }
    if let [flag, port] = &args[..]
        && flag == "--client"
    {
        // Only the client, against a server started by hand (to look at
        // it with `perf`, `strace -c` or `perflens top` while it serves).
        let Ok(port) = port.parse::<u16>() else {
            eprintln!("--client {port:?}: not a port number");
            std::process::exit(2);
        };
        let rt = client_runtime();
        let elapsed = rt.block_on(client(port, requests, conns));
        println!(
            "{requests} requests in {:.3} s: {:.0} requests/s",
            elapsed.as_secs_f64(),
            requests as f64 / elapsed.as_secs_f64()
        );
        return;
    }
    let wanted: Vec<String> = std::env::var("PERFLENS_BENCH_MODES")
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let modes: Vec<&Mode> = MODES
        .iter()
        .filter(|m| wanted.is_empty() || m.name == "enabled" || wanted.iter().any(|w| w == m.name))
        .collect();
    for w in &wanted {
        if !MODES.iter().any(|m| m.name == w) {
            eprintln!(
                "unknown mode {w:?}; modes: {}",
                MODES.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
            );
            std::process::exit(2);
        }
    }
    let dir = target_dir();
    let reports = dir.join("bench-server-reports");
    std::fs::create_dir_all(&reports).expect("create the reports directory");
    let mut built: Vec<(&str, PathBuf)> = Vec::new();
    let servers: Vec<(&Mode, PathBuf)> = modes
        .iter()
        .map(|&m| {
            let exe = match built.iter().find(|b| b.0 == m.features) {
                Some(b) => b.1.clone(),
                None => {
                    let exe = build(&dir, m.features);
                    built.push((m.features, exe.clone()));
                    exe
                }
            };
            (m, exe)
        })
        .collect();

    eprintln!(
        "{rounds} rounds of {} modes, {requests} requests over {conns} connections each",
        servers.len()
    );
    let servers_cpus = pin_client();
    let rt = client_runtime();
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); servers.len()];
    for round in 0..rounds {
        // Every other round runs the modes backwards, so that a mode is
        // not always the one after the same neighbour (a drift of the
        // machine, or a previous server still leaving, lands on all).
        let order: Vec<usize> = if round % 2 == 0 {
            (0..servers.len()).collect()
        } else {
            (0..servers.len()).rev().collect()
        };
        for i in order {
            let (mode, exe) = &servers[i];
            let report = reports.join(format!("{}.report", mode.name));
            let run = run_once(&rt, exe, mode.env, servers_cpus, &report, requests, conns);
            eprintln!(
                "round {}: {:>9}: {:>8.0} req/s, server {:>5.2} µs CPU/request ({:.0}% user), {:.2} context switches/request",
                round + 1,
                mode.name,
                run.throughput(),
                run.cpu_us_per_request(),
                100.0 * run.user_ticks as f64 / (run.user_ticks + run.sys_ticks).max(1) as f64,
                run.switches as f64 / run.requests as f64,
            );
            runs[i].push(run);
        }
    }
    let base = servers
        .iter()
        .position(|(m, _)| m.name == "enabled")
        .unwrap();
    println!();
    println!(
        "Server modes, medians of {rounds} rounds ({requests} requests over {conns} connections a run; ratios to `enabled` in the same round)"
    );
    println!();
    println!(
        "| mode | requests/s | server CPU µs/request | switches/request | throughput vs enabled | CPU vs enabled |"
    );
    println!("|---|---|---|---|---|---|");
    let mut spreads = Vec::new();
    for (i, (mode, _)) in servers.iter().enumerate() {
        let r = &runs[i];
        let thr = stats::median(r.iter().map(Run::throughput).collect());
        let cpu = stats::median(r.iter().map(Run::cpu_us_per_request).collect());
        let sw = stats::median(
            r.iter()
                .map(|x| x.switches as f64 / x.requests as f64)
                .collect(),
        );
        let thr_ratios: Vec<f64> = r
            .iter()
            .zip(&runs[base])
            .map(|(x, b)| x.throughput() / b.throughput())
            .collect();
        let cpu_ratios: Vec<f64> = r
            .iter()
            .zip(&runs[base])
            .map(|(x, b)| x.cpu_us_per_request() / b.cpu_us_per_request())
            .collect();
        let thr_ratio = stats::median(thr_ratios.clone());
        let cpu_ratio = stats::median(cpu_ratios.clone());
        let mode = mode.name;
        println!("| {mode} | {thr:.0} | {cpu:.2} | {sw:.2} | {thr_ratio:.3}x | {cpu_ratio:.3}x |");
        if mode != "enabled" {
            spreads.push(format!(
                "{mode}: throughput {}, CPU {}",
                middle_half(thr_ratios),
                middle_half(cpu_ratios)
            ));
        }
    }
    if !spreads.is_empty() {
        println!();
        println!(
            "The middle half of each mode's ratios over the rounds (how far one round moves):"
        );
        for s in spreads {
            println!("  {s}");
        }
    }
}

/// The first and third quartiles of `v`, as "0.981x-1.012x" (the middle
/// half of the rounds' ratios; with fewer than four rounds, every one).
fn middle_half(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return "-".to_string();
    }
    let (lo, hi) = if n < 4 {
        (0, n - 1)
    } else {
        (n / 4, n - 1 - n / 4)
    };
    format!("{:.3}x-{:.3}x", v[lo], v[hi])
}

/// Pins the client's thread (this one) to the last CPU it may use, and
/// gives back the set it had, for the servers: they keep every CPU and
/// their threads move as the scheduler likes, while the client stays put.
/// Unpinned, the client and a server worker sometimes share a CPU for a
/// whole run and the run is 10-30% slower, whatever the mode (seen on 2
/// vCPUs: 105,000-148,000 requests/s over six runs of one build, against
/// 139,000-156,000 with the client pinned). `PERFLENS_BENCH_PIN=0` leaves
/// the client free. `None` when there is one CPU or pinning failed.
fn pin_client() -> Option<libc::cpu_set_t> {
    if std::env::var("PERFLENS_BENCH_PIN").is_ok_and(|v| v == "0") {
        return None;
    }
    // SAFETY: cpu_set_t is plain data, all zeros is an empty set; the
    // calls read and write only the sets passed, of the size given.
    unsafe {
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut all) != 0 {
            return None;
        }
        let last = (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&c| libc::CPU_ISSET(c, &all))?;
        if libc::CPU_COUNT(&all) < 2 {
            return None;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(last, &mut one);
        if libc::sched_setaffinity(0, size, &one) != 0 {
            return None;
        }
        eprintln!("the client runs on CPU {last}; the servers on every CPU");
        Some(all)
    }
}

/// The client's runtime: one thread, as `redis-benchmark`.
fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime")
}

/// Connects, warms up and sends `requests` over `conns` connections;
/// returns how long the timed requests took.
async fn client(port: u16, requests: u64, conns: u64) -> Duration {
    timed_client(port, requests, conns, || ()).await.1
}

/// [`client`], calling `mark` just before and just after the timed
/// requests (what it returns: before, after).
async fn timed_client<T>(
    port: u16,
    requests: u64,
    conns: u64,
    mut mark: impl FnMut() -> T,
) -> ((T, T), Duration) {
    let mut socks = Vec::new();
    for _ in 0..conns {
        let s = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        s.set_nodelay(true).expect("nodelay");
        socks.push(s);
    }
    let socks = drive(socks, WARMUP_PER_CONN, 0).await;
    let before = mark();
    let t0 = Instant::now();
    let per = requests / conns;
    let extra = requests % conns;
    let tasks: Vec<_> = socks
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let n = per + u64::from((i as u64) < extra);
            tokio::spawn(requests_on(s, n, i as u32))
        })
        .collect();
    for t in tasks {
        t.await.expect("client task");
    }
    let elapsed = t0.elapsed();
    let after = mark();
    ((before, after), elapsed)
}

/// The directory of this profile's binaries (`target/release`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.parent().expect("exe dir").to_path_buf()
}

/// Builds the server with `features` and keeps it as
/// `bench-server-<features>` (`bench-server-off` without any).
fn build(dir: &Path, features: &str) -> PathBuf {
    let mode = if features.is_empty() {
        "off".to_string()
    } else {
        features.replace(',', "-")
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let release = dir.file_name().is_some_and(|n| n == "release");
    eprintln!("building the server: {mode} (features: {features:?})");
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "-q",
        "-p",
        "perflens-bench-server",
        "--bin",
        "bench-server",
        "--no-default-features",
    ]);
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    if release {
        cmd.arg("--release");
    }
    let ok = cmd.status().is_ok_and(|s| s.success());
    assert!(ok, "building the {mode} server failed");
    let built = dir.join("bench-server");
    let kept = dir.join(format!("bench-server-{mode}"));
    // Copied beside, then renamed: a server of an earlier run still
    // running (its file busy) does not stop this one.
    let fresh = dir.join(format!(".bench-server-{mode}.new"));
    std::fs::copy(&built, &fresh).expect("copy the server");
    std::fs::rename(&fresh, &kept).expect("put the server in place");
    kept
}

#[derive(Clone, Default)]
struct Run {
    requests: u64,
    elapsed: Duration,
    /// Time on a CPU, every server thread's, in nanoseconds.
    cpu_ns: u64,
    user_ticks: u64,
    sys_ticks: u64,
    switches: u64,
}

impl Run {
    fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
    fn cpu_us_per_request(&self) -> f64 {
        self.cpu_ns as f64 / 1e3 / self.requests as f64
    }
}

/// What the server has used so far.
struct Usage {
    cpu_ns: u64,
    user_ticks: u64,
    sys_ticks: u64,
    switches: u64,
}

/// The server's CPU time: in nanoseconds, the sum of its threads' time on
/// a CPU (`/proc/<pid>/task/<tid>/schedstat`, exact: `/proc/<pid>/stat`
/// counts in 10 ms ticks, a percent of a run); in ticks, its user and
/// system time (for the user share only); and its context switches
/// (voluntary and not, every thread's). The server's threads live as
/// long as it does, so none leaves the sum between two readings.
fn server_cpu(pid: u32) -> Usage {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("server stat");
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the whole line.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let mut u = Usage {
        cpu_ns: 0,
        user_ticks: f[11].parse().unwrap_or(0),
        sys_ticks: f[12].parse().unwrap_or(0),
        switches: 0,
    };
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let sched = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            u.cpu_ns += sched
                .split(' ')
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            for line in status.lines() {
                if let Some(v) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    u.switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    u
}

fn start(
    exe: &Path,
    env: &[(&str, &str)],
    cpus: Option<libc::cpu_set_t>,
    report: &Path,
) -> (Child, u16) {
    let stderr = std::fs::File::create(report).expect("report file");
    let mut cmd = Command::new(exe);
    cmd.envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr);
    if let Some(set) = cpus {
        // SAFETY: between fork and exec the closure makes one system call
        // (async-signal-safe) on a set copied into it; it allocates nothing.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("start the server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the server's port");
    let port = line.trim().parse().expect("a port number");
    (child, port)
}

fn run_once(
    rt: &tokio::runtime::Runtime,
    exe: &Path,
    env: &[(&str, &str)],
    cpus: Option<libc::cpu_set_t>,
    report: &Path,
    requests: u64,
    conns: u64,
) -> Run {
    let (mut child, port) = start(exe, env, cpus, report);
    let pid = child.id();
    let ((before, after), elapsed) =
        rt.block_on(timed_client(port, requests, conns, || server_cpu(pid)));
    let run = Run {
        requests,
        elapsed,
        cpu_ns: after.cpu_ns.saturating_sub(before.cpu_ns),
        user_ticks: after.user_ticks.saturating_sub(before.user_ticks),
        sys_ticks: after.sys_ticks.saturating_sub(before.sys_ticks),
        switches: after.switches.saturating_sub(before.switches),
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = child.wait().expect("wait for the server");
    let by_signal = std::os::unix::process::ExitStatusExt::signal(&status) == Some(libc::SIGTERM);
    assert!(
        status.success() || by_signal,
        "{} ended with {status}; its stderr is in {}",
        exe.display(),
        report.display()
    );
    run
}

/// `n` requests on every connection at once; gives the connections back.
async fn drive(socks: Vec<TcpStream>, n: u64, salt: u32) -> Vec<TcpStream> {
    let tasks: Vec<_> = socks
        .into_iter()
        .enumerate()
        .map(|(i, s)| tokio::spawn(requests_on(s, n, salt.wrapping_add(i as u32))))
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("client task"));
    }
    out
}

/// `n` requests on one connection, each answered before the next: half
/// sets, half gets, over 1,024 keys.
async fn requests_on(mut s: TcpStream, n: u64, salt: u32) -> TcpStream {
    let mut req = [0u8; 16];
    let mut answer = [0u8; 8];
    for i in 0..n {
        let key = (salt.wrapping_mul(2_654_435_761).wrapping_add(i as u32)) % 1024;
        req[0] = (i & 1) as u8;
        req[4..8].copy_from_slice(&key.to_le_bytes());
        req[8..16].copy_from_slice(&i.to_le_bytes());
        s.write_all(&req).await.expect("send a request");
        s.read_exact(&mut answer).await.expect("read an answer");
    }
    s
}
