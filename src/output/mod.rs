//! Writers for what a run produces: OBJ frame sequences, `energy.csv`, `contact.csv`,
//! `steps.csv`, `stats.json`.

mod contact_csv;
mod energy_csv;
mod obj_frames;
mod steps_csv;

pub use contact_csv::ContactCsv;
pub use energy_csv::EnergyCsv;
pub use obj_frames::{frame_path, ObjFrames};
pub use steps_csv::StepsCsv;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::engine::Stats;

/// Creates (truncates) the CSV file `path` and writes its header line.
fn csv_with_header(path: &Path, header: &str) -> std::io::Result<BufWriter<File>> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "{header}")?;
    Ok(out)
}

/// Writes `stats` as pretty JSON to `path`.
pub fn write_stats(path: &Path, stats: &Stats) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(stats).map_err(std::io::Error::other)?;
    std::fs::write(path, json + "\n")
}
