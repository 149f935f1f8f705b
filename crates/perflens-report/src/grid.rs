//! A plain aligned text grid: a header, a rule, rows. Text columns are
//! left-aligned and numbers right-aligned, columns are two spaces apart,
//! and no line has trailing spaces.

use std::io::{self, Write};

use crate::format::width;

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

pub(crate) struct Grid {
    headers: Vec<String>,
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Grid {
    /// A grid whose first column is left-aligned text and the others
    /// right-aligned numbers.
    pub(crate) fn new(headers: Vec<String>) -> Grid {
        let aligns = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Grid {
            headers,
            aligns,
            rows: Vec::new(),
        }
    }

    /// Left-aligns the columns `cols` (text) too.
    pub(crate) fn left(mut self, cols: &[usize]) -> Grid {
        for &c in cols {
            if let Some(a) = self.aligns.get_mut(c) {
                *a = Align::Left;
            }
        }
        self
    }

    /// Adds a row; missing trailing cells are blank.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn write<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(widths.len()) {
                widths[i] = widths[i].max(width(cell));
            }
        }
        self.line(w, &self.headers, &widths)?;
        let total = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        writeln!(w, "{}", "-".repeat(total))?;
        for row in &self.rows {
            self.line(w, row, &widths)?;
        }
        Ok(())
    }

    fn line<W: Write>(&self, w: &mut W, cells: &[String], widths: &[usize]) -> io::Result<()> {
        let mut out = String::new();
        for (i, &col) in widths.iter().enumerate() {
            let cell = cells.get(i).map_or("", String::as_str);
            if i > 0 {
                out.push_str("  ");
            }
            let pad = " ".repeat(col.saturating_sub(width(cell)));
            match self.aligns[i] {
                Align::Left => {
                    out.push_str(cell);
                    out.push_str(&pad);
                }
                Align::Right => {
                    out.push_str(&pad);
                    out.push_str(cell);
                }
            }
        }
        writeln!(w, "{}", out.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_lines_have_no_trailing_spaces() {
        let mut g = Grid::new(vec!["Name".into(), "Calls".into()]);
        g.row(vec!["µs::long_name".into(), "1".into()]);
        g.row(vec!["x".into(), "1,000".into()]);
        g.row(vec!["blank".into()]);
        let mut out = Vec::new();
        g.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expected = "\
Name           Calls
--------------------
µs::long_name      1
x              1,000
blank
";
        assert_eq!(text, expected);
    }
}
