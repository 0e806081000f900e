//! Writers for what a run produces: OBJ frame sequences, `energy.csv`, `stats.json`.

mod energy_csv;
mod obj_frames;

pub use energy_csv::EnergyCsv;
pub use obj_frames::{frame_path, ObjFrames};

use std::path::Path;

use crate::engine::Stats;

/// Writes `stats` as pretty JSON to `path`.
pub fn write_stats(path: &Path, stats: &Stats) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(stats).map_err(std::io::Error::other)?;
    std::fs::write(path, json + "\n")
}
