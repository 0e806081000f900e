//! One OBJ file per frame: `DIR/frame_00000.obj`, ...

use std::fs::File;
use std::io::BufWriter;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::engine::{Frame, FrameSink, RunError};
use crate::mesh::write_obj_positions;

use super::FrameFormat;

/// The path of OBJ frame `index` in `dir`.
pub fn frame_path(dir: &Path, index: u64) -> PathBuf {
    FrameFormat::Obj.path(dir, index)
}

/// Writes each frame as an OBJ holding every object (`o name` groups, global 1-based indices).
#[derive(Debug)]
pub struct ObjFrames {
    dir: PathBuf,
    /// Per object: name, vertices and triangles (ranges of the simulation's).
    objects: Vec<(String, Range<usize>, Range<usize>)>,
}

impl ObjFrames {
    /// Prepares `dir` as [`FrameFormat::create`] does.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        super::clear_frames(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            objects: Vec::new(),
        })
    }

    fn layout(&mut self, frame: &Frame<'_>) {
        if !self.objects.is_empty() {
            return;
        }
        self.objects = frame
            .simulation
            .objects()
            .iter()
            .map(|o| {
                let (vertex, triangle) = (o.first_vertex as usize, o.first_triangle as usize);
                (
                    o.name.clone(),
                    vertex..vertex + o.vertex_count as usize,
                    triangle..triangle + o.triangle_count as usize,
                )
            })
            .collect();
    }
}

impl FrameSink for ObjFrames {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        self.layout(frame);
        let triangles = frame.simulation.triangles();
        let groups: Vec<_> = self
            .objects
            .iter()
            .map(|(name, vertices, tris)| {
                (
                    name.as_str(),
                    &frame.positions[vertices.clone()],
                    &triangles[tris.clone()],
                    vertices.start as u32,
                )
            })
            .collect();
        let mut w = BufWriter::new(File::create(FrameFormat::Obj.path(&self.dir, frame.index))?);
        write_obj_positions(&mut w, &groups)?;
        std::io::Write::flush(&mut w)?;
        Ok(())
    }
}
