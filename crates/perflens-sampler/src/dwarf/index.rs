//! The unit index, for cross-unit references and units missing from
//! `.debug_aranges`: built from unit headers read with pread, never
//! through the mapping.

use super::*;

// The unit index: read with pread, never through the mapping.
impl<'a> Cache<'a> {
    /// The unit index, built on first call.
    pub(super) fn index(&mut self, dwarf: &Dwarf<'a>) -> Res<&UnitIndex> {
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

    pub(super) fn build_index(&mut self, dwarf: &Dwarf<'a>) -> Res<UnitIndex> {
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
    pub(super) fn initial_length(&self, section: FileRange, off: u64) -> Res<(u64, u64)> {
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
    pub(super) fn unlisted_unit(
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
    pub(super) fn read(&self, section: FileRange, off: u64, buf: &mut [u8]) -> Res<()> {
        let end = off.checked_add(buf.len() as u64).ok_or(Fallback)?;
        if end > section.size {
            return Err(Fallback);
        }
        let at = section.offset.checked_add(off).ok_or(Fallback)?;
        self.map.read_exact_at(buf, at).map_err(|_| Fallback)
    }

    /// Reads the abbreviation table at `off` of `.debug_abbrev` with pread,
    /// in growing chunks (its length is only known by parsing it).
    pub(super) fn read_abbreviations(&self, off: u64) -> Res<gimli::Abbreviations> {
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

pub(super) fn write_u32(endian: RunTimeEndian, buf: &mut [u8], n: u32) {
    let bytes = if endian.is_big_endian() {
        n.to_be_bytes()
    } else {
        n.to_le_bytes()
    };
    buf.copy_from_slice(&bytes);
}

pub(super) fn write_u64(endian: RunTimeEndian, buf: &mut [u8], n: u64) {
    let bytes = if endian.is_big_endian() {
        n.to_be_bytes()
    } else {
        n.to_le_bytes()
    };
    buf.copy_from_slice(&bytes);
}
