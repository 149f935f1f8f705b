//! Finding an address: the candidate units in addr2line's order, each
//! unit parsed on its first use, and the frames of a function and its
//! inlined subroutines at the address.

use super::*;

impl<'a> Cache<'a> {
    /// Frames of `probe`; `Err` to fall back to addr2line.
    pub(super) fn lookup(&mut self, dwarf: &Dwarf<'a>, probe: u64) -> Res<Vec<InlinedFrame>> {
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
    pub(super) fn search(
        &mut self,
        dwarf: &Dwarf<'a>,
        mut units: Vec<u64>,
        probe: u64,
    ) -> Res<Option<Vec<InlinedFrame>>> {
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
    pub(super) fn unit(&mut self, dwarf: &Dwarf<'a>, off: u64) -> Res<Rc<Unit<'a>>> {
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
    pub(super) fn cu(&mut self, dwarf: &Dwarf<'a>, off: u64) -> Res<&mut Cu<'a>> {
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
    pub(super) fn build_cu(&mut self, dwarf: &Dwarf<'a>, off: u64) -> Res<Cu<'a>> {
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
    pub(super) fn frames_in(
        &mut self,
        dwarf: &Dwarf<'a>,
        off: u64,
        probe: u64,
    ) -> Res<Option<Vec<InlinedFrame>>> {
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
                vec![InlinedFrame {
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
                Ok(InlinedFrame {
                    name: name.map(|n| self.name(n, lang)).transpose()?,
                    file,
                    line,
                })
            })
            .collect::<Res<Vec<InlinedFrame>>>()?;
        Ok(Some(frames))
    }
}
