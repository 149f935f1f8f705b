//! Callsites: one `static` per instrumented function.
//!
//! `#[measure]` puts a [`Callsite`] in a `static` inside the function. The
//! first call on any thread registers it in a process-wide registry (a
//! mutex, taken once per callsite per process) and caches the resulting
//! small integer id in the static; after that the hot path only does one
//! relaxed load of that id.
//!
//! Row names are resolved at registration: either the macro's `label`, or
//! the type name of a nested `fn __perflens_here() {}` declared inside the
//! measured function, which the compiler spells `krate::module::function::
//! __perflens_here` (methods: `krate::module::Type::method::...`). Each
//! name also gets a *salt*, a 64-bit FNV-1a hash of the name, from which
//! path ids are derived: the same function has the same salt in every run
//! and on every machine, so path ids are comparable across runs.

use crate::snapshot::{AwaitSiteInfo, CallsiteInfo, CallsiteKind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// Callsite id of the root pseudo-frame.
pub const ROOT_CALLSITE: u32 = 0;
/// Callsite id of the overflow pseudo-function.
pub const OVERFLOW_CALLSITE: u32 = 1;

/// Tagged value of a callsite that has no id yet.
pub(crate) const UNREGISTERED: u32 = u32::MAX;

/// One instrumented place in the source. Created by the macros in a
/// `static`; not meant to be built by hand.
pub struct Callsite {
    /// The tagged id ([`crate::block::tag`]) once registered, else
    /// [`UNREGISTERED`].
    tagged: AtomicU32,
    label: &'static str,
    here: fn() -> &'static str,
}

impl Callsite {
    /// A callsite named `label`, or, if `label` is empty, after the
    /// function whose nested item `here` names.
    pub const fn new(label: &'static str, here: fn() -> &'static str) -> Callsite {
        Callsite {
            tagged: AtomicU32::new(UNREGISTERED),
            label,
            here,
        }
    }

    /// Registers the callsite as `kind` (if it was not yet), so that its
    /// row is of that kind even before any call (the `tracing` layer
    /// registers a span name as async once a span of it is polled).
    pub fn register_as(&'static self, kind: CallsiteKind) {
        self.id(kind);
    }

    /// The row name of this callsite: its label, or the function it is
    /// in (allocates: cold paths only).
    pub(crate) fn name(&self) -> String {
        if self.label.is_empty() {
            normalize_name((self.here)())
        } else {
            self.label.to_string()
        }
    }

    /// The tagged id, or [`UNREGISTERED`] (which matches no table key
    /// and no frame cache, so the caller takes the slow path).
    #[inline(always)]
    pub(crate) fn tagged(&self) -> u32 {
        self.tagged.load(Ordering::Relaxed)
    }

    /// The registered id, registering on first use.
    #[inline(always)]
    pub(crate) fn id(&'static self, kind: CallsiteKind) -> u32 {
        let t = self.tagged.load(Ordering::Relaxed);
        if t != UNREGISTERED {
            t & !crate::block::TAG
        } else {
            self.register(kind)
        }
    }

    #[cold]
    #[inline(never)]
    fn register(&'static self, kind: CallsiteKind) -> u32 {
        let _internal = crate::hot::Internal::enter();
        let mut reg = registry();
        let t = self.tagged.load(Ordering::Relaxed);
        if t != UNREGISTERED {
            return t & !crate::block::TAG;
        }
        let name = self.name();
        self.register_locked(&mut reg, kind, name, None)
    }

    /// A callsite its owner names when it registers it (an await or a
    /// flow site, through [`Callsite::id_or`]).
    pub(crate) const fn named_by_owner() -> Callsite {
        Callsite::new("", unnamed)
    }

    /// The registered id; on first use, registers the callsite as what
    /// `describe` says (its name, kind and, for an await site, where it
    /// is): taken once per site per process.
    #[inline(always)]
    pub(crate) fn id_or(&'static self, describe: impl FnOnce() -> Described) -> u32 {
        let t = self.tagged.load(Ordering::Relaxed);
        if t != UNREGISTERED {
            t & !crate::block::TAG
        } else {
            self.register_described(describe)
        }
    }

    #[cold]
    #[inline(never)]
    fn register_described(&'static self, describe: impl FnOnce() -> Described) -> u32 {
        let _internal = crate::hot::Internal::enter();
        let (name, kind, info) = describe();
        let mut reg = registry();
        let t = self.tagged.load(Ordering::Relaxed);
        if t != UNREGISTERED {
            return t & !crate::block::TAG;
        }
        self.register_locked(&mut reg, kind, name, info)
    }

    /// Adds this callsite to the locked registry and publishes it.
    fn register_locked(
        &'static self,
        reg: &mut Vec<Entry>,
        kind: CallsiteKind,
        name: String,
        info: Option<AwaitInfo>,
    ) -> u32 {
        let salt = fnv1a(name.as_bytes());
        let id = reg.len() as u32;
        publish(id, kind, &name);
        if let Some(info) = &info {
            publish_await(id, info);
        }
        reg.push(Entry {
            name,
            kind,
            salt,
            await_info: info,
        });
        self.tagged.store(crate::block::tag(id), Ordering::Relaxed);
        id
    }
}

/// What a callsite named by its owner registers as: its name, its kind
/// and, for an await site, where it is.
pub(crate) type Described = (String, CallsiteKind, Option<AwaitInfo>);

/// The `here` of a callsite named by its owner: never called.
fn unnamed() -> &'static str {
    ""
}

