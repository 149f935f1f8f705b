//! Line programs: a sequence's rows parsed when an address falls in it,
//! and file paths joined as addr2line joins them.

use super::*;

impl<'a> Lines<'a> {
    pub(super) fn parse(
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

    pub(super) fn file(&self, index: u64) -> Option<&str> {
        self.files
            .get(usize::try_from(index).ok()?)
            .map(String::as_str)
    }

    /// File and line of `probe`, if a sequence covers it.
    pub(super) fn find(&mut self, probe: u64) -> Res<Option<(Option<String>, Option<u32>)>> {
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
    pub(super) fn sequence_rows(&self, seq: usize) -> Res<Box<[Row]>> {
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
pub(super) fn file_path<'a>(
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

pub(super) fn push_path(path: &mut String, part: &str) {
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

pub(super) fn unix_rooted(p: &str) -> bool {
    p.starts_with('/') || p.as_bytes().get(1..3) == Some(b":/")
}

pub(super) fn windows_rooted(p: &str) -> bool {
    p.starts_with('\\') || p.as_bytes().get(1..3) == Some(b":\\")
}
