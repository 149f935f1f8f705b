//! Lazy DWARF symbolization: the cost follows the compilation units the
//! sampled addresses fall in, not the size of the debug info.
//!
//! # Why not `addr2line::Context` alone
//!
//! `addr2line`'s `Context` walks every unit of `.debug_info` when it is
//! created: each unit's abbreviations, root entry, line-program header and
//! range list. For a 14 MB binary with line tables only, symbolizing seven
//! addresses maps about 15 MB of the file into the process (the kernel's
//! fault-around maps 64 KiB around every page touched, so even sparse reads
//! of headers spread over the sections map most of them) and allocates
//! several more; with hundreds of MB of DWARF it is proportionally worse.
//!
//! # What is parsed, and when
//!
//! * Up front: only `.debug_aranges`, into a table of (start, end, unit
//!   offset) sorted by start.
//! * Per address: the units whose aranges cover it. A unit is parsed on its
//!   first use (`gimli::Dwarf::unit`, its root entry, its line program's
//!   sequence boundaries, the address ranges of its `DW_TAG_subprogram`s)
//!   and cached by its offset in `.debug_info`. A function's inlined
//!   subroutines and names are parsed when an address falls in it; a line
//!   sequence's rows when an address falls in it.
//! * Only when needed (a cross-unit `DW_FORM_ref_addr` reference, or an
//!   address no arange claims): an index of every unit, built by reading
//!   unit headers with `pread` rather than through the mapping, so that it
//!   adds nothing to the resident set. Units absent from `.debug_aranges`
//!   are inspected there too (root entry and, lacking range attributes,
//!   the line program's sequences, which is what `addr2line` uses for such
//!   units), so an address covered only by such a unit is still found.
//!
//! # Keeping the resident set small
//!
//! The file is mapped, but what is read through the mapping does not stay
//! resident: everything kept is either copied out (tables of ranges, file
//! paths, rows) or re-read on demand, so the mapping's pages are dropped
//! (`MADV_DONTNEED`; they stay in the page cache) after each phase of a
//! unit's parse and every [`RELEASE_EVERY`] lookups. The reads that would
//! be spread thinly over large sections, and so map the most (the
//! kernel's fault-around maps up to 64 KiB around each page touched), use
//! `pread` instead of the mapping: unit headers while indexing, and
//! function names in `.debug_str`, which are only located when a function
//! is parsed and read when a frame shows them.
//!
//! # Same answers as addr2line
//!
//! The result for an address is what `addr2line`'s `find_frames` returns:
//! the same candidate units in the same order (the units' own ranges:
//! `DW_AT_ranges`, else aranges, else `DW_AT_low_pc`/`DW_AT_high_pc`, else
//! the line sequences; ordered by the end of the covering range), the same
//! function and inlined-subroutine searches over identically ordered
//! tables, the same name rules (linkage name, else name, else through
//! `DW_AT_abstract_origin`/`DW_AT_specification`, at most 16 steps), the
//! same file paths (compilation directory, include directory, file name;
//! DWARF 4 and 5 file numbering) and the same demangling (by the unit's
//! language).
//!
//! # Fallback
//!
//! [`LazyDwarf::open`] returns `None`, and the caller uses
//! `addr2line::Loader` for the whole module, when the file is not ELF, has
//! no `.debug_info` or no (or an empty) `.debug_aranges`, has compressed
//! debug sections (`SHF_COMPRESSED` or `.zdebug_*`), split DWARF sections,
//! or a `.gnu_debuglink`/`.gnu_debugaltlink` (debug info that lives in
//! another file). [`LazyDwarf::find_frames`] returns [`Lookup::Fallback`]
//! for one address whenever it cannot answer exactly: any DWARF parse
//! error (where `addr2line` may skip a unit or fail, and its behaviour is
//! then the reference), a split-DWARF skeleton unit, or an address no
//! arange covers when the unit index cannot be built. Nothing here panics
//! on malformed input, and nothing recurses on its structure (the inlining
//! tree and reference chains are walked with explicit stacks and limits).
//!
//! Known differences, by design: a unit whose `.debug_aranges` set
//! describes other addresses than its `DW_AT_ranges` is only found through
//! its aranges (compilers write both from the same data); an address that
//! both a listed unit and a unit missing from `.debug_aranges` claim, and
//! for which both have an answer, gets the listed unit's (overlapping
//! claims on real code do not occur in practice; `addr2line` orders the
//! two by range end); and where `addr2line` cannot build its context at
//! all (a malformed unit anywhere in `.debug_info`), this still answers
//! for the units it can read.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use gimli::{AttributeValue, EndianSlice, Endianity, RunTimeEndian, UnitOffset};

