//! One USD stage per run, `DIR/frames.usda`: a mesh prim per object with its topology once and
//! its `points` and `velocities` as time samples, for Blender, Houdini and usdview.
//!
//! USD keeps an attribute's time samples together, and a run hands out frames one at a time,
//! so each frame's float positions and velocities are appended to a hidden spool file beside
//! the stage, and [`UsdStage::finish`](super::FrameWriter::finish) writes the stage from it
//! (whole, through [`write_whole`]) when the run ends, however it ends.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::state::VertexKind;
use crate::{Frame, FrameSink, RunError};

use super::files::{named, write_whole};
use super::frame_format::{clear_frames, FrameWriter};

/// The stage's file name in the output directory.
pub const USD_FILE: &str = "frames.usda";

/// One object as a mesh prim.
#[derive(Debug)]
struct Prim {
    /// A valid, unique prim name made from the object's name.
    name: String,
    /// Its first global vertex and vertex count.
    first: usize,
    count: usize,
    /// Its triangles, with indices local to the object.
    triangles: Vec<[u32; 3]>,
    /// Every vertex is fixed: the points are written once, without samples.
    fixed: bool,
}

/// Writes a run's frames as one `.usda` stage (`metersPerUnit = 0.01`, `upAxis = "Y"`, a
/// time code per frame at `1 / frame_interval` codes a second): under a root prim named after
/// the scene, one `Mesh` per object with `faceVertexCounts`, `faceVertexIndices`, and time
/// samples of `points` (cm) and `velocities` (cm/s) as floats; a fixed object has its points
/// once and no samples.
#[derive(Debug)]
pub(crate) struct UsdStage {
    path: PathBuf,
    spool_path: PathBuf,
    /// Per frame, every vertex's position then velocity as six little-endian `f32`.
    spool: Option<BufWriter<File>>,
    prims: Vec<Prim>,
    scene: String,
    frame_interval: f64,
    /// The frame index of each spooled frame.
    frames: Vec<u64>,
    vertices: usize,
    /// Frame 0's positions, as written for fixed objects.
    first_positions: Vec<[f32; 3]>,
}

/// Bytes of one vertex in the spool: position and velocity as `f32`.
const VERTEX_BYTES: usize = 24;

/// `name` as a USD identifier (letters, digits, `_`, not starting with a digit), made unique
/// among `taken`.
fn prim_name(name: &str, taken: &[Prim]) -> String {
    let mut id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    let mut unique = id.clone();
    let mut n = 2;
    while taken.iter().any(|p| p.name == unique) {
        unique = format!("{id}_{n}");
        n += 1;
    }
    unique
}

impl UsdStage {
    /// Prepares `dir` as [`super::FrameFormat::create`] does; the stage is written by
    /// `finish`.
    pub(crate) fn create(dir: &Path) -> std::io::Result<Self> {
        clear_frames(dir)?;
        let path = dir.join(USD_FILE);
        let spool_path = dir.join(format!(".{USD_FILE}.samples"));
        let spool = File::create(&spool_path).map_err(|e| named(&spool_path, e))?;
        Ok(Self {
            path,
            spool_path,
            spool: Some(BufWriter::new(spool)),
            prims: Vec::new(),
            scene: String::new(),
            frame_interval: 0.0,
            frames: Vec::new(),
            vertices: 0,
            first_positions: Vec::new(),
        })
    }

    /// The prims of the model's objects, read from the first frame.
    fn layout(&mut self, frame: &Frame<'_>) {
        let model = frame.model();
        self.scene = model.name().to_string();
        self.frame_interval = model.frame_interval();
        self.vertices = frame.positions.len();
        let kind = &model.state().kind;
        for o in model.objects() {
            let (first, count) = (o.first_vertex as usize, o.vertex_count as usize);
            let first_triangle = o.first_triangle as usize;
            let triangles = model.triangles()
                [first_triangle..first_triangle + o.triangle_count as usize]
                .iter()
                .map(|t| t.map(|v| v - o.first_vertex))
                .collect();
            let prim = Prim {
                name: prim_name(&o.name, &self.prims),
                first,
                count,
                triangles,
                fixed: kind[first..first + count]
                    .iter()
                    .all(|k| *k == VertexKind::Fixed),
            };
            self.prims.push(prim);
        }
        self.first_positions = frame
            .positions
            .iter()
            .map(|x| x.as_vec3().to_array())
            .collect();
    }

