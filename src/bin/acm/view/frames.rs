//! The frames of a run's output directory: `frame_*.obj` or `frame_*.ply`, with the objects'
//! vertex ranges and the frame times of `energy.csv`.

use std::path::{Path, PathBuf};

use acm::mesh::{parse_obj, parse_ply, TriMesh};

/// One object's vertices in a frame: `first .. first + count`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ObjectSpan {
    /// The object's name.
    pub name: String,
    /// Its first vertex.
    pub first: usize,
    /// Its vertex count.
    pub count: usize,
}

/// The frame files of one run, in order.
#[derive(Clone, Debug)]
pub(crate) struct FrameSet {
    /// The directory.
    pub dir: PathBuf,
    /// Its frame files, sorted by index.
    pub paths: Vec<PathBuf>,
}

impl FrameSet {
    /// The `frame_*.obj` or `frame_*.ply` files of `dir`; an error (naming `dir`) when there are
    /// none, or both kinds.
    pub(crate) fn list(dir: &Path) -> Result<Self, String> {
        let at = |m: String| format!("{}: {m}", dir.display());
        let listing: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| at(e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        let ending = |ending: &str| {
            let mut frames: Vec<PathBuf> = listing
                .iter()
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("frame_") && n.ends_with(ending))
                })
                .cloned()
                .collect();
            frames.sort();
            frames
        };
        let (obj, ply) = (ending(".obj"), ending(".ply"));
        let paths = match (obj.is_empty(), ply.is_empty()) {
            (false, true) => obj,
            (true, false) => ply,
            (true, true) if dir.join(acm::output::USD_FILE).exists() => {
                return Err(at(format!(
                    "holds a USD stage ({}), not frame files: open it in usdview, Blender or \
                     Houdini, or run with --format obj or ply",
                    acm::output::USD_FILE
                )))
            }
            (true, true) => {
                return Err(at(
                    "no frame_*.obj or frame_*.ply files: run a scene into it first (acm run \
                     PROFILE --out DIR)"
                        .into(),
                ))
            }
            (false, false) => {
                return Err(at(
                    "holds both frame_*.obj and frame_*.ply files; check one run's frames".into(),
                ))
            }
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            paths,
        })
    }

    /// Frame `index`'s mesh and its objects' vertex ranges; errors name the file.
    pub(crate) fn read(&self, index: usize) -> Result<(TriMesh, Vec<ObjectSpan>), String> {
        let path = &self.paths[index];
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
        if name.ends_with(".ply") {
            let mesh = parse_ply(&bytes, &name).map_err(|e| e.to_string())?;
            let header_end = bytes
                .windows(10)
                .position(|w| w == b"end_header")
                .unwrap_or(0);
            let header = String::from_utf8_lossy(&bytes[..header_end]);
            let spans = header
                .lines()
                .filter_map(|line| {
                    let rest = line.strip_prefix("comment object ")?;
                    let mut words = rest.rsplitn(3, ' ');
                    let count = words.next()?.parse().ok()?;
                    let first = words.next()?.parse().ok()?;
                    let name = words.next()?.to_string();
                    Some(ObjectSpan { name, first, count })
                })
                .collect();
            Ok((mesh, spans))
        } else {
            let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not a text file"))?;
            let mesh = parse_obj(&text, &name).map_err(|e| e.to_string())?;
            let mut spans: Vec<ObjectSpan> = Vec::new();
            let mut vertices = 0;
            for line in text.lines() {
                if let Some(object) = line.strip_prefix("o ") {
                    spans.push(ObjectSpan {
                        name: object.trim().to_string(),
                        first: vertices,
                        count: 0,
                    });
                } else if line.starts_with("v ") {
                    vertices += 1;
                    if let Some(span) = spans.last_mut() {
                        span.count += 1;
                    }
                }
            }
            Ok((mesh, spans))
        }
    }

    /// Each frame's time (s) from the run's `energy.csv` (its first column, a row per frame),
    /// when it has a row for every frame.
    pub(crate) fn times(&self) -> Option<Vec<f64>> {
        let text = std::fs::read_to_string(self.dir.join("energy.csv")).ok()?;
        let times: Vec<f64> = text
            .lines()
            .skip(1)
            .map_while(|line| line.split(',').next()?.parse().ok())
            .collect();
        (times.len() >= self.paths.len()).then_some(times)
    }
}

/// The objects of a frame, or one object holding every vertex when the file names none.
pub(crate) fn spans_or_whole(spans: Vec<ObjectSpan>, vertices: usize) -> Vec<ObjectSpan> {
    if spans.is_empty() {
        vec![ObjectSpan {
            name: "mesh".into(),
            first: 0,
            count: vertices,
        }]
    } else {
        spans
    }
}
