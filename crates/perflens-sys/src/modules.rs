//! The objects loaded in the process (the executable, the vDSO, shared
//! objects), as the dynamic loader lists them, and pins that keep a
//! shared object from being unloaded: what the CPU sampler builds its
//! unwinders and its symbol tables from.
//!
//! Entry points (the same in `linux.rs` and `portable.rs`): [`loaded`],
//! [`generation`], [`pin`] and [`PinnedObject`]. The portable
//! implementation lists nothing (no loader to ask).

pub use crate::imp::modules::*;

/// One loaded object: its name and program headers, copied out (none of
/// its memory is read).
#[derive(Clone, Debug)]
pub struct LoadedObject {
    /// The loader's name for it: a path for a shared object, empty for
    /// the executable, `linux-vdso.so.1` for the vDSO.
    pub name: String,
    /// Load bias: the address of a segment is its `vaddr` plus this.
    pub base: u64,
    /// Its program headers.
    pub segments: Vec<ObjectSegment>,
    /// The loader's count of objects ever loaded ([`generation`]) when
    /// this list was taken.
    pub generation: u64,
}

/// What a program header describes (the ones the sampler uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentKind {
    /// A loaded segment (`PT_LOAD`).
    Load,
    /// The `.eh_frame_hdr` section (`PT_GNU_EH_FRAME`).
    EhFrameHdr,
    /// Notes (`PT_NOTE`), which hold the build id.
    Note,
    /// Anything else.
    Other,
}

/// One program header of a loaded object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectSegment {
    /// What it describes.
    pub kind: SegmentKind,
    /// Its address before the load bias.
    pub vaddr: u64,
    /// Its size in memory.
    pub memsz: u64,
    /// Its size in the file.
    pub filesz: u64,
    /// Its offset in the file.
    pub offset: u64,
    /// Mapped executable.
    pub executable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", not(perflens_portable), not(perflens_posix)))]
    #[test]
    fn the_loader_lists_the_executable_first_and_pins_shared_objects() {
        let objects = loaded();
        let exe = &objects[0];
        assert!(exe.name.is_empty(), "{exe:?}");
        let here = the_loader_lists_the_executable_first_and_pins_shared_objects as *const ()
            as usize as u64;
        let holds = |o: &LoadedObject| {
            o.segments.iter().any(|s| {
                s.kind == SegmentKind::Load
                    && s.executable
                    && (o.base + s.vaddr..o.base + s.vaddr + s.memsz).contains(&here)
            })
        };
        assert!(holds(exe), "{exe:?}");
        assert!(
            exe.segments
                .iter()
                .any(|s| s.kind == SegmentKind::EhFrameHdr)
        );
        assert!(objects.iter().all(|o| o.generation == generation()));
        let shared = objects
            .iter()
            .find(|o| o.name.contains("libc.so"))
            .expect("the test binary links libc");
        let name = std::ffi::CString::new(shared.name.clone()).unwrap();
        let pinned = pin(&name).expect("a loaded object can be pinned");
        drop(pinned);
        // RTLD_NOLOAD: an object that is not loaded is not loaded by it.
        assert!(pin(c"libperflens-not-there.so").is_none());
    }

    #[cfg(any(not(target_os = "linux"), perflens_portable, perflens_posix))]
    #[test]
    fn the_portable_build_lists_nothing() {
        assert!(loaded().is_empty());
        assert_eq!(generation(), 0);
        assert!(pin(c"libc.so.6").is_none());
    }
}
