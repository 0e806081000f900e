//! A numeric CSV as written by [`acm::output`]: a header of column names and rows of numbers.

use std::path::{Path, PathBuf};

use super::error::PlotError;

/// The columns of one CSV file, read whole.
#[derive(Debug)]
pub(super) struct Table {
    path: PathBuf,
    names: Vec<String>,
    /// `columns[c][r]`: column `c` of row `r`.
    columns: Vec<Vec<f64>>,
    /// The 1-based line of each row in the file.
    lines: Vec<usize>,
}

impl Table {
    /// Reads `path`; every row must have the header's number of fields, each a number, and
    /// there must be at least one row.
    pub(super) fn read(path: &Path) -> Result<Self, PlotError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlotError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let malformed = |line: usize, message: String| PlotError::Malformed {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, header)) = lines.next() else {
            return Err(malformed(1, "empty file, expected a header".into()));
        };
        let names: Vec<String> = header.split(',').map(|s| s.trim().to_string()).collect();
        let mut columns = vec![Vec::new(); names.len()];
        let mut row_lines = Vec::new();
        for (i, line) in lines {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != names.len() {
                return Err(malformed(
                    i + 1,
                    format!("{} fields, the header has {}", fields.len(), names.len()),
                ));
            }
            for ((field, name), column) in fields.iter().zip(&names).zip(&mut columns) {
                let value = field.trim().parse::<f64>().map_err(|_| {
                    malformed(i + 1, format!("{name} is not a number: {:?}", field.trim()))
                })?;
                column.push(value);
            }
            row_lines.push(i + 1);
        }
        if columns.first().is_none_or(Vec::is_empty) {
            return Err(malformed(1, "no rows after the header".into()));
        }
        Ok(Self {
            path: path.to_path_buf(),
            names,
            columns,
            lines: row_lines,
        })
    }

    /// The column named `name`.
    pub(super) fn column(&self, name: &str) -> Result<&[f64], PlotError> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|c| self.columns[c].as_slice())
            .ok_or_else(|| self.header_error(format!("no column {name:?}")))
    }

    /// An error in this file's header.
    pub(super) fn header_error(&self, message: String) -> PlotError {
        PlotError::Malformed {
            path: self.path.clone(),
            line: 1,
            message,
        }
    }

    /// An error in row `row` (0-based, after the header) of this file.
    pub(super) fn row_error(&self, row: usize, message: String) -> PlotError {
        PlotError::Malformed {
            path: self.path.clone(),
            line: self.lines[row],
            message,
        }
    }

    /// Every column after the first, with its name.
    pub(super) fn after_first(&self) -> impl Iterator<Item = (&str, &[f64])> {
        self.names
            .iter()
            .zip(&self.columns)
            .skip(1)
            .map(|(n, c)| (n.as_str(), c.as_slice()))
    }
}
