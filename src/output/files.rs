//! Output files that are whole or absent, and errors that name the file.
//!
//! A frame or `stats.json` is written to a hidden temporary file beside it and renamed over
//! the final name once complete, so a full disk, a signal or a crash never leaves a cut file
//! under a frame's name and `stats.json` always parses. The CSV files are appended to, a
//! flushed row at a time.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `e` with `path` in front of its message: "out/frame_00003.obj: No space left on device".
pub fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The temporary name `path` is written under: `.NAME.part` in the same directory (the same
/// file system, so the rename is atomic).
fn part_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.part"))
}

/// Writes `path` whole or not at all: `write` fills a temporary file beside it, which is
/// flushed and renamed to `path`; on any error the temporary file is removed and `path` keeps
/// what it held. The error names `path`.
pub fn write_whole(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let part = part_path(path);
    let result = File::create(&part).and_then(|file| {
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        w.flush()
    });
    match result.and_then(|()| std::fs::rename(&part, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            Err(named(path, e))
        }
    }
}

/// A CSV file written a row at a time, each row flushed; errors name the file.
#[derive(Debug)]
pub struct CsvFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl CsvFile {
    /// Creates (truncates) `path` and writes its header line.
    pub(crate) fn create(path: &Path, header: &str) -> std::io::Result<Self> {
        let mut csv = Self {
            path: path.to_path_buf(),
            out: BufWriter::new(File::create(path).map_err(|e| named(path, e))?),
        };
        csv.row(format_args!("{header}"))?;
        Ok(csv)
    }

    /// Appends the line `row` and flushes it.
    pub(crate) fn row(&mut self, row: std::fmt::Arguments<'_>) -> std::io::Result<()> {
        writeln!(self.out, "{row}")
            .and_then(|()| self.out.flush())
            .map_err(|e| named(&self.path, e))
    }
}
