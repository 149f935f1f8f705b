//! Symbolization after the fact (never on the signal path): DWARF of each
//! module's file, inlined frames innermost first, Rust and C++ names
//! demangled; the symbol table where there is no debug info.
//!
//! DWARF is read lazily ([`crate::dwarf`]: only `.debug_aranges` up front,
//! then just the compilation units the addresses fall in), which keeps the
//! memory added by symbolizing proportional to the code sampled. Modules
//! (or single addresses) the lazy reader cannot answer exactly go to
//! `addr2line::Loader`, which parses every unit up front.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::dwarf::{InlinedFrame, LazyDwarf, Lookup};
use crate::modules::ModuleInfo;
use perflens_sys::mapped::MappedFile;

/// Shows a progress line on stderr once symbolizing takes longer than this.
const PROGRESS_AFTER: Duration = Duration::from_millis(500);

/// One (possibly inlined) function at one address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Symbol {
    /// Demangled function name (or `module+0xoffset` when unknown).
    pub name: String,
    /// Source file, if debug info has it.
    pub filename: Option<String>,
    /// Source line, if debug info has it.
    pub lineno: Option<u32>,
}

impl Symbol {
    pub(crate) fn unknown(name: String) -> Symbol {
        Symbol {
            name,
            filename: None,
            lineno: None,
        }
    }

    /// The demangled name (pprof-rs compatibility).
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The name's bytes (pprof-rs: the raw symbol name; here the
    /// demangled one).
    pub fn raw_name(&self) -> &[u8] {
        self.name.as_bytes()
    }

    /// The name (pprof-rs: the undemangled name; debug info gives the
    /// demangled one).
    pub fn sys_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }

    /// The source file, or `Unknown`.
    pub fn filename(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.filename.as_deref().unwrap_or("Unknown"))
    }

    /// The source line, or 0.
    pub fn lineno(&self) -> u32 {
        self.lineno.unwrap_or(0)
    }
}

/// The name, as pprof-rs prints a symbol.
impl std::fmt::Display for Symbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

pub(crate) struct Symbolizer<'m> {
    modules: &'m [ModuleInfo],
    /// Lazy DWARF readers, by module index (`None`: not applicable).
    lazy: HashMap<usize, Option<LazyDwarf>>,
    /// addr2line, by module index, only created for a module when the lazy
    /// reader cannot answer for it.
    loaders: HashMap<usize, Option<addr2line::Loader>>,
    symtabs: HashMap<usize, SymTab>,
}

/// Function symbols of one file (`.symtab` and `.dynsym`) with sizes, so
/// an address past the end of the nearest symbol is not misnamed (stripped
/// libraries only export a few of their functions).
#[derive(Default)]
struct SymTab {
    /// (address, size, name), sorted by address.
    syms: Vec<(u64, u64, String)>,
}

impl SymTab {
    fn load(path: &std::path::Path) -> SymTab {
        use object::{Object, ObjectSymbol, SymbolKind};
        // Mapped, not read: only the symbol tables' pages are touched, so
        // a large binary with debug info does not add its size to RSS.
        let Some(data) = MappedFile::open(path) else {
            return SymTab::default();
        };
        let Ok(file) = object::File::parse(data.bytes()) else {
            return SymTab::default();
        };
        let mut syms: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        syms.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        syms.dedup_by_key(|s| s.0);
        SymTab { syms }
    }

    fn find(&self, probe: u64) -> Option<String> {
        let i = self.syms.partition_point(|s| s.0 <= probe).checked_sub(1)?;
        let (addr, size, name) = &self.syms[i];
        let next = self.syms.get(i + 1).map_or(u64::MAX, |s| s.0);
        // `probe >= addr` here; `addr + size` may overflow in a bad file.
        let inside = if *size > 0 {
            probe - addr < *size
        } else {
            probe < next
        };
        inside.then(|| demangle(name))
    }
}

