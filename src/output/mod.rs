//! Writers for what a run produces: OBJ or PLY frame sequences, `energy.csv`, `contact.csv`,
//! `steps.csv`, `stats.json`.

mod contact_csv;
mod energy_csv;
mod obj_frames;
mod ply_frames;
mod steps_csv;

pub use contact_csv::ContactCsv;
pub use energy_csv::EnergyCsv;
pub use obj_frames::{frame_path, ObjFrames};
pub use ply_frames::{PlyFrames, PlyTopology};
pub use steps_csv::StepsCsv;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::mesh::Uvs;
use crate::FrameSink;

/// The file format of a frame sequence (`acm run --format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameFormat {
    /// Text OBJ: an `o` group per object, positions printed to round-trip exactly.
    #[default]
    Obj,
    /// Binary little-endian PLY: float positions and velocities, and the triangles as strips
    /// ([`PlyFrames`], [`PlyTopology::Strips`]).
    Ply,
    /// The same PLY with a `face` list instead of strips ([`PlyTopology::Faces`]): larger,
    /// for readers without `tristrips`.
    PlyFaces,
}

impl FrameFormat {
    /// Every format.
    pub const ALL: [Self; 3] = [Self::Obj, Self::Ply, Self::PlyFaces];

    /// The name `--format` takes (`obj`, `ply`, `ply-faces`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Obj => "obj",
            Self::Ply => "ply",
            Self::PlyFaces => "ply-faces",
        }
    }

    /// The file extension (`obj`, `ply`).
    pub fn extension(self) -> &'static str {
        match self {
            Self::Obj => "obj",
            Self::Ply | Self::PlyFaces => "ply",
        }
    }

    /// The path of frame `index` in `dir`: `dir/frame_00042.obj`.
    pub fn path(self, dir: &Path, index: u64) -> PathBuf {
        dir.join(format!("frame_{index:05}.{}", self.extension()))
    }

    /// A writer of frames in this format into `dir`, created if missing. Frame files of an
    /// earlier run, in any format, are removed so the directory holds one consistent sequence.
    /// `uvs` are the objects' texture coordinates in the scene's order ([`ObjFrames`] writes
    /// them; PLY frames carry none).
    pub fn create(
        self,
        dir: &Path,
        uvs: Vec<Option<Uvs>>,
    ) -> std::io::Result<Box<dyn FrameSink + Send>> {
        Ok(match self {
            Self::Obj => Box::new(ObjFrames::create(dir, uvs)?),
            Self::Ply => Box::new(PlyFrames::create(dir, PlyTopology::Strips)?),
            Self::PlyFaces => Box::new(PlyFrames::create(dir, PlyTopology::Faces)?),
        })
    }
}

impl FromStr for FrameFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("expected obj, ply or ply-faces, got {s:?}"))
    }
}

/// Creates `dir` if missing and removes the frame files (`frame_*.obj`, `frame_*.ply`) in it.
fn clear_frames(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let frame = FrameFormat::ALL
            .iter()
            .any(|f| name.starts_with("frame_") && name.ends_with(&format!(".{}", f.extension())));
        if frame {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Creates (truncates) the CSV file `path` and writes its header line.
fn csv_with_header(path: &Path, header: &str) -> std::io::Result<BufWriter<File>> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "{header}")?;
    Ok(out)
}

/// Writes `stats` (a method's statistics, [`crate::Stepper::stats_json`]) as pretty JSON to
/// `path`.
pub fn write_stats(path: &Path, stats: &impl serde::Serialize) -> std::io::Result<()> {
    let json = serde_json::to_string_pretty(stats).map_err(std::io::Error::other)?;
    std::fs::write(path, json + "\n")
}
