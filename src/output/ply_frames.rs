//! One binary little-endian PLY file per frame: `DIR/frame_00000.ply`, ... with positions and
//! velocities, for importing a sequence into Blender or Houdini.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::engine::{Frame, FrameSink, RunError};
use crate::mesh::single_word;

use super::FrameFormat;

/// Writes each frame as a PLY holding every object: `element vertex` with float `x y z` (cm)
/// and `vx vy vz` (cm/s), then `element face` with the triangles (global 0-based indices, the
/// same in every frame). A `comment object NAME FIRST COUNT` line per object gives its vertex
/// range.
#[derive(Debug)]
pub struct PlyFrames {
    dir: PathBuf,
    /// The encoded vertex element of the frame being written.
    vertices: Vec<u8>,
    /// The encoded face element: the same bytes every frame.
    faces: Vec<u8>,
}

impl PlyFrames {
    /// Bytes of one vertex record: six little-endian `f32`.
    pub const VERTEX_BYTES: usize = 24;
    /// Bytes of one face record: a `u8` count (3) and three little-endian `u32` indices.
    pub const FACE_BYTES: usize = 13;

    /// Prepares `dir` as [`FrameFormat::create`] does.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        super::clear_frames(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            vertices: Vec::new(),
            faces: Vec::new(),
        })
    }
}

impl FrameSink for PlyFrames {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let sim = frame.simulation;
        let triangles = sim.triangles();
        if self.faces.is_empty() {
            self.faces.reserve(triangles.len() * Self::FACE_BYTES);
            for t in triangles {
                self.faces.push(3);
                for v in t {
                    self.faces.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        self.vertices.clear();
        self.vertices
            .reserve(frame.positions.len() * Self::VERTEX_BYTES);
        for (x, v) in frame.positions.iter().zip(&sim.state().v) {
            for c in x.to_array().into_iter().chain(v.to_array()) {
                self.vertices.extend_from_slice(&(c as f32).to_le_bytes());
            }
        }
        let mut w = BufWriter::new(File::create(FrameFormat::Ply.path(&self.dir, frame.index))?);
        writeln!(w, "ply\nformat binary_little_endian 1.0")?;
        writeln!(
            w,
            "comment acm frame {} at t = {:?} s; units cm, cm/s",
            frame.index, frame.time
        )?;
        for o in sim.objects() {
            let name = single_word(&o.name);
            writeln!(
                w,
                "comment object {name} {} {}",
                o.first_vertex, o.vertex_count
            )?;
        }
        writeln!(w, "element vertex {}", frame.positions.len())?;
        for p in ["x", "y", "z", "vx", "vy", "vz"] {
            writeln!(w, "property float {p}")?;
        }
        writeln!(w, "element face {}", triangles.len())?;
        writeln!(w, "property list uchar uint vertex_indices\nend_header")?;
        w.write_all(&self.vertices)?;
        w.write_all(&self.faces)?;
        w.flush()?;
        Ok(())
    }
}