use perflens_sys::mapped::MappedFile;

type Slice<'a> = EndianSlice<'a, RunTimeEndian>;
type Dwarf<'a> = gimli::Dwarf<Slice<'a>>;
type Unit<'a> = gimli::Unit<Slice<'a>>;
type UnitRef<'d, 'a> = gimli::UnitRef<'d, Slice<'a>>;

/// Most `DW_AT_abstract_origin`/`DW_AT_specification` steps followed for
/// a name (the same bound as addr2line's).
const NAME_STEPS: usize = 16;
/// Lookups between releases of the mapping's pages when no unit was
/// parsed.
const RELEASE_EVERY: u32 = 64;
/// Bytes read first for a unit's root entry while indexing units.
const ROOT_PREFIX: u64 = 4096;
/// Largest unit or line program read whole while indexing units.
const MAX_READ: u64 = 64 << 20;

/// One frame of an address: innermost inlined function first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InlinedFrame {
    /// Demangled function name.
    pub name: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
}

/// The answer for one address.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The frames (empty: no debug info covers the address).
    Frames(Vec<InlinedFrame>),
    /// Not answerable exactly here: ask `addr2line::Loader`.
    Fallback,
}

/// Frames of `probe` from an `addr2line::Loader`, converted exactly as the
/// lazy path produces them.
pub(crate) fn loader_frames(loader: &addr2line::Loader, probe: u64) -> Vec<InlinedFrame> {
    let mut out = Vec::new();
    if let Ok(mut frames) = loader.find_frames(probe) {
        while let Ok(Some(f)) = frames.next() {
            let name = f
                .function
                .as_ref()
                .and_then(|n| n.demangle().ok().map(Cow::into_owned));
            let (file, line) = f
                .location
                .as_ref()
                .map_or((None, None), |l| (l.file.map(str::to_string), l.line));
            out.push(InlinedFrame { name, file, line });
        }
    }
    out
}

/// The lazy path cannot answer exactly (any DWARF error included).
#[derive(Clone, Copy, Debug)]
struct Fallback;

impl From<gimli::Error> for Fallback {
    fn from(_: gimli::Error) -> Self {
        Fallback
    }
}

type Res<T> = Result<T, Fallback>;

/// Lazy symbolizer for one ELF file. See the module documentation.
pub(crate) struct LazyDwarf {
    /// Borrows the bytes of `map`. Its `'static` really means "as long as
    /// `map`": `state` is declared first so it is dropped first, the
    /// mapping does not move when this struct does, and nothing borrowed
    /// from it leaves this struct (lookups return owned frames).
    state: State<'static>,
    /// Shared with `state.cache`, which reads the file with pread and
    /// releases pages as it goes.
    map: Rc<MappedFile>,
    /// Lookups since the mapping's pages were last released.
    since_release: u32,
}

struct State<'a> {
    dwarf: Dwarf<'a>,
    cache: Cache<'a>,
}

