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

use crate::symbolize::MappedFile;

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
pub(crate) struct Frame {
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
    Frames(Vec<Frame>),
    /// Not answerable exactly here: ask `addr2line::Loader`.
    Fallback,
}

/// Frames of `probe` from an `addr2line::Loader`, converted exactly as the
/// lazy path produces them.
pub(crate) fn loader_frames(loader: &addr2line::Loader, probe: u64) -> Vec<Frame> {
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
            out.push(Frame { name, file, line });
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

/// Every non-empty arange, as addr2line reads them (entries that fail to
/// convert are skipped). `None` if the section has no entry or its headers
/// do not parse (addr2line then fails too).
fn parse_aranges(dwarf: &Dwarf<'_>) -> Option<RangeTable> {
    let mut entries = Vec::new();
    let mut headers = dwarf.debug_aranges.headers();
    while let Some(header) = headers.next().ok()? {
        let cu = header.debug_info_offset().0 as u64;
        let mut iter = header.entries();
        loop {
            match iter.next() {
                Ok(Some(e)) if e.length() != 0 => {
                    entries.push((e.range().begin, e.range().end, cu));
                }
                Ok(Some(_)) | Err(_) => {}
                Ok(None) => break,
            }
        }
    }
    (!entries.is_empty()).then(|| RangeTable::new(entries))
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

impl RangeTable {
    fn new(mut ranges: Vec<(u64, u64, u64)>) -> RangeTable {
        ranges.sort_unstable();
        let mut max = 0;
        let max_end = ranges
            .iter()
            .map(|r| {
                max = max.max(r.1);
                max
            })
            .collect();
        RangeTable { ranges, max_end }
    }

    /// Calls `f(end, payload)` for every range containing `probe`.
    fn covering(&self, probe: u64, mut f: impl FnMut(u64, u64)) {
        let n = self.ranges.partition_point(|r| r.0 <= probe);
        for i in (0..n).rev() {
            if self.max_end[i] <= probe {
                break;
            }
            let (_, end, payload) = self.ranges[i];
            if end > probe {
                f(end, payload);
            }
        }
    }

    /// The smallest end of a range containing `probe`.
    fn min_covering_end(&self, probe: u64) -> Option<u64> {
        let mut best = None;
        self.covering(probe, |end, _| {
            best = Some(best.map_or(end, |b: u64| b.min(end)));
        });
        best
    }
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

impl RangeAttrs {
    /// Takes `attr` if it is one of the range attributes.
    fn read<'a>(&mut self, unit: UnitRef<'_, 'a>, attr: &gimli::Attribute<Slice<'a>>) -> Res<()> {
        match (attr.name(), attr.value()) {
            (gimli::DW_AT_low_pc, AttributeValue::Addr(a)) => self.low = Some(a),
            (gimli::DW_AT_low_pc, AttributeValue::DebugAddrIndex(i)) => {
                self.low = Some(unit.address(i)?);
            }
            (gimli::DW_AT_high_pc, AttributeValue::Addr(a)) => self.high = Some(a),
            (gimli::DW_AT_high_pc, AttributeValue::DebugAddrIndex(i)) => {
                self.high = Some(unit.address(i)?);
            }
            (gimli::DW_AT_high_pc, AttributeValue::Udata(n)) => self.size = Some(n),
            (gimli::DW_AT_ranges, value) => self.list = unit.attr_ranges_offset(value)?,
            _ => {}
        }
        Ok(())
    }

    /// Calls `f(begin, end)` for each non-empty range; true if any.
    fn each(&self, unit: UnitRef<'_, '_>, mut f: impl FnMut(u64, u64)) -> Res<bool> {
        let mut any = false;
        let mut add = |begin: u64, end: u64| {
            if begin < end {
                f(begin, end);
                any = true;
            }
        };
        if let Some(list) = self.list {
            let mut iter = unit.ranges(list)?;
            while let Some(r) = iter.next()? {
                add(r.begin, r.end);
            }
        } else if let (Some(begin), Some(end)) = (self.low, self.high) {
            add(begin, end);
        } else if let (Some(begin), Some(size)) = (self.low, self.size) {
            add(begin, begin.wrapping_add(size));
        }
        Ok(any)
    }
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

impl<'a> Cache<'a> {
    /// Frames of `probe`; `Err` to fall back to addr2line.
    fn lookup(&mut self, dwarf: &Dwarf<'a>, probe: u64) -> Res<Vec<Frame>> {
        let mut units = Vec::new();
        self.aranges.covering(probe, |_, cu| units.push(cu));
        if let Some(frames) = self.search(dwarf, units, probe)? {
            return Ok(frames);
        }
        // Units missing from .debug_aranges may still cover the address.
        let extra = match &self.index(dwarf)?.extra {
            Ok(extra) => extra,
            Err(_) => return Err(Fallback),
        };
        let mut units = Vec::new();
        extra.covering(probe, |_, cu| units.push(cu));
        Ok(self.search(dwarf, units, probe)?.unwrap_or_default())
    }

    /// Tries the candidate units in addr2line's order: by the end of their
    /// own range covering `probe`, then by offset. The first with a
    /// function or a line for `probe` answers.
    fn search(
        &mut self,
        dwarf: &Dwarf<'a>,
        mut units: Vec<u64>,
        probe: u64,
    ) -> Res<Option<Vec<Frame>>> {
        units.sort_unstable();
        units.dedup();
        let mut order = Vec::with_capacity(units.len());
        for off in units {
            if let Some(end) = self.cu(dwarf, off)?.ranges.min_covering_end(probe) {
                order.push((end, off));
            }
        }
        order.sort_unstable();
        for (_, off) in order {
            if let Some(frames) = self.frames_in(dwarf, off, probe)? {
                return Ok(Some(frames));
            }
        }
        Ok(None)
    }

    /// A unit, parsed on first use.
    fn unit(&mut self, dwarf: &Dwarf<'a>, off: u64) -> Res<Rc<Unit<'a>>> {
        if let Some(unit) = self.units.get(&off) {
            return unit.clone();
        }
        let parse = || -> Res<Rc<Unit<'a>>> {
            let offset = gimli::DebugInfoOffset(usize::try_from(off).map_err(|_| Fallback)?);
            let header = dwarf.debug_info.header_from_offset(offset)?;
            Ok(Rc::new(dwarf.unit(header)?))
        };
        let unit = parse();
        self.parsed += 1;
        self.units.insert(off, unit.clone());
        unit
    }

    /// A compilation unit's lookup data, built on first use.
    fn cu(&mut self, dwarf: &Dwarf<'a>, off: u64) -> Res<&mut Cu<'a>> {
        if !self.cus.contains_key(&off) {
            let cu = self.build_cu(dwarf, off).map(Box::new);
            self.cus.insert(off, cu);
        }
        match self.cus.get_mut(&off) {
            Some(Ok(cu)) => Ok(cu),
            _ => Err(Fallback),
        }
    }

    /// Parses a unit for lookups. Its own ranges are chosen as addr2line
    /// chooses them: `DW_AT_ranges`, else its aranges, else
    /// `DW_AT_low_pc`/`DW_AT_high_pc`, else its line sequences.
    fn build_cu(&mut self, dwarf: &Dwarf<'a>, off: u64) -> Res<Cu<'a>> {
        self.parsed += 1;
        let unit = self.unit(dwarf, off)?;
        if unit.dwo_id.is_some() {
            // Split DWARF: addr2line loads the .dwo.
            return Err(Fallback);
        }
        let mut cu = Cu {
            unit: unit.clone(),
            lang: None,
            ranges: RangeTable::default(),
            lines: None,
            funcs: Vec::new(),
            func_dies: Vec::new(),
            details: HashMap::new(),
        };
        // Type and partial units cover no addresses.
        if !matches!(unit.header.type_(), gimli::UnitType::Compilation) {
            return Ok(cu);
        }
        let uref = UnitRef::new(dwarf, &unit);
        let mut entries = uref.entries_raw(None)?;
        let Some(root) = entries.read_abbreviation()? else {
            return Ok(cu);
        };
        let mut attrs = RangeAttrs::default();
        for spec in root.attributes() {
            let attr = entries.read_attribute(*spec)?;
            if let (gimli::DW_AT_language, AttributeValue::Language(lang)) =
                (attr.name(), attr.value())
            {
                cu.lang = Some(lang);
            }
            attrs.read(uref, &attr)?;
        }
        if let Some(program) = &unit.line_program {
            cu.lines = Some(Lines::parse(uref, program.clone())?);
            // Each phase reads a whole part of the unit once; what it keeps
            // is copied out or re-read on demand. Releasing in between
            // bounds the resident set by the largest phase.
            self.map.release();
        }

        let mut ranges = Vec::new();
        if attrs.list.is_none() {
            ranges.extend(self.aranges.ranges.iter().filter(|r| r.2 == off).copied());
        }
        if ranges.is_empty() {
            attrs.each(uref, |b, e| ranges.push((b, e, off)))?;
        }
        if ranges.is_empty() {
            if let Some(lines) = &cu.lines {
                ranges.extend(lines.sequences.iter().map(|s| (s.start, s.end, off)));
            }
        }
        cu.ranges = RangeTable::new(ranges);
        self.map.release();

        let (funcs, dies) = subprograms(uref)?;
        cu.funcs = funcs;
        cu.func_dies = dies;
        self.map.release();
        Ok(cu)
    }

    /// The frames of `probe` in one unit: `None` if the unit has neither a
    /// function nor a line for it.
    fn frames_in(&mut self, dwarf: &Dwarf<'a>, off: u64, probe: u64) -> Res<Option<Vec<Frame>>> {
        let cu = self.cu(dwarf, off)?;
        let func = cu
            .funcs
            .binary_search_by(|f| {
                if probe < f.begin {
                    Ordering::Greater
                } else if probe >= f.end {
                    Ordering::Less
                } else {
                    Ordering::Equal
                }
            })
            .ok()
            .map(|i| cu.funcs[i].func);
        let function = match func {
            Some(func) => Some(self.function(dwarf, off, func)?),
            None => None,
        };
        let cu = self.cu(dwarf, off)?;
        let lang = cu.lang;
        let location = match cu.lines.as_mut() {
            Some(lines) => lines.find(probe)?,
            None => None,
        };
        let Some(function) = function else {
            return Ok(location.map(|(file, line)| {
                vec![Frame {
                    name: None,
                    file,
                    line,
                }]
            }));
        };
        // Innermost first: each inlined subroutine at the location within
        // it, then its caller at the subroutine's call site.
        let mut frames = Vec::new();
        let (mut file, mut line) = location.unwrap_or((None, None));
        for inlined in function.inlined_at(probe).into_iter().rev() {
            let inlined = &function.inlined[inlined];
            frames.push((inlined.name, file, line));
            file = inlined
                .call_file
                .and_then(|f| cu.lines.as_ref()?.file(f).map(str::to_string));
            line = (inlined.call_line != 0).then_some(inlined.call_line);
        }
        frames.push((function.name, file, line));
        let frames = frames
            .into_iter()
            .map(|(name, file, line)| {
                Ok(Frame {
                    name: name.map(|n| self.name(n, lang)).transpose()?,
                    file,
                    line,
                })
            })
            .collect::<Res<Vec<Frame>>>()?;
        Ok(Some(frames))
    }

    /// A name as a frame shows it: demangled by the unit's language.
    fn name(&self, name: Name<'a>, lang: Option<gimli::DwLang>) -> Res<String> {
        let raw = match name {
            Name::Slice(s) => s.to_string_lossy(),
            Name::Str { offset, len } => {
                let mut buf = vec![0; usize::try_from(len).map_err(|_| Fallback)?];
                self.read(self.strings, offset, &mut buf)?;
                Cow::Owned(String::from_utf8_lossy(&buf).into_owned())
            }
        };
        Ok(addr2line::demangle_auto(raw, lang).into_owned())
    }

    /// A subprogram of a unit with its inlined subroutines, parsed on first
    /// use.
    fn function(&mut self, dwarf: &Dwarf<'a>, off: u64, func: usize) -> Res<Rc<Function<'a>>> {
        let cu = self.cu(dwarf, off)?;
        if let Some(f) = cu.details.get(&func) {
            return Ok(f.clone());
        }
        let unit = cu.unit.clone();
        let die = *cu.func_dies.get(func).ok_or(Fallback)?;
        let f = Rc::new(self.parse_function(dwarf, off, &unit, die)?);
        self.cu(dwarf, off)?.details.insert(func, f.clone());
        Ok(f)
    }

    fn parse_function(
        &mut self,
        dwarf: &Dwarf<'a>,
        off: u64,
        unit: &Unit<'a>,
        die: UnitOffset,
    ) -> Res<Function<'a>> {
        let uref = UnitRef::new(dwarf, unit);
        let mut entries = uref.entries_raw(Some(die))?;
        let depth = entries.next_depth();
        let abbrev = entries.read_abbreviation()?.ok_or(Fallback)?;
        let mut name = NameRule::default();
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            self.apply_name(dwarf, off, uref, &attr, &mut name)?;
        }

        let mut inlined = Vec::new();
        let mut inlined_ranges = Vec::new();
        // (entry depth, inlining depth) of the open inlined subroutines,
        // the subprogram itself at the bottom: an explicit stack instead
        // of recursion, however deep the entries nest.
        let mut open: Vec<(isize, usize)> = vec![(depth, 0)];
        loop {
            let next = entries.next_depth();
            while open.last().is_some_and(|&(d, _)| next <= d) {
                open.pop();
            }
            let Some(&(_, inline_depth)) = open.last() else {
                break;
            };
            let Some(abbrev) = entries.read_abbreviation()? else {
                continue;
            };
            match abbrev.tag() {
                gimli::DW_TAG_subprogram => {
                    // A nested function: not part of this one's inlining.
                    entries.skip_attributes(abbrev.attributes())?;
                    while entries.next_depth() > next {
                        if let Some(a) = entries.read_abbreviation()? {
                            entries.skip_attributes(a.attributes())?;
                        }
                    }
                }
                gimli::DW_TAG_inlined_subroutine => {
                    let mut name = NameRule::default();
                    let mut ranges = RangeAttrs::default();
                    let mut call_file = None;
                    let mut call_line = 0;
                    for spec in abbrev.attributes() {
                        let attr = entries.read_attribute(*spec)?;
                        match (attr.name(), attr.value()) {
                            (gimli::DW_AT_call_file, AttributeValue::FileIndex(f)) => {
                                // DWARF 5 numbers files from 0; before, 0
                                // means no file.
                                if f > 0 || unit.header.version() >= 5 {
                                    call_file = Some(f);
                                }
                            }
                            (gimli::DW_AT_call_line, _) => {
                                call_line = attr.udata_value().unwrap_or(0) as u32;
                            }
                            _ => {
                                ranges.read(uref, &attr)?;
                                self.apply_name(dwarf, off, uref, &attr, &mut name)?;
                            }
                        }
                    }
                    let index = inlined.len();
                    inlined.push(Inlined {
                        name: name.name,
                        call_file,
                        call_line,
                    });
                    ranges.each(uref, |begin, end| {
                        inlined_ranges.push(InlinedRange {
                            begin,
                            end,
                            depth: inline_depth,
                            inlined: index,
                        });
                    })?;
                    open.push((next, inline_depth + 1));
                }
                _ => entries.skip_attributes(abbrev.attributes())?,
            }
        }
        inlined_ranges.sort_by_key(|r| (r.depth, r.begin));
        Ok(Function {
            name: name.name,
            inlined,
            inlined_ranges,
        })
    }

    /// Applies one attribute of a subprogram or inlined subroutine to its
    /// name: a linkage name always, a plain name or a referenced entry's
    /// name only while there is none yet.
    fn apply_name(
        &mut self,
        dwarf: &Dwarf<'a>,
        off: u64,
        uref: UnitRef<'_, 'a>,
        attr: &gimli::Attribute<Slice<'a>>,
        rule: &mut NameRule<'a>,
    ) -> Res<()> {
        match attr.name() {
            gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                if let Some(s) = self.string(uref, attr.value()) {
                    rule.name = Some(s);
                }
            }
            gimli::DW_AT_name if rule.name.is_none() => {
                rule.name = self.string(uref, attr.value());
            }
            gimli::DW_AT_abstract_origin | gimli::DW_AT_specification if rule.name.is_none() => {
                rule.name = self.referenced_name(dwarf, off, attr.value())?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The name of the entry `value` refers to (from an entry of unit
    /// `off`), following further references at most [`NAME_STEPS`] times
    /// in all.
    fn referenced_name(
        &mut self,
        dwarf: &Dwarf<'a>,
        mut off: u64,
        mut value: AttributeValue<Slice<'a>>,
    ) -> Res<Option<Name<'a>>> {
        for _ in 0..NAME_STEPS {
            let (unit_off, die) = match value {
                AttributeValue::UnitRef(die) => (off, die),
                AttributeValue::DebugInfoRef(target) => self.locate(dwarf, target)?,
                // References into a supplementary file (none is loaded)
                // and anything else name nothing.
                _ => return Ok(None),
            };
            let unit = self.unit(dwarf, unit_off)?;
            let uref = UnitRef::new(dwarf, &unit);
            let mut entries = uref.entries_raw(Some(die))?;
            let abbrev = entries.read_abbreviation()?.ok_or(Fallback)?;
            let mut name = None;
            let mut next = None;
            for spec in abbrev.attributes() {
                let attr = entries.read_attribute(*spec)?;
                match attr.name() {
                    gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                        if let Some(s) = self.string(uref, attr.value()) {
                            return Ok(Some(s));
                        }
                    }
                    gimli::DW_AT_name => {
                        if let Some(s) = self.string(uref, attr.value()) {
                            name = Some(s);
                        }
                    }
                    gimli::DW_AT_abstract_origin | gimli::DW_AT_specification => {
                        next = Some(attr.value());
                    }
                    _ => {}
                }
            }
            if name.is_some() {
                return Ok(name);
            }
            match next {
                Some(n) => (off, value) = (unit_off, n),
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// A string attribute, as `gimli::Dwarf::attr_string` resolves it
    /// (`None` where that fails), but a `.debug_str` string only located
    /// (with pread), not read through the mapping.
    fn string(&self, uref: UnitRef<'_, 'a>, value: AttributeValue<Slice<'a>>) -> Option<Name<'a>> {
        let offset = match value {
            AttributeValue::DebugStrRef(o) => o,
            AttributeValue::DebugStrOffsetsIndex(i) => uref.string_offset(i).ok()?,
            other => return uref.attr_string(other).ok().map(Name::Slice),
        };
        let offset = offset.0 as u64;
        // The string runs to the next NUL, which must be in the section.
        let left = self.strings.size.checked_sub(offset)?;
        let mut take = left.min(256);
        loop {
            let mut buf = vec![0u8; usize::try_from(take).ok()?];
            self.read(self.strings, offset, &mut buf).ok()?;
            if let Some(len) = buf.iter().position(|&b| b == 0) {
                return Some(Name::Str {
                    offset,
                    len: len as u64,
                });
            }
            if take == left || take >= MAX_READ {
                return None;
            }
            take = take.saturating_mul(4).min(left);
        }
    }

    /// The unit containing `.debug_info` offset `target`, and the offset
    /// within it (a `DW_FORM_ref_addr` reference). Needs the unit index.
    fn locate(
        &mut self,
        dwarf: &Dwarf<'a>,
        target: gimli::DebugInfoOffset,
    ) -> Res<(u64, UnitOffset)> {
        let t = target.0 as u64;
        let index = self.index(dwarf)?;
        let i = index.units.partition_point(|u| u.0 <= t);
        let &(start, end) = index.units.get(i.wrapping_sub(1)).ok_or(Fallback)?;
        if t == start || t >= end {
            return Err(Fallback);
        }
        let unit = self.unit(dwarf, start)?;
        if !matches!(
            unit.header.type_(),
            gimli::UnitType::Compilation | gimli::UnitType::Partial
        ) {
            return Err(Fallback);
        }
        let die = target.to_unit_offset(&unit.header).ok_or(Fallback)?;
        Ok((start, die))
    }
}

/// The address ranges of every subprogram of a unit (in entry order, then
/// stably sorted by start), and each such subprogram's entry offset.
fn subprograms(uref: UnitRef<'_, '_>) -> Res<(Vec<FuncRange>, Vec<UnitOffset>)> {
    let mut funcs = Vec::new();
    let mut dies = Vec::new();
    let mut entries = uref.entries_raw(None)?;
    while !entries.is_empty() {
        let die = entries.next_offset();
        let Some(abbrev) = entries.read_abbreviation()? else {
            continue;
        };
        if abbrev.tag() != gimli::DW_TAG_subprogram {
            entries.skip_attributes(abbrev.attributes())?;
            continue;
        }
        let mut ranges = RangeAttrs::default();
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            ranges.read(uref, &attr)?;
        }
        let func = dies.len();
        if ranges.each(uref, |begin, end| {
            funcs.push(FuncRange { begin, end, func })
        })? {
            dies.push(die);
        }
    }
    funcs.sort_by_key(|f| f.begin);
    Ok((funcs, dies))
}

impl Function<'_> {
    /// Indices of the inlined subroutines containing `probe`, outermost
    /// first: one binary search per inlining depth.
    fn inlined_at(&self, probe: u64) -> Vec<usize> {
        let mut found = Vec::new();
        let mut rest = &self.inlined_ranges[..];
        loop {
            let depth = found.len();
            let hit = rest.binary_search_by(|r| {
                r.depth.cmp(&depth).then_with(|| {
                    if r.begin > probe {
                        Ordering::Greater
                    } else if r.end <= probe {
                        Ordering::Less
                    } else {
                        Ordering::Equal
                    }
                })
            });
            let Ok(i) = hit else {
                return found;
            };
            found.push(rest[i].inlined);
            rest = &rest[i + 1..];
        }
    }
}

impl<'a> Lines<'a> {
    fn parse(
        uref: UnitRef<'_, 'a>,
        program: gimli::IncompleteLineProgram<Slice<'a>>,
    ) -> Res<Lines<'a>> {
        // Which sequences have rows: addr2line ignores empty ones.
        let mut has_rows = Vec::new();
        let mut rows = program.clone().rows();
        let mut current = false;
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                has_rows.push(current);
                current = false;
            } else {
                current = true;
            }
        }
        let (program, sequences) = program.sequences()?;
        if sequences.len() != has_rows.len() {
            return Err(Fallback);
        }
        let mut sequences: Vec<_> = sequences
            .into_iter()
            .zip(has_rows)
            .filter_map(|(s, rows)| rows.then_some(s))
            .collect();
        sequences.sort_by_key(|s| s.start);

        let header = program.header();
        let mut files = Vec::new();
        // Before DWARF 5 there is no file 0.
        files.push(match header.file(0) {
            Some(f) => file_path(uref, f, header)?,
            None => String::new(),
        });
        let mut i = 1;
        while let Some(f) = header.file(i) {
            files.push(file_path(uref, f, header)?);
            i += 1;
        }
        Ok(Lines {
            program,
            files,
            sequences,
            rows: HashMap::new(),
        })
    }

    fn file(&self, index: u64) -> Option<&str> {
        self.files
            .get(usize::try_from(index).ok()?)
            .map(String::as_str)
    }

    /// File and line of `probe`, if a sequence covers it.
    fn find(&mut self, probe: u64) -> Res<Option<(Option<String>, Option<u32>)>> {
        let seq = self.sequences.binary_search_by(|s| {
            if probe < s.start {
                Ordering::Greater
            } else if probe >= s.end {
                Ordering::Less
            } else {
                Ordering::Equal
            }
        });
        let Ok(seq) = seq else {
            return Ok(None);
        };
        if !self.rows.contains_key(&seq) {
            let rows = self.sequence_rows(seq)?;
            self.rows.insert(seq, rows);
        }
        let rows = &self.rows[&seq];
        let row = match rows.binary_search_by(|r| r.address.cmp(&probe)) {
            Ok(i) => rows[i],
            Err(0) => return Ok(None),
            Err(i) => rows[i - 1],
        };
        Ok(Some((
            self.file(row.file).map(str::to_string),
            (row.line != 0).then_some(row.line),
        )))
    }

    /// The rows of one sequence; of rows at the same address, the last.
    fn sequence_rows(&self, seq: usize) -> Res<Box<[Row]>> {
        let mut rows: Vec<Row> = Vec::new();
        let mut iter = self.program.resume_from(&self.sequences[seq]);
        while let Some((_, row)) = iter.next_row()? {
            if row.end_sequence() {
                break;
            }
            let r = Row {
                address: row.address(),
                file: row.file_index(),
                line: row.line().map_or(0, |l| l.get() as u32),
            };
            match rows.last_mut() {
                Some(last) if last.address == r.address => *last = r,
                _ => rows.push(r),
            }
        }
        Ok(rows.into_boxed_slice())
    }
}

/// The path of a line-program file: compilation directory, then the
/// include directory unless it is directory 0 (the compilation directory
/// itself), then the file name; an absolute component replaces what came
/// before.
fn file_path<'a>(
    uref: UnitRef<'_, 'a>,
    file: &gimli::FileEntry<Slice<'a>>,
    header: &gimli::LineProgramHeader<Slice<'a>>,
) -> Res<String> {
    let mut path = match &uref.comp_dir {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => String::new(),
    };
    if file.directory_index() != 0 {
        if let Some(dir) = file.directory(header) {
            push_path(&mut path, &uref.attr_string(dir)?.to_string_lossy());
        }
    }
    push_path(
        &mut path,
        &uref.attr_string(file.path_name())?.to_string_lossy(),
    );
    Ok(path)
}

fn push_path(path: &mut String, part: &str) {
    if unix_rooted(part) || windows_rooted(part) {
        *path = part.to_string();
        return;
    }
    let sep = if windows_rooted(path) { '\\' } else { '/' };
    if !path.is_empty() && !path.ends_with(sep) {
        path.push(sep);
    }
    path.push_str(part);
}

fn unix_rooted(p: &str) -> bool {
    p.starts_with('/') || p.as_bytes().get(1..3) == Some(b":/")
}

fn windows_rooted(p: &str) -> bool {
    p.starts_with('\\') || p.as_bytes().get(1..3) == Some(b":\\")
}

// The unit index: read with pread, never through the mapping.
impl<'a> Cache<'a> {
    /// The unit index, built on first call.
    fn index(&mut self, dwarf: &Dwarf<'a>) -> Res<&UnitIndex> {
        if self.index.is_none() {
            // Guards against re-entry while building.
            self.index = Some(Err(Fallback));
            let index = self.build_index(dwarf);
            self.index = Some(index);
        }
        self.index
            .as_ref()
            .ok_or(Fallback)?
            .as_ref()
            .map_err(|e| *e)
    }

    fn build_index(&mut self, dwarf: &Dwarf<'a>) -> Res<UnitIndex> {
        let listed: HashSet<u64> = self.aranges.ranges.iter().map(|r| r.2).collect();
        let mut units = Vec::new();
        let mut unlisted = Vec::new();
        let mut off = 0;
        while off < self.info.size {
            let (length_size, size) = self.initial_length(self.info, off)?;
            let end = off
                .checked_add(size)
                .filter(|&e| e <= self.info.size)
                .ok_or(Fallback)?;
            units.push((off, end));
            if !listed.contains(&off) {
                unlisted.push((off, length_size, end - off));
            }
            off = end;
        }
        let mut abbrevs = None;
        let mut extra = Vec::new();
        let mut scanned = Ok(());
        for &(off, length_size, total) in &unlisted {
            scanned = self.unlisted_unit(dwarf, &mut abbrevs, off, length_size, total, &mut extra);
            if scanned.is_err() {
                break;
            }
        }
        Ok(UnitIndex {
            units,
            extra: scanned.map(|()| RangeTable::new(extra)),
        })
    }

    /// Reads a unit or line-program initial length at `off` of `section`:
    /// (size of the length field, size of the whole unit or program).
    fn initial_length(&self, section: FileRange, off: u64) -> Res<(u64, u64)> {
        let mut b4 = [0u8; 4];
        self.read(section, off, &mut b4)?;
        let (field, length) = match self.endian.read_u32(&b4) {
            0xffff_ffff => {
                let mut b8 = [0u8; 8];
                self.read(section, off.checked_add(4).ok_or(Fallback)?, &mut b8)?;
                (12, self.endian.read_u64(&b8))
            }
            n if n >= 0xffff_fff0 => return Err(Fallback),
            n => (4, u64::from(n)),
        };
        Ok((field, length.checked_add(field).ok_or(Fallback)?))
    }

    /// Ranges of a compilation unit that `.debug_aranges` does not list,
    /// chosen as addr2line does. Without range attributes on its root
    /// entry (the common case: a unit with no code), these are its line
    /// sequences, read with pread; with them, the unit is parsed for real
    /// (rare: a producer that writes no aranges).
    fn unlisted_unit(
        &mut self,
        dwarf: &Dwarf<'a>,
        abbrevs: &mut Option<(u64, Rc<gimli::Abbreviations>)>,
        off: u64,
        length_size: u64,
        total: u64,
        extra: &mut Vec<(u64, u64, u64)>,
    ) -> Res<()> {
        let mut take = total.min(ROOT_PREFIX);
        let (header, root) = loop {
            let mut buf = vec![0u8; usize::try_from(take).map_err(|_| Fallback)?];
            self.read(self.info, off, &mut buf)?;
            if take < total {
                // Shorten the unit to what was read, for gimli.
                let short = take - length_size;
                if length_size == 4 {
                    let short = u32::try_from(short).map_err(|_| Fallback)?;
                    write_u32(self.endian, &mut buf[..4], short);
                } else {
                    write_u64(self.endian, &mut buf[4..12], short);
                }
            }
            match self.unit_root(abbrevs, &buf) {
                Ok(found) => break found,
                Err(_) if take < total && total <= MAX_READ => take = total,
                Err(e) => return Err(e),
            }
        };
        let Some(root) = root else {
            return Ok(());
        };
        match header {
            gimli::UnitType::Compilation => {}
            gimli::UnitType::Skeleton(_) | gimli::UnitType::SplitCompilation(_) => {
                return Err(Fallback);
            }
            // Type and partial units cover no addresses.
            _ => return Ok(()),
        }
        if root.dwo {
            return Err(Fallback);
        }
        if root.has_ranges {
            let cu = self.cu(dwarf, off)?;
            extra.extend(cu.ranges.ranges.iter().copied());
            return Ok(());
        }
        let Some((line_off, address_size)) = root.line_program else {
            return Ok(());
        };
        let (_, size) = self.initial_length(self.line, line_off)?;
        if size > MAX_READ {
            return Err(Fallback);
        }
        let mut buf = vec![0u8; usize::try_from(size).map_err(|_| Fallback)?];
        self.read(self.line, line_off, &mut buf)?;
        let section = gimli::DebugLine::new(&buf, self.endian);
        let program = section.program(gimli::DebugLineOffset(0), address_size, None, None)?;
        let mut rows = program.rows();
        let mut start = None;
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                if let Some(start) = start.take() {
                    extra.push((start, row.address(), off));
                }
            } else if start.is_none() {
                start = Some(row.address());
            }
        }
        Ok(())
    }

    /// Parses a unit header and root entry from `buf` (the unit, possibly
    /// shortened). `None` for the root entry if the unit has none.
    fn unit_root(
        &self,
        abbrevs: &mut Option<(u64, Rc<gimli::Abbreviations>)>,
        buf: &[u8],
    ) -> Res<(gimli::UnitType<usize>, Option<RootInfo>)> {
        let section = gimli::DebugInfo::new(buf, self.endian);
        let header = section.header_from_offset(gimli::DebugInfoOffset(0))?;
        let abbrev_off = header.debug_abbrev_offset().0 as u64;
        // Only the last table is kept: neighbouring units (of one crate)
        // share theirs, and keeping them all would cost more than
        // re-reading.
        let abbreviations = match abbrevs {
            Some((o, a)) if *o == abbrev_off => a.clone(),
            _ => {
                let a = Rc::new(self.read_abbreviations(abbrev_off)?);
                *abbrevs = Some((abbrev_off, a.clone()));
                a
            }
        };
        let mut entries = header.entries_raw(&abbreviations, None)?;
        let Some(abbrev) = entries.read_abbreviation()? else {
            return Ok((header.type_(), None));
        };
        let mut root = RootInfo {
            has_ranges: false,
            dwo: false,
            line_program: None,
        };
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            match (attr.name(), attr.value()) {
                (gimli::DW_AT_low_pc | gimli::DW_AT_high_pc | gimli::DW_AT_ranges, _) => {
                    root.has_ranges = true;
                }
                (gimli::DW_AT_GNU_dwo_id, _) => root.dwo = true,
                (gimli::DW_AT_stmt_list, AttributeValue::DebugLineRef(l)) => {
                    root.line_program = Some((l.0 as u64, header.address_size()));
                }
                _ => {}
            }
        }
        Ok((header.type_(), Some(root)))
    }

    /// Reads `buf.len()` bytes at `off` of `section` with pread: copied
    /// from the page cache, so no page of the mapping becomes resident.
    fn read(&self, section: FileRange, off: u64, buf: &mut [u8]) -> Res<()> {
        use std::os::unix::fs::FileExt;
        let end = off.checked_add(buf.len() as u64).ok_or(Fallback)?;
        if end > section.size {
            return Err(Fallback);
        }
        let at = section.offset.checked_add(off).ok_or(Fallback)?;
        self.map.file().read_exact_at(buf, at).map_err(|_| Fallback)
    }

    /// Reads the abbreviation table at `off` of `.debug_abbrev` with pread,
    /// in growing chunks (its length is only known by parsing it).
    fn read_abbreviations(&self, off: u64) -> Res<gimli::Abbreviations> {
        let left = self.abbrev.size.checked_sub(off).ok_or(Fallback)?;
        let mut take = left.min(ROOT_PREFIX);
        loop {
            let mut buf = vec![0u8; usize::try_from(take).map_err(|_| Fallback)?];
            self.read(self.abbrev, off, &mut buf)?;
            let section = gimli::DebugAbbrev::new(&buf, self.endian);
            match section.abbreviations(gimli::DebugAbbrevOffset(0)) {
                Ok(a) => return Ok(a),
                Err(gimli::Error::UnexpectedEof(_)) if take < left && take < MAX_READ => {
                    take = take.saturating_mul(4).min(left);
                }
                Err(_) => return Err(Fallback),
            }
        }
    }
}

