//! The `PERFLENS_*` environment variables: one table of every name
//! perflens knows ([`KNOWN`]) and the program's settings read from it
//! ([`Settings`], one field per variable), with the facade feature a build needs for
//! it to do anything, and the check a session runs when it starts
//! ([`check_env`]): a variable whose feature is not compiled in, or a name
//! perflens does not know (a typo), is named on stderr instead of being
//! ignored in silence.
//!
//! Without the `enabled` feature this module is not compiled: there is no
//! session and no runtime, so nothing can warn (docs/configuration.md says so).

/// What a build needs for a variable to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Feature {
    /// Any build with `enabled`: read by the session itself.
    Enabled,
    /// The `cpu` feature (CPU sampling and its profile files).
    Cpu,
    /// The `heap` feature (heap profiling and its profile file).
    Heap,
    /// The `http` feature (the HTTP server).
    Http,
    /// Read only by this repository's examples, benchmarks, tests and
    /// scripts, never by perflens: known (so never taken for a typo of
    /// another), never warned about.
    Repository,
}

impl Feature {
    /// The feature's name in `Cargo.toml` (`Repository`: none; it is
    /// never named in a warning).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Feature::Enabled => "enabled",
            Feature::Cpu => "cpu",
            Feature::Heap => "heap",
            Feature::Http => "http",
            Feature::Repository => "none",
        }
    }

    /// The features this build of the facade has.
    pub(crate) fn compiled() -> &'static [Feature] {
        const ALL: &[Feature] = &[
            Feature::Enabled,
            #[cfg(feature = "cpu")]
            Feature::Cpu,
            #[cfg(feature = "heap")]
            Feature::Heap,
            #[cfg(feature = "http")]
            Feature::Http,
        ];
        ALL
    }
}

