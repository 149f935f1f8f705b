//! The handler reads only a thread's known stacks: its own stack (found
//! whatever stack its first sample landed on) and the alternate signal
//! stack it is on now. Samples on an altstack are unwound and attributed,
//! an altstack that is later shrunk is never read past its end, and a
//! sample on any other stack (a coroutine's) keeps its leaf and is
//! counted, without reading that stack.
// Not in the portable or the POSIX build: sampling is its subject, and
// those builds have no source (`SamplerError::Unsupported`, asserted by
// the unit tests).
#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64"),
    not(perflens_portable),
    not(perflens_posix)
))]
mod common;
use common::*;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const ALT: usize = 256 * 1024;

/// What the SIGUSR1 handler does: 1 burns CPU in `altstack_burn`, 2 spins
/// in `perflens_test_spin_fp` with its frame pointer in `FAKE_FP`.
static MODE: AtomicU64 = AtomicU64::new(0);
static FAKE_FP: AtomicU64 = AtomicU64::new(0);

// A leaf whose unwind info says "the caller's frame is at rbp", spinning
// with rbp set to its first argument: an unwinder following it reads
// [rbp] and [rbp + 8]. Only a handler that bounds its reads by a stack
// known to be mapped survives an rbp that points at unmapped memory.
// (On aarch64 the same with x29, the frame pointer.)
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".globl perflens_test_spin_fp",
    ".type perflens_test_spin_fp,@function",
    "perflens_test_spin_fp:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rdi",
    ".cfi_def_cfa rbp, 16",
    "2:",
    "dec rsi",
    "jnz 2b",
    ".cfi_def_cfa rsp, 16",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size perflens_test_spin_fp, .-perflens_test_spin_fp",
);

#[cfg(target_arch = "aarch64")]
std::arch::global_asm!(
    ".globl perflens_test_spin_fp",
    ".type perflens_test_spin_fp,%function",
    "perflens_test_spin_fp:",
    ".cfi_startproc",
    "stp x29, x30, [sp, #-16]!",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset x29, -16",
    ".cfi_offset x30, -8",
    "mov x29, x0",
    ".cfi_def_cfa x29, 16",
    "2:",
    "subs x1, x1, #1",
    "b.ne 2b",
    ".cfi_def_cfa sp, 16",
    "ldp x29, x30, [sp], #16",
    ".cfi_def_cfa_offset 0",
    "ret",
    ".cfi_endproc",
    ".size perflens_test_spin_fp, .-perflens_test_spin_fp",
);

// Calls `f(arg)` with the stack pointer at `top` (a stack of our own, as
// a coroutine library would), then switches back.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".globl perflens_test_on_stack",
    ".type perflens_test_on_stack,@function",
    "perflens_test_on_stack:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbp, -16",
    "mov rbp, rsp",
    ".cfi_def_cfa_register rbp",
    "mov rsp, rdi",
    "and rsp, -16",
    "mov rdi, rdx",
    "call rsi",
    "mov rsp, rbp",
    "pop rbp",
    ".cfi_def_cfa rsp, 8",
    "ret",
    ".cfi_endproc",
    ".size perflens_test_on_stack, .-perflens_test_on_stack",
);

#[cfg(target_arch = "aarch64")]
std::arch::global_asm!(
    ".globl perflens_test_on_stack",
    ".type perflens_test_on_stack,%function",
    "perflens_test_on_stack:",
    ".cfi_startproc",
    "stp x29, x30, [sp, #-16]!",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset x29, -16",
    ".cfi_offset x30, -8",
    "mov x29, sp",
    ".cfi_def_cfa_register x29",
    "and x0, x0, #-16",
    "mov sp, x0",
    "mov x0, x2",
    "blr x1",
    "mov sp, x29",
    ".cfi_def_cfa sp, 16",
    "ldp x29, x30, [sp], #16",
    ".cfi_def_cfa_offset 0",
    "ret",
    ".cfi_endproc",
    ".size perflens_test_on_stack, .-perflens_test_on_stack",
);

