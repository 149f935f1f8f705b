//! A measured function blocked in `read` on a pipe, under CPU sampling
//! with the timer source and allocation counting on: the sampler's signal
//! arriving during the read does not make it fail with EINTR, because
//! the sampler's handler is installed with SA_RESTART.
//!
//! A thread CPU-time timer does not advance while its thread sleeps, so
//! a real sample lands inside a blocking call only when the expiry is
//! noticed as the thread enters it. To make that certain, the writer
//! thread sends the sampler's own signal to the blocked reader, as the
//! kernel does on such an expiry, before it writes. A control run with a
//! handler installed without SA_RESTART shows that the test sees EINTR
//! when there is one.
// the sampler's real-time signal (SIGRTMIN, tgkill): Linux only.
#![cfg(target_os = "linux")]
#![cfg(all(feature = "alloc", feature = "cpu"))]

mod common;
use common::stress::*;
use perflens::Session;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

#[global_allocator]
static ALLOC: perflens::CountingAlloc = perflens::CountingAlloc::new(std::alloc::System);

fn name(f: &str) -> String {
    format!("{}::{f}", module_path!())
}

const SIGNALS: u64 = 20;

/// The timer source's signal (`ProfilerGuardBuilder::signal` documents
/// `SIGRTMIN + 4` as the timer fallback's default).
fn sampler_signal() -> i32 {
    libc::SIGRTMIN() + 4
}

/// Reads 8 bytes from `fd` with one raw `read` (std's `read` retries on
/// EINTR by itself). Returns its result and errno.
#[perflens::measure]
fn blocking_read(fd: i32) -> (isize, i32) {
    spin_cpu(20);
    let mut buf = [0u8; 8];
    // SAFETY: reading at most 8 bytes into an 8-byte buffer.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 8) };
    // errno means something only when the read failed: a successful read
    // leaves whatever an earlier call set (arming the thread's sampler on
    // its first measured call tries calls that may fail).
    let errno = match n {
        ..0 => std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        _ => 0,
    };
    (n, errno)
}

/// Blocks the calling thread in `blocking_read` on a new pipe while
/// another thread sends it `sig` `SIGNALS` times over ~200 ms, then
/// writes. Returns what the read returned.
fn read_while_signalled(sig: i32) -> (isize, i32) {
    let mut p = [0; 2];
    // SAFETY: valid out-array for two fds.
    assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
    let reader = AtomicI32::new(0);
    let got = std::thread::scope(|s| {
        s.spawn(|| {
            while reader.load(Ordering::Acquire) == 0 {
                std::thread::yield_now();
            }
            // Let the reader get into its read.
            std::thread::sleep(Duration::from_millis(40));
            for _ in 0..SIGNALS {
                // SAFETY: signalling a thread of this process that is
                // alive until the write below unblocks it.
                unsafe {
                    libc::syscall(
                        libc::SYS_tgkill,
                        libc::getpid(),
                        reader.load(Ordering::Acquire),
                        sig,
                    )
                };
                std::thread::sleep(Duration::from_millis(8));
            }
            // SAFETY: writing 8 bytes from a valid buffer to our pipe.
            assert_eq!(unsafe { libc::write(p[1], [7u8; 8].as_ptr().cast(), 8) }, 8);
        });
        reader.store(gettid(), Ordering::Release);
        blocking_read(p[0])
    });
    // SAFETY: closing our own pipe.
    unsafe {
        libc::close(p[0]);
        libc::close(p[1]);
    }
    got
}

static CONTROL: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_control(_: libc::c_int) {
    CONTROL.fetch_add(1, Ordering::Relaxed);
}

#[test]
#[ignore = "child helper"]
fn child_reads_under_the_timer_source() {
    // Control: a handler without SA_RESTART makes the read fail.
    // SAFETY: installing a handler that only bumps an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_control as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    assert_eq!(read_while_signalled(libc::SIGUSR1), (-1, libc::EINTR));
    assert!(CONTROL.load(Ordering::Relaxed) >= 1);

    let session = Session::builder().cpu_sampling(true).start().unwrap();
    if !perflens_sys::CAPABILITIES.cpu_sampling {
        // The portable build: no sampler, so no handler on its signal,
        // and the report says why.
        assert_eq!(disposition(sampler_signal()).0, libc::SIG_DFL);
        assert!(!common::capabilities::cpu_sampled(&session.finish()));
        println!("child: ok");
        return;
    }
    let (handler, flags) = disposition(sampler_signal());
    assert!(handler != libc::SIG_DFL && handler != libc::SIG_IGN);
    assert!(flags & libc::SA_RESTART != 0, "flags {flags:#x}");
    let got = read_while_signalled(sampler_signal());
    let report = session.finish();
    assert_eq!(got, (8, 0), "read interrupted");
    let cpu = report.cpu.as_ref().unwrap();
    assert_eq!(cpu.source, "timer");
    // Every signal was handled as a sample inside the read.
    let row = report.function(&name("blocking_read")).unwrap();
    assert_eq!(row.calls, 1);
    assert!(
        row.cpu.unwrap().samples >= SIGNALS,
        "{:?} samples",
        row.cpu.map(|c| c.samples)
    );
    println!("child: ok");
}

#[test]
fn blocking_reads_are_not_interrupted_by_samples() {
    let out = run_child_test(
        "child_reads_under_the_timer_source",
        &[("PERFLENS_CPU_SOURCE", "timer")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("child: ok"), "{}", text(&out));
}