impl LazyDwarf {
    /// Maps `path` and parses its `.debug_aranges`; `None` when the lazy
    /// path does not apply to this file (see the module documentation).
    pub(crate) fn open(path: &Path) -> Option<LazyDwarf> {
        let map = Rc::new(MappedFile::open(path)?);
        // SAFETY: the bytes live in the mapping owned by `map`, which is
        // unmapped only when the last `Rc` of it is dropped. Both `Rc`s
        // end up in the returned struct: one in `state`, which holds every
        // borrow of these bytes, and one after it, dropped after it (field
        // order); no borrow of the bytes is handed out of `LazyDwarf`.
        let bytes: &'static [u8] = unsafe { &*(map.bytes() as *const [u8]) };
        let state = State::new(bytes, map.clone())?;
        // The aranges are copied out: none of the file needs to stay
        // resident.
        map.release();
        Some(LazyDwarf {
            state,
            map,
            since_release: 0,
        })
    }

    /// Frames of `probe` (a file virtual address), innermost first.
    pub(crate) fn find_frames(&mut self, probe: u64) -> Lookup {
        let State { dwarf, cache } = &mut self.state;
        let parsed = cache.parsed;
        let found = cache.lookup(dwarf, probe);
        // Everything kept is copied out or re-read on demand, so the pages
        // this lookup touched can go: after parsing a unit (which reads
        // all of its entries and line program), and now and then for the
        // few pages that cached lookups touch (names).
        self.since_release += 1;
        if cache.parsed != parsed || self.since_release >= RELEASE_EVERY {
            self.map.release();
            self.since_release = 0;
        }
        match found {
            Ok(frames) => Lookup::Frames(frames),
            Err(Fallback) => Lookup::Fallback,
        }
    }
}

/// Location of a section in the file, for `pread`.
#[derive(Clone, Copy, Default)]
struct FileRange {
    offset: u64,
    size: u64,
}

impl State<'static> {
    fn new(bytes: &'static [u8], map: Rc<MappedFile>) -> Option<State<'static>> {
        use object::{Object, ObjectSection};
        let file = object::File::parse(bytes).ok()?;
        if file.format() != object::BinaryFormat::Elf {
            return None;
        }
        for section in file.sections() {
            let name = section.name().unwrap_or("");
            if name.starts_with(".zdebug")
                || name.ends_with(".dwo")
                || name == ".gnu_debuglink"
                || name == ".gnu_debugaltlink"
            {
                return None;
            }
            if name.starts_with(".debug") {
                let range = section.compressed_file_range().ok()?;
                if range.format != object::CompressionFormat::None {
                    return None;
                }
            }
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let data = |name: &str| -> &'static [u8] {
            file.section_by_name(name)
                .and_then(|s| s.data().ok())
                .unwrap_or(&[])
        };
        let where_in_file = |name: &str| -> FileRange {
            file.section_by_name(name)
                .and_then(|s| s.file_range())
                .map_or_else(FileRange::default, |(offset, size)| FileRange {
                    offset,
                    size,
                })
        };
        if data(".debug_info").is_empty() || data(".debug_aranges").is_empty() {
            return None;
        }
        let dwarf: Dwarf<'static> =
            gimli::Dwarf::load(|id| Ok::<_, ()>(EndianSlice::new(data(id.name()), endian))).ok()?;
        let aranges = parse_aranges(&dwarf)?;
        let cache = Cache {
            map,
            endian,
            info: where_in_file(".debug_info"),
            abbrev: where_in_file(".debug_abbrev"),
            line: where_in_file(".debug_line"),
            strings: where_in_file(".debug_str"),
            aranges,
            units: HashMap::new(),
            cus: HashMap::new(),
            index: None,
            parsed: 0,
        };
        Some(State { dwarf, cache })
    }
}

/// Address ranges with a payload (a unit offset), sorted by start, with
/// the running maximum of the ends so that all ranges containing an
/// address are found by walking back from a binary search.
#[derive(Default)]
struct RangeTable {
    /// (start, end, payload), sorted by start.
    ranges: Vec<(u64, u64, u64)>,
    /// `max_end[i]`: the largest end among `ranges[..=i]`.
    max_end: Vec<u64>,
}

