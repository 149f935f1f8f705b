//! A thread that cannot map its call tree (the address space is
//! exhausted: here `RLIMIT_AS`) gets a small one if that fits, and
//! otherwise its calls are counted as unrecorded and the report warns;
//! nothing crashes and nothing is silently lost.
//!
//! The limit applies to the whole process, so the work runs in a child
//! process: an ignored test of this binary, run by the parent test.
// RLIMIT_AS and /proc/self/status: Linux only.
#![cfg(target_os = "linux")]
#![cfg(feature = "enabled")]

mod common;
use perflens::Session;
use std::process::Command;
use std::sync::mpsc;

#[perflens::measure]
fn work(i: u64) -> u64 {
    std::hint::black_box(i * 3)
}

/// Virtual memory of this process, in bytes.
fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn set_soft_limit(bytes: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &mut lim), 0);
        lim.rlim_cur = bytes.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &lim), 0);
    }
}

/// A thread that waits for its go, then makes `calls` measured calls.
/// Returns once the thread runs: the runtime maps a thread's signal stack
/// when it starts, which must happen before the limit is lowered.
fn parked(calls: u64) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (go, wait) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            started.send(()).unwrap();
            wait.recv().unwrap();
            for i in 0..calls {
                work(i);
            }
        })
        .unwrap();
    running.recv().unwrap();
    (go, handle)
}

#[test]
#[ignore = "child helper"]
fn child_with_a_tight_address_space() {
    if std::env::var_os("PERFLENS_NOMEM_CHILD").is_none() {
        return;
    }
    let session = Session::builder().ignore_env().start().unwrap();
    work(0);
    let (go_a, a) = parked(10);
    let (go_b, b) = parked(5);
    // No room for any tree: A's ten calls cannot be recorded.
    set_soft_limit(vm_size() + (1 << 20));
    go_a.send(()).unwrap();
    a.join().unwrap();
    // Room for the small fallback tree (about 3 MiB), not for a full one
    // (about 50 MiB): B's five calls are recorded there.
    set_soft_limit(vm_size() + (16 << 20));
    go_b.send(()).unwrap();
    b.join().unwrap();
    set_soft_limit(u64::MAX);
    let report = session.finish();
    let mut table = Vec::new();
    perflens::write_table(&report, &mut table).unwrap();
    let small: Vec<(u64, u32)> = (report.threads.iter())
        .filter(|t| t.node_capacity < 1024)
        .map(|t| (t.calls, t.node_capacity))
        .collect();
    println!(
        "RESULT unrecorded={} calls={} small={small:?}",
        report.dropped.unrecorded_calls,
        report
            .function(&format!("{}::work", module_path!()))
            .unwrap()
            .calls,
    );
    print!("{}", String::from_utf8(table).unwrap());
}

#[test]
fn threads_without_memory_are_counted() {
    if common::under_qemu(
        "qemu-user keeps a program's RLIMIT_AS from the host (it would limit \
         qemu's own memory), so no allocation of the program fails",
    ) {
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_with_a_tight_address_space",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PERFLENS_NOMEM_CHILD", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    if !perflens_sys::CAPABILITIES.page_release {
        // The portable build takes its trees from the system allocator,
        // which may serve them from address space it reserved before the
        // limit (glibc's arenas do): which thread gets memory is not the
        // limit's to say. Still nothing crashes and no call is lost:
        // every call is recorded or counted as unrecorded, with the
        // warning when some were not.
        let result = text
            .lines()
            .find_map(|l| l.split_once("RESULT unrecorded="));
        let (unrecorded, rest) = result.expect(&text).1.split_once(" calls=").unwrap();
        let calls: u64 = rest.split_once(' ').unwrap().0.parse().unwrap();
        let unrecorded: u64 = unrecorded.parse().unwrap();
        assert_eq!(unrecorded + calls, 16, "{text}");
        let warning = format!("[perflens] warning: {unrecorded} calls were made on threads");
        assert_eq!(unrecorded > 0, text.contains(&warning), "{text}");
        return;
    }
    // 1 call on main and 5 on B recorded; A's 10 counted, not recorded.
    assert!(
        text.contains("RESULT unrecorded=10 calls=6 small=[(5, 64)]"),
        "{text}"
    );
    assert!(
        text.contains(
            "[perflens] warning: 10 calls were made on threads that could get no memory \
             for their call tree (address space exhausted) and were not recorded; \
             check `ulimit -v`, or lower PERFLENS_NODES."
        ),
        "{text}"
    );
}
