//! `perflens diff BASE.json NEW.json`: a markdown table of two real
//! sessions' reports, exit code 1 when `--fail-on` finds a regression,
//! 0 when it does not, 2 for bad input.

use perflens_core::{Callsite, Guard, RecordingOptions, start};
use perflens_report::{Report, ReportOptions};
use std::path::PathBuf;
use std::process::{Command, Output};

static WORK: Callsite = Callsite::new("app::work", || "");
static STEADY: Callsite = Callsite::new("app::steady", || "");
static GONE: Callsite = Callsite::new("app::gone", || "");

/// Spins `n` rounds of a dependent multiply.
fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// A session: 200 calls of `app::work` spinning `rounds`, 100 of
/// `app::steady` spinning 20,000, and `app::gone` when `with_gone`.
fn session(rounds: u64, with_gone: bool) -> String {
    let rec = start(&RecordingOptions::default()).expect("one session at a time");
    for _ in 0..200 {
        let _w = Guard::enter(&WORK);
        spin(rounds);
    }
    for _ in 0..100 {
        let _s = Guard::enter(&STEADY);
        spin(20_000);
    }
    if with_gone {
        let _g = Guard::enter(&GONE);
    }
    let report = Report::from_snapshot(&rec.finish(), &ReportOptions::default());
    let mut json = Vec::new();
    perflens_report::write_json(&report, &mut json).unwrap();
    String::from_utf8(json).unwrap()
}

/// Base (work spins 20,000) and new (work spins 80,000, `app::gone`
/// gone), saved once for every test.
fn reports() -> (PathBuf, PathBuf) {
    static SAVED: std::sync::OnceLock<(PathBuf, PathBuf)> = std::sync::OnceLock::new();
    SAVED
        .get_or_init(|| {
            let base = temp("base.json", session(20_000, true).as_bytes());
            let new = temp("new.json", session(80_000, false).as_bytes());
            (base, new)
        })
        .clone()
}

fn temp(name: &str, contents: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("perflens-diff-{}-{name}", std::process::id()));
    std::fs::write(&p, contents).unwrap();
    p
}

fn perflens(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perflens"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The table's line of a function.
fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("| `{name}`")))
        .unwrap_or_else(|| panic!("no row {name}:\n{out}"))
}

#[test]
fn a_slower_function_fails_the_rule_and_the_table_says_which() {
    let (base, new) = reports();
    let o = perflens(&[
        "diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        // The median: four times the work moves it by about 300%, and no
        // preemption of a few calls on a busy machine moves it at all
        // (a p99 of 200 calls is two calls: one stretched call in the
        // base run hides the change).
        "--fail-on",
        "p50>+50%,alloc_bytes>+5%",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.is_empty(), "{err}");
    // work regressed (steady too, should a busy machine have stretched
    // its slowest calls: the count is not asserted).
    assert!(
        out.contains("--fail-on `p50>+50%,alloc_bytes>+5%`: **") && out.contains(" regressed**"),
        "{out}"
    );
    // These sessions did not count allocations: that rule cannot hold or
    // fail, and the table says so.
    assert!(
        out.contains("Not checked: alloc_bytes (not measured in both reports)."),
        "{out}"
    );
    // Four times the spinning: p50 up about 300%, flagged; calls same.
    let work = line(&out, "app::work");
    assert!(work.contains("| 200 (0%) |"), "{work}");
    assert!(work.contains("regressed: p50 +"), "{work}");
    // Calls are exact: unchanged, as steady's.
    assert!(line(&out, "app::steady").contains("| 100 (0%) |"), "{out}");
    assert!(line(&out, "app::gone").contains("removed"), "{out}");
    // By impact: work moved most.
    let first = out.lines().find(|l| l.starts_with("| `")).unwrap();
    assert!(first.starts_with("| `app::work`"), "{out}");
}

#[test]
fn a_faster_function_passes_and_exits_0() {
    let (base, new) = reports();
    let o = perflens(&[
        "diff",
        new.to_str().unwrap(),
        base.to_str().unwrap(),
        // Exact calls, and a median no noise moves by 90%: nothing can
        // trip these but a real change.
        "--fail-on",
        "calls>+0%,p50<-90%",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("no regression"), "{out}");
    assert!(line(&out, "app::gone").contains("added"), "{out}");
    // Without rules: the table only, exit 0.
    let o = perflens(&["diff", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let (base, _) = reports();
    let base = base.to_str().unwrap();
    let not_json = temp("not.json", b"{\"schema\": \"something else\"}");
    let cases: [(&[&str], &str); 5] = [
        (&["diff", base], "which two JSON reports"),
        (
            &["diff", base, "/nonexistent/new.json"],
            "cannot open /nonexistent/new.json",
        ),
        (&["diff", base, not_json.to_str().unwrap()], "not.json"),
        (&["diff", base, base, "--fail-on", "p99>10"], "needs a %"),
        (
            &["diff", base, base, "--fail-on", "speed>+1%"],
            "unknown metric `speed`",
        ),
    ];
    for (args, says) in cases {
        let o = perflens(args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("perflens: ") && first.contains(says),
            "{args:?}: {err}"
        );
    }
}
