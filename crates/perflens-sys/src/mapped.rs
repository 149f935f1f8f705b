//! A file's bytes, read-only, for the CPU sampler's symbolizer and DWARF
//! reader: on Linux the file mapped privately, so that the pages of an
//! object file's debug sections are read where they lie, without copying
//! the file; on the portable build the file read into memory.
//!
//! Entry points (the same in `linux.rs` and `portable.rs`):
//! [`MappedFile::open`], [`bytes`](MappedFile::bytes),
//! [`release`](MappedFile::release) and
//! [`read_exact_at`](MappedFile::read_exact_at).

pub use crate::imp::mapped::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_the_same_mapped_released_and_at_an_offset() {
        let path = std::env::temp_dir().join(format!("perflens-sys-mapped-{}", std::process::id()));
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = MappedFile::open(&path).unwrap();
        assert_eq!(f.bytes(), &data[..]);
        f.release();
        assert_eq!(f.bytes(), &data[..], "released pages read back the file");
        let mut buf = [0u8; 100];
        f.read_exact_at(&mut buf, 12_345).unwrap();
        assert_eq!(&buf[..], &data[12_345..12_445]);
        assert!(f.read_exact_at(&mut buf, 19_950).is_err(), "past the end");
        drop(f);
        std::fs::write(&path, b"").unwrap();
        assert!(MappedFile::open(&path).is_none(), "an empty file");
        std::fs::remove_file(&path).unwrap();
        assert!(MappedFile::open(&path).is_none(), "no file");
    }
}
