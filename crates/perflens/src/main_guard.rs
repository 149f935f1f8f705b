//! What `#[perflens::main]` expands to: a session that prints its report
//! when `main` returns.

pub use crate::outputs::Format;
use crate::outputs::{Printed, emit, write_outputs_env};
use crate::session::Session;
use crate::settings;
use perflens_core::Mode;

/// Options of `#[perflens::main(...)]`; `PERFLENS_*` variables override them.
#[derive(Clone, Debug, Default)]
pub struct MainOptions {
    pub percentiles: Option<&'static [f64]>,
    /// Rows per terminal table; `0`: every row (hotpath's `limit = 0`).
    pub limit: Option<usize>,
    pub format: Option<Format>,
    pub mode: Option<Mode>,
    pub live: Option<bool>,
    /// `trace = "file"`: trace mode, written there (`PERFLENS_TRACE`
    /// overrides it).
    pub trace: Option<&'static str>,
    /// `output_path = "file"`: the report is printed there instead of on
    /// stderr (`PERFLENS_OUTPUT` overrides it).
    pub output_path: Option<&'static str>,
}

/// Started at the top of `main`; prints the report when dropped. The
/// session itself waits in `stop_signals::MAIN`, where a stop signal's
/// report can take it instead.
pub struct MainGuard {
    started: bool,
}

impl MainGuard {
    /// Starts the session. If one is already recording, says so and
    /// measures nothing more.
    pub fn start(opts: MainOptions) -> MainGuard {
        let mut builder = Session::builder();
        #[cfg(feature = "cpu")]
        {
            builder = builder.cpu_sampling(true);
        }
        if let Some(mode) = opts.mode {
            builder = builder.mode(mode);
        }
        if let Some(p) = opts.percentiles {
            builder = builder.percentiles(p);
        }
        if let Some(l) = opts.limit {
            builder = builder.limit(if l == 0 { usize::MAX } else { l });
        }
        if let Some(live) = opts.live {
            builder = builder.live(live);
        }
        if let Some(trace) = opts.trace {
            builder = builder.trace(trace);
        }
        let mut format = opts.format.unwrap_or(Format::Table);
        if let Some(v) = settings::var("PERFLENS_FORMAT") {
            match v.trim() {
                "table" => format = Format::Table,
                // hotpath's name for the same (perflens's JSON is pretty).
                "json" | "json-pretty" => format = Format::Json,
                "none" => format = Format::None,
                "" => {}
                other => eprintln!(
                    "[perflens] PERFLENS_FORMAT={other} is not one of table, json, json-pretty, none; ignored."
                ),
            }
        }
        let path = settings::var_os("PERFLENS_OUTPUT")
            .map(std::path::PathBuf::from)
            .or_else(|| opts.output_path.map(std::path::PathBuf::from))
            .map(|p| match std::env::current_dir() {
                // Where `main` started: a later `chdir` does not move it.
                Ok(cwd) if p.is_relative() => cwd.join(p),
                _ => p,
            });
        let printed = Printed { format, path };
        let session = match builder.start() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("[perflens] {e}");
                return MainGuard { started: false };
            }
        };
        let every = crate::stop_signals::json_every_from_env();
        *crate::stop_signals::MAIN
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((session, printed));
        crate::stop_signals::start(every);
        MainGuard { started: true }
    }
}

impl Drop for MainGuard {
    fn drop(&mut self) {
        if !self.started {
            return;
        }
        let mut main = crate::stop_signals::MAIN
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some((session, printed)) = main.take() else {
            drop(main);
            // A stop signal's report was written: the signal, sent again
            // with its default action, ends the process; returning from
            // `main` must not exit with 0 before it lands.
            if crate::stop_signals::REPORTED.load(std::sync::atomic::Ordering::Acquire) {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
            return;
        };
        // The table first, then where the JSON went. The lock is held
        // throughout, so a stop signal arriving now finds nothing left to
        // report and ends the process after this.
        let trace = session.trace_path().map(std::path::Path::to_path_buf);
        let report = session.finish_quietly();
        emit(&report, &printed);
        write_outputs_env(&report, trace.as_deref());
    }
}
