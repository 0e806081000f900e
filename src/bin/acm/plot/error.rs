//! Why a directory could not be plotted.

use std::path::PathBuf;

/// Why a directory could not be plotted; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlotError {
    /// A file or the directory could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A CSV file is not what `acm run` writes.
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A chart could not be drawn or written.
    #[error("{}: cannot write the chart: {message}", path.display())]
    Draw {
        /// The PNG file.
        path: PathBuf,
        /// The drawing error.
        message: String,
    },
}
