//! Native stacks of the heap profile (feature `heap`): perflens-sampler's
//! allocation-free unwinder takes the stack of each sampled allocation
//! (installed in perflens-core when a session starts), and its
//! symbolizer names the stacks when a report is built.

use perflens_core::RawSnapshot;
use perflens_sampler::Symbol;

/// Installs the stack walker for a session that samples the heap with
/// native stacks (made once per process: it reads the loaded modules'
/// unwind tables), or none. Where the unwinder does not run, the heap
/// profile has paths only, and the first such session says why.
pub(crate) fn install(heap: Option<&perflens_core::HeapOptions>) {
    if !heap.is_some_and(|h| h.stacks) {
        perflens_core::set_stack_walker(None);
        return;
    }
    let _internal = perflens_core::Internal::enter();
    match perflens_sampler::allocation_walker() {
        Ok(walk) => perflens_core::set_stack_walker(Some(walk)),
        Err(e) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "[perflens] heap: no native stacks ({e}); the heap profile has paths only"
                )
            });
            perflens_core::set_stack_walker(None);
        }
    }
}

/// Names the native stacks of `snap`'s heap profile (innermost first,
/// without the allocator's and the profiler's own frames), so that the
/// report built from it has them.
pub(crate) fn name(snap: &mut RawSnapshot) {
    let Some(heap) = snap.heap.as_mut() else {
        return;
    };
    let stacks: Vec<Vec<u64>> = (heap.stacks.iter())
        .filter(|s| !s.addrs.is_empty())
        .map(|s| s.addrs.clone())
        .collect();
    if stacks.is_empty() {
        return;
    }
    let mut frames = perflens_sampler::symbolize_allocation_stacks(&stacks).into_iter();
    for s in heap.stacks.iter_mut().filter(|s| !s.addrs.is_empty()) {
        let f = without_machinery(frames.next().unwrap_or_default());
        s.names = closures_named(&f);
    }
}