/// Declares the settings: [`Settings`], with one field per program
/// setting, and [`KNOWN`], every name with what a build needs to read it,
/// from one list, so a field cannot exist without its name or the other
/// way round.
macro_rules! settings {
    (
        program { $( $(#[$doc:meta])* $field:ident: $name:literal, $feature:ident; )* }
        repository { $( $repo:literal, )* }
    ) => {
        /// Every program setting (`PERFLENS_*`) as the environment held it
        /// when [`Settings::from_env`] read it: one field per variable,
        /// named after it, `None` when unset or empty. The session reads
        /// one when it starts, and so does whatever reads a setting later
        /// (the report at exit, the stop signals): this is the one reader
        /// of perflens's environment.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub(crate) struct Settings {
            $( pub(crate) $field: Option<std::ffi::OsString>, )*
        }

        impl Settings {
            /// Reads every program setting from the process's environment.
            pub(crate) fn from_env() -> Settings {
                Settings {
                    $( $field: std::env::var_os($name).filter(|v| !v.is_empty()), )*
                }
            }

            /// The value of the variable `name`; `None` for a name that is
            /// not a program setting.
            pub(crate) fn get(&self, name: &str) -> Option<&std::ffi::OsString> {
                match name {
                    $( $name => self.$field.as_ref(), )*
                    _ => None,
                }
            }

            /// [`Settings::get`] as text: `None` when unset, blank, or not
            /// UTF-8 (as [`var`] reads a variable).
            pub(crate) fn text(&self, name: &str) -> Option<String> {
                let v = self.get(name)?.to_str()?;
                (!v.trim().is_empty()).then(|| v.to_string())
            }

            /// Reads the one variable `name` (the same as
            /// `Settings::from_env().get(name)`, without the others).
            fn read(name: &str) -> Option<std::ffi::OsString> {
                match name {
                    $( $name => std::env::var_os($name).filter(|v| !v.is_empty()), )*
                    _ => None,
                }
            }

            /// Each field's name and its variable's, in declaration order.
            #[cfg(test)]
            pub(crate) const FIELDS: &[(&str, &str)] = &[ $( (stringify!($field), $name), )* ];
        }

        /// Every `PERFLENS_*` variable, with what a build needs to read it:
        /// the program's settings first (a typo is matched to the first of
        /// the closest names), then the repository's own. Documented in
        /// docs/configuration.md, which a test checks against this table.
        pub(crate) const KNOWN: &[(&str, Feature)] = &[
            $( ($name, Feature::$feature), )*
            $( ($repo, Feature::Repository), )*
        ];
    };
}

settings! {
    program {
        // Outputs.
        json: "PERFLENS_JSON", Enabled;
        json_every: "PERFLENS_JSON_EVERY", Enabled;
        html: "PERFLENS_HTML", Enabled;
        format: "PERFLENS_FORMAT", Enabled;
        output: "PERFLENS_OUTPUT", Enabled;
        percentiles: "PERFLENS_PERCENTILES", Enabled;
        limit: "PERFLENS_LIMIT", Enabled;
        wait_min: "PERFLENS_WAIT_MIN", Enabled;
        // The live view.
        live: "PERFLENS_LIVE", Enabled;
        live_keep: "PERFLENS_LIVE_KEEP", Enabled;
        // Recording.
        mode: "PERFLENS_MODE", Enabled;
        sample_every: "PERFLENS_SAMPLE_EVERY", Enabled;
        sample_warmup: "PERFLENS_SAMPLE_WARMUP", Enabled;
        nodes: "PERFLENS_NODES", Enabled;
        paths: "PERFLENS_PATHS", Enabled;
        stack_depth: "PERFLENS_STACK_DEPTH", Enabled;
        recursion: "PERFLENS_RECURSION", Enabled;
        clock: "PERFLENS_CLOCK", Enabled;
        flow_latency: "PERFLENS_FLOW_LATENCY", Enabled;
        // Trace mode.
        trace: "PERFLENS_TRACE", Enabled;
        trace_buffer: "PERFLENS_TRACE_BUFFER", Enabled;
        trace_short_thread_ms: "PERFLENS_TRACE_SHORT_THREAD_MS", Enabled;
        // CPU sampling.
        cpu_hz: "PERFLENS_CPU_HZ", Cpu;
        cpu_source: "PERFLENS_CPU_SOURCE", Cpu;
        cpu_kernel: "PERFLENS_CPU_KERNEL", Cpu;
        cpu_signal: "PERFLENS_CPU_SIGNAL", Cpu;
        pprof: "PERFLENS_PPROF", Cpu;
        flamegraph: "PERFLENS_FLAMEGRAPH", Cpu;
        flamegraph_paths: "PERFLENS_FLAMEGRAPH_PATHS", Cpu;
        folded: "PERFLENS_FOLDED", Cpu;
        // Heap profiling.
        heap_rate: "PERFLENS_HEAP_RATE", Heap;
        heap_seed: "PERFLENS_HEAP_SEED", Heap;
        heap_table: "PERFLENS_HEAP_TABLE", Heap;
        heap_stacks: "PERFLENS_HEAP_STACKS", Heap;
        pprof_heap: "PERFLENS_PPROF_HEAP", Heap;
        // The HTTP server.
        http: "PERFLENS_HTTP", Http;
        http_token: "PERFLENS_HTTP_TOKEN", Http;
        http_path_labels: "PERFLENS_HTTP_PATH_LABELS", Http;
    }
    repository {
        // Examples, benchmarks and scripts.
        "PERFLENS_EXAMPLE_ITERS",
        "PERFLENS_BENCH_ROUNDS",
        "PERFLENS_BENCH_ONLY",
        "PERFLENS_BENCH_BACKEND",
        "PERFLENS_BENCH_PRODUCERS",
        "PERFLENS_BENCH_REFRESHES",
        "PERFLENS_BENCH_INTERVAL_MS",
        "PERFLENS_BENCH_AGE_S",
        "PERFLENS_BENCH_TABS",
        "PERFLENS_REFRESH_TARGET",
        "PERFLENS_FUZZ_SECONDS",
        "PERFLENS_BLESS",
        // Tests: what a test sets for the child process it spawns (besides
        // the `*_CHILD` names of `REPOSITORY_FAMILIES`).
        "PERFLENS_DWARF_RSS_MODE",
        "PERFLENS_STOP_OWN_HANDLER",
        "PERFLENS_TEST_IGNORE_SIGTRAP",
        "PERFLENS_TOP_STOP",
    }
}

/// Families of names that belong to this repository, known as a whole:
/// the benchmarks' knobs (`PERFLENS_BENCH_*`) and the markers a test
/// sets for its child process (`PERFLENS_*_CHILD`), so that a new one is
/// never taken for a typo. (prefix, suffix) of the whole name.
pub(crate) const REPOSITORY_FAMILIES: &[(&str, &str)] =
    &[("PERFLENS_BENCH_", ""), ("PERFLENS_", "_CHILD")];

const PREFIX: &str = "PERFLENS_";

/// The value of the variable `name`, or `None` when it is unset, empty
/// or blank (an empty variable counts as unset, everywhere in perflens).
/// The one place perflens reads a setting from its environment: `name`
/// must be one of [`KNOWN`]'s program settings, so a setting cannot be
/// read that this module (and so `docs/configuration.md`, which a test
/// checks against it) does not know. A value that is not UTF-8 is
/// unset.
pub(crate) fn var(name: &'static str) -> Option<String> {
    debug_assert_known(name);
    Settings::read(name)
        .and_then(|v| v.into_string().ok())
        .filter(|v| !v.trim().is_empty())
}

/// [`var`] for a path, which may be any bytes; `None` when unset or
/// empty.
pub(crate) fn var_os(name: &'static str) -> Option<std::ffi::OsString> {
    debug_assert_known(name);
    Settings::read(name)
}

fn debug_assert_known(name: &str) {
    debug_assert!(
        KNOWN
            .iter()
            .any(|&(known, feature)| known == name && feature != Feature::Repository),
        "{name} is read but is not a program setting of settings::KNOWN"
    );
}

/// What a build needs to read `name`; `None` for a name perflens does not
/// know.
pub(crate) fn feature_of(name: &str) -> Option<Feature> {
    if let Some(&(_, feature)) = KNOWN.iter().find(|(known, _)| *known == name) {
        return Some(feature);
    }
    REPOSITORY_FAMILIES
        .iter()
        .any(|(prefix, suffix)| {
            name.len() > prefix.len() + suffix.len()
                && name.starts_with(prefix)
                && name.ends_with(suffix)
        })
        .then_some(Feature::Repository)
}

/// The warning lines (without the `[perflens] ` prefix) for the
/// environment `vars` (name, value) in a build with the features
/// `compiled`, in the order of `vars`: one line for each `PERFLENS_*`
/// variable whose feature is not in `compiled`, naming the feature, and
/// one for each name not in [`KNOWN`], naming the closest known one when
/// one is close. An empty (or blank) value is unset, as everywhere in
/// perflens, and warns about nothing.
pub(crate) fn check_env<N, V>(
    vars: impl IntoIterator<Item = (N, V)>,
    compiled: &[Feature],
) -> Vec<String>
where
    N: AsRef<str>,
    V: AsRef<str>,
{
    let mut lines = Vec::new();
    for (name, value) in vars {
        let (name, value) = (name.as_ref(), value.as_ref());
        if !name.starts_with(PREFIX) || value.trim().is_empty() {
            continue;
        }
        match feature_of(name) {
            Some(Feature::Repository) => {}
            Some(feature) if compiled.contains(&feature) => {}
            Some(feature) => lines.push(format!(
                "{name} is set but ignored: this build of perflens does not have the `{}` \
                 feature (turn it on in the features of the perflens dependency).",
                feature.name()
            )),
            None => lines.push(match closest(name) {
                Some(known) => {
                    format!("{name} is not a perflens setting: ignored. Did you mean {known}?")
                }
                None => format!(
                    "{name} is not a perflens setting, nor close to one: ignored \
                     (perflens's docs/configuration.md lists them)."
                ),
            }),
        }
    }
    lines
}

/// Prints [`check_process_env`]'s lines to stderr, each after
/// `[perflens] `, when the first session that reads the environment
/// starts: the environment is the process's, so a program that starts
/// one session per job is told once, not once per job.
pub(crate) fn warn_once() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        for line in check_process_env() {
            eprintln!("[perflens] {line}");
        }
    });
}

