//! Loaded modules (the executable and shared objects), listed by the
//! loader when a session starts (`perflens_sys::modules`, which is
//! `dl_iterate_phdr` on Linux), and the framehop modules built from their
//! in-memory unwind sections.

use std::ffi::CStr;
use std::ops::{Deref, Range};
use std::path::PathBuf;

use perflens_sys::modules::{LoadedObject, PinnedObject, SegmentKind};

/// A byte range of loaded, read-only module memory (`.eh_frame_hdr`,
/// `.eh_frame`, the executable segment). Only modules that cannot be
/// unloaded get one: the executable, the vDSO, and shared objects pinned
/// with `dlopen(RTLD_NOLOAD)` for the whole session, so the memory stays
/// mapped.
#[derive(Clone, Copy)]
pub(crate) struct MemBytes {
    ptr: *const u8,
    len: usize,
}

// SAFETY: `MemBytes` points at immutable mapped module memory that is kept
// mapped (pinned) for as long as any unwinder using it exists.
unsafe impl Send for MemBytes {}
// SAFETY: see `Send`; the memory is only ever read.
unsafe impl Sync for MemBytes {}

impl Default for MemBytes {
    fn default() -> Self {
        MemBytes {
            ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
            len: 0,
        }
    }
}

impl Deref for MemBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` lies inside a loaded PT_LOAD segment of a
        // pinned module (or is the empty dangling slice).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// One loaded module.
#[derive(Clone, Debug)]
pub(crate) struct ModuleInfo {
    /// File path, or a bracketed name (`[vdso]`) for modules without a file.
    pub name: String,
    /// File to read debug info from, if the module has one.
    pub path: Option<PathBuf>,
    /// Load bias: avma = svma + base.
    pub base: u64,
    /// Lowest and highest address of the PT_LOAD segments (avma).
    pub avma: Range<u64>,
    /// File offset of the first PT_LOAD segment.
    pub file_offset: u64,
    /// GNU build id (raw bytes), empty if none.
    pub build_id: Vec<u8>,
    text_svma: Option<Range<u64>>,
    eh_frame_hdr_svma: Option<Range<u64>>,
    eh_frame_svma: Option<Range<u64>>,
}

impl ModuleInfo {
    fn mem(&self, svma: &Range<u64>) -> MemBytes {
        MemBytes {
            ptr: (svma.start + self.base) as *const u8,
            len: (svma.end - svma.start) as usize,
        }
    }

    /// The framehop module (unwind info from the module's own memory).
    pub(crate) fn framehop_module(&self) -> Option<framehop::Module<MemBytes>> {
        let hdr = self.eh_frame_hdr_svma.clone()?;
        let eh = self.eh_frame_svma.clone()?;
        let info = framehop::ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text_svma.clone(),
            text: self.text_svma.as_ref().map(|r| self.mem(r)),
            eh_frame_svma: Some(eh.clone()),
            eh_frame: Some(self.mem(&eh)),
            eh_frame_hdr_svma: Some(hdr.clone()),
            eh_frame_hdr: Some(self.mem(&hdr)),
            ..Default::default()
        };
        Some(framehop::Module::new(
            self.name.clone(),
            self.avma.clone(),
            self.base,
            info,
        ))
    }

    /// Whether `addr` (avma) lies in this module.
    pub(crate) fn contains(&self, addr: u64) -> bool {
        self.avma.contains(&addr)
    }

    /// The file at `path` as a module loaded at its own addresses (base 0)
    /// and covering every address, without unwind info: for symbolizing
    /// a file that is not loaded (the fuzz targets).
    pub(crate) fn unloaded_file(path: PathBuf) -> ModuleInfo {
        ModuleInfo {
            name: path.display().to_string(),
            path: Some(path),
            base: 0,
            avma: 0..u64::MAX,
            file_offset: 0,
            build_id: Vec::new(),
            text_svma: None,
            eh_frame_hdr_svma: None,
            eh_frame_svma: None,
        }
    }
}

/// Modules plus the pins that keep the shared objects loaded.
pub(crate) struct ModuleSet {
    pub modules: Vec<ModuleInfo>,
    /// The loader's generation when enumerated (to notice newly loaded
    /// modules).
    pub adds: u64,
    /// Held, not read: dropping the set drops the pins (after the
    /// modules, whose memory they keep mapped).
    #[allow(dead_code)]
    pins: Vec<PinnedObject>,
}

/// The loader's generation (cheap check for new modules).
pub(crate) fn current_adds() -> u64 {
    perflens_sys::modules::generation()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The executable: loaded for the life of the process.
    Exe,
    /// The vDSO: mapped by the kernel for the life of the process.
    Vdso,
    /// A shared object: can be unloaded unless pinned.
    Shared,
}

fn kind(i: usize, raw: &LoadedObject) -> Option<Kind> {
    if i == 0 && raw.name.is_empty() {
        Some(Kind::Exe)
    } else if raw.name.contains("linux-vdso") || raw.name.contains("linux-gate") {
        Some(Kind::Vdso)
    } else if raw.name.is_empty() {
        None
    } else {
        Some(Kind::Shared)
    }
}

/// Enumerates the loaded modules and pins the shared objects.
pub(crate) fn load_modules() -> ModuleSet {
    load_modules_with(perflens_sys::modules::pin)
}

/// [`load_modules`] with `pin` taking the references.
///
/// Module memory (build id note, `.eh_frame_hdr`, the unwind sections
/// framehop reads in the signal handler) is read only for modules that
/// cannot go away: the executable, the vDSO, and shared objects pinned
/// here. The objects are listed, pinned, then listed again, and a shared
/// object's memory is used only if the second listing shows it under a
/// pinned name, so it is the very object the pin holds. A shared object
/// that could not be pinned (being unloaded, say) keeps its name, path
/// and address range for symbolization but no unwind data, so no
/// unwinder ever reads its memory.
fn load_modules_with(pin: impl Fn(&CStr) -> Option<PinnedObject>) -> ModuleSet {
    let first = perflens_sys::modules::loaded();
    // The first listing's count: an object loaded from here on makes the
    // watcher's next `current_adds` differ and reload (and pin) it.
    let adds = first.first().map_or(0, |r| r.generation);
    let mut pins = Vec::new();
    let mut pinned: Vec<&str> = Vec::new();
    for (i, raw) in first.iter().enumerate() {
        if kind(i, raw) != Some(Kind::Shared) {
            continue;
        }
        if let Some(h) = std::ffi::CString::new(raw.name.clone())
            .ok()
            .and_then(|c| pin(&c))
        {
            pins.push(h);
            pinned.push(&raw.name);
        }
    }
    let raws = perflens_sys::modules::loaded();
    let exe = perflens_sys::proc::exe();
    let mut modules = Vec::new();
    for (i, raw) in raws.iter().enumerate() {
        let Some(k) = kind(i, raw) else {
            continue;
        };
        let stays = k != Kind::Shared || pinned.contains(&raw.name.as_str());
        let Some(mut m) = module_from_raw(raw, stays) else {
            continue;
        };
        match k {
            Kind::Exe => {
                m.name = exe
                    .as_ref()
                    .map_or_else(|| "[exe]".to_string(), |p| p.display().to_string());
                m.path = exe.clone();
            }
            Kind::Vdso => {
                m.name = "[vdso]".to_string();
                m.path = None;
            }
            Kind::Shared => {
                m.name = raw.name.clone();
                m.path = Some(PathBuf::from(&raw.name));
            }
        }
        modules.push(m);
    }
    ModuleSet {
        modules,
        adds,
        pins,
    }
}

/// The module `raw` describes. `read_memory`: the module cannot be
/// unloaded, so its build id and unwind sections are read from memory;
/// otherwise only the program headers (copied out) are used.
fn module_from_raw(raw: &LoadedObject, read_memory: bool) -> Option<ModuleInfo> {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut file_offset = 0;
    let mut text = None;
    let mut hdr = None;
    let mut loads = Vec::new();
    let mut notes = Vec::new();
    for ph in &raw.segments {
        match ph.kind {
            SegmentKind::Load => {
                if ph.vaddr < lo {
                    lo = ph.vaddr;
                    file_offset = ph.offset;
                }
                hi = hi.max(ph.vaddr + ph.memsz);
                let r = ph.vaddr..ph.vaddr + ph.filesz;
                if ph.executable && text.is_none() {
                    text = Some(r.clone());
                }
                loads.push(r);
            }
            SegmentKind::EhFrameHdr => hdr = Some(ph.vaddr..ph.vaddr + ph.memsz),
            SegmentKind::Note => notes.push(ph.vaddr..ph.vaddr + ph.memsz),
            SegmentKind::Other => {}
        }
    }
    if lo >= hi {
        return None;
    }
    let mut m = ModuleInfo {
        name: String::new(),
        path: None,
        base: raw.base,
        avma: lo + raw.base..hi + raw.base,
        file_offset,
        build_id: Vec::new(),
        text_svma: text,
        eh_frame_hdr_svma: None,
        eh_frame_svma: None,
    };
    if !read_memory {
        return Some(m);
    }
    for n in &notes {
        if let Some(id) = find_build_id(&m.mem(n)) {
            m.build_id = id;
            break;
        }
    }
    if let Some(hdr) = hdr {
        let bytes = m.mem(&hdr);
        if let Some(eh_avma) = eh_frame_ptr(&bytes, hdr.start + raw.base) {
            let eh_svma = eh_avma.wrapping_sub(raw.base);
            if let Some(seg) = loads.iter().find(|r| r.contains(&eh_svma)) {
                m.eh_frame_svma = Some(eh_svma..seg.end);
                m.eh_frame_hdr_svma = Some(hdr);
            }
        }
    }
    Some(m)
}

/// Decodes `eh_frame_ptr` from an `.eh_frame_hdr` at `hdr_avma`.
fn eh_frame_ptr(hdr: &[u8], hdr_avma: u64) -> Option<u64> {
    if hdr.len() < 12 || hdr[0] != 1 {
        return None;
    }
    let enc = hdr[1];
    let field = &hdr[4..];
    let value: i64 = match enc & 0x0f {
        0x00 | 0x04 | 0x0c => i64::from_le_bytes(field.get(..8)?.try_into().ok()?),
        0x03 => u32::from_le_bytes(field.get(..4)?.try_into().ok()?) as i64,
        0x0b => i32::from_le_bytes(field.get(..4)?.try_into().ok()?) as i64,
        _ => return None,
    };
    match enc & 0x70 {
        0x00 => Some(value as u64),
        0x10 => Some((hdr_avma + 4).wrapping_add(value as u64)),
        0x30 => Some(hdr_avma.wrapping_add(value as u64)),
        _ => None,
    }
}

fn find_build_id(notes: &[u8]) -> Option<Vec<u8>> {
    let mut p = 0usize;
    let align = |x: usize| (x + 3) & !3;
    while p + 12 <= notes.len() {
        let namesz = u32::from_le_bytes(notes[p..p + 4].try_into().ok()?) as usize;
        let descsz = u32::from_le_bytes(notes[p + 4..p + 8].try_into().ok()?) as usize;
        let ty = u32::from_le_bytes(notes[p + 8..p + 12].try_into().ok()?);
        let name_at = p + 12;
        let desc_at = name_at + align(namesz);
        let end = desc_at + align(descsz);
        if desc_at + descsz > notes.len() {
            return None;
        }
        if ty == 3 && namesz == 4 && &notes[name_at..name_at + 4] == b"GNU\0" {
            return Some(notes[desc_at..desc_at + descsz].to_vec());
        }
        p = end;
    }
    None
}

/// A snapshot of the process's mappings (`/proc/self/maps` on Linux):
/// the readable ones, sorted by start.
pub(crate) struct MapsSnapshot {
    /// (start, end, is the main thread's `[stack]`)
    pub ranges: Box<[(u64, u64, bool)]>,
}

impl MapsSnapshot {
    pub(crate) fn read() -> MapsSnapshot {
        let mut ranges: Vec<(u64, u64, bool)> = perflens_sys::proc::maps()
            .into_iter()
            .filter(|m| m.readable)
            .map(|m| (m.start, m.end, m.main_stack))
            .collect();
        ranges.sort_unstable();
        MapsSnapshot {
            ranges: ranges.into_boxed_slice(),
        }
    }

    /// The mapping containing `addr` (no allocation: usable in the handler).
    pub(crate) fn find(&self, addr: u64) -> Option<(u64, u64)> {
        let r = &self.ranges;
        let (mut lo, mut hi) = (0usize, r.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if r[mid].0 <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return None;
        }
        let (a, b, _) = r[lo - 1];
        (addr < b).then_some((a, b))
    }

    /// The main thread's `[stack]` mapping.
    pub(crate) fn main_stack(&self) -> Option<(u64, u64)> {
        self.ranges.iter().find(|r| r.2).map(|r| (r.0, r.1))
    }
}

#[cfg(all(test, target_os = "linux", not(perflens_portable), not(perflens_posix)))]
mod tests {
    use super::*;

    #[test]
    fn finds_own_modules_with_unwind_info() {
        let set = load_modules();
        assert!(!set.modules.is_empty());
        let exe = &set.modules[0];
        assert!(exe.path.is_some());
        assert!(exe.eh_frame_hdr_svma.is_some(), "{exe:?}");
        let here = finds_own_modules_with_unwind_info as *const () as usize as u64;
        assert!(set.modules.iter().any(|m| m.contains(here)));
        assert!(exe.framehop_module().is_some());
    }

    #[test]
    fn a_module_that_cannot_be_pinned_keeps_no_unwind_data() {
        let set = load_modules_with(|_| None);
        assert!(set.pins.is_empty());
        let exe = &set.modules[0];
        assert!(exe.framehop_module().is_some(), "{exe:?}");
        let shared: Vec<_> = set
            .modules
            .iter()
            .filter(|m| m.path.is_some() && m.name != exe.name)
            .collect();
        assert!(!shared.is_empty(), "the test binary links shared objects");
        for m in shared {
            assert!(m.framehop_module().is_none(), "{m:?}");
            assert!(m.eh_frame_svma.is_none() && m.build_id.is_empty(), "{m:?}");
            assert!(m.avma.start < m.avma.end, "kept for symbolization: {m:?}");
        }
        // Pinned, the same objects keep their unwind data.
        let set = load_modules();
        assert!(!set.pins.is_empty());
        assert!(
            set.modules[1..]
                .iter()
                .any(|m| m.framehop_module().is_some()),
            "{:?}",
            set.modules
        );
    }

    #[test]
    fn maps_find() {
        let m = MapsSnapshot::read();
        let x = 5u64;
        let addr = &x as *const u64 as u64;
        let (a, b) = m.find(addr).expect("stack mapped");
        assert!(a <= addr && addr < b);
    }
}
