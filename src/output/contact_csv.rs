//! `contact.csv`: penalty contact per frame (thesis Fig. 6.7's deepening layers, over time).

use std::path::Path;

use crate::{Frame, FrameSink, RunError};

use super::files::CsvFile;

/// Appends a row per frame: time, pairs with a penalty layer active, deepest active layer.
#[derive(Debug)]
pub struct ContactCsv {
    out: CsvFile,
}

impl ContactCsv {
    /// The CSV header.
    pub(crate) const HEADER: &'static str = "time,active_pairs,deepest_layer";

    /// Creates (truncates) the file and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            out: CsvFile::create(path, Self::HEADER)?,
        })
    }
}

impl FrameSink for ContactCsv {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let now = frame.source.penalty_now();
        self.out.row(format_args!(
            "{},{},{}",
            frame.time, now.active_pairs, now.deepest_layer
        ))?;
        Ok(())
    }
}