/// [`check_env`] on this process's environment, with this build's
/// features.
pub(crate) fn check_process_env() -> Vec<String> {
    check_env(
        std::env::vars_os().map(|(n, v)| {
            (
                n.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        }),
        Feature::compiled(),
    )
}

/// The known name closest to `name` (an unknown `PERFLENS_*` name): the
/// fewest edits (inserted, deleted or replaced characters, or two
/// neighbours swapped) between the parts after `PERFLENS_`, letter case
/// aside, and at most a third of the unknown part's length (at least 1),
/// so that a name unlike every known one gets no suggestion. Ties go to
/// the first in [`KNOWN`].
fn closest(name: &str) -> Option<&'static str> {
    let rest = name
        .strip_prefix(PREFIX)
        .unwrap_or(name)
        .to_ascii_uppercase();
    let limit = (rest.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'static str)> = None;
    for &(known, _) in KNOWN {
        let d = edit_distance(&rest, &known[PREFIX.len()..]);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, known));
        }
    }
    best.map(|(_, known)| known)
}

/// Edits from `a` to `b`: Levenshtein's insertions, deletions and
/// substitutions, plus the swap of two neighbouring characters (the
/// optimal string alignment distance), so that `JSNO` is one edit from
/// `JSON`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the (a.len() + 1) x (b.len() + 1) table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests;
