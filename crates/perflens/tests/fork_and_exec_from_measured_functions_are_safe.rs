//! `fork` and `exec` from measured functions while CPU sampling and
//! allocation counting run: a forked child runs measured code and exits
//! by itself with the status it means, while other parent threads take
//! the runtime's locks (a child's new thread is checked apart, in
//! `a_forked_childs_new_thread_is_never_armed_for_sampling.rs`);
//! the parent's report holds exactly the parent's calls; programs the
//! process executes (through `Command`, and through `execv` in a forked
//! child) inherit no perf event file descriptor.
// fork, execv and the perf event fds in /proc: Linux only. Not in the
// portable build, which has no fork handlers (see
// a_forked_childs_new_thread_is_never_armed_for_sampling.rs).
#![cfg(target_os = "linux")]
#![cfg(not(perflens_portable))]
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::ffi::CString;
use std::hint::black_box;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

static ONE_SESSION: Mutex<()> = Mutex::new(());

fn one_session() -> MutexGuard<'static, ()> {
    ONE_SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

const FORKS: u64 = 50;
const CHILD_CALLS: u64 = 100;
/// What a child exits with when everything it checked held.
const CHILD_OK: i32 = 42;

/// Forks; the child runs measured code and exits by itself. Returns the
/// child's pid (in the parent).
#[perflens::measure]
fn forks() -> libc::pid_t {
    // SAFETY: fork has no preconditions; the child below only runs code
    // that does not depend on other threads of the parent, then exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // Only this thread: a forked child of a multi-threaded parent may
        // start no thread of its own while another parent thread may be
        // inside `thread::spawn` (std's locks; the churn thread below
        // spawns all the time), so the child's own threads are checked
        // where no other thread starts one.
        let sum: u64 = (0..CHILD_CALLS).map(in_child).sum();
        let code = if sum == CHILD_CALLS * (CHILD_CALLS - 1) {
            CHILD_OK
        } else {
            1
        };
        // Exits through libc's `exit` (atexit handlers, stdio, thread-local
        // destructors of this thread: perflens's own among them), as a
        // C program would. Not `std::process::exit`: its runtime cleanup
        // takes a lock of std's stack-overflow handler that another
        // parent thread may have held at the fork (the churn thread
        // spawns threads all the time, and each spawn takes it), and
        // nobody releases it in the child. A child hung there in 1 loop
        // run of 20 (gdb: `thread_info::delete_current_info` from
        // `rt::cleanup`), a hang of std's, not of perflens.
        // SAFETY: ends the process; nothing runs after it.
        unsafe { libc::exit(code) };
    }
    pid
}

#[perflens::measure]
fn in_child(i: u64) -> u64 {
    black_box(vec![i; 16]).iter().take(2).sum()
}

/// Burns CPU in a measured function until `stop`, so that the sampler
/// keeps signalling this thread while the other one forks.
#[perflens::measure]
fn background(stop: &AtomicBool) -> u64 {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        spin_cpu(1);
        n += 1;
    }
    n
}

/// A short-lived thread's one measured call: each takes the runtime's
/// locks (a new thread's block, and its first path), so that some parent
/// thread holds them when the other one forks.
#[perflens::measure]
fn churn_call(i: u64) -> u64 {
    black_box(vec![i; 4]).iter().sum()
}

#[test]
fn a_forked_child_runs_measured_code_and_exits_by_itself() {
    let _one = one_session();
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    let stop = AtomicBool::new(false);
    let statuses = std::thread::scope(|s| {
        let bg = s.spawn(|| background(&stop));
        let churn = s.spawn(|| {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                std::thread::spawn(move || churn_call(n)).join().unwrap();
                n += 1;
            }
            n
        });
        let statuses: Vec<Result<i32, String>> = (0..FORKS)
            .map(|_| wait_for(forks(), Duration::from_secs(10)))
            .collect();
        stop.store(true, Ordering::Relaxed);
        assert!(bg.join().unwrap() > 0);
        assert!(churn.join().unwrap() > 0);
        statuses
    });
    let report = session.finish();
    for (i, st) in statuses.iter().enumerate() {
        match st {
            Ok(st) => assert!(
                libc::WIFEXITED(*st) && libc::WEXITSTATUS(*st) == CHILD_OK,
                "child {i}: {}",
                describe(*st)
            ),
            Err(e) => panic!("child {i}: {e}"),
        }
    }
    // The parent's report: its own calls, exactly, and none of the
    // children's.
    let calls = |f: &str| report.function(&name(f)).map(|r| r.calls);
    assert_eq!(calls("forks"), Some(FORKS));
    assert_eq!(calls("in_child"), None);
    assert_eq!(calls("background"), Some(1));
    assert_eq!(report.dropped.dropped_frames, 0);
    // The parent went on being sampled (the portable build samples
    // nothing, and its report says why).
    if !common::capabilities::cpu_sampled(&report) {
        return;
    }
    let cpu = report.cpu.as_ref().unwrap();
    assert!(cpu.is_available(), "{}", cpu.source);
    let bg = report.function(&name("background")).unwrap();
    assert!(
        bg.cpu.unwrap().samples > 10,
        "{:?}",
        bg.cpu.map(|c| c.samples)
    );
}

