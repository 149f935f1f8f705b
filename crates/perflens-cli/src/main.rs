//! The `perflens` command.
//!
//! ```text
//! perflens list [--clean]
//! perflens snapshot [PID|PATH] [-o FILE.json] [--wait-min DURATION]
//! perflens report FILE.json [--format table|json] [--limit N] [--sort COLUMN]
//!                 [--wait-min DURATION]
//! perflens diff BASE.json NEW.json [--fail-on RULES] [--limit N]
//! perflens html REPORT.json -o FILE.html [--trace TRACE.json]
//! ```
//!
//! `list` and `snapshot` read live sessions (programs run with
//! `PERFLENS_LIVE=1`) from shared memory, without touching the programs.
//!
//! `report` prints the tables a program itself prints at the end of its
//! session, from a JSON report it saved (`PERFLENS_JSON`). Anything that
//! is not a report it can read gives a one-line error and exit code 2;
//! a wrong command line gives its usage and exit code 2 as well.

mod live_cmd;

use perflens_report::{FunctionRow, Report};
use std::io::Write;
use std::process::ExitCode;

use perflens_cli::top;

const USAGE: &str = "\
usage: perflens list [--clean]
       perflens top [PID|PATH] [--interval MS]
       perflens snapshot [PID|PATH] [-o FILE.json] [--wait-min DURATION]
       perflens report FILE.json [--format table|json] [--limit N] [--sort COLUMN]
                       [--wait-min DURATION]
       perflens diff BASE.json NEW.json [--fail-on RULES] [--limit N]
       perflens html REPORT.json -o FILE.html [--trace TRACE.json]

  list     the live sessions of this user (programs run with PERFLENS_LIVE=1):
           pid, program, start, threads, state (running, finished, stale)
           --clean   remove the stale ones (program gone, session not ended)
  top      full-screen live view of a live session: PID, a session's
           directory, or nothing when exactly one session runs; PATH may
           also be a JSON report a program rewrites (PERFLENS_JSON=PATH
           PERFLENS_JSON_EVERY=0.5)
           --interval  refresh every MS milliseconds (default 500), or
                       with a unit: 250ms, 2s; keys: ? in the view
  snapshot write a live session's report as JSON (the PERFLENS_JSON schema),
           to FILE or stdout; PID or PATH may be left out when exactly one
           session runs; works on finished sessions kept with
           PERFLENS_LIVE_KEEP=1
           --wait-min  list the await sites that waited at least this
                       long in total (default 1ms; 500us, 2s, 0: all;
                       a bare number is ms)
  report   print the tables of a saved JSON report (PERFLENS_JSON)
           --format  table (default) or json
           --limit   rows per table (default 20; 0: all)
           --sort    order of the function rows: total (default), self,
                     calls, avg, p50, p95, p99, name, alloc, cpu
           --wait-min  keep the await sites that waited at least this
                       long in total (the report holds those above its
                       own threshold, wait_min_ns, only)
  diff     compare two saved reports: a markdown table (for a pull request)
           of each function's calls, total, self, p50, p99, alloc bytes,
           bytes in use (heap) and CPU in NEW, with the change against
           BASE, by impact;
           functions in one report only are listed as added or removed
           --fail-on  exit 1 when a function changed past a rule:
                      'p99>+10%,alloc_bytes>+5%' (a rise of more than),
                      'calls<-20%' (a fall of more than); metrics calls,
                      total, self, p50, p99, alloc_bytes, inuse_bytes,
                      cpu. A change within what the reports can tell
                      apart (a percentile's histogram bucket, a tick per
                      call, a CPU sample, twice the sampling spread of
                      bytes in use) is never flagged
           --limit    rows (default 20; 0: all)
  html     write a saved report as one HTML file that opens offline: the
           function table (sortable, filterable), the hot paths as a tree,
           the CPU flamegraph, waits, channels and locks
           -o FILE.html  where to write it (required)
           --trace  a Chrome JSON trace of the same run (PERFLENS_TRACE=
                    x.json): its timeline, with the arrows";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("perflens: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Input(msg)) => {
            eprintln!("perflens: {msg}");
            ExitCode::from(2)
        }
        // A closed pipe (`perflens report x.json | head`) is not an error.
        Err(Failure::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Output(e)) => {
            eprintln!("perflens: could not write the output: {e}");
            ExitCode::from(1)
        }
        // The table says which rows regressed.
        Err(Failure::Regressed) => ExitCode::from(1),
    }
}

