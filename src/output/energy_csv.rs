//! `energy.csv`: one row of energies and momenta per frame.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::check::measure;
use crate::{Frame, FrameSink, RunError};

/// Appends a row per frame: time, kinetic, elastic, gravity, penalty, total energy, momentum
/// (x, y, z), angular momentum (x, y, z).
#[derive(Debug)]
pub struct EnergyCsv {
    out: BufWriter<File>,
}

impl EnergyCsv {
    /// The CSV header.
    pub const HEADER: &'static str = "time,kinetic,elastic,gravity,penalty,total,px,py,pz,lx,ly,lz";

    /// Creates (truncates) the file and writes the header.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            out: super::csv_with_header(path, Self::HEADER)?,
        })
    }
}

impl FrameSink for EnergyCsv {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let c = measure(frame.stepper, frame.time, frame.positions);
        let (p, l) = (c.momentum, c.angular_momentum);
        writeln!(
            self.out,
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
        )?;
        self.out.flush()?;
        Ok(())
    }
}