unsafe extern "C" {
    fn perflens_test_spin_fp(fake_fp: u64, iters: u64);
    fn perflens_test_on_stack(top: u64, f: extern "C" fn(u64), arg: u64);
}

/// Runs on the coroutine stack: burns `ms` of CPU in `leaf_spin`.
extern "C" fn coroutine_body(ms: u64) {
    let end = thread_cpu() + Duration::from_millis(ms);
    while thread_cpu() < end {
        std::hint::black_box(leaf_spin(200_000));
    }
}

#[inline(never)]
fn altstack_burn(cpu: Duration) -> u64 {
    busy_for(cpu)
}

#[inline(never)]
fn main_stack_burn(cpu: Duration) -> u64 {
    busy_for(cpu)
}

extern "C" fn on_usr1(_: libc::c_int) {
    match MODE.load(Ordering::Relaxed) {
        1 => {
            std::hint::black_box(altstack_burn(Duration::from_millis(200)));
        }
        2 => {
            let end = thread_cpu() + Duration::from_millis(200);
            while thread_cpu() < end {
                // SAFETY: the function only spins and restores rbp.
                unsafe { perflens_test_spin_fp(FAKE_FP.load(Ordering::Relaxed), 2_000_000) };
            }
        }
        _ => {}
    }
}

/// Installs `on_usr1` to run on the alternate signal stack.
fn install_usr1() {
    install_on_altstack(libc::SIGUSR1, on_usr1);
}

/// Maps `len` bytes of anonymous memory.
fn map(len: usize) -> *mut u8 {
    // SAFETY: a fresh private anonymous mapping.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p.cast()
}

fn set_altstack(sp: *mut u8, size: usize) {
    let ss = libc::stack_t {
        ss_sp: sp.cast(),
        ss_flags: 0,
        ss_size: size,
    };
    // SAFETY: `sp..sp + size` is mapped and not in use.
    assert_eq!(unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) }, 0);
}

/// Runs the SIGUSR1 handler (on the altstack) in `mode`.
fn raise_usr1(mode: u64) {
    MODE.store(mode, Ordering::Relaxed);
    // SAFETY: raising a handled signal at this thread.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
}

/// A thread the watcher arms (so its stack bounds are not known at arm
/// time) takes its first samples on a sigaltstack, then burns CPU on its
/// own stack: both kinds of samples are unwound and attributed.
#[test]
fn a_thread_first_sampled_on_its_altstack_is_unwound_on_both_stacks() {
    let _s = serial();
    install_usr1();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    let t = std::thread::Builder::new()
        .name("altstack".into())
        .spawn(|| {
            set_altstack(map(ALT), ALT);
            // No CPU until the watcher (10 ms rescans) has armed us.
            std::thread::sleep(Duration::from_millis(60));
            raise_usr1(1);
            main_stack_burn(Duration::from_millis(200));
            tid()
        })
        .unwrap();
    let tid = t.join().unwrap();
    let report = guard.stop().build().expect("report");
    let th = thread(&report, tid);
    let on_alt = samples_through(&report, tid, "altstack_burn", |n| n.ends_with("on_usr1"));
    let on_own = samples_through(&report, tid, "main_stack_burn", |n| {
        n.contains("thread_start")
    });
    eprintln!("{th:?}: {on_alt} samples unwound on the altstack, {on_own} on the thread's stack");
    // Exited before the final report, yet named.
    assert_eq!(th.name, "altstack");
    // The samples' weights cover the thread's CPU time (under a loaded
    // machine, or AddressSanitizer's slower handler, the kernel merges
    // some overflows into one weightier sample, so counts fall short).
    assert!(
        th.sampled_cpu_ns as f64 >= 0.95 * th.cpu_ns as f64,
        "{th:?}"
    );
    // About half the CPU time each; nearly every sample fully unwound.
    assert!(on_alt as f64 >= 0.8 * 200.0, "altstack samples: {on_alt}");
    assert!(on_own as f64 >= 0.8 * 200.0, "own-stack samples: {on_own}");
    assert!(th.truncated <= th.samples / 50, "{th:?}");
}

