//! A small JSON Schema (draft 2020-12) validator for exactly the subset
//! `schema/perflens.report.1.json` uses. A keyword it does not know is an
//! error, so the schema cannot grow a rule this check silently skips.
//!
//! Strict mode also rejects object properties the schema does not
//! declare: the schema allows unknown fields (readers of `/1` must accept
//! additive fields), but our own writer must document every field it
//! emits.

use serde_json::{Map, Value};

pub fn validate(schema: &Value, doc: &Value, strict: bool) -> Vec<String> {
    let mut errors = Vec::new();
    Validator {
        root: schema,
        strict,
    }
    .check(schema, doc, "", &mut errors);
    errors
}

struct Validator<'a> {
    root: &'a Value,
    strict: bool,
}

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "title",
    "description",
    "$comment",
];

impl Validator<'_> {
    fn check(&self, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
        let Some(rules) = schema.as_object() else {
            errors.push(format!("{at}: schema is not an object"));
            return;
        };
        for (key, rule) in rules {
            match key.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "$ref" => match self.resolve(rule) {
                    Some(target) => self.check(target, v, at, errors),
                    None => errors.push(format!("{at}: cannot resolve $ref {rule}")),
                },
                "type" => {
                    let types: Vec<&str> = match rule {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                        _ => vec![],
                    };
                    if !types.iter().any(|t| has_type(v, t)) {
                        errors.push(format!("{at}: {v} is not of type {rule}"));
                    }
                }
                "const" if v != rule => errors.push(format!("{at}: {v} is not {rule}")),
                "enum" if !rule.as_array().is_some_and(|a| a.contains(v)) => {
                    errors.push(format!("{at}: {v} is not one of {rule}"))
                }
                "const" | "enum" => {}
                "required" => {
                    for name in rule
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        if v.as_object().is_some_and(|o| !o.contains_key(name)) {
                            errors.push(format!("{at}: missing required field {name:?}"));
                        }
                    }
                }
                "properties" | "additionalProperties" | "propertyNames" => {
                    if let Some(obj) = v.as_object() {
                        self.object(key, rules, obj, at, errors);
                    }
                }
                "items" => {
                    for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                        self.check(rule, item, &format!("{at}/{i}"), errors);
                    }
                }
                "minimum" | "maximum" | "exclusiveMinimum" => {
                    if let (Some(x), Some(bound)) = (v.as_f64(), rule.as_f64()) {
                        let ok = match key.as_str() {
                            "minimum" => x >= bound,
                            "maximum" => x <= bound,
                            _ => x > bound,
                        };
                        if !ok {
                            errors.push(format!("{at}: {v} violates {key} {bound}"));
                        }
                    }
                }
                "pattern" => {
                    if let (Some(s), Some(p)) = (v.as_str(), rule.as_str()) {
                        if !pattern_matches(p, s) {
                            errors.push(format!("{at}: {s:?} does not match {p:?}"));
                        }
                    }
                }
                "if" => {
                    let mut probe = Vec::new();
                    self.check(rule, v, at, &mut probe);
                    let branch = if probe.is_empty() { "then" } else { "else" };
                    if let Some(next) = rules.get(branch) {
                        self.check(next, v, at, errors);
                    }
                }
                "then" | "else" => {}
                "allOf" => {
                    for sub in rule.as_array().into_iter().flatten() {
                        self.check(sub, v, at, errors);
                    }
                }
                other => errors.push(format!(
                    "{at}: validator does not support keyword {other:?}"
                )),
            }
        }
    }

    /// The three object keywords, run once (when `key` is the first of
    /// them present), plus the strict-mode check.
    fn object(
        &self,
        key: &str,
        rules: &Map<String, Value>,
        obj: &Map<String, Value>,
        at: &str,
        errors: &mut Vec<String>,
    ) {
        let first = ["properties", "additionalProperties", "propertyNames"]
            .into_iter()
            .find(|k| rules.contains_key(*k));
        if first != Some(key) {
            return;
        }
        let props = rules.get("properties").and_then(Value::as_object);
        for (name, value) in obj {
            let here = format!("{at}/{name}");
            if let Some(names) = rules.get("propertyNames") {
                self.check(names, &Value::String(name.clone()), &here, errors);
            }
            match (
                props.and_then(|p| p.get(name)),
                rules.get("additionalProperties"),
            ) {
                (Some(s), _) => self.check(s, value, &here, errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{here}: not allowed")),
                (None, Some(s)) if s.is_object() => self.check(s, value, &here, errors),
                (None, _) if self.strict => {
                    errors.push(format!("{here}: field not declared in the schema"))
                }
                _ => {}
            }
        }
    }

    fn resolve(&self, reference: &Value) -> Option<&Value> {
        let name = reference.as_str()?.strip_prefix("#/$defs/")?;
        self.root.get("$defs")?.get(name)
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// One element of a pattern: the set of chars it accepts and how often.
struct Atom {
    accepts: Box<dyn Fn(char) -> bool>,
    min: usize,
    max: usize,
}

/// Regex subset: `^`/`$` anchors (required), literals, `\` escapes,
/// `[...]` classes with ranges, `.`, and `{n}`, `{n,m}`, `?`, `*`, `+`.
pub fn pattern_matches(pattern: &str, s: &str) -> bool {
    let body = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$'));
    let body: Vec<char> = body
        .expect("patterns must be anchored with ^ and $")
        .chars()
        .collect();
    let mut atoms = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let accepts: Box<dyn Fn(char) -> bool> = match body[i] {
            '[' => {
                let end = i + body[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .expect("unclosed [");
                let class: Vec<char> = body[i + 1..end].to_vec();
                i = end;
                Box::new(move |c| {
                    let mut k = 0;
                    while k < class.len() {
                        if k + 2 < class.len() && class[k + 1] == '-' {
                            if class[k] <= c && c <= class[k + 2] {
                                return true;
                            }
                            k += 3;
                        } else {
                            if class[k] == c {
                                return true;
                            }
                            k += 1;
                        }
                    }
                    false
                })
            }
            '.' => Box::new(|_| true),
            '\\' => {
                i += 1;
                let lit = body[i];
                Box::new(move |c| c == lit)
            }
            lit => Box::new(move |c| c == lit),
        };
        i += 1;
        let (min, max) = match body.get(i) {
            Some('?') => (0, 1),
            Some('*') => (0, usize::MAX),
            Some('+') => (1, usize::MAX),
            Some('{') => {
                let end = i + body[i..]
                    .iter()
                    .position(|&c| c == '}')
                    .expect("unclosed {");
                let text: String = body[i + 1..end].iter().collect();
                i = end;
                match text.split_once(',') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (text.parse().unwrap(), text.parse().unwrap()),
                }
            }
            _ => {
                i -= 1;
                (1, 1)
            }
        };
        i += 1;
        atoms.push(Atom { accepts, min, max });
    }
    let chars: Vec<char> = s.chars().collect();
    match_from(&atoms, &chars)
}

fn match_from(atoms: &[Atom], s: &[char]) -> bool {
    let Some((atom, rest)) = atoms.split_first() else {
        return s.is_empty();
    };
    let run = s
        .iter()
        .take_while(|&&c| (atom.accepts)(c))
        .count()
        .min(atom.max);
    (atom.min..=run).rev().any(|n| match_from(rest, &s[n..]))
}

/// The report's JSON Schema (`schema/perflens.report.1.json`).
pub fn report_schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/perflens.report.1.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `n`th JSON example (from 1) of `docs/report-schema.md`. The
/// document is part of the repository: a missing one fails the test.
pub fn documented_example(n: usize) -> String {
    let doc = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/report-schema.md");
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
    text.split("```json\n")
        .nth(n)
        .and_then(|t| t.split("```").next())
        .unwrap_or_else(|| panic!("{doc} has no JSON example number {n}"))
        .to_string()
}

/// Schema errors of `good` after `edit`, in non-strict mode.
pub fn errors_after(schema: &Value, good: &Value, edit: &dyn Fn(&mut Value)) -> Vec<String> {
    let mut doc = good.clone();
    edit(&mut doc);
    validate(schema, &doc, false)
}

/// An edit removing `key` from the object at JSON pointer `at`.
pub fn remove_key(at: &str, key: &'static str) -> impl Fn(&mut Value) {
    let at = at.to_string();
    move |d: &mut Value| {
        d.pointer_mut(&at)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(key);
    }
}
