//! Writers for what a run produces: OBJ or PLY frame sequences or a USD stage, `energy.csv`,
//! `contact.csv`, `steps.csv`, `stats.json`. Frames and `stats.json` are written whole or not
//! at all ([`write_whole`]), and every write error names its file.

mod contact_csv;
mod energy_csv;
mod files;
mod frame_format;
mod obj_frames;
mod ply_frames;
mod steps_csv;
mod usd_stage;

pub use contact_csv::ContactCsv;
pub use energy_csv::EnergyCsv;
pub use files::{named, write_whole, CsvFile};
pub use frame_format::{FrameFormat, FrameWriter};
pub use obj_frames::{frame_path, ObjFrames};
pub use steps_csv::StepsCsv;
pub use usd_stage::USD_FILE;

use std::io::Write as _;
use std::path::Path;

/// Writes `stats` (a method's statistics, [`crate::Stepper::stats_json`]) as pretty JSON to
/// `path`, whole or not at all.
pub fn write_stats(path: &Path, stats: &impl serde::Serialize) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(stats).map_err(std::io::Error::other)?;
    write_whole(path, |w| w.write_all((json + "\n").as_bytes()))
}