/// Everything parsed so far, keyed by unit offset in `.debug_info`.
struct Cache<'a> {
    /// The mapped file: for pread, and to release its pages.
    map: Rc<MappedFile>,
    endian: RunTimeEndian,
    info: FileRange,
    abbrev: FileRange,
    line: FileRange,
    strings: FileRange,
    /// `.debug_aranges`, payload: unit offset.
    aranges: RangeTable,
    /// Units parsed (for their own addresses or for names referenced from
    /// other units).
    units: HashMap<u64, Res<Rc<Unit<'a>>>>,
    /// Per compilation unit: what looking up addresses in it needs.
    cus: HashMap<u64, Res<Box<Cu<'a>>>>,
    /// The index of all units, built on first need.
    index: Option<Res<UnitIndex>>,
    /// Units parsed so far (each reads a whole unit's entries or header).
    parsed: u64,
}

/// All units of `.debug_info`, and the ranges of the compilation units
/// that `.debug_aranges` does not list.
struct UnitIndex {
    /// (start, end) of every unit, in section order.
    units: Vec<(u64, u64)>,
    /// Ranges of the units missing from `.debug_aranges`, payload: unit
    /// offset; `Err` if one of them could not be read.
    extra: Res<RangeTable>,
}

/// A compilation unit, ready for lookups.
struct Cu<'a> {
    unit: Rc<Unit<'a>>,
    lang: Option<gimli::DwLang>,
    /// The unit's own ranges (see [`Cache::build_cu`]).
    ranges: RangeTable,
    lines: Option<Lines<'a>>,
    /// Subprogram ranges, stably sorted by start.
    funcs: Vec<FuncRange>,
    /// Entry offset of each subprogram with ranges.
    func_dies: Vec<UnitOffset>,
    /// Parsed subprograms, by index in `func_dies`.
    details: HashMap<usize, Rc<Function<'a>>>,
}

#[derive(Clone, Copy)]
struct FuncRange {
    begin: u64,
    end: u64,
    func: usize,
}

/// A subprogram with its inlined subroutines.
struct Function<'a> {
    name: Option<Name<'a>>,
    inlined: Vec<Inlined<'a>>,
    /// Ranges of `inlined`, stably sorted by (inlining depth, start).
    inlined_ranges: Vec<InlinedRange>,
}

struct Inlined<'a> {
    name: Option<Name<'a>>,
    call_file: Option<u64>,
    call_line: u32,
}

#[derive(Clone, Copy)]
struct InlinedRange {
    begin: u64,
    end: u64,
    depth: usize,
    inlined: usize,
}

/// A unit's line program: file names and sequence bounds up front, rows
/// of a sequence when an address falls in it.
struct Lines<'a> {
    program: gimli::CompleteLineProgram<Slice<'a>>,
    files: Vec<String>,
    /// Sequences with at least one row, stably sorted by start.
    sequences: Vec<gimli::LineSequence<Slice<'a>>>,
    rows: HashMap<usize, Box<[Row]>>,
}

#[derive(Clone, Copy)]
struct Row {
    address: u64,
    file: u64,
    line: u32,
}

/// Low/high PC and range-list attributes of an entry.
#[derive(Default)]
struct RangeAttrs {
    low: Option<u64>,
    high: Option<u64>,
    size: Option<u64>,
    list: Option<gimli::RangeListsOffset>,
}

/// How a subprogram or inlined subroutine gets its name: attributes in
/// entry order, a linkage name always winning.
#[derive(Default)]
struct NameRule<'a> {
    name: Option<Name<'a>>,
}

/// A function name, read when a frame needs it.
#[derive(Clone, Copy)]
enum Name<'a> {
    /// In `.debug_str`, read with pread: names are spread over the whole
    /// section, and touching each through the mapping would make its
    /// 64 KiB neighbourhood resident (fault-around).
    Str { offset: u64, len: u64 },
    /// Anywhere else (a string in the entry itself, `.debug_line_str`).
    Slice(Slice<'a>),
}

mod functions;
mod index;
mod lines;
mod ranges;
mod units;

use functions::subprograms;
use ranges::parse_aranges;

#[cfg(test)]
mod tests;