/// A site's name from where it is in the source: `file:line:col`.
pub(crate) fn located(file: &str, line: u32, column: u32) -> String {
    format!("{file}:{line}:{column}")
}

/// Where an await site is in the source, as its static holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AwaitInfo {
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
    pub expr: &'static str,
}

pub(crate) struct Entry {
    name: String,
    kind: CallsiteKind,
    salt: u64,
    /// Await sites only.
    await_info: Option<AwaitInfo>,
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

pub(crate) fn registry() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if reg.is_empty() {
        reg.push(Entry {
            name: "<root>".into(),
            kind: CallsiteKind::Internal,
            salt: 0,
            await_info: None,
        });
        reg.push(Entry {
            name: "[overflow]".into(),
            kind: CallsiteKind::Internal,
            salt: fnv1a(b"[overflow]"),
            await_info: None,
        });
    }
    reg
}

/// Appends callsite `id` to the live session's names (if one runs).
fn publish(id: u32, kind: CallsiteKind, name: &str) {
    crate::hooks::emit(perflens_format::names::REC_CALLSITE, |r| {
        r.extend_from_slice(&id.to_le_bytes());
        r.push(kind_code(kind));
        r.extend_from_slice(name.as_bytes());
    });
}

/// Appends await site `id`'s source location to the live session's
/// names (if one runs), after its callsite record.
fn publish_await(id: u32, info: &AwaitInfo) {
    crate::hooks::emit(perflens_format::names::REC_AWAIT, |r| {
        r.extend_from_slice(&id.to_le_bytes());
        r.extend_from_slice(&info.line.to_le_bytes());
        r.extend_from_slice(&info.column.to_le_bytes());
        let file = &info.file.as_bytes()[..info.file.len().min(u16::MAX as usize)];
        r.extend_from_slice(&(file.len() as u16).to_le_bytes());
        r.extend_from_slice(file);
        r.extend_from_slice(info.expr.as_bytes());
    });
}

use perflens_format::names::kind_code;

/// Appends every callsite registered so far to the live session's names.
pub(crate) fn publish_all() {
    let reg = registry();
    for (id, e) in reg.iter().enumerate() {
        publish(id as u32, e.kind, &e.name);
        if let Some(info) = &e.await_info {
            publish_await(id as u32, info);
        }
    }
}

