//! Functions and their names: a subprogram's inlined subroutines parsed
//! when an address falls in it, and names found through
//! `DW_AT_abstract_origin`/`DW_AT_specification`, read with pread.

use super::*;

impl<'a> Cache<'a> {
    /// A name as a frame shows it: demangled by the unit's language.
    pub(super) fn name(&self, name: Name<'a>, lang: Option<gimli::DwLang>) -> Res<String> {
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
    pub(super) fn function(
        &mut self,
        dwarf: &Dwarf<'a>,
        off: u64,
        func: usize,
    ) -> Res<Rc<Function<'a>>> {
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

    pub(super) fn parse_function(
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
    pub(super) fn apply_name(
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
    pub(super) fn referenced_name(
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
    pub(super) fn string(
        &self,
        uref: UnitRef<'_, 'a>,
        value: AttributeValue<Slice<'a>>,
    ) -> Option<Name<'a>> {
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
    pub(super) fn locate(
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
pub(super) fn subprograms(uref: UnitRef<'_, '_>) -> Res<(Vec<FuncRange>, Vec<UnitOffset>)> {
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
    pub(super) fn inlined_at(&self, probe: u64) -> Vec<usize> {
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
