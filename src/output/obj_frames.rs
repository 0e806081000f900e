//! One OBJ file per frame: `DIR/frame_00000.obj`, ...

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::engine::{Frame, FrameSink, RunError};
use crate::mesh::write_obj_positions;

/// The path of frame `index` in `dir`.
pub fn frame_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("frame_{index:05}.obj"))
}

/// Writes each frame as an OBJ holding every object (`o name` groups, global 1-based indices).
#[derive(Debug)]
pub struct ObjFrames {
    dir: PathBuf,
    /// Per object: name and its triangles in object-local indices.
    objects: Vec<(String, std::ops::Range<usize>, Vec<[u32; 3]>)>,
}

impl ObjFrames {
    /// Prepares `dir` (created if missing; frame files of an earlier run are removed so the
    /// directory holds one consistent sequence).
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("frame_") && name.ends_with(".obj") {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            objects: Vec::new(),
        })
    }

    fn layout(&mut self, frame: &Frame<'_>) {
        if !self.objects.is_empty() {
            return;
        }
        let sim = frame.simulation;
        let triangles = sim.triangles();
        self.objects = sim
            .objects()
            .iter()
            .map(|o| {
                let first = o.first_vertex as usize;
                let range = first..first + o.vertex_count as usize;
                let tris = triangles[o.first_triangle as usize..][..o.triangle_count as usize]
                    .iter()
                    .map(|t| t.map(|v| v - o.first_vertex))
                    .collect();
                (o.name.clone(), range, tris)
            })
            .collect();
    }
}

impl FrameSink for ObjFrames {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        self.layout(frame);
        let groups: Vec<_> = self
            .objects
            .iter()
            .map(|(name, range, tris)| {
                (
                    name.as_str(),
                    &frame.positions[range.clone()],
                    tris.as_slice(),
                )
            })
            .collect();
        let mut w = BufWriter::new(File::create(frame_path(&self.dir, frame.index))?);
        write_obj_positions(&mut w, &groups)?;
        std::io::Write::flush(&mut w)?;
        Ok(())
    }
}