/// What the index needs from a unit's root entry.
struct RootInfo {
    has_ranges: bool,
    dwo: bool,
    /// (offset in `.debug_line`, address size).
    line_program: Option<(u64, u8)>,
}

fn write_u32(endian: RunTimeEndian, buf: &mut [u8], n: u32) {
    let bytes = if endian.is_big_endian() {
        n.to_be_bytes()
    } else {
        n.to_le_bytes()
    };
    buf.copy_from_slice(&bytes);
}

fn write_u64(endian: RunTimeEndian, buf: &mut [u8], n: u64) {
    let bytes = if endian.is_big_endian() {
        n.to_be_bytes()
    } else {
        n.to_le_bytes()
    };
    buf.copy_from_slice(&bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSymbol, SymbolKind};
    use std::path::PathBuf;

    /// Most addresses compared by the equivalence test.
    const MAX_PROBES: usize = 8000;
    /// Selects the measuring child of the memory test.
    const RSS_MODE: &str = "PERFLENS_DWARF_RSS_MODE";

    fn exe() -> PathBuf {
        std::env::current_exe().expect("test binary path")
    }

    /// (address, size) of the text symbols of `path`, sorted.
    fn text_symbols(path: &Path) -> Vec<(u64, u64)> {
        let map = MappedFile::open(path).expect("map the test binary");
        let file = object::File::parse(map.bytes()).expect("parse the test binary");
        let mut syms: Vec<(u64, u64)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .map(|s| (s.address(), s.size()))
            .collect();
        syms.sort_unstable();
        syms.dedup();
        syms
    }

    #[test]
    fn range_table_finds_every_covering_range() {
        let t = RangeTable::new(vec![
            (0, 0x30, 1),
            (0x10, 0x20, 2),
            (0x18, 0x40, 3),
            (0x50, 0x60, 4),
        ]);
        let at = |p| {
            let mut v = Vec::new();
            t.covering(p, |_, c| v.push(c));
            v.sort_unstable();
            v
        };
        assert_eq!(at(0x1c), vec![1, 2, 3]);
        assert_eq!(at(0x20), vec![1, 3]);
        assert_eq!(at(0x45), Vec::<u64>::new());
        assert_eq!(at(0x5f), vec![4]);
        assert_eq!(t.min_covering_end(0x1c), Some(0x20));
    }

    #[test]
    fn paths_join_like_addr2line() {
        let join = |a: &str, b: &str| {
            let mut p = a.to_string();
            push_path(&mut p, b);
            p
        };
        assert_eq!(join("/work", "src/lib.rs"), "/work/src/lib.rs");
        assert_eq!(join("/work/", "src"), "/work/src");
        assert_eq!(join("/work", "/rustc/abc/library"), "/rustc/abc/library");
        assert_eq!(join("", "lib.rs"), "lib.rs");
        assert_eq!(join("C:\\src", "a.c"), "C:\\src\\a.c");
        assert_eq!(join("/x", "C:/y"), "C:/y");
    }

    /// The lazy reader gives exactly addr2line's frames (names, files,
    /// lines) for the start and the middle of every function of this test
    /// binary (a sample of them if there are many), and answers most of
    /// them itself.
    #[test]
    fn same_frames_as_addr2line() {
        let exe = exe();
        let mut probes = Vec::new();
        for (addr, size) in text_symbols(&exe) {
            probes.push(addr);
            if size > 1 {
                probes.push(addr + size / 2);
            }
        }
        probes.sort_unstable();
        probes.dedup();
        let stride = probes.len().div_ceil(MAX_PROBES).max(1);
        let probes: Vec<u64> = probes.into_iter().step_by(stride).collect();
        assert!(probes.len() > 1000, "only {} probes", probes.len());

        let loader = addr2line::Loader::new(&exe).expect("addr2line loads the test binary");
        let mut lazy = LazyDwarf::open(&exe).expect("the lazy reader applies to the test binary");
        let (mut served, mut with_frames, mut fallback) = (0usize, 0usize, 0usize);
        let mut mismatches = Vec::new();
        for &probe in &probes {
            let want = loader_frames(&loader, probe);
            match lazy.find_frames(probe) {
                Lookup::Frames(got) => {
                    served += 1;
                    if !got.is_empty() {
                        with_frames += 1;
                    }
                    if got != want {
                        mismatches.push((probe, got, want));
                    }
                }
                Lookup::Fallback => fallback += 1,
            }
        }
        eprintln!(
            "{} probes: {served} answered lazily ({with_frames} with frames), {fallback} fell back, {} mismatches",
            probes.len(),
            mismatches.len()
        );
        for (probe, got, want) in mismatches.iter().take(10) {
            eprintln!("{probe:#x}:\n  lazy:      {got:?}\n  addr2line: {want:?}");
        }
        assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
        assert!(
            served * 100 >= probes.len() * 95,
            "only {served} of {} answered lazily",
            probes.len()
        );
        assert!(
            with_frames * 100 >= probes.len() * 50,
            "only {with_frames} of {} have frames: no debug info?",
            probes.len()
        );
    }

    /// A `/proc/self/status` value in KiB.
    fn status_kib(key: &str) -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("read status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc/self/status"))
    }

    /// The measuring child of `lazy_reads_a_fraction_of_what_addr2line_reads`
    /// (does nothing unless started by it): symbolizes ten functions spread
    /// over the test binary, with the lazy reader or with addr2line, and
    /// prints by how much that raised the peak resident set.
    #[test]
    #[ignore = "child helper"]
    fn rss_child() {
        let Ok(mode) = std::env::var(RSS_MODE) else {
            return;
        };
        let exe = exe();
        let syms: Vec<u64> = text_symbols(&exe)
            .into_iter()
            .filter(|s| s.1 > 0)
            .map(|s| s.0 + s.1 / 2)
            .collect();
        let probes: Vec<u64> = (0..10).map(|i| syms[i * (syms.len() - 1) / 9]).collect();
        // Resets the peak (VmHWM) to the current resident set; without it
        // (kernels before 4.0) the resident set at the end is measured.
        let peak = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = status_kib("VmRSS:");
        let mut answered = 0;
        let mut lazy = None;
        let mut loader = None;
        if mode == "lazy" {
            let lazy = lazy.insert(LazyDwarf::open(&exe).expect("lazy reader"));
            for &p in &probes {
                if let Lookup::Frames(f) = lazy.find_frames(p) {
                    answered += usize::from(!f.is_empty());
                }
            }
        } else {
            let loader = loader.insert(addr2line::Loader::new(&exe).expect("addr2line"));
            for &p in &probes {
                answered += usize::from(!loader_frames(loader, p).is_empty());
            }
        }
        let after = status_kib(if peak { "VmHWM:" } else { "VmRSS:" });
        drop((lazy, loader));
        println!("PERFLENS_RSS {} {answered}", after.saturating_sub(before));
    }

    fn measure(mode: &str) -> (u64, usize) {
        let out = std::process::Command::new(exe())
            .args([
                "--ignored",
                "--exact",
                "dwarf::tests::rss_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(RSS_MODE, mode)
            .output()
            .expect("run the measuring child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| Some(l.split_once("PERFLENS_RSS ")?.1))
            .unwrap_or_else(|| panic!("no measurement from the {mode} child: {stdout}"));
        let mut it = line.split_whitespace().map(|v| v.parse::<u64>().unwrap());
        (it.next().unwrap(), it.next().unwrap() as usize)
    }

    /// Symbolizing a handful of addresses maps and allocates far less with
    /// the lazy reader than with addr2line's full context. Each is measured
    /// in a fresh child process (its own mappings, so what is resident is
    /// what it touched), with the file already in the page cache, where
    /// the kernel's fault-around makes every touched page cost the most.
    #[test]
    fn lazy_reads_a_fraction_of_what_addr2line_reads() {
        let exe = exe();
        let mut f = std::fs::File::open(&exe).expect("open the test binary");
        let size = std::io::copy(&mut f, &mut std::io::sink()).expect("read the test binary");
        let (full, full_answered) = measure("addr2line");
        let (lazy, lazy_answered) = measure("lazy");
        eprintln!(
            "file {} KiB; resident memory added: addr2line {full} KiB, lazy {lazy} KiB",
            size / 1024
        );
        assert!(
            full_answered >= 8,
            "addr2line symbolized {full_answered} of 10"
        );
        assert_eq!(
            lazy_answered, full_answered,
            "the lazy reader answered fewer"
        );
        assert!(
            lazy * 2 < full,
            "lazy {lazy} KiB is not under half of addr2line's {full} KiB"
        );
    }
}
