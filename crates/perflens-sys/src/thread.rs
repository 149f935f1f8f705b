//! The calling thread's operating-system identity, without
//! `std::thread::current()` (which may panic while thread-locals are
//! being destroyed: the runtime calls these from inside the allocator
//! then).

/// The thread's name: on Linux its OS-level name (Rust names spawned
/// threads there too, cut to 15 bytes), with the main thread called
/// `main` as in `std`; `None` where unknown.
#[cfg(target_os = "linux")]
pub fn name() -> Option<String> {
    // SAFETY: getpid and gettid have no preconditions.
    if unsafe { libc::getpid() } == unsafe { libc::gettid() } {
        return Some("main".to_string());
    }
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL-terminated, into
    // the buffer we pass.
    if unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr()) } != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..len]).into_owned()).filter(|n| !n.is_empty())
}

/// The thread's name: unknown on this platform.
#[cfg(not(target_os = "linux"))]
pub fn name() -> Option<String> {
    None
}

/// The thread's id as the OS shows it (`gettid` on Linux); 0 where
/// unknown.
#[cfg(target_os = "linux")]
pub fn tid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// The thread's id: unknown on this platform.
#[cfg(not(target_os = "linux"))]
pub fn tid() -> u64 {
    0
}

/// The size of the current thread's stack, if the system tells.
#[cfg(target_os = "linux")]
pub fn stack_size() -> Option<usize> {
    // SAFETY: `attr` is initialised by pthread_getattr_np before use and
    // destroyed after; the out-pointers point to locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr = std::ptr::null_mut();
        let mut size = 0usize;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (ok && size > 0).then_some(size)
    }
}

/// The size of the current thread's stack: unknown on this platform.
#[cfg(not(target_os = "linux"))]
pub fn stack_size() -> Option<usize> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn a_named_thread_knows_its_name_and_id() {
        let (name, tid) = std::thread::Builder::new()
            .name("sys-name-test".into())
            .spawn(|| (super::name(), super::tid()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(name.as_deref(), Some("sys-name-test"));
        assert!(tid > 0 && tid != super::tid());
    }

    #[test]
    fn a_thread_knows_its_stack_size() {
        for asked in [1usize << 20, 3 << 20, 8 << 20, 16 << 20] {
            let size = std::thread::Builder::new()
                .stack_size(asked)
                .spawn(super::stack_size)
                .unwrap()
                .join()
                .unwrap()
                .unwrap();
            // At least what was asked (glibc may hand a thread a larger
            // cached stack of an exited one), in whole pages.
            assert!(size >= asked && size % 4096 == 0, "{asked}: {size}");
        }
    }
}
