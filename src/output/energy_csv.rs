//! `energy.csv`: one row of energies and momenta per frame.

use std::path::Path;

use crate::check::measure;
use crate::{Frame, FrameSink, RunError};

use super::files::CsvFile;

/// Appends a row per frame: time, kinetic, elastic, gravity, penalty, total energy, momentum
/// (x, y, z), angular momentum (x, y, z).
#[derive(Debug)]
pub struct EnergyCsv {
    out: CsvFile,
}

impl EnergyCsv {
    /// The CSV header.
    pub(crate) const HEADER: &'static str =
        "time,kinetic,elastic,gravity,penalty,total,px,py,pz,lx,ly,lz";

    /// Creates (truncates) the file and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            out: CsvFile::create(path, Self::HEADER)?,
        })
    }
}

impl FrameSink for EnergyCsv {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let c = measure(frame.source, frame.time, frame.positions);
        let (p, l) = (c.momentum, c.angular_momentum);
        self.out.row(format_args!(
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            c.time,
            c.kinetic,
            c.elastic,
            c.gravity,
            c.penalty,
            c.total,
            p.x,
            p.y,
            p.z,
            l.x,
            l.y,
            l.z
        ))?;
        Ok(())
    }
}
