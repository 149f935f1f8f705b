//! The loaded objects on Linux: `dl_iterate_phdr` lists them,
//! `dlopen(RTLD_NOLOAD)` pins one and `dlclose` lets it go.

use std::ffi::{CStr, c_void};

use crate::modules::{LoadedObject, ObjectSegment, SegmentKind};

/// The loader's count of objects ever loaded (`dlpi_adds`): it changes
/// when an object is loaded, so a list can be taken again then.
pub fn generation() -> u64 {
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `info` is valid for the callback; `data` is the `u64`
        // passed below.
        unsafe { *(data as *mut u64) = (*info).dlpi_adds };
        1
    }
    let mut adds = 0u64;
    // SAFETY: the callback only writes to `adds`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut adds as *mut u64 as *mut c_void) };
    adds
}

fn segment(ph: &libc::Elf64_Phdr) -> ObjectSegment {
    ObjectSegment {
        kind: match ph.p_type {
            libc::PT_LOAD => SegmentKind::Load,
            libc::PT_GNU_EH_FRAME => SegmentKind::EhFrameHdr,
            libc::PT_NOTE => SegmentKind::Note,
            _ => SegmentKind::Other,
        },
        vaddr: ph.p_vaddr,
        memsz: ph.p_memsz,
        filesz: ph.p_filesz,
        offset: ph.p_offset,
        executable: ph.p_flags & libc::PF_X != 0,
    }
}

/// The loaded objects in the loader's order (the executable first), with
/// names and program headers copied out; no object's memory is read.
pub fn loaded() -> Vec<LoadedObject> {
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `Vec<LoadedObject>` passed below; `info`
        // and the program headers it points to are valid during the
        // callback.
        unsafe {
            let out = &mut *(data as *mut Vec<LoadedObject>);
            let info = &*info;
            let name = if info.dlpi_name.is_null() {
                String::new()
            } else {
                CStr::from_ptr(info.dlpi_name)
                    .to_string_lossy()
                    .into_owned()
            };
            let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            out.push(LoadedObject {
                name,
                base: info.dlpi_addr,
                segments: phdrs.iter().map(segment).collect(),
                generation: info.dlpi_adds,
            });
        }
        0
    }
    let mut out: Vec<LoadedObject> = Vec::new();
    // SAFETY: the callback only appends to `out`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut out as *mut Vec<LoadedObject> as *mut c_void) };
    out
}

/// A reference on a loaded shared object: it is not unloaded until the
/// pin is dropped.
#[derive(Debug)]
pub struct PinnedObject(usize);

impl Drop for PinnedObject {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful dlopen and is closed
        // exactly once, here.
        unsafe { libc::dlclose(self.0 as *mut c_void) };
    }
}

/// Takes a reference on the already loaded object `name` with
/// `dlopen(RTLD_NOLOAD)` (which loads nothing); `None` if no such object
/// is loaded.
pub fn pin(name: &CStr) -> Option<PinnedObject> {
    // SAFETY: dlopen of an already loaded object with RTLD_NOLOAD only
    // takes a reference and loads nothing.
    let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    // `then`, not `then_some`: a pin of a null handle would dlclose(NULL)
    // as it is dropped.
    (!h.is_null()).then(|| PinnedObject(h as usize))
}