/// Every await site registered so far, by callsite id.
pub fn await_sites() -> Vec<AwaitSiteInfo> {
    let _internal = crate::hot::Internal::enter();
    registry()
        .iter()
        .enumerate()
        .filter_map(|(id, e)| {
            e.await_info.map(|i| AwaitSiteInfo {
                callsite: id as u32,
                file: i.file.to_string(),
                line: i.line,
                column: i.column,
                expr: i.expr.to_string(),
            })
        })
        .collect()
}

/// The salt of a registered callsite.
pub(crate) fn salt(id: u32) -> u64 {
    registry().get(id as usize).map_or(0, |e| e.salt)
}

/// Every registered callsite, by id.
pub(crate) fn all() -> Vec<CallsiteInfo> {
    registry()
        .iter()
        .map(|e| CallsiteInfo {
            name: e.name.clone(),
            kind: e.kind,
        })
        .collect()
}

/// 64-bit FNV-1a.
pub const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

/// Turns the compiler's type name of the marker fn into a row name.
///
/// `krate::m::f::__perflens_here` -> `krate::m::f`;
/// `krate::m::G<_>::f::__perflens_here` -> `krate::m::G::f`;
/// `<krate::m::S as krate::m::Tr>::f::__perflens_here` -> `krate::m::<S as Tr>::f`;
/// `{{closure}}` segments are dropped.
pub fn normalize_name(raw: &str) -> String {
    let raw = raw.strip_suffix("::__perflens_here").unwrap_or(raw);
    let mut out = if let Some(rest) = raw.strip_prefix('<') {
        // Qualified path: `<Ty as Trait>::rest`.
        match split_qualified(rest) {
            Some((ty, tr, tail)) => {
                let ty = strip_generics(ty);
                let tr = strip_generics(tr);
                let (module, ty_last) = ty.rsplit_once("::").unwrap_or(("", &ty));
                let tr_last = tr.rsplit("::").next().unwrap_or(&tr);
                let qualified = format!("<{ty_last} as {tr_last}>{}", strip_generics(tail));
                if module.is_empty() {
                    qualified
                } else {
                    format!("{module}::{qualified}")
                }
            }
            None => strip_generics(raw),
        }
    } else {
        strip_generics(raw)
    };
    while let Some(pos) = out.find("::{{closure}}") {
        out.replace_range(pos..pos + "::{{closure}}".len(), "");
    }
    out
}

/// Splits `Ty as Trait>::tail` at the top-level ` as ` and `>`.
fn split_qualified(s: &str) -> Option<(&str, &str, &str)> {
    let mut depth = 0usize;
    let mut as_at = None;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if depth == 0 => {
                let (ty, tr) = s[..i].split_at(as_at?);
                return Some((ty, &tr[4..], &s[i + 1..]));
            }
            '>' => depth -= 1,
            ' ' if depth == 0 && as_at.is_none() && s[i..].starts_with(" as ") => as_at = Some(i),
            _ => {}
        }
    }
    None
}

/// Removes every `<...>` group.
fn strip_generics(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalized() {
        assert_eq!(normalize_name("app::parse::__perflens_here"), "app::parse");
        assert_eq!(normalize_name("app::G<_>::m::__perflens_here"), "app::G::m");
        assert_eq!(
            normalize_name("<app::db::S as app::Tr>::t::__perflens_here"),
            "app::db::<S as Tr>::t"
        );
        assert_eq!(
            normalize_name("<S as core::fmt::Debug>::fmt::__perflens_here"),
            "<S as Debug>::fmt"
        );
        assert_eq!(
            normalize_name("<alloc::vec::Vec<u8> as app::Tr>::t::__perflens_here"),
            "alloc::vec::<Vec as Tr>::t"
        );
        assert_eq!(
            normalize_name("app::f::{{closure}}::__perflens_here"),
            "app::f"
        );
    }

    #[test]
    fn fnv_is_stable() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
