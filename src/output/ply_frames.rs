//! One binary little-endian PLY file per frame: `DIR/frame_00000.ply`, ... with positions and
//! velocities, for importing a sequence into Blender or Houdini.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::mesh::{single_word, triangle_strips};
use crate::{Frame, FrameSink, RunError};

use super::files::write_whole;
use super::frame_format::{clear_frames, FrameFormat, FrameWriter};

/// How PLY frames store the triangles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlyTopology {
    /// `element tristrips 1` with `property list uint int vertex_indices`: triangle strips
    /// separated by `-1` ([`triangle_strips`]), about 6.6 bytes a triangle on a sheet. Blender's
    /// PLY importer reads it.
    Strips,
    /// `element face` with `property list uchar uint vertex_indices`: 13 bytes a triangle, in
    /// the model's triangle order; every PLY reader reads it.
    Faces,
}

/// Writes each frame as a PLY holding every object: `element vertex` with float `x y z` (cm)
/// and `vx vy vz` (cm/s), then the triangles (global 0-based indices, the same bytes in every
/// frame) as a [`PlyTopology`]. A `comment object NAME FIRST COUNT` line per object gives its
/// vertex range.
#[derive(Debug)]
pub(crate) struct PlyFrames {
    dir: PathBuf,
    topology: PlyTopology,
    /// The encoded vertex element of the frame being written.
    vertices: Vec<u8>,
    /// The encoded triangles (the `face` or `tristrips` element): the same bytes every frame.
    triangles: Vec<u8>,
}

impl PlyFrames {
    /// Bytes of one vertex record: six little-endian `f32`.
    pub(crate) const VERTEX_BYTES: usize = 24;
    /// Bytes of one face record: a `u8` count (3) and three little-endian `u32` indices.
    pub(crate) const FACE_BYTES: usize = 13;

    /// Prepares `dir` as [`FrameFormat::create`] does.
    pub(crate) fn create(dir: &Path, topology: PlyTopology) -> std::io::Result<Self> {
        clear_frames(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            topology,
            vertices: Vec::new(),
            triangles: Vec::new(),
        })
    }

    /// Encodes `triangles` once, as the header's last element.
    fn encode_triangles(&mut self, triangles: &[[u32; 3]]) {
        match self.topology {
            PlyTopology::Faces => {
                self.triangles.reserve(triangles.len() * Self::FACE_BYTES);
                for t in triangles {
                    self.triangles.push(3);
                    for v in t {
                        self.triangles.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
            PlyTopology::Strips => {
                let strips = triangle_strips(triangles);
                self.triangles.reserve(4 * (strips.len() + 1));
                self.triangles
                    .extend_from_slice(&(strips.len() as u32).to_le_bytes());
                for v in strips {
                    self.triangles.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
}

impl FrameSink for PlyFrames {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        let model = frame.model();
        let triangles = model.triangles();
        if self.triangles.is_empty() {
            self.encode_triangles(triangles);
        }
        self.vertices.clear();
        self.vertices
            .reserve(frame.positions.len() * Self::VERTEX_BYTES);
        for (x, v) in frame.positions.iter().zip(&model.state().v) {
            for c in x.to_array().into_iter().chain(v.to_array()) {
                self.vertices.extend_from_slice(&(c as f32).to_le_bytes());
            }
        }
        let path = FrameFormat::Ply.path(&self.dir, frame.index);
        let (vertices, encoded) = (&self.vertices, &self.triangles);
        write_whole(&path, |w| {
            writeln!(w, "ply\nformat binary_little_endian 1.0")?;
            writeln!(
                w,
                "comment acm frame {} at t = {:?} s; units cm, cm/s",
                frame.index, frame.time
            )?;
            for o in model.objects() {
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
            match self.topology {
                PlyTopology::Faces => writeln!(
                    w,
                    "element face {}\nproperty list uchar uint vertex_indices",
                    triangles.len()
                )?,
                PlyTopology::Strips => writeln!(
                    w,
                    "element tristrips 1\nproperty list uint int vertex_indices"
                )?,
            }
            writeln!(w, "end_header")?;
            w.write_all(vertices)?;
            w.write_all(encoded)
        })?;
        Ok(())
    }
}

impl FrameWriter for PlyFrames {}