/// `symbol` (a demangled symbol-table name) when it is the path-qualified
/// form of `dwarf`, a bare function name as line-tables-only debug info
/// gives it (`busy_for`, `call_once<fn(), ()>`); else `None`.
fn qualified(dwarf: &str, symbol: &str) -> Option<String> {
    if dwarf.contains("::") || !symbol.contains("::") {
        return None;
    }
    let base = without_generics(dwarf);
    let path = without_generics(symbol);
    let path = path.strip_suffix("::").unwrap_or(&path);
    (!base.is_empty() && path.ends_with(&format!("::{base}"))).then(|| symbol.to_string())
}

/// `name` with every `<...>` group (and a turbofish `::` before one)
/// removed: `a::f::<T>` and `<T as a::Tr>::g` become `a::f` and `::g`.
fn without_generics(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    let mut prev = ' ';
    for c in name.chars() {
        match c {
            '<' => {
                if depth == 0 && out.ends_with("::") {
                    out.truncate(out.len() - 2);
                }
                depth += 1;
            }
            // `->` in `fn() -> T` closes nothing.
            '>' if depth > 0 && prev != '-' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        prev = c;
    }
    out.trim().to_string()
}

fn demangle(name: &str) -> String {
    addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned()
}

impl<'m> Symbolizer<'m> {
    pub(crate) fn new(modules: &'m [ModuleInfo]) -> Self {
        Symbolizer {
            modules,
            lazy: HashMap::new(),
            loaders: HashMap::new(),
            symtabs: HashMap::new(),
        }
    }

    pub(crate) fn module_of(&self, addr: u64) -> Option<usize> {
        self.modules.iter().position(|m| m.contains(addr))
    }

    /// Frames for one address, innermost inlined frame first. `lookup` is
    /// the address to look up (return addresses minus one).
    pub(crate) fn symbolize(&mut self, lookup: u64) -> Vec<Symbol> {
        let Some(mi) = self.module_of(lookup) else {
            return vec![Symbol::unknown(format!("{lookup:#x}"))];
        };
        let module = &self.modules[mi];
        let probe = lookup - module.base;
        let short = module
            .name
            .rsplit('/')
            .next()
            .unwrap_or(&module.name)
            .to_string();
        let symtab = self.symtabs.entry(mi).or_insert_with(|| {
            module
                .path
                .as_ref()
                .map_or_else(SymTab::default, |p| SymTab::load(p))
        });
        let fallback = symtab
            .find(probe)
            .unwrap_or_else(|| format!("{short}+{probe:#x}"));
        let mut out: Vec<Symbol> = self
            .dwarf_frames(mi, probe)
            .into_iter()
            .map(|f| Symbol {
                name: f.name.unwrap_or_default(),
                filename: f.file,
                lineno: f.line,
            })
            .collect();
        if out.is_empty() {
            out.push(Symbol::unknown(fallback));
        } else {
            for s in out.iter_mut().filter(|s| s.name.is_empty()) {
                s.name = fallback.clone();
            }
            // The outermost frame is the function the symbol table names.
            // Line-tables-only debug info (a common release setting) names
            // functions without their path: take the symbol's path then.
            if let Some(last) = out.last_mut() {
                if let Some(full) = qualified(&last.name, &fallback) {
                    last.name = full;
                }
            }
        }
        out
    }

    /// DWARF frames of `probe` in module `mi`: from the lazy reader, else
    /// (a module or an address it cannot answer exactly) from addr2line.
    fn dwarf_frames(&mut self, mi: usize, probe: u64) -> Vec<InlinedFrame> {
        let module = &self.modules[mi];
        let lazy = self
            .lazy
            .entry(mi)
            .or_insert_with(|| module.path.as_ref().and_then(|p| LazyDwarf::open(p)));
        if let Some(lazy) = lazy {
            if let Lookup::Frames(frames) = lazy.find_frames(probe) {
                return frames;
            }
        }
        let loader = self.loaders.entry(mi).or_insert_with(|| {
            module
                .path
                .as_ref()
                .and_then(|p| addr2line::Loader::new(p).ok())
        });
        loader
            .as_ref()
            .map_or_else(Vec::new, |l| crate::dwarf::loader_frames(l, probe))
    }

    /// Symbolizes many addresses (leaf or return address) with a progress
    /// line on stderr if it takes a while and stderr is a terminal.
    pub(crate) fn symbolize_all(
        &mut self,
        addrs: &[(u64, bool)],
        progress: bool,
    ) -> HashMap<(u64, bool), Vec<Symbol>> {
        let start = Instant::now();
        // A progress line is for a person watching: on a terminal only,
        // never into a file or a pipe, where it would land in the middle
        // of what the program writes there (a JSON report on stderr).
        let progress = progress && std::io::stderr().is_terminal();
        let mut shown = false;
        let mut out = HashMap::with_capacity(addrs.len());
        for (i, &(addr, is_return)) in addrs.iter().enumerate() {
            let lookup = if is_return {
                addr.saturating_sub(1)
            } else {
                addr
            };
            out.insert((addr, is_return), self.symbolize(lookup));
            if progress && i % 64 == 0 && start.elapsed() > PROGRESS_AFTER {
                shown = true;
                eprint!(
                    "\rperflens-sampler: symbolizing {}/{} addresses",
                    i + 1,
                    addrs.len()
                );
                let _ = std::io::stderr().flush();
            }
        }
        if shown {
            eprintln!(
                "\rperflens-sampler: symbolized {} addresses in {:.1} s",
                addrs.len(),
                start.elapsed().as_secs_f64()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_dwarf_names_take_the_symbol_path() {
        let q = |d: &str, s: &str| qualified(d, s);
        assert_eq!(
            q("busy_for", "main_thread::common::busy_for").as_deref(),
            Some("main_thread::common::busy_for")
        );
        // Generics on either side do not matter; the symbol's spelling wins.
        assert_eq!(
            q(
                "call_once<fn(), ()>",
                "core::ops::function::FnOnce::call_once"
            )
            .as_deref(),
            Some("core::ops::function::FnOnce::call_once")
        );
        assert_eq!(
            q(
                "call_once<fn() -> i32>",
                "core::ops::function::FnOnce::call_once::<fn() -> i32>"
            )
            .as_deref(),
            Some("core::ops::function::FnOnce::call_once::<fn() -> i32>")
        );
        assert_eq!(
            q("fmt", "<app::Point as core::fmt::Display>::fmt").as_deref(),
            Some("<app::Point as core::fmt::Display>::fmt")
        );
        // Already qualified, a different function, or nothing to add.
        assert_eq!(q("app::run", "app::run"), None);
        assert_eq!(q("main", "main"), None);
        assert_eq!(q("helper", "app::other_helper"), None);
        assert_eq!(q("run", "app::run_fast"), None);
        assert_eq!(q("", "app::run"), None);
    }

    /// Found by the `dwarf_elf` fuzz target: a symbol whose address plus
    /// size overflows (a mutated `.symtab`) made the lookup panic.
    #[test]
    fn a_symbol_reaching_past_the_address_space_is_found() {
        let tab = SymTab {
            syms: vec![
                (0x1000, 0x10, "first".to_string()),
                (u64::MAX - 8, 0x20, "last".to_string()),
            ],
        };
        assert_eq!(tab.find(0x100f).as_deref(), Some("first"));
        assert_eq!(tab.find(0x1010), None);
        assert_eq!(tab.find(u64::MAX - 8).as_deref(), Some("last"));
        assert_eq!(tab.find(u64::MAX).as_deref(), Some("last"));
    }

    #[test]
    fn generics_are_stripped_with_their_turbofish() {
        assert_eq!(without_generics("a::f::<T>"), "a::f");
        assert_eq!(without_generics("<T as a::Tr>::g"), "::g");
        assert_eq!(without_generics("f<fn() -> Vec<u8>, ()>"), "f");
        assert_eq!(without_generics("plain"), "plain");
    }
}
