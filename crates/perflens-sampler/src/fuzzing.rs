//! Entry points for the fuzz targets in `fuzz/` (see `scripts/sanitize`);
//! hidden, not a stable API.

use std::path::Path;

use crate::Symbol;
use crate::modules::ModuleInfo;
use crate::symbolize::Symbolizer;

/// Symbolizes `probes` (addresses in the file's own address space) in the
/// ELF file at `path` as a report does: the lazy DWARF reader, `addr2line`
/// where it cannot answer, then the symbol table. One entry per probe,
/// never empty.
pub fn symbolize_file(path: &Path, probes: &[u64]) -> Vec<Vec<Symbol>> {
    let modules = [ModuleInfo::unloaded_file(path.to_path_buf())];
    let mut symbolizer = Symbolizer::new(&modules);
    probes.iter().map(|&p| symbolizer.symbolize(p)).collect()
}

/// Most addresses [`probes`] returns.
const MAX_PROBES: usize = 64;

/// The addresses the fuzz target looks up in the ELF file `data`: 0, a
/// page in, the start and middle of `.text`, and the start and middle of
/// text symbols (where a report looks), at most 64.
pub fn probes(data: &[u8]) -> Vec<u64> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
    let mut out = vec![0, 0x1000];
    if let Ok(file) = object::File::parse(data) {
        if let Some(text) = file.section_by_name(".text") {
            out.push(text.address());
            out.push(text.address().wrapping_add(text.size() / 2));
        }
        for sym in file.symbols().filter(|s| s.kind() == SymbolKind::Text) {
            if out.len() >= MAX_PROBES {
                break;
            }
            out.push(sym.address());
            out.push(sym.address().wrapping_add(sym.size() / 2));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSymbol};
    use std::path::PathBuf;

    /// A fuzzing seed: `fuzz/seeds/inlined.c` built by gcc with `-O2 -g`.
    fn seed() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/elf/c-dwarf5")
    }

    fn symbol(path: &Path, name: &str) -> (u64, u64) {
        let data = std::fs::read(path).expect("read the seed");
        let file = object::File::parse(&*data).expect("parse the seed");
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| (s.address(), s.size()))
            .unwrap_or_else(|| panic!("no {name} in the seed"))
    }

    #[test]
    fn a_file_on_disk_is_symbolized_with_inlined_frames() {
        let path = seed();
        let (work, size) = symbol(&path, "work");
        let frames = symbolize_file(&path, &(work..work + size).collect::<Vec<_>>());
        let outer: Vec<&Symbol> = frames.iter().filter_map(|f| f.last()).collect();
        assert!(outer.iter().all(|s| s.name == "work"), "{outer:?}");
        assert!(outer.iter().all(|s| {
            s.filename
                .as_deref()
                .is_some_and(|f| f.ends_with("inlined.c"))
        }));
        // gcc inlines sum_squares (and square) into work.
        assert!(
            frames
                .iter()
                .any(|f| f.iter().any(|s| s.name == "sum_squares")),
            "{frames:?}"
        );
    }

    #[test]
    fn truncated_and_garbage_files_give_unknown_frames() {
        let seed = std::fs::read(seed()).expect("read the seed");
        let dir = std::env::temp_dir().join(format!("perflens-fuzzing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.elf");
        for len in [0, 1, 64, seed.len() / 3, seed.len() / 2, seed.len() - 1] {
            std::fs::write(&path, &seed[..len]).unwrap();
            let frames = symbolize_file(&path, &[0, 0x1000, 0x1139, u64::MAX]);
            assert_eq!(frames.len(), 4);
            assert!(frames.iter().all(|f| !f.is_empty()));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every input the `dwarf_elf` fuzz target crashed on (kept in
    /// `tests/data/fuzz/dwarf_elf/`, named for the bug), as it ran it.
    #[test]
    fn fuzz_regressions_are_symbolized_without_panic() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz/dwarf_elf");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("the regression inputs") {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let probes = probes(&data);
            let frames = symbolize_file(&path, &probes);
            assert_eq!(frames.len(), probes.len(), "{}", path.display());
            n += 1;
        }
        assert!(n > 0, "no inputs in {}", dir.display());
    }
}
