//! Helpers of the stress tests (alloc and CPU sampling on): what a process
//! holds open (file descriptors, mappings, POSIX timers, signal
//! dispositions), child processes, panics without noise and a minimal
//! executor. Each stress test uses a part of it. What reads `/proc` or
//! calls Linux's own system calls is compiled on Linux only, what needs
//! POSIX (signals, child processes, the thread CPU clock) on Unix only,
//! so that the tests that use neither still build for macOS and Windows.
#![allow(dead_code)]

use std::future::Future;
use std::process::{Command, Output};
use std::task::{Context, Poll, Waker};
#[cfg(unix)]
use std::time::{Duration, Instant};

/// What `/proc/<pid>/fd/<n>` of a perf event reads as.
#[cfg(target_os = "linux")]
pub const PERF_FD: &str = "anon_inode:[perf_event]";

/// Open file descriptors of process `pid` (`"self"` for this one), each
/// with what it points to, in fd order.
#[cfg(target_os = "linux")]
pub fn fds(pid: &str) -> Vec<(i32, String)> {
    let dir = format!("/proc/{pid}/fd");
    let mut out: Vec<(i32, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse().ok()?;
            // An fd closed between the listing and the readlink (the one
            // read_dir used, say) is left out.
            let target = std::fs::read_link(e.path()).ok()?;
            Some((n, target.to_string_lossy().into_owned()))
        })
        .collect();
    out.sort();
    out
}

/// How many of `pid`'s open file descriptors are perf events.
#[cfg(target_os = "linux")]
pub fn perf_fds(pid: &str) -> usize {
    fds(pid).iter().filter(|(_, t)| t == PERF_FD).count()
}

/// The lines of `/proc/self/maps`.
#[cfg(target_os = "linux")]
pub fn maps() -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// POSIX timers of this process (`/proc/self/timers` has one `ID:` line
/// per timer).
#[cfg(target_os = "linux")]
pub fn posix_timers() -> usize {
    std::fs::read_to_string("/proc/self/timers")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("ID:"))
        .count()
}

/// Threads of this process.
#[cfg(target_os = "linux")]
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// The disposition of `sig`: handler address (or `SIG_DFL`/`SIG_IGN`)
/// and flags.
#[cfg(unix)]
pub fn disposition(sig: i32) -> (usize, i32) {
    // SAFETY: querying a disposition into a zeroed sigaction we own.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut old), 0);
        (old.sa_sigaction, old.sa_flags)
    }
}

/// The mask of ignored signals of process `pid` (`SigIgn` in its status).
#[cfg(target_os = "linux")]
pub fn ignored_signals(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .unwrap()
        .trim();
    u64::from_str_radix(hex, 16).unwrap()
}

/// Waits for child `pid` for at most `timeout`; kills it after that.
/// Returns its wait status, or an error that says it hung.
#[cfg(unix)]
pub fn wait_for(pid: libc::pid_t, timeout: Duration) -> Result<i32, String> {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waiting on our own child with a valid out-pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(rc >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if rc == pid {
            return Ok(status);
        }
        if start.elapsed() > timeout {
            // Where it hangs, if gdb is there to tell.
            let stacks = Command::new("gdb")
                .args([
                    "-p",
                    &pid.to_string(),
                    "-batch",
                    "-ex",
                    "thread apply all bt",
                ])
                .output()
                .map(|o| text(&o))
                .unwrap_or_default();
            eprintln!("child {pid} hangs; its threads:\n{stacks}");
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("child {pid} still running after {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// "exited with N" or "killed by signal N", for messages.
#[cfg(unix)]
pub fn describe(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("wait status {status:#x}")
    }
}

/// Runs the `#[ignore = "child helper"]` test `name` of this test binary
/// in a child process with `env` set.
pub fn run_child_test(name: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        name,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// stdout and stderr of `out`, for messages.
pub fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Runs `f` with panic messages silenced (the panics are expected).
pub fn quietly<R>(f: impl FnOnce() -> R) -> R {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = f();
    std::panic::set_hook(hook);
    r
}

/// Polls `fut` on this thread until it is ready (its wakers do nothing;
/// the futures in these tests make progress on every poll).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Pending on its first poll, ready on its second.
pub struct YieldOnce(pub bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// This thread's CPU time.
#[cfg(unix)]
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Burns this thread's CPU for `ms` milliseconds of its own CPU time.
#[cfg(unix)]
pub fn spin_cpu(ms: u64) {
    let start = thread_cpu();
    let mut x = 1u64;
    while thread_cpu() - start < Duration::from_millis(ms) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// This thread's kernel id.
#[cfg(target_os = "linux")]
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}