/// Child half of `a_shrunk_altstack_is_never_read_past_its_end`.
#[test]
#[ignore = "child helper"]
fn child_shrunk_altstack() {
    if std::env::var_os("PERFLENS_SAMPLER_CHILD").is_none() {
        return;
    }
    install_usr1();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    let t = std::thread::spawn(|| {
        let alt = map(ALT);
        set_altstack(alt, ALT);
        std::thread::sleep(Duration::from_millis(60));
        // First samples on the whole altstack.
        raise_usr1(1);
        // Shrink it: unmap its upper half, keep the lower half as the
        // altstack. Then spin on it with a frame pointer into the hole.
        let half = ALT / 2;
        // SAFETY: the upper half is ours and no longer in use.
        assert_eq!(unsafe { libc::munmap(alt.add(half).cast(), half) }, 0);
        set_altstack(alt, half);
        FAKE_FP.store(alt as u64 + half as u64 + 4096, Ordering::Relaxed);
        raise_usr1(2);
        tid()
    });
    let tid = t.join().unwrap();
    let report = guard.stop().build().expect("report");
    let th = thread(&report, tid);
    println!(
        "survived: {} samples, {} truncated",
        th.samples, th.truncated
    );
}

/// An altstack that shrinks after the thread's first samples were taken
/// on it: the handler must not read the unmapped half (a SIGSEGV in the
/// handler when it kept the first sample's mapping as the thread's stack).
#[test]
fn a_shrunk_altstack_is_never_read_past_its_end() {
    let _s = serial();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_shrunk_altstack",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PERFLENS_SAMPLER_CHILD", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(out.status.success(), "child: {:?}\n{text}", out.status);
    assert!(text.contains("survived: "), "{text}");
}

/// A thread armed on itself (exact bounds) that burns CPU on a stack of
/// its own making: those samples keep their leaf, are counted as off the
/// known stacks, and read nothing of that stack.
#[test]
fn samples_on_an_unknown_stack_keep_their_leaf_and_are_counted() {
    let _s = serial();
    let guard = perflens_sampler::ProfilerGuardBuilder::default()
        .frequency(1000)
        .build()
        .expect("start");
    let t = std::thread::spawn(|| {
        assert!(perflens_sampler::arm_current_thread().unwrap());
        let stack = map(ALT);
        // SAFETY: `stack..stack + ALT` is mapped and unused; the body
        // returns normally.
        unsafe { perflens_test_on_stack(stack as u64 + ALT as u64, coroutine_body, 200) };
        main_stack_burn(Duration::from_millis(100));
        tid()
    });
    let tid = t.join().unwrap();
    let report = guard.stop().build().expect("report");
    let th = thread(&report, tid);
    let leaf_only: u64 = report
        .data
        .iter()
        .filter(|(f, _)| {
            f.thread_id == tid
                && f.frames.len() == 1
                && f.frames[0].iter().any(|s| s.name.ends_with("leaf_spin"))
        })
        .map(|(_, v)| v.samples)
        .sum();
    let on_own = samples_through(&report, tid, "main_stack_burn", |n| {
        n.contains("thread_start")
    });
    eprintln!(
        "{th:?}: {leaf_only} leaf-only samples in leaf_spin, {on_own} unwound on the own stack"
    );
    assert!(th.off_stack as f64 >= 0.8 * 200.0, "{th:?}");
    assert_eq!(th.truncated, th.off_stack, "{th:?}");
    assert!(
        leaf_only as f64 >= 0.9 * th.off_stack as f64,
        "{th:?}: {leaf_only}"
    );
    assert!(on_own as f64 >= 0.8 * 100.0, "own-stack samples: {on_own}");
    // The samples' weights cover the thread's CPU time (under a loaded
    // machine, or AddressSanitizer's slower handler, the kernel merges
    // some overflows into one weightier sample, so counts fall short).
    assert!(
        th.sampled_cpu_ns as f64 >= 0.95 * th.cpu_ns as f64,
        "{th:?}"
    );
}
