//! The flamegraph and the folded stacks show the native stacks as they
//! were: the same code run under two measured paths is one stack, not two
//! split above `_start` by a `[path]` frame. The path stays in pprof (the
//! `perflens_path` label) and in the second flamegraph,
//! `PERFLENS_FLAMEGRAPH_PATHS`, which puts it first.
// CPU sampling (perf events, per-thread CPU timers): Linux only.
#![cfg(target_os = "linux")]
#![cfg(feature = "cpu")]

mod common;

use std::process::Command;
use std::time::Duration;

/// The same native stack under either measured block.
#[inline(never)]
fn burn(ms: u64) {
    let end = cpu_now() + Duration::from_millis(ms);
    let mut x = 1u64;
    while cpu_now() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
#[ignore = "child helper"]
fn child_burns_under_two_paths() {
    if std::env::var_os("PERFLENS_FLAME_CHILD").is_none() {
        return;
    }
    let guard = perflens::__private::MainGuard::start(Default::default());
    perflens::measure_block!("first_block", { burn(150) });
    perflens::measure_block!("second_block", { burn(150) });
    drop(guard);
}

#[test]
fn flamegraphs_keep_native_stacks_whole() {
    let dir = std::env::temp_dir().join(format!("perflens-flame-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (folded, by_path) = (dir.join("cpu.folded"), dir.join("by-path.svg"));
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_burns_under_two_paths",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PERFLENS_FLAME_CHILD", "1")
        .env("PERFLENS_FOLDED", &folded)
        .env("PERFLENS_FLAMEGRAPH_PATHS", &by_path)
        .env("PERFLENS_FORMAT", "none")
        .env_remove("PERFLENS_CPU_SOURCE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    if !perflens_sys::CAPABILITIES.cpu_sampling {
        // The portable build: the program said why it samples nothing,
        // and wrote no stacks.
        assert!(
            text.contains(common::capabilities::CPU_UNAVAILABLE_LINE),
            "{text}"
        );
        assert!(!folded.exists() && !by_path.exists(), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let folded = std::fs::read_to_string(&folded).unwrap();
    // No measured-path frame in the native stacks.
    assert!(
        !folded.contains("first_block") && !folded.contains("second_block"),
        "{folded}"
    );
    // `burn`'s samples from both blocks are on stacks that appear once
    // each (one line per distinct stack), and they hold both blocks'
    // CPU time: about 300 ms.
    let burn: Vec<&str> = folded.lines().filter(|l| l.contains("::burn")).collect();
    let mut stacks: Vec<&str> = burn.iter().map(|l| l.rsplit_once(' ').unwrap().0).collect();
    let n = stacks.len();
    stacks.sort_unstable();
    stacks.dedup();
    assert_eq!(stacks.len(), n, "a stack repeated:\n{folded}");
    let us: u64 = (burn.iter())
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert!(
        (240_000..=360_000).contains(&us),
        "{us} µs in burn:\n{folded}"
    );
    // The second flamegraph splits them by measured path.
    let svg = std::fs::read_to_string(&by_path).unwrap();
    assert!(svg.contains("first_block") && svg.contains("second_block"));
    let _ = std::fs::remove_dir_all(&dir);
}