/// `name` without its generic arguments (`visit_seq<serde_json::de::
/// SeqAccess<R>>` is `visit_seq`, `f::<T>` is `f`), keeping a qualified
/// path's own angle brackets (`<Vec<u8> as Tr>::g` is `<Vec as Tr>::g`).
fn without_generic_args(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        let after_ident = out.ends_with(|p: char| p.is_alphanumeric() || p == '_' || p == '}');
        if c == '<' && (after_ident || out.ends_with("::") && out.len() > 2) {
            let (mut depth, mut prev) = (1, c);
            for d in chars.by_ref() {
                match d {
                    '<' => depth += 1,
                    '>' if prev != '-' => depth -= 1, // not `fn() -> T`'s arrow
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                prev = d;
            }
            if out.ends_with("::") {
                out.truncate(out.len() - 2); // a turbofish
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The frames' names, a closure's (`{closure#0}`: an inlined closure's
/// debug info names it without its path) prefixed by the function that
/// defines it, taken as the nearest caller from the same source file
/// (`app::load::{closure#0}`).
fn closures_named(frames: &[Symbol]) -> Vec<String> {
    (frames.iter().enumerate())
        .map(|(i, f)| {
            let name = without_generic_args(&f.name);
            if !name.starts_with("{closure") || f.filename.is_none() {
                return name;
            }
            let outer = (frames[i + 1..].iter())
                .find(|g| g.filename == f.filename && !g.name.starts_with("{closure"));
            match outer {
                Some(g) => format!("{}::{name}", without_generic_args(&g.name)),
                None => name,
            }
        })
        .collect()
}

/// `frames` (innermost first) without the frames on top that only carry
/// the allocation down to the allocator: the profiler's own, global
/// allocators, Rust's `alloc`, `core` and `std` libraries (a `Vec`'s
/// growth, `Box::new`, a `HashMap`'s insert) and `hashbrown` (the
/// `HashMap` inside `std`, and the crate): the first frame left is the
/// code that asked for the memory. A stack made only of those keeps them
/// all.
pub(crate) fn without_machinery(frames: Vec<Symbol>) -> Vec<Symbol> {
    match frames.iter().position(|f| !is_machinery(f)) {
        Some(i) => frames[i..].to_vec(),
        None => frames,
    }
}

/// Whether a frame carries an allocation down to the allocator. Inlined
/// functions are named without their path (line-tables-only debug info
/// has none), so their source file tells where they come from.
fn is_machinery(f: &Symbol) -> bool {
    let bare = f.name.trim_start_matches('<');
    const BY_NAME: [&str; 11] = [
        "__rustc::",
        "perflens::",
        "perflens_core::",
        "perflens_sampler::",
        "alloc::",
        "core::",
        "std::",
        "hashbrown::",
        "__rust_",
        "__rdl_",
        "__rg_",
    ];
    let file = f.filename.as_deref().unwrap_or("").replace('\\', "/");
    // `/rust/deps/`: the crates `std` is built from (its `hashbrown`).
    const BY_FILE: [&str; 7] = [
        "/library/alloc/",
        "/library/core/",
        "/library/std/",
        "/rust/deps/",
        "/hashbrown-",
        "/perflens-core",
        "/perflens-sampler",
    ];
    BY_NAME.iter().any(|p| bare.starts_with(p))
        || library_impl(&f.name)
        || BY_FILE.iter().any(|p| file.contains(p))
        || ((file.contains("/perflens/") || file.contains("/perflens-0."))
            && file.ends_with("/src/alloc.rs"))
}

/// Whether `name` is a method of a library trait's impl that carries an
/// allocation: an allocator's (`<MyAlloc as core::alloc::GlobalAlloc>::
/// alloc`), or one for a type of no crate's (`<[T] as alloc::slice::hack::
/// ConvertVec>::to_vec`, `<T as alloc::string::ToString>::to_string`). A
/// crate's own type implementing a library trait (`<app::Row as core::
/// fmt::Display>::fmt`) is that crate's code, and stays.
fn library_impl(name: &str) -> bool {
    let Some((self_ty, rest)) = name.strip_prefix('<').and_then(|n| n.split_once(" as ")) else {
        return false;
    };
    let library = ["alloc::", "core::", "std::", "hashbrown::"]
        .iter()
        .any(|p| rest.starts_with(p));
    let allocator = ["core::alloc::", "alloc::alloc::", "std::alloc::"]
        .iter()
        .any(|p| rest.starts_with(p));
    library && (allocator || !self_ty.contains("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, file: Option<&str>) -> Symbol {
        Symbol {
            name: name.to_string(),
            filename: file.map(str::to_string),
            lineno: None,
        }
    }

    #[test]
    fn the_allocators_frames_are_left_out_up_to_the_caller() {
        const STD: &str = "/rustc/0123abcd/library/alloc/src/vec/mod.rs";
        let stack = vec![
            frame(
                "here_regs",
                Some("/src/perflens-sampler/src/arch/x86_64.rs"),
            ),
            frame("perflens_sampler::allocations::walk_here", None),
            frame("perflens_core::heap::sample", None),
            frame(
                "count_alloc",
                Some("/home/u/.cargo/registry/perflens-core-0.1.0/src/alloc.rs"),
            ),
            frame(
                "<perflens::alloc::CountingAllocator as core::alloc::global::GlobalAlloc>::alloc",
                None,
            ),
            frame("__rust_alloc", None),
            frame("alloc::alloc::alloc", None),
            frame("try_allocate_in<alloc::alloc::Global>", Some(STD)),
            frame("from_elem<u8>", Some(STD)),
            frame("{closure#0}", Some("/work/app/src/main.rs")),
            frame("push<u8>", Some(STD)),
            frame("app::main", Some("/work/app/src/main.rs")),
        ];
        let names = closures_named(&without_machinery(stack));
        assert_eq!(names, ["app::main::{closure#0}", "push", "app::main"]);
        let generic = vec![frame(
            "<serde_json::value::de::ValueVisitor as serde::de::Visitor>::visit_seq<serde_json::de::SeqAccess<serde_json::read::StrRead>>",
            None,
        )];
        assert_eq!(
            closures_named(&generic),
            ["<serde_json::value::de::ValueVisitor as serde::de::Visitor>::visit_seq"]
        );
        assert_eq!(without_generic_args("f::<u8>"), "f");
        assert_eq!(
            without_generic_args("<Vec<u8> as a::Tr>::g"),
            "<Vec as a::Tr>::g"
        );
        assert_eq!(
            without_generic_args("{closure#0}<u8, fn() -> Vec<u8>>"),
            "{closure#0}"
        );
        // A HashMap's growth: std's wrapper and its hashbrown, named by
        // path (no debug info, or `debug = "limited"`) or inlined with a
        // bare name (line-tables-only debug info), and `to_vec`.
        const DEPS: &str = "/rust/deps/hashbrown-0.16.1/src/raw/alloc.rs";
        const MAP: &str = "/rustc/0123abcd/library/std/src/collections/hash/map.rs";
        let stack = vec![
            frame("__rustc::__rust_alloc", None),
            frame("do_alloc<alloc::alloc::Global>", Some(DEPS)),
            frame("hashbrown::raw::RawTable::reserve_rehash", None),
            frame("insert<alloc::vec::Vec<u8>>", Some(MAP)),
            frame("std::collections::hash::map::HashMap::insert", None),
            frame("<[T] as alloc::slice::hack::ConvertVec>::to_vec", None),
            frame("<alloc::vec::Vec<u8> as core::clone::Clone>::clone", None),
            frame("<app::Row as core::fmt::Display>::fmt", None),
            frame("app::store", Some("/work/app/src/main.rs")),
        ];
        assert_eq!(
            closures_named(&without_machinery(stack)),
            ["<app::Row as core::fmt::Display>::fmt", "app::store"]
        );
        let only = vec![
            frame("alloc::alloc::alloc", None),
            frame("core::fmt::write", None),
        ];
        assert_eq!(without_machinery(only.clone()), only);
    }
}