pub(crate) enum Failure {
    /// The command line is wrong: the usage follows the message.
    Usage(String),
    /// The input cannot be read as a report.
    Input(String),
    /// Writing to stdout failed.
    Output(std::io::Error),
    /// `diff --fail-on`: a function regressed past a rule.
    Regressed,
}

fn run(args: &[String]) -> Result<(), Failure> {
    match args.first().map(String::as_str) {
        Some("report") => report(&args[1..]),
        Some("diff") => diff(&args[1..]),
        Some("html") => html(&args[1..]),
        Some("list") => live_cmd::list(&args[1..]),
        Some("snapshot") => live_cmd::snapshot(&args[1..]),
        Some("top") => top::run(&args[1..]).map_err(|e| match e {
            top::TopError::Usage(m) => Failure::Usage(m),
            top::TopError::Input(m) => Failure::Input(m),
            top::TopError::Terminal(e) => Failure::Output(e),
        }),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(Failure::Usage(format!("unknown command `{other}`"))),
        None => Err(Failure::Usage("no command given".into())),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Table,
    Json,
}

/// `perflens report`.
fn report(args: &[String]) -> Result<(), Failure> {
    let mut path: Option<&str> = None;
    let mut format = Format::Table;
    let mut limit: Option<usize> = None;
    let mut sort: Option<SortKey> = None;
    let mut wait_min: Option<u64> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| value_of(&mut it, name);
        match a.as_str() {
            "--format" => {
                format = match value("--format")? {
                    "table" => Format::Table,
                    "json" => Format::Json,
                    other => {
                        return Err(Failure::Usage(format!(
                            "--format {other}: expected table or json"
                        )));
                    }
                }
            }
            "--limit" => {
                let v = value("--limit")?;
                limit = Some(v.parse().map_err(|_| {
                    Failure::Usage(format!("--limit {v}: expected a whole number"))
                })?);
            }
            "--sort" => sort = Some(sort_key(value("--sort")?)?),
            "--wait-min" => wait_min = Some(wait_min_arg(value("--wait-min")?)?),
            flag if flag.starts_with("--") => {
                return Err(Failure::Usage(format!("unknown option `{flag}`")));
            }
            file if path.is_none() => path = Some(file),
            extra => return Err(Failure::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    let path = path.ok_or_else(|| Failure::Usage("report: which JSON file?".into()))?;
    let mut report = read(path)?;
    if let Some(l) = limit {
        report.limit = (l > 0).then_some(l);
    }
    if let (Some(min), true) = (wait_min, report.has_timing()) {
        report.waits.retain(|w| w.wait_ns >= min);
        report.wait_min_ns = report.wait_min_ns.map(|m| m.max(min));
    }
    match sort {
        Some(SortKey::Name) => report.functions.sort_by(|a, b| a.name.cmp(&b.name)),
        // Stable: rows with the same key keep the report's own order.
        Some(SortKey::Largest(key)) => report.functions.sort_by_key(|r| std::cmp::Reverse(key(r))),
        None => {}
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Table => perflens_report::write_table(&report, &mut out),
        Format::Json => perflens_report::write_json(&report, &mut out),
    }
    .and_then(|()| out.flush())
    .map_err(Failure::Output)
}

/// `perflens diff`: exit 1 (after the table) when a `--fail-on` rule
/// broke.
fn diff(args: &[String]) -> Result<(), Failure> {
    use perflens_report::diff;
    let mut files: Vec<&str> = Vec::new();
    let mut fail_on = Vec::new();
    let mut limit = perflens_report::DEFAULT_LIMIT;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| value_of(&mut it, name);
        match a.as_str() {
            "--fail-on" => {
                fail_on = diff::parse_fail_on(value("--fail-on")?)
                    .map_err(|e| Failure::Usage(format!("--fail-on {e}")))?;
            }
            "--limit" => {
                let v = value("--limit")?;
                limit = v
                    .parse()
                    .map_err(|_| Failure::Usage(format!("--limit {v}: expected a whole number")))?;
            }
            flag if flag.starts_with("--") => {
                return Err(Failure::Usage(format!("unknown option `{flag}`")));
            }
            file if files.len() < 2 => files.push(file),
            extra => return Err(Failure::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    let [base_path, new_path] = files[..] else {
        return Err(Failure::Usage(
            "diff: which two JSON reports (BASE NEW)?".into(),
        ));
    };
    let (base, new) = (read(base_path)?, read(new_path)?);
    let d = diff::diff(&base, &new, &fail_on);
    let text = diff::write_markdown(&d, base_path, new_path, &fail_on, limit);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Failure::Output)?;
    if d.regressed() {
        Err(Failure::Regressed)
    } else {
        Ok(())
    }
}

/// `perflens html`.
fn html(args: &[String]) -> Result<(), Failure> {
    let mut report_path: Option<&str> = None;
    let mut out_path: Option<&str> = None;
    let mut trace_path: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| value_of(&mut it, name);
        match a.as_str() {
            "-o" | "--output" => out_path = Some(value("-o")?),
            "--trace" => trace_path = Some(value("--trace")?),
            flag if flag.starts_with('-') => {
                return Err(Failure::Usage(format!("unknown option `{flag}`")));
            }
            file if report_path.is_none() => report_path = Some(file),
            extra => return Err(Failure::Usage(format!("unexpected argument `{extra}`"))),
        }
    }
    let path = report_path.ok_or_else(|| Failure::Usage("html: which JSON report?".into()))?;
    let out_path =
        out_path.ok_or_else(|| Failure::Usage("html: -o FILE.html is required".into()))?;
    let report = read(path)?;
    let trace = match trace_path {
        Some(t) => Some(
            std::fs::read_to_string(t)
                .map_err(|e| Failure::Input(format!("cannot read {t}: {e}")))?,
        ),
        None => None,
    };
    let title = format!(
        "perflens: {}",
        std::path::Path::new(path)
            .file_name()
            .map_or(path.into(), |n| n.to_string_lossy())
    );
    let mut page = Vec::new();
    perflens_report::write_html(&report, &title, trace.as_deref(), &mut page)
        .map_err(|e| Failure::Input(format!("{}: {e}", trace_path.unwrap_or(path))))?;
    std::fs::write(out_path, page)
        .map_err(|e| Failure::Input(format!("cannot write {out_path}: {e}")))?;
    eprintln!("perflens: wrote {out_path}");
    Ok(())
}

/// The value after option `name`.
fn value_of<'a>(it: &mut std::slice::Iter<'a, String>, name: &str) -> Result<&'a str, Failure> {
    it.next()
        .map(String::as_str)
        .ok_or_else(|| Failure::Usage(format!("{name} needs a value")))
}

/// The value of `--wait-min`, in ns.
pub(crate) fn wait_min_arg(v: &str) -> Result<u64, Failure> {
    perflens_report::parse_wait_min(v).ok_or_else(|| {
        Failure::Usage(format!(
            "--wait-min {v}: expected a duration (500us, 1ms, 2s, 0; a bare number is ms)"
        ))
    })
}

/// Reads a report, or says in one line why it cannot.
fn read(path: &str) -> Result<Report, Failure> {
    let file = std::fs::File::open(path)
        .map_err(|e| Failure::Input(format!("cannot open {path}: {e}")))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Failure::Input(format!(
            "{path} is a directory, not a report"
        )));
    }
    Report::from_json_reader(std::io::BufReader::new(file))
        .map_err(|e| Failure::Input(format!("{path}: {e}")))
}

/// An order of the function rows.
enum SortKey {
    /// A to Z.
    Name,
    /// Largest first.
    Largest(fn(&FunctionRow) -> u64),
}

/// The order `--sort column` asks for.
fn sort_key(column: &str) -> Result<SortKey, Failure> {
    let key: fn(&FunctionRow) -> u64 = match column {
        "name" => return Ok(SortKey::Name),
        "total" => |r| r.total_ns,
        "self" => |r| r.self_ns,
        "calls" => |r| r.calls,
        "avg" => |r| r.avg_ns,
        "p50" => |r| r.p50_ns,
        "p95" => |r| r.p95_ns,
        "p99" => |r| r.p99_ns,
        "alloc" => |r| r.alloc.map_or(0, |a| a.bytes),
        "cpu" => |r| r.cpu.map_or(0, |c| c.ns),
        other => {
            return Err(Failure::Usage(format!(
                "--sort {other}: expected total, self, calls, avg, p50, p95, p99, name, alloc or cpu"
            )));
        }
    };
    Ok(SortKey::Largest(key))
}
