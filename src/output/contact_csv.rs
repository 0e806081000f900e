//! `contact.csv`: penalty contact per frame (thesis Fig. 6.7's deepening layers, over time).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{Frame, FrameSink, RunError};

/// Appends a row per frame: time, pairs with a penalty layer active, deepest active layer.
#[derive(Debug)]
pub struct ContactCsv {
    out: BufWriter<File>,
}

impl ContactCsv {
    /// The CSV header.
    pub const HEADER: &'static str = "time,active_pairs,deepest_layer";

    /// Creates (truncates) the file and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            out: super::csv_with_header(path, Self::HEADER)?,
        })
    }
}

impl FrameSink for ContactCsv {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let now = frame.stepper.penalty_now();
        writeln!(
            self.out,
            "{},{},{}",
            frame.time, now.active_pairs, now.deepest_layer
        )?;
        self.out.flush()?;
        Ok(())
    }
}
