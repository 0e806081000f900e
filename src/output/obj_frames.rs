//! One OBJ file per frame: `DIR/frame_00000.obj`, ...

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::mesh::{write_obj_positions, ObjGroup, Uvs};
use crate::{Frame, FrameSink, RunError};

use super::files::write_whole;
use super::frame_format::{clear_frames, FrameFormat, FrameWriter};

/// The path of OBJ frame `index` in `dir`.
pub fn frame_path(dir: &Path, index: u64) -> PathBuf {
    FrameFormat::Obj.path(dir, index)
}

/// Writes each frame as an OBJ holding every object (`o name` groups, global 1-based indices),
/// with the objects' texture coordinates when every object has them (see
/// `write_obj_positions`).
#[derive(Debug)]
pub struct ObjFrames {
    dir: PathBuf,
    /// Per object: name, vertices and triangles (ranges of the model's).
    objects: Vec<(String, Range<usize>, Range<usize>)>,
    /// Per object, in the scene's order: its texture coordinates, if any.
    uvs: Vec<Option<Uvs>>,
}

impl ObjFrames {
    /// Prepares `dir` as [`FrameFormat::create`] does; `uvs` are the objects' texture
    /// coordinates in the scene's order (empty when there are none).
    pub(crate) fn create(dir: &Path, uvs: Vec<Option<Uvs>>) -> std::io::Result<Self> {
        clear_frames(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            objects: Vec::new(),
            uvs,
        })
    }

    fn layout(&mut self, frame: &Frame<'_>) {
        if !self.objects.is_empty() {
            return;
        }
        self.objects = frame
            .model()
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
        let triangles = frame.model().triangles();
        let groups: Vec<_> = self
            .objects
            .iter()
            .enumerate()
            .map(|(i, (name, vertices, tris))| ObjGroup {
                name: name.as_str(),
                positions: &frame.positions[vertices.clone()],
                triangles: &triangles[tris.clone()],
                first: vertices.start as u32,
                // Coordinates that do not match the object's triangles (not the scene's
                // objects) are not written.
                uvs: self
                    .uvs
                    .get(i)
                    .and_then(Option::as_ref)
                    .filter(|uvs| uvs.corners.len() == tris.len()),
            })
            .collect();
        let path = FrameFormat::Obj.path(&self.dir, frame.index);
        write_whole(&path, |w| write_obj_positions(w, &groups))?;
        Ok(())
    }
}

impl FrameWriter for ObjFrames {}
