//! The thread facts, on the build's implementation: Linux's are checked
//! against what the kernel and `std` say; the POSIX one knows the OS's
//! names and ids only; the portable one knows what `std` gives and says
//! so.

use super::*;

#[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
mod linux {
    use super::*;

    #[test]
    fn a_named_thread_knows_its_name_and_id() {
        let (name, tid) = std::thread::Builder::new()
            .name("sys-name-test".into())
            .spawn(|| (name(), tid()))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(name.as_deref(), Some("sys-name-test"));
        assert!(tid > 0 && tid != super::tid());
    }

    #[test]
    fn a_thread_knows_its_stack_size() {
        for asked in [1usize << 20, 3 << 20, 8 << 20, 16 << 20] {
            let (size, bounds, here) = std::thread::Builder::new()
                .stack_size(asked)
                .spawn(|| {
                    let local = 0u8;
                    (stack_size(), stack_bounds(), &local as *const u8 as u64)
                })
                .unwrap()
                .join()
                .unwrap();
            let size = size.unwrap();
            // At least what was asked (glibc may hand a thread a larger
            // cached stack of an exited one), in whole pages.
            assert!(size >= asked && size % 4096 == 0, "{asked}: {size}");
            let (lo, hi) = bounds.unwrap();
            assert_eq!((hi - lo) as usize, size);
            assert!(lo <= here && here < hi, "{lo:#x} {here:#x} {hi:#x}");
        }
    }

    #[test]
    fn a_threads_cpu_clock_is_read_by_itself_and_by_others() {
        let me = tid() as i32;
        let mine = own_cpu_ns().unwrap();
        let by_id = cpu_ns(me).unwrap();
        assert!(by_id >= mine);
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let start = own_cpu_ns().unwrap();
            let mut x = 1u64;
            while own_cpu_ns().unwrap() - start < 20_000_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            tx.send((tid() as i32, own_cpu_ns().unwrap())).unwrap();
            done_rx.recv().unwrap();
        });
        let (other, used) = rx.recv().unwrap();
        let seen = cpu_ns(other).unwrap();
        assert!(seen >= used && used >= 20_000_000, "{used} {seen}");
        assert!(alive(other));
        done_tx.send(()).unwrap();
        t.join().unwrap();
        // The kernel reaps an exited thread as it exits (a moment after
        // `join` returns: the joiner is woken before the thread is gone).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive(other) && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(!alive(other));
        assert_eq!(cpu_ns(other), None);
    }

    #[test]
    fn signal_zero_finds_a_thread_and_real_time_signals_are_numbered() {
        assert!(signal(tid() as i32, 0).is_ok());
        assert!(alive(tid() as i32));
        let rt = realtime_signal(4).unwrap();
        assert_eq!(rt, libc::SIGRTMIN() + 4);
        assert!(rt < libc::SIGRTMAX());
        if let Some(limit) = main_stack_limit() {
            assert!(limit > 0);
        }
    }
}

#[cfg(all(
    not(perflens_portable),
    any(target_os = "macos", all(target_os = "linux", perflens_posix))
))]
#[test]
fn the_posix_build_knows_the_os_names_and_ids_only() {
    // The OS's names: the main thread's is `main`, a named thread's the
    // one given to std (spawned threads are named in the OS too).
    let (other, other_name) = std::thread::Builder::new()
        .name("posix-named".into())
        .spawn(|| (tid(), name()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(other_name.as_deref(), Some("posix-named"));
    // The OS's ids: nonzero, the same for the thread's life, another
    // thread's differs.
    let me = tid();
    assert!(me != 0 && tid() == me && other != 0 && other != me);
    // What serves only CPU sampling is unknown here.
    assert_eq!((stack_size(), stack_bounds()), (None, None));
    assert_eq!(
        (cpu_ns(1), own_cpu_ns(), main_stack_limit()),
        (None, None, None)
    );
    assert!(!alive(1) && signal(1, 0).is_err() && realtime_signal(4).is_none());
}

#[cfg(all(target_os = "linux", perflens_posix, not(perflens_portable)))]
#[test]
fn the_posix_build_on_linux_gives_the_kernels_thread_id() {
    // SAFETY: gettid has no preconditions.
    assert_eq!(tid(), unsafe { libc::gettid() } as u64);
}

#[cfg(any(perflens_portable, not(any(target_os = "linux", target_os = "macos"))))]
#[test]
fn the_portable_build_knows_only_the_thread_facts_std_gives() {
    // A name and an id from std: the thread's own name, a nonzero id kept
    // for the thread's life and given to no other thread.
    assert_eq!(name().as_deref(), std::thread::current().name());
    let me = tid();
    assert!(me != 0 && tid() == me);
    let named = std::thread::Builder::new().name("portable-named".into());
    let (other, other_name) = named.spawn(|| (tid(), name())).unwrap().join().unwrap();
    assert!(other != 0 && other != me);
    assert_eq!(other_name.as_deref(), Some("portable-named"));
    let unnamed = std::thread::spawn(name).join().unwrap();
    assert_eq!(unnamed, None);
    assert_eq!((stack_size(), stack_bounds()), (None, None));
    assert_eq!(
        (cpu_ns(1), own_cpu_ns(), main_stack_limit()),
        (None, None, None)
    );
    assert!(!alive(1) && signal(1, 0).is_err() && realtime_signal(4).is_none());
}