    /// Writes the stage from the spool.
    fn write_stage(&self, w: &mut impl Write, spool: &mut File) -> std::io::Result<()> {
        let rate = 1.0 / self.frame_interval;
        let last = self.frames.last().copied().unwrap_or(0);
        let root = prim_name(&self.scene, &[]);
        writeln!(w, "#usda 1.0\n(")?;
        writeln!(w, "    defaultPrim = \"{root}\"")?;
        writeln!(
            w,
            "    doc = \"acm run of {}: {} frames every {} s; units cm, cm/s\"",
            self.scene.escape_default(),
            self.frames.len(),
            self.frame_interval
        )?;
        writeln!(w, "    metersPerUnit = 0.01\n    upAxis = \"Y\"")?;
        writeln!(w, "    startTimeCode = 0\n    endTimeCode = {last}")?;
        writeln!(
            w,
            "    timeCodesPerSecond = {rate:?}\n    framesPerSecond = {rate:?}\n)\n"
        )?;
        writeln!(w, "def Xform \"{root}\"\n{{")?;
        let mut record = Vec::new();
        for prim in &self.prims {
            writeln!(w, "    def Mesh \"{}\"\n    {{", prim.name)?;
            write!(w, "        int[] faceVertexCounts = [")?;
            write_list(w, prim.triangles.iter().map(|_| 3u32))?;
            write!(w, "        int[] faceVertexIndices = [")?;
            write_list(w, prim.triangles.iter().flatten().copied())?;
            writeln!(w, "        uniform token subdivisionScheme = \"none\"")?;
            if prim.fixed {
                write!(w, "        point3f[] points = [")?;
                write_tuples(
                    w,
                    &self.first_positions[prim.first..prim.first + prim.count],
                )?;
                writeln!(w)?;
            } else {
                for (attribute, offset) in [("point3f[] points", 0), ("vector3f[] velocities", 12)]
                {
                    writeln!(w, "        {attribute}.timeSamples = {{")?;
                    for (k, index) in self.frames.iter().enumerate() {
                        let start = (k * self.vertices + prim.first) * VERTEX_BYTES;
                        record.resize(prim.count * VERTEX_BYTES, 0);
                        spool.seek(SeekFrom::Start(start as u64))?;
                        spool.read_exact(&mut record)?;
                        let values: Vec<[f32; 3]> = record
                            .chunks_exact(VERTEX_BYTES)
                            .map(|r| {
                                std::array::from_fn(|c| {
                                    let at = offset + 4 * c;
                                    f32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"))
                                })
                            })
                            .collect();
                        write!(w, "            {index}: [")?;
                        write_tuples(w, &values)?;
                        w.write_all(b",\n")?;
                    }
                    writeln!(w, "        }}")?;
                }
            }
            writeln!(w, "    }}")?;
        }
        writeln!(w, "}}")
    }
}

/// Writes `values` comma-separated and closes the list: `1, 2, 3]`.
fn write_list(w: &mut impl Write, values: impl Iterator<Item = u32>) -> std::io::Result<()> {
    for (k, v) in values.enumerate() {
        if k > 0 {
            w.write_all(b", ")?;
        }
        write!(w, "{v}")?;
    }
    writeln!(w, "]")
}

/// Writes `values` as tuples and closes the list: `(1, 2, 3), (4, 5, 6)]` (no line end).
fn write_tuples(w: &mut impl Write, values: &[[f32; 3]]) -> std::io::Result<()> {
    for (k, [x, y, z]) in values.iter().enumerate() {
        if k > 0 {
            w.write_all(b", ")?;
        }
        write!(w, "({x:?}, {y:?}, {z:?})")?;
    }
    w.write_all(b"]")
}

impl FrameSink for UsdStage {
    fn frame(&mut self, frame: &Frame<'_>) -> Result<(), RunError> {
        if self.prims.is_empty() {
            self.layout(frame);
        }
        let Some(spool) = &mut self.spool else {
            return Ok(());
        };
        let velocities = &frame.model().state().v;
        for (x, v) in frame.positions.iter().zip(velocities) {
            for c in x
                .as_vec3()
                .to_array()
                .into_iter()
                .chain(v.as_vec3().to_array())
            {
                spool
                    .write_all(&c.to_le_bytes())
                    .map_err(|e| named(&self.spool_path, e))?;
            }
        }
        self.frames.push(frame.index);
        Ok(())
    }
}

impl FrameWriter for UsdStage {
    fn finish(&mut self) -> std::io::Result<()> {
        let Some(spool) = self.spool.take() else {
            return Ok(());
        };
        let result = (|| {
            let mut spool = spool
                .into_inner()
                .map_err(|e| named(&self.spool_path, e.into_error()))?;
            spool.flush().map_err(|e| named(&self.spool_path, e))?;
            let mut reader =
                File::open(&self.spool_path).map_err(|e| named(&self.spool_path, e))?;
            if self.frames.is_empty() {
                return Ok(());
            }
            write_whole(&self.path, |w| self.write_stage(w, &mut reader))
        })();
        let _ = std::fs::remove_file(&self.spool_path);
        result
    }
}
