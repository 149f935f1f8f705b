//! The SIGBUS guard of read-only views of the live session's files
//! ([`crate::shm::ReadView`]): while views exist, the process has a
//! SIGBUS handler that, for an address inside one of them, maps a page of
//! zeros over the faulting page and returns, so the read is retried and
//! gets zeros; the view is marked as faulted. A SIGBUS at any other
//! address gets the disposition the process had before (by default, the
//! process dies as it would have). Plain POSIX (`sigaction`, `mmap`):
//! the Linux and the POSIX implementations share this file. The page
//! patched is the system's page (16 KiB on Apple silicon), not
//! [`crate::mem::PAGE`], since `MAP_FIXED` takes only whole ones.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Watched ranges: `(start, len)`; `start == 0` for a free slot, 1 for a
/// claimed one not (or no longer) watched.
const SLOTS: usize = 1024;
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Per slot: whether its range took a fault.
static FAULTED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// The system's page size, read before the handler is installed
/// (`sysconf` is not async-signal-safe).
static OS_PAGE: AtomicUsize = AtomicUsize::new(crate::mem::PAGE);
/// The SIGBUS disposition before ours.
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();
static INSTALL: Once = Once::new();

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let os_page = OS_PAGE.load(Ordering::Relaxed);
    let page = addr & !(os_page - 1);
    let ours = (0..SLOTS).find(|&i| {
        let start = STARTS[i].load(Ordering::SeqCst);
        start > 1 && addr >= start && addr < start + LENS[i].load(Ordering::SeqCst)
    });
    if let Some(slot) = ours {
        let _errno = super::signal::SavedErrno::save();
        // SAFETY: replaces one page of our own read-only mapping with
        // zeros; mmap is a plain system call (async-signal-safe in
        // practice), and errno is saved around it.
        unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                os_page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
        }
        FAULTED[slot].store(true, Ordering::SeqCst);
        return;
    }
    // Not ours: what the process would have done without us.
    // SAFETY: PREVIOUS was written before this handler was installed.
    let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS)).assume_init_ref() };
    if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
        // SAFETY: restores the old disposition; returning re-executes the
        // faulting access, which then takes it.
        unsafe { libc::sigaction(libc::SIGBUS, prev, std::ptr::null_mut()) };
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the program's own handler, called as the kernel would.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(prev.sa_sigaction) };
        f(sig, info, ctx);
    } else {
        // SAFETY: as above, for a one-argument handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(prev.sa_sigaction) };
        f(sig);
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sysconf has no memory preconditions.
        let os_page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if os_page > 0 && (os_page as usize).is_power_of_two() {
            OS_PAGE.store(os_page as usize, Ordering::Relaxed);
        }
        // SAFETY: reads the current disposition into PREVIOUS before our
        // handler (which reads it) is installed; the sigaction structs
        // are fully initialised.
        unsafe {
            let mut prev: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut prev);
            (*std::ptr::addr_of_mut!(PREVIOUS)).write(prev);
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
        }
    });
}

/// Installs the guard (once) and claims a free slot for a range about to
/// be mapped.
pub(crate) fn claim() -> std::io::Result<usize> {
    install();
    let slot = (0..SLOTS)
        .find(|&i| {
            STARTS[i]
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        })
        .ok_or_else(|| std::io::Error::other(format!("too many files mapped at once ({SLOTS})")))?;
    LENS[slot].store(0, Ordering::SeqCst);
    FAULTED[slot].store(false, Ordering::SeqCst);
    Ok(slot)
}

/// Watches `len` bytes at `start` (a mapping) in `slot`.
pub(crate) fn watch(slot: usize, start: usize, len: usize) {
    LENS[slot].store(len, Ordering::SeqCst);
    STARTS[slot].store(start, Ordering::SeqCst);
}

/// Stops watching `slot` (before its mapping goes).
pub(crate) fn unwatch(slot: usize) {
    LENS[slot].store(0, Ordering::SeqCst);
    STARTS[slot].store(1, Ordering::SeqCst);
}

/// Frees `slot` for another range (after its mapping is gone).
pub(crate) fn free(slot: usize) {
    STARTS[slot].store(0, Ordering::SeqCst);
}

/// Whether `slot`'s range took a fault.
pub(crate) fn faulted(slot: usize) -> bool {
    FAULTED[slot].load(Ordering::SeqCst)
}
