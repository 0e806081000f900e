//! The frame formats (`acm run --format`) and what every frame writer does.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::files::named;
use super::obj_frames::ObjFrames;
use super::ply_frames::{PlyFrames, PlyTopology};
use super::usd_stage::{UsdStage, USD_FILE};
use crate::mesh::Uvs;
use crate::FrameSink;

/// A frame sequence being written: frames as they come, then [`Self::finish`] once the run
/// has ended, finished or not.
pub trait FrameWriter: FrameSink + Send {
    /// Completes what the frames need after the last one (a USD stage's samples); a
    /// one-file-per-frame writer has nothing left to do.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The file format of a frame sequence (`acm run --format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameFormat {
    /// Text OBJ: an `o` group per object, positions printed to round-trip exactly.
    #[default]
    Obj,
    /// Binary little-endian PLY: float positions and velocities, and the triangles as a
    /// standard `face` list (`PlyFrames`, `PlyTopology::Faces`) that every PLY reader reads.
    Ply,
    /// The same PLY with the triangles as strips (`PlyTopology::Strips`): half the size of
    /// the faces on a sheet, for readers that decode `tristrips` (Blender's).
    PlyStrips,
    /// One USD stage for the whole run, `frames.usda` (`UsdStage`).
    Usd,
}

impl FrameFormat {
    /// Every format.
    pub(crate) const ALL: [Self; 4] = [Self::Obj, Self::Ply, Self::PlyStrips, Self::Usd];

    /// The name `--format` takes (`obj`, `ply`, `ply-strips`, `usd`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Obj => "obj",
            Self::Ply => "ply",
            Self::PlyStrips => "ply-strips",
            Self::Usd => "usd",
        }
    }

    /// The file extension (`obj`, `ply`, `usda`).
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Self::Obj => "obj",
            Self::Ply | Self::PlyStrips => "ply",
            Self::Usd => "usda",
        }
    }

    /// The path of frame `index` in `dir`: `dir/frame_00042.obj` (a USD stage holds every
    /// frame in `dir/frames.usda`).
    pub fn path(self, dir: &Path, index: u64) -> PathBuf {
        match self {
            Self::Usd => dir.join(USD_FILE),
            _ => dir.join(format!("frame_{index:05}.{}", self.extension())),
        }
    }

    /// A writer of frames in this format into `dir`, created if missing. Frame files of an
    /// earlier run, in any format, are removed so the directory holds one consistent sequence.
    /// `uvs` are the objects' texture coordinates in the scene's order ([`ObjFrames`] writes
    /// them; PLY frames and USD stages carry none).
    pub fn create(
        self,
        dir: &Path,
        uvs: Vec<Option<Uvs>>,
    ) -> std::io::Result<Box<dyn FrameWriter>> {
        Ok(match self {
            Self::Obj => Box::new(ObjFrames::create(dir, uvs)?),
            Self::Ply => Box::new(PlyFrames::create(dir, PlyTopology::Faces)?),
            Self::PlyStrips => Box::new(PlyFrames::create(dir, PlyTopology::Strips)?),
            Self::Usd => Box::new(UsdStage::create(dir)?),
        })
    }
}

impl FromStr for FrameFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("expected obj, ply, ply-strips or usd, got {s:?}"))
    }
}

/// Whether `name` is a frame file of any format (`frame_00003.obj`, `frames.usda`).
pub(crate) fn is_frame_file(name: &str) -> bool {
    name == USD_FILE
        || FrameFormat::ALL
            .iter()
            .any(|f| name.starts_with("frame_") && name.ends_with(&format!(".{}", f.extension())))
}

/// Creates `dir` if missing and removes the frame files of an earlier run in it.
pub(super) fn clear_frames(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| named(dir, e))?;
    for entry in std::fs::read_dir(dir).map_err(|e| named(dir, e))? {
        let path = entry?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_frame_file)
        {
            std::fs::remove_file(&path).map_err(|e| named(&path, e))?;
        }
    }
    Ok(())
}
