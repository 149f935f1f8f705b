//! Tests of `settings`: the warnings, the table of names against the
//! repository and its docs, and the one reader of the environment.

use super::*;

const ALL: &[Feature] = &[Feature::Enabled, Feature::Cpu, Feature::Heap, Feature::Http];
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
        lines[0].starts_with("PERFLENS_CPU_HZ is set but ignored") && lines[0].contains("`cpu`")
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
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
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
        // The files that set unknown names on purpose.
        if file.ends_with("perflens/src/settings.rs")
            || file.ends_with("perflens/src/settings/tests.rs")
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
            if path.ends_with("perflens/src/settings.rs")
                || path.ends_with("perflens/src/settings/tests.rs")
            {
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

/// Set in the child process of [`every_setting_is_a_field_read_from_its_own_variable`].
const FIELDS_CHILD: &str = "PERFLENS_SETTINGS_FIELDS_CHILD";

/// `Settings` has a field for each program setting of `KNOWN` and no
/// other, named after its variable, and `from_env` fills each field from
/// its own variable: a child process gets every setting set to a value
/// of its own and checks each field.
#[test]
fn every_setting_is_a_field_read_from_its_own_variable() {
    let program: Vec<&str> = (KNOWN.iter())
        .filter(|(_, f)| *f != Feature::Repository)
        .map(|(n, _)| *n)
        .collect();
    let fields: Vec<&str> = Settings::FIELDS.iter().map(|(_, n)| *n).collect();
    assert_eq!(
        fields, program,
        "Settings' fields are KNOWN's program settings"
    );
    for (field, name) in Settings::FIELDS {
        assert_eq!(
            format!("PERFLENS_{}", field.to_uppercase()),
            *name,
            "field {field} is named after its variable"
        );
    }
    if std::env::var_os(FIELDS_CHILD).is_some() {
        let settings = Settings::from_env();
        for (field, name) in Settings::FIELDS {
            assert_eq!(
                settings.text(name).as_deref(),
                Some(format!("value of {name}").as_str()),
                "field {field}"
            );
        }
        // Blank is unset, as everywhere in perflens; a name that is not a
        // program setting reads as nothing.
        assert_eq!(settings.text("PERFLENS_BLESS"), None);
        return;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "settings::tests::every_setting_is_a_field_read_from_its_own_variable",
            "--test-threads=1",
        ])
        .env(FIELDS_CHILD, "1")
        .env("PERFLENS_BLESS", "1");
    for name in &program {
        child.env(name, format!("value of {name}"));
    }
    let out = child.output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
