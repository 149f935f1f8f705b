//! Read-only mappings of a live session's files, and the guard that keeps
//! a file shrinking under the reader from killing it.
//!
//! A file is opened with `O_NOFOLLOW`, checked (a regular file of this
//! user, no access for group or others, at least as large as the reader
//! needs) and mapped `PROT_READ`, `MAP_SHARED`: the reader sees the
//! writer's stores as they happen and can write nothing back.
//!
//! The writer never shrinks its files, but anyone who can write them can
//! (the same user), and touching a mapped page past the end of the file
//! raises SIGBUS. While mappings exist, the reader's process has a SIGBUS
//! handler that, for an address inside one of them, maps a page of zeros
//! over the faulting page and returns: the read is retried and gets
//! zeros, the mapping is marked as faulted, and every later read of it is
//! an error ("changed size while being read": the patched pages read as
//! zeros from then on without faulting again). A SIGBUS at any other address
//! gets the disposition the process had before (by default, the process
//! dies as it would have).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Registered mappings: `(start, len)`, `start == 0` for a free slot.
const SLOTS: usize = 1024;
static STARTS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static LENS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
/// Per slot: whether its mapping took a fault. A page the guard patched
/// reads as zeros from then on without faulting again, so the mapping
/// must remember it: every later read of it is an error too.
static FAULTED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// The SIGBUS disposition before ours.
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();
static INSTALL: Once = Once::new();

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = addr & !4095;
    let ours = (0..SLOTS).find(|&i| {
        let start = STARTS[i].load(Ordering::SeqCst);
        start != 0 && addr >= start && addr < start + LENS[i].load(Ordering::SeqCst)
    });
    if let Some(slot) = ours {
        // SAFETY: replaces one page of our own read-only mapping with
        // zeros; mmap is a plain system call (async-signal-safe in
        // practice), and errno is saved around it.
        unsafe {
            let errno = *libc::__errno_location();
            libc::mmap(
                page as *mut libc::c_void,
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            );
            *libc::__errno_location() = errno;
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

/// A file of a live session, mapped read-only.
pub struct Mapping {
    base: *const u8,
    len: usize,
    slot: usize,
}

// SAFETY: the mapping is read-only memory owned by this value.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Opens and maps `path`: a regular file of this user, mode 0600 or
    /// stricter, of at least `min_len` bytes. The whole file is mapped.
    pub fn open(path: &Path, min_len: usize) -> Result<Mapping, String> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("{}: NUL in path", path.display()))?;
        // SAFETY: a NUL-terminated path; the fd is closed below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        };
        if fd < 0 {
            return Err(format!(
                "cannot open {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        let mapped = map_fd(fd, path, min_len);
        // SAFETY: an fd we opened; the mapping (if any) keeps the file.
        unsafe { libc::close(fd) };
        mapped
    }

    /// The mapped bytes' address.
    pub fn base(&self) -> *const u8 {
        self.base
    }

    /// The mapped length (the file's size when it was mapped).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether reading this mapping ever touched a page past the end of
    /// its file (the file shrank after it was mapped): the guard then
    /// put zeros there, and what is read from it is not the file's.
    pub fn faulted(&self) -> bool {
        FAULTED[self.slot].load(Ordering::SeqCst)
    }

    /// Whether the mapping is empty (never: files are checked).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Which pages of `[from, from + len)` (offsets into the file) hold
    /// data: one bool per page, false for pages the file system has no
    /// data for (never written, read as zeros). Reading a never-written
    /// page of a tmpfs file through a mapping would make the file system
    /// allocate it, so readers look here first. On error, every page.
    pub fn resident(&self, from: usize, len: usize) -> Vec<bool> {
        let from = from.min(self.len) & !4095;
        let len = len.min(self.len - from);
        let pages = len.div_ceil(4096);
        let mut v = vec![0u8; pages];
        // SAFETY: `[base + from, + len)` lies inside our mapping, page
        // aligned at the start; `v` has a byte per page.
        let ok = unsafe {
            libc::mincore(
                self.base.add(from) as *mut libc::c_void,
                len,
                v.as_mut_ptr(),
            )
        } == 0;
        v.into_iter().map(|b| !ok || b & 1 != 0).collect()
    }
}

fn map_fd(fd: libc::c_int, path: &Path, min_len: usize) -> Result<Mapping, String> {
    // SAFETY: zeroed buffer filled by fstat on an fd we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(format!(
            "cannot stat {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    check_owner(&st, path)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(format!("{} is not a regular file; refused", path.display()));
    }
    let len = st.st_size as usize;
    if len < min_len.max(1) {
        return Err(format!(
            "{} is {len} bytes, less than the {} it must hold: truncated",
            path.display(),
            min_len.max(1)
        ));
    }
    install();
    let slot = (0..SLOTS)
        .find(|&i| {
            STARTS[i]
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        })
        .ok_or_else(|| format!("too many files mapped at once ({SLOTS})"))?;
    LENS[slot].store(0, Ordering::SeqCst);
    FAULTED[slot].store(false, Ordering::SeqCst);
    // SAFETY: a read-only shared mapping of an fd we own, no address hint;
    // checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        STARTS[slot].store(0, Ordering::SeqCst);
        return Err(format!(
            "cannot map {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    LENS[slot].store(len, Ordering::SeqCst);
    STARTS[slot].store(p as usize, Ordering::SeqCst);
    Ok(Mapping {
        base: p as *const u8,
        len,
        slot,
    })
}

pub use perflens_sys::live_dir::check_owner;

impl Drop for Mapping {
    fn drop(&mut self) {
        // Unregister first, so that the handler never patches a range
        // that may be reused by another mapping.
        LENS[self.slot].store(0, Ordering::SeqCst);
        STARTS[self.slot].store(1, Ordering::SeqCst);
        // SAFETY: our own mapping, no references into it outlive `self`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        STARTS[self.slot].store(0, Ordering::SeqCst);
    }
}
