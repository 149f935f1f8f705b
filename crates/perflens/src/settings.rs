//! The `PERFLENS_*` environment variables: one table of every name
//! perflens knows ([`KNOWN`]), with the facade feature a build needs for
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
            #[cfg(feature = "http")]
            Feature::Http,
        ];
        ALL
    }
}

/// Every `PERFLENS_*` variable, with what a build needs to read it. The
/// program's settings first (a typo is matched to the first of the
/// closest names), then the repository's own. Documented in
/// docs/configuration.md, which a test checks against this table.
pub(crate) const KNOWN: &[(&str, Feature)] = &[
    // Outputs.
    ("PERFLENS_JSON", Feature::Enabled),
    ("PERFLENS_JSON_EVERY", Feature::Enabled),
    ("PERFLENS_HTML", Feature::Enabled),
    ("PERFLENS_FORMAT", Feature::Enabled),
    ("PERFLENS_PERCENTILES", Feature::Enabled),
    ("PERFLENS_LIMIT", Feature::Enabled),
    ("PERFLENS_WAIT_MIN", Feature::Enabled),
    // The live view.
    ("PERFLENS_LIVE", Feature::Enabled),
    ("PERFLENS_LIVE_KEEP", Feature::Enabled),
    // Recording.
    ("PERFLENS_MODE", Feature::Enabled),
    ("PERFLENS_SAMPLE_EVERY", Feature::Enabled),
    ("PERFLENS_SAMPLE_WARMUP", Feature::Enabled),
    ("PERFLENS_NODES", Feature::Enabled),
    ("PERFLENS_PATHS", Feature::Enabled),
    ("PERFLENS_STACK_DEPTH", Feature::Enabled),
    ("PERFLENS_RECURSION", Feature::Enabled),
    ("PERFLENS_CLOCK", Feature::Enabled),
    ("PERFLENS_FLOW_LATENCY", Feature::Enabled),
    // Trace mode.
    ("PERFLENS_TRACE", Feature::Enabled),
    ("PERFLENS_TRACE_BUFFER", Feature::Enabled),
    ("PERFLENS_TRACE_SHORT_THREAD_MS", Feature::Enabled),
    // CPU sampling.
    ("PERFLENS_CPU_HZ", Feature::Cpu),
    ("PERFLENS_CPU_SOURCE", Feature::Cpu),
    ("PERFLENS_CPU_KERNEL", Feature::Cpu),
    ("PERFLENS_CPU_SIGNAL", Feature::Cpu),
    ("PERFLENS_PPROF", Feature::Cpu),
    ("PERFLENS_FLAMEGRAPH", Feature::Cpu),
    ("PERFLENS_FLAMEGRAPH_PATHS", Feature::Cpu),
    ("PERFLENS_FOLDED", Feature::Cpu),
    // The HTTP server.
    ("PERFLENS_HTTP", Feature::Http),
    ("PERFLENS_HTTP_TOKEN", Feature::Http),
    ("PERFLENS_HTTP_PATH_LABELS", Feature::Http),
    // Examples, benchmarks and scripts.
    ("PERFLENS_EXAMPLE_ITERS", Feature::Repository),
    ("PERFLENS_BENCH_ROUNDS", Feature::Repository),
    ("PERFLENS_BENCH_ONLY", Feature::Repository),
    ("PERFLENS_BENCH_BACKEND", Feature::Repository),
    ("PERFLENS_BENCH_PRODUCERS", Feature::Repository),
    ("PERFLENS_BENCH_REFRESHES", Feature::Repository),
    ("PERFLENS_BENCH_INTERVAL_MS", Feature::Repository),
    ("PERFLENS_BENCH_AGE_S", Feature::Repository),
    ("PERFLENS_BENCH_TABS", Feature::Repository),
    ("PERFLENS_REFRESH_TARGET", Feature::Repository),
    ("PERFLENS_FUZZ_SECONDS", Feature::Repository),
    ("PERFLENS_BLESS", Feature::Repository),
    // Tests: what a test sets for the child process it spawns (besides
    // the `*_CHILD` names of `REPOSITORY_FAMILIES`).
    ("PERFLENS_DWARF_RSS_MODE", Feature::Repository),
    ("PERFLENS_STOP_OWN_HANDLER", Feature::Repository),
    ("PERFLENS_TEST_IGNORE_SIGTRAP", Feature::Repository),
    ("PERFLENS_TOP_STOP", Feature::Repository),
];

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
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// [`var`] for a path, which may be any bytes; `None` when unset or
/// empty.
pub(crate) fn var_os(name: &'static str) -> Option<std::ffi::OsString> {
    debug_assert_known(name);
    std::env::var_os(name).filter(|v| !v.is_empty())
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
mod tests {
    use super::*;

    const ALL: &[Feature] = &[Feature::Enabled, Feature::Cpu, Feature::Http];
    const ENABLED: &[Feature] = &[Feature::Enabled];

    fn check(vars: &[(&str, &str)], compiled: &[Feature]) -> Vec<String> {
        check_env(vars.iter().copied(), compiled)
    }

    #[test]
    fn edit_distance_counts_edits_and_swaps() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("JSON", "JSON"), 0);
        assert_eq!(edit_distance("JSNO", "JSON"), 1);
        assert_eq!(edit_distance("JSO", "JSON"), 1);
        assert_eq!(edit_distance("JSONN", "JSON"), 1);
        assert_eq!(edit_distance("JSAN", "JSON"), 1);
        assert_eq!(edit_distance("", "JSON"), 4);
        assert_eq!(edit_distance("JSON", ""), 4);
        assert_eq!(edit_distance("KITTEN", "SITTING"), 3);
        assert_eq!(edit_distance("CPUHZ", "CPU_HZ"), 1);
        assert_eq!(edit_distance("AB", "BA"), 1);
        assert_eq!(edit_distance("ABC", "CA"), 3);
    }

    #[test]
    fn a_typo_names_the_closest_known_variable() {
        assert_eq!(
            check(&[("PERFLENS_JSNO", "x")], ALL),
            ["PERFLENS_JSNO is not a perflens setting: ignored. Did you mean PERFLENS_JSON?"]
        );
        for (typo, meant) in [
            ("PERFLENS_CPU_HERTZ", "PERFLENS_CPU_HZ"),
            ("PERFLENS_CPUHZ", "PERFLENS_CPU_HZ"),
            ("PERFLENS_HTTP_TOKN", "PERFLENS_HTTP_TOKEN"),
            ("PERFLENS_TRACE_BUF", "PERFLENS_TRACE_BUFFER"),
            ("PERFLENS_json", "PERFLENS_JSON"),
            ("PERFLENS_JSON_EVRY", "PERFLENS_JSON_EVERY"),
            ("PERFLENS_FLAMEGRAPHS", "PERFLENS_FLAMEGRAPH"),
            ("PERFLENS_LIVEKEEP", "PERFLENS_LIVE_KEEP"),
            ("PERFLENS_STACK_DEPT", "PERFLENS_STACK_DEPTH"),
            ("PERFLENS_PERCENTILE", "PERFLENS_PERCENTILES"),
        ] {
            let lines = check(&[(typo, "1")], ALL);
            assert_eq!(lines.len(), 1, "{typo}: {lines:?}");
            assert!(
                lines[0].starts_with(&format!("{typo} is not a perflens setting"))
                    && lines[0].ends_with(&format!("Did you mean {meant}?")),
                "{typo}: {lines:?}"
            );
        }
    }

    #[test]
    fn a_name_unlike_every_known_one_gets_no_suggestion() {
        for name in [
            "PERFLENS_FOOBAR",
            "PERFLENS_X",
            "PERFLENS_",
            "PERFLENS_VERBOSE",
        ] {
            assert_eq!(
                check(&[(name, "1")], ALL),
                [format!(
                    "{name} is not a perflens setting, nor close to one: ignored \
                     (perflens's docs/configuration.md lists them)."
                )]
            );
        }
    }

    #[test]
    fn a_variable_of_a_feature_not_compiled_names_the_feature() {
        assert_eq!(
            check(&[("PERFLENS_HTTP", "127.0.0.1:0")], ENABLED),
            [
                "PERFLENS_HTTP is set but ignored: this build of perflens does not have the \
                 `http` feature (turn it on in the features of the perflens dependency)."
            ]
        );
        let lines = check(
            &[
                ("PERFLENS_CPU_HZ", "100"),
                ("PERFLENS_JSON", "out.json"),
                ("PERFLENS_PPROF", "cpu.pb.gz"),
            ],
            ENABLED,
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("PERFLENS_CPU_HZ is set but ignored")
                && lines[0].contains("`cpu`")
        );
        assert!(
            lines[1].starts_with("PERFLENS_PPROF is set but ignored") && lines[1].contains("`cpu`")
        );
        // With `cpu` but not `http`, only the HTTP variables warn.
        let lines = check(
            &[("PERFLENS_CPU_HZ", "100"), ("PERFLENS_HTTP_TOKEN", "t")],
            &[Feature::Enabled, Feature::Cpu],
        );
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("PERFLENS_HTTP_TOKEN is set but ignored"));
    }

    #[test]
    fn known_compiled_and_foreign_variables_say_nothing() {
        let every: Vec<(&str, &str)> = KNOWN.iter().map(|(n, _)| (*n, "1")).collect();
        assert_eq!(check(&every, ALL), Vec::<String>::new());
        let others = [
            ("PATH", "/bin"),
            ("RUST_LOG", "debug"),
            ("perflens_jsno", "x"),
            ("MY_PERFLENS_JSNO", "x"),
        ];
        assert_eq!(check(&others, ENABLED), Vec::<String>::new());
        // The repository's own variables are known in every build, the
        // families' too.
        let own = [
            ("PERFLENS_BENCH_ROUNDS", "3"),
            ("PERFLENS_BENCH_SOMETHING_NEW", "1"),
            ("PERFLENS_SOME_TEST_CHILD", "1"),
        ];
        assert_eq!(check(&own, &[]), Vec::<String>::new());
        // A family's prefix or suffix alone is not a name of it.
        assert_eq!(check(&[("PERFLENS_BENCH_", "1")], ALL).len(), 1);
        assert_eq!(check(&[("PERFLENS__CHILD", "1")], ALL).len(), 1);
    }

    #[test]
    fn an_empty_variable_is_unset() {
        assert_eq!(
            check(&[("PERFLENS_HTTP", ""), ("PERFLENS_JSNO", "  ")], ENABLED),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_warning_is_one_line_in_the_order_of_the_environment() {
        let lines = check(
            &[
                ("PERFLENS_JSNO", "x"),
                ("PERFLENS_HTTP", "1"),
                ("PERFLENS_ZZZZZZ", "1"),
            ],
            ENABLED,
        );
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("PERFLENS_JSNO "));
        assert!(lines[1].starts_with("PERFLENS_HTTP "));
        assert!(lines[2].starts_with("PERFLENS_ZZZZZZ "));
        assert!(lines.iter().all(|l| !l.contains('\n')));
    }

    #[test]
    fn the_table_has_each_name_once_and_only_perflens_names() {
        let mut names: Vec<&str> = KNOWN.iter().map(|(n, _)| *n).collect();
        assert!(
            names
                .iter()
                .all(|n| n.len() > PREFIX.len() && n.starts_with(PREFIX))
        );
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a name is in KNOWN twice");
    }

    /// The `"PERFLENS_..."` string literals of the repository's Rust
    /// sources (names read or set), and the `PERFLENS_...` names its
    /// scripts read.
    fn names_in_the_repository() -> Vec<(String, std::path::PathBuf)> {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            let entries =
                std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            for entry in entries {
                let path = entry.expect("a directory entry").path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if path.is_dir() {
                    if name != "target" && !name.starts_with('.') {
                        walk(&path, out);
                    }
                } else {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["crates", "scripts", "fuzz"] {
            walk(&root.join(dir), &mut files);
        }
        let mut found = Vec::new();
        for file in files {
            // The two files that set unknown names on purpose.
            if file.ends_with("perflens/src/settings.rs")
                || file.ends_with("unknown_and_uncompiled_settings_are_named_at_start.rs")
            {
                continue;
            }
            let is_rust = file.extension().is_some_and(|e| e == "rs");
            let is_script = file.parent().is_some_and(|p| p.ends_with("scripts"));
            if !is_rust && !is_script {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            // Rust: a literal that is a whole name. Scripts: `${NAME` or
            // `$NAME`.
            let starts: &[&str] = if is_rust {
                &["\"PERFLENS_"]
            } else {
                &["${PERFLENS_", "$PERFLENS_"]
            };
            for start in starts {
                for (at, _) in text.match_indices(start) {
                    let from = at + start.len() - PREFIX.len();
                    let rest = &text[from..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                        .unwrap_or(rest.len());
                    // `"PERFLENS_"` alone is the prefix, not a name.
                    if end == PREFIX.len() || (is_rust && !rest[end..].starts_with('"')) {
                        continue;
                    }
                    found.push((rest[..end].to_string(), file.clone()));
                }
            }
        }
        found
    }

    #[test]
    fn every_name_the_repository_uses_is_known() {
        let found = names_in_the_repository();
        assert!(
            found.iter().any(|(n, _)| n == "PERFLENS_JSON")
                && found.iter().any(|(n, _)| n == "PERFLENS_CPU_SOURCE")
                && found.iter().any(|(n, _)| n == "PERFLENS_FUZZ_SECONDS"),
            "the scan found too little: {found:?}"
        );
        let unknown: Vec<String> = found
            .iter()
            .filter(|(n, _)| feature_of(n).is_none())
            .map(|(n, f)| format!("{n} ({})", f.display()))
            .collect();
        assert!(
            unknown.is_empty(),
            "add these to settings::KNOWN (and docs/configuration.md): {unknown:?}"
        );
    }

    /// [`var`] and [`var_os`] are the only readers of a setting: no
    /// other file of the facade or the runtime reads the environment (the
    /// runtime's live view reads `XDG_RUNTIME_DIR`, which is no setting),
    /// and the sampler reads its `PERFLENS_CPU_*` through the reader the
    /// session hands it.
    #[test]
    fn only_this_module_reads_the_environment() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut readers = Vec::new();
        let mut dirs = vec![root.join("perflens/src"), root.join("perflens-core/src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.ends_with("perflens/src/settings.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    if (code.contains("env::var") || code.contains("getenv"))
                        && !code.contains("\"XDG_RUNTIME_DIR\"")
                    {
                        readers.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            readers.is_empty(),
            "read settings through settings::var:\n{}",
            readers.join("\n")
        );
        let cpu = std::fs::read_to_string(root.join("perflens/src/cpu.rs")).unwrap();
        assert!(cpu.contains(".env_reader(settings::var)"));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "PERFLENS_BENCH_ROUNDS is read but is not a program setting")]
    fn reading_a_name_that_is_no_setting_is_a_bug() {
        let _ = var("PERFLENS_BENCH_ROUNDS");
    }

    #[test]
    fn every_known_name_is_documented() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
        )
        .expect("read docs/configuration.md");
        let missing: Vec<&str> = KNOWN
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !readme.contains(&format!("`{n}`")) && !readme.contains(&format!("`{n}=")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in docs/configuration.md: {missing:?}"
        );
    }
}