/// Whether `fds` (a listing of `/proc/<pid>/fd` of an exec'd program, as
/// `ls -l` prints it or as [`fds`] returns it) holds a perf event.
fn has_perf_fd(listing: &str) -> bool {
    listing.contains(PERF_FD)
}

/// Spawns `ls -l /proc/self/fd` through `Command` (fork and exec) and
/// returns what it printed.
#[perflens::measure]
fn command_lists_its_fds() -> String {
    let out = Command::new("/bin/ls")
        .args(["-l", "/proc/self/fd/"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Spawns `sleep` through `Command` and returns its open file
/// descriptors once it runs `sleep`, and its ignored signals.
#[perflens::measure]
fn command_sleep_fds() -> (Vec<(i32, String)>, u64) {
    let mut child = Command::new("/bin/sleep")
        .arg("10")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    // Wait until the child runs `sleep` (its comm changes at the exec).
    let start = std::time::Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap()
        .trim()
        != "sleep"
    {
        assert!(start.elapsed() < Duration::from_secs(10), "no exec");
        std::thread::sleep(Duration::from_millis(1));
    }
    // ...and until it sleeps: right after the exec it opens locale files
    // of its own (fd 3 -> /usr/lib/locale/C.utf8/LC_PAPER was caught
    // once), which are not inherited. `/proc/PID/syscall` starts with the
    // number of the system call it is blocked in: clock_nanosleep (230)
    // or nanosleep (35) on x86_64.
    while !std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|s| matches!(s.split_whitespace().next(), Some("230" | "35")))
    {
        assert!(start.elapsed() < Duration::from_secs(10), "never slept");
        std::thread::sleep(Duration::from_millis(1));
    }
    let got = (fds(&pid), ignored_signals(&pid));
    child.kill().unwrap();
    child.wait().unwrap();
    got
}

/// Forks; the child points stdout at a pipe and `execv`s `ls -l
/// /proc/self/fd`. Returns the listing and the child's wait status.
#[perflens::measure]
fn execv_lists_its_fds() -> (String, i32) {
    let mut pipe = [0; 2];
    // SAFETY: valid out-array of two fds.
    assert_eq!(
        unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    let path = CString::new("/bin/ls").unwrap();
    let args = [c"ls", c"-l", c"/proc/self/fd/"];
    let argv: Vec<*const libc::c_char> = args
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    // SAFETY: fork has no preconditions; the child calls only
    // async-signal-safe functions (dup2, execv, _exit) on memory prepared
    // before the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: see above; `argv` is null-terminated and its strings
        // live until exec.
        unsafe {
            libc::dup2(pipe[1], 1);
            libc::execv(path.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copy of the write end; the read end is ours to
    // own from here.
    let mut reader = unsafe {
        libc::close(pipe[1]);
        std::fs::File::from_raw_fd(pipe[0])
    };
    let mut listing = String::new();
    reader.read_to_string(&mut listing).unwrap();
    let status = wait_for(pid, Duration::from_secs(10)).unwrap();
    (listing, status)
}

#[test]
fn exec_from_measured_functions_leaks_no_perf_fd() {
    let _one = one_session();
    // Before any session: what a spawned program inherits by itself.
    let (before, ignored_before) = command_sleep_fds();
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    // A thread burning CPU, so that its samples arrive around the execs.
    let stop = AtomicBool::new(false);
    let (held, listing, (sleep_fds, ignored), (execv_listing, status)) = std::thread::scope(|s| {
        let bg = s.spawn(|| background(&stop));
        let held = perf_fds("self");
        let listing = command_lists_its_fds();
        let sleep = command_sleep_fds();
        let execv = execv_lists_its_fds();
        stop.store(true, Ordering::Relaxed);
        bg.join().unwrap();
        (held, listing, sleep, execv)
    });
    let report = session.finish();

    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "execv'd ls: {}",
        describe(status)
    );
    assert!(
        !has_perf_fd(&listing),
        "Command'd ls inherited a perf fd:\n{listing}"
    );
    assert!(
        !has_perf_fd(&execv_listing),
        "execv'd ls inherited a perf fd:\n{execv_listing}"
    );
    assert!(
        execv_listing.contains(" 0 -> ") && execv_listing.contains(" 1 -> pipe:"),
        "{execv_listing}"
    );
    // `sleep` holds exactly what it held when no session ran.
    assert_eq!(sleep_fds, before);
    // ...and ignores exactly the signals it ignored then: the sampler
    // leaves no disposition that survives `exec` (it catches SIGIO with
    // a handler, which `exec` resets, rather than ignoring it).
    // (An earlier session in this process would have left its mark
    // before this one started too, so check SIGIO itself as well.)
    assert_eq!(
        ignored, ignored_before,
        "signals ignored by an exec'd program: {ignored:#x}, before the session {ignored_before:#x}"
    );
    assert_eq!(
        ignored & (1 << (libc::SIGIO - 1)),
        0,
        "SIGIO ignored: {ignored:#x}"
    );
    if perflens_sys::CAPABILITIES.cpu_sampling {
        assert!(held > 0, "the session held no perf fd to leak");
    } else {
        // The portable build opens no perf event: nothing to leak.
        assert_eq!(held, 0);
        assert!(!common::capabilities::cpu_sampled(&report));
    }

    let calls = |f: &str| report.function(&name(f)).map(|r| r.calls);
    assert_eq!(calls("command_lists_its_fds"), Some(1));
    assert_eq!(calls("command_sleep_fds"), Some(1));
    assert_eq!(calls("execv_lists_its_fds"), Some(1));
    assert_eq!(calls("background"), Some(1));
}

/// A daemon-style child ends the session it inherited: it must not wait
/// for the parent's sampler (its watcher thread does not exist in the
/// child), and its report says it was not sampled. The parent's session
/// goes on as if nothing happened.
#[test]
fn a_forked_child_can_end_the_session_it_inherited() {
    let _one = one_session();
    let session = Session::builder()
        .ignore_env()
        .cpu_sampling(true)
        .start()
        .unwrap();
    in_child(1);
    // SAFETY: fork has no preconditions; the child only finishes the
    // session (the profiler's own code) and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let report = session.finish();
        let cpu = report.cpu.as_ref().unwrap();
        // (The portable build sampled no process: its reason says so.)
        let why = if perflens_sys::CAPABILITIES.cpu_sampling {
            "forked"
        } else {
            "not supported here"
        };
        let ok = cpu.unavailable_reason().is_some_and(|r| r.contains(why))
            && report.function(&name("in_child")).map(|r| r.calls) == Some(1);
        // libc's `exit`, not std's: see `forks`.
        // SAFETY: ends the process; nothing runs after it.
        unsafe { libc::exit(if ok { CHILD_OK } else { 1 }) };
    }
    let status = wait_for(pid, Duration::from_secs(10));
    let bg = background_for(Duration::from_millis(30));
    let report = session.finish();
    match status {
        Ok(st) => assert!(
            libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == CHILD_OK,
            "child: {}",
            describe(st)
        ),
        Err(e) => panic!("child: {e}"),
    }
    assert!(bg > 0);
    if !common::capabilities::cpu_sampled(&report) {
        return;
    }
    assert!(report.cpu.as_ref().unwrap().is_available());
    let spun = report.function(&name("background")).unwrap();
    assert!(
        spun.cpu.unwrap().samples > 5,
        "{:?}",
        spun.cpu.map(|c| c.samples)
    );
}

/// [`background`] for about `d`.
/// Runs [`background`] on a thread of its own for at least `d` of that
/// thread's CPU time (not wall time: on a loaded machine 30 ms of wall
/// time gave it 5 ms of CPU, and the test's sample count fell short).
fn background_for(d: Duration) -> u64 {
    let stop = AtomicBool::new(false);
    let me = AtomicU64::new(0);
    let spun = AtomicU64::new(0);
    std::thread::scope(|s| {
        let bg = s.spawn(|| {
            // SAFETY: pthread_self has no preconditions.
            me.store(unsafe { libc::pthread_self() } as u64, Ordering::Release);
            let start = thread_cpu();
            let n = background(&stop);
            spun.store((thread_cpu() - start).as_nanos() as u64, Ordering::Relaxed);
            n
        });
        // The flag waits until the thread's CPU reaches `d` (looked at
        // every millisecond of wall time, for 10 s at most).
        std::thread::sleep(d);
        let target = d.as_nanos() as u64;
        let waited = std::time::Instant::now();
        while thread_cpu_of(me.load(Ordering::Acquire)) < target
            && waited.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        let n = bg.join().unwrap();
        assert!(
            spun.load(Ordering::Relaxed) >= target / 2,
            "the thread ran too little"
        );
        n
    })
}

/// The CPU time so far of the running thread `pthread` (0: not started
/// yet or unreadable).
fn thread_cpu_of(pthread: u64) -> u64 {
    if pthread == 0 {
        return 0;
    }
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the thread is alive until it is joined, after this; valid
    // out-pointers.
    unsafe {
        if libc::pthread_getcpuclockid(pthread as libc::pthread_t, &mut clock) != 0
            || libc::clock_gettime(clock, &mut ts) != 0
        {
            return 0;
        }
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
