//! The symbolizer (lazy DWARF reader, addr2line fallback, symbol table)
//! on arbitrary bytes as an ELF file: it answers or gives up, never
//! panics, loops or allocates without bound.
//!
//! The lazy reader maps and `pread`s a file, so each input is written to
//! a file first. The addresses looked up are those of the input's own
//! text symbols (start and middle), which is where a report looks. An
//! input that crashed it goes to
//! `crates/perflens-sampler/tests/data/fuzz/dwarf_elf/`, which the
//! sampler's tests run.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::path::Path::new("/dev/shm");
        let dir = if dir.is_dir() {
            dir.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("perflens-fuzz-{}.elf", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(path, data).expect("write the scratch file");
    let probes = perflens_sampler::fuzzing::probes(data);
    let frames = perflens_sampler::fuzzing::symbolize_file(path, &probes);
    assert_eq!(frames.len(), probes.len());
    assert!(
        frames.iter().all(|f| !f.is_empty()),
        "an address without a frame"
    );
});
