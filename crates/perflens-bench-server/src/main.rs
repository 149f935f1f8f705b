//! What perflens costs a tokio TCP server, per mode, against timing
//! alone: the server (`src/bin/bench-server.rs`) is built once per mode
//! with its own features, and the rounds run every mode in turn against
//! the same client, so a noisy machine moves all of them alike.
//!
//! ```text
//! cargo run --release -p perflens-bench-server
//! ```
//!
//! Modes: `off` (perflens compiled out), `enabled` (timing), `cpu`
//! (timing and CPU sampling at the default 1 kHz), `alloc`, `flow` (the
//! store's lock and the stats channel measured), `all` (`alloc`,
//! `cpu` and `flow` together), `cpu-perf` and `cpu-timer` (`cpu` with
//! every thread on a perf event, or on a timer) and `hotpath` (the same
//! functions under hotpath 0.30.3, the leading peer, perflens off). `PERFLENS_BENCH_MODES=enabled,cpu` picks
//! some (`enabled` is always run: it is the baseline).
//!
//! A run: start the server, open the connections, warm up, then each
//! connection sends a 16-byte request and waits for its 8-byte answer,
//! `PERFLENS_BENCH_REQUESTS` requests in all (default 200,000) over
//! `PERFLENS_BENCH_CONNS` connections (default 20, as `redis-benchmark
//! -c 20`), from one client thread (as `redis-benchmark`). The server's
//! CPU time (user and system, `/proc/<pid>/stat`) and context switches
//! are read before and after the timed requests; then SIGTERM ends it,
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
    mode("alloc", "alloc"),
    mode("flow", "flow"),
    mode("all", "alloc,cpu,flow"),
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
    if let [flag, port] = &args[..]
        && flag == "--client"
    {
        // Only the client, against a server started by hand (to look at
        // it with `perf`, `strace -c` or `perflens top` while it serves).
        let port: u16 = port.parse().expect("--client PORT");
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
    let rt = client_runtime();
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); servers.len()];
    for round in 0..rounds {
        for (i, (mode, exe)) in servers.iter().enumerate() {
            let report = reports.join(format!("{}.report", mode.name));
            let run = run_once(&rt, exe, mode.env, &report, requests, conns);
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
    for (i, (mode, _)) in servers.iter().enumerate() {
        let r = &runs[i];
        let thr = stats::median(r.iter().map(Run::throughput).collect());
        let cpu = stats::median(r.iter().map(Run::cpu_us_per_request).collect());
        let sw = stats::median(
            r.iter()
                .map(|x| x.switches as f64 / x.requests as f64)
                .collect(),
        );
        let thr_ratio = stats::median(
            r.iter()
                .zip(&runs[base])
                .map(|(x, b)| x.throughput() / b.throughput())
                .collect(),
        );
        let cpu_ratio = stats::median(
            r.iter()
                .zip(&runs[base])
                .map(|(x, b)| x.cpu_us_per_request() / b.cpu_us_per_request())
                .collect(),
        );
        let mode = mode.name;
        println!("| {mode} | {thr:.0} | {cpu:.2} | {sw:.2} | {thr_ratio:.3}x | {cpu_ratio:.3}x |");
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
    user_ticks: u64,
    sys_ticks: u64,
    switches: u64,
}

impl Run {
    fn throughput(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
    fn cpu_us_per_request(&self) -> f64 {
        let ticks = (self.user_ticks + self.sys_ticks) as f64;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        ticks / hz * 1e6 / self.requests as f64
    }
}

/// The server's user and system CPU time in clock ticks, and its
/// context switches (voluntary and not, every thread's).
fn server_cpu(pid: u32) -> (u64, u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("server stat");
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the whole line.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let user = f[11].parse().unwrap_or(0);
    let sys = f[12].parse().unwrap_or(0);
    let mut switches = 0;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            for line in status.lines() {
                if let Some(v) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    (user, sys, switches)
}

fn start(exe: &Path, env: &[(&str, &str)], report: &Path) -> (Child, u16) {
    let stderr = std::fs::File::create(report).expect("report file");
    let mut child = Command::new(exe)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start the server");
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
    report: &Path,
    requests: u64,
    conns: u64,
) -> Run {
    let (mut child, port) = start(exe, env, report);
    let pid = child.id();
    let ((before, after), elapsed) =
        rt.block_on(timed_client(port, requests, conns, || server_cpu(pid)));
    let run = Run {
        requests,
        elapsed,
        user_ticks: after.0 - before.0,
        sys_ticks: after.1 - before.1,
        switches: after.2.saturating_sub(before.2),
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
