//! Address range tables: `.debug_aranges` read up front, and the range
//! attributes of units and functions.

use super::*;

/// Every non-empty arange, as addr2line reads them (entries that fail to
/// convert are skipped). `None` if the section has no entry or its headers
/// do not parse (addr2line then fails too).
pub(super) fn parse_aranges(dwarf: &Dwarf<'_>) -> Option<RangeTable> {
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

impl RangeTable {
    pub(super) fn new(mut ranges: Vec<(u64, u64, u64)>) -> RangeTable {
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
    pub(super) fn covering(&self, probe: u64, mut f: impl FnMut(u64, u64)) {
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
    pub(super) fn min_covering_end(&self, probe: u64) -> Option<u64> {
        let mut best = None;
        self.covering(probe, |end, _| {
            best = Some(best.map_or(end, |b: u64| b.min(end)));
        });
        best
    }
}

impl RangeAttrs {
    /// Takes `attr` if it is one of the range attributes.
    pub(super) fn read<'a>(
        &mut self,
        unit: UnitRef<'_, 'a>,
        attr: &gimli::Attribute<Slice<'a>>,
    ) -> Res<()> {
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
    pub(super) fn each(&self, unit: UnitRef<'_, '_>, mut f: impl FnMut(u64, u64)) -> Res<bool> {
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
