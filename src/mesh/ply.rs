//! Reading the binary PLY frames acm writes (`acm run --format ply`), for `acm check`.

use super::error::MeshError;
use super::strip::strip_triangles;
use super::tri_mesh::TriMesh;

/// Parses a binary little-endian PLY of triangles: `element vertex` with `float` properties
/// (`x`, `y` and `z` among them; velocities or others are skipped), then either
/// `element face` with one `list uchar uint` (or `int`) property of three indices per face, or
/// `element tristrips 1` with one `list uint int` (or `uint`, `int` counts) property: triangle
/// strips separated by `-1` (see [`strip_triangles`]). Positions are widened from `f32`.
/// `path_for_errors` names the file in errors; header errors give the header's line.
pub fn parse_ply(bytes: &[u8], path_for_errors: &str) -> Result<TriMesh, MeshError> {
    let parse_error = |line: usize, message: &str| MeshError::Parse {
        path: path_for_errors.to_string(),
        line,
        message: message.to_string(),
    };
    const END: &[u8] = b"end_header\n";
    let header_len = bytes
        .windows(END.len())
        .position(|w| w == END)
        .map(|p| p + END.len())
        .ok_or_else(|| parse_error(1, "no `end_header` line: not a PLY file"))?;
    let header = std::str::from_utf8(&bytes[..header_len])
        .map_err(|_| parse_error(1, "the header is not text"))?;
    let layout = Layout::read(header).map_err(|(line, m)| parse_error(line, &m))?;
    let body_error = |message: &str| parse_error(header.lines().count(), message);
    let body = &bytes[header_len..];
    let vertex_bytes = 4 * layout.properties;
    let vertices_end = layout
        .vertices
        .checked_mul(vertex_bytes)
        .filter(|&end| end <= body.len())
        .ok_or_else(|| {
            body_error(&format!(
                "the header declares {} vertices of {vertex_bytes} bytes, but {} bytes follow it",
                layout.vertices,
                body.len()
            ))
        })?;
    let f32_at = |offset: usize| {
        f32::from_le_bytes(body[offset..offset + 4].try_into().expect("4 bytes")) as f64
    };
    let u32_at = |bytes: &[u8], offset: usize| {
        u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
    };
    let positions = (0..layout.vertices)
        .map(|v| {
            let base = v * vertex_bytes;
            glam::DVec3::from_array(layout.xyz.map(|p| f32_at(base + 4 * p)))
        })
        .collect();
    let rest = &body[vertices_end..];
    let triangles = match layout.topology {
        Topology::Faces(faces) => {
            const FACE_BYTES: usize = 1 + 4 * 3;
            if faces.checked_mul(FACE_BYTES) != Some(rest.len()) {
                return Err(body_error(&format!(
                    "the header declares {faces} triangles of {FACE_BYTES} bytes after the \
                     vertices, but {} bytes follow them",
                    rest.len()
                )));
            }
            let mut triangles = Vec::with_capacity(faces);
            for (f, record) in rest.chunks_exact(FACE_BYTES).enumerate() {
                if record[0] != 3 {
                    return Err(body_error(&format!(
                        "face {f} has {} vertices; acm reads triangles",
                        record[0]
                    )));
                }
                triangles.push(std::array::from_fn(|k| u32_at(record, 1 + 4 * k)));
            }
            triangles
        }
        Topology::Strips => {
            let count = (rest.len() >= 4).then(|| u32_at(rest, 0) as usize);
            if count.and_then(|c| c.checked_mul(4)) != Some(rest.len().saturating_sub(4)) {
                return Err(body_error(&format!(
                    "the tristrips list does not fill the {} bytes after the vertices",
                    rest.len()
                )));
            }
            let strips: Vec<u32> = (4..rest.len())
                .step_by(4)
                .map(|k| u32_at(rest, k))
                .collect();
            strip_triangles(&strips)
        }
    };
    let bad = triangles.iter().enumerate().find_map(|(f, t)| {
        t.iter()
            .find(|&&v| v as usize >= layout.vertices)
            .map(|&v| (f, v))
    });
    if let Some((f, v)) = bad {
        return Err(body_error(&format!(
            "triangle {f} refers to vertex {v}, but there are {} vertices",
            layout.vertices
        )));
    }
    Ok(TriMesh::new(positions, triangles))
}

/// How a header stores the triangles.
enum Topology {
    /// `element face N`: `N` triangles, each a `uchar` count and three 4-byte indices.
    Faces(usize),
    /// `element tristrips 1`: one list of strip indices.
    Strips,
}

/// What a header declares.
struct Layout {
    vertices: usize,
    /// Number of `float` vertex properties.
    properties: usize,
    /// The indices of `x`, `y` and `z` among them.
    xyz: [usize; 3],
    topology: Topology,
}

impl Layout {
    /// Reads `header` (up to `end_header`); an error gives its 1-based line.
    fn read(header: &str) -> Result<Layout, (usize, String)> {
        let mut vertices = None;
        let mut topology = None;
        let mut names: Vec<&str> = Vec::new();
        let mut list = false;
        for (i, line) in header.lines().enumerate() {
            let no = i + 1;
            let words: Vec<&str> = line.split_whitespace().collect();
            let unsupported = || Err((no, format!("unsupported header line {line:?}")));
            match words[..] {
                ["ply"] if no == 1 => {}
                _ if no == 1 => return Err((no, "not a PLY file (no `ply` line)".into())),
                ["format", "binary_little_endian", "1.0"] => {}
                ["format", ..] => {
                    return Err((no, "only binary_little_endian 1.0 is read".into()));
                }
                ["comment", ..] | ["obj_info", ..] | ["end_header"] => {}
                ["element", "vertex", n] if vertices.is_none() && topology.is_none() => {
                    vertices = Some(n.parse().map_err(|_| (no, format!("bad count {n:?}")))?);
                }
                ["element", "face", n] if vertices.is_some() && topology.is_none() => {
                    let n = n.parse().map_err(|_| (no, format!("bad count {n:?}")))?;
                    topology = Some(Topology::Faces(n));
                }
                ["element", "tristrips", "1"] if vertices.is_some() && topology.is_none() => {
                    topology = Some(Topology::Strips);
                }
                ["property", "float", name] if topology.is_none() && vertices.is_some() => {
                    names.push(name);
                }
                ["property", "list", "uchar", "uint" | "int", _]
                    if matches!(topology, Some(Topology::Faces(_))) && !list =>
                {
                    list = true;
                }
                ["property", "list", "uint" | "int", "uint" | "int", _]
                    if matches!(topology, Some(Topology::Strips)) && !list =>
                {
                    list = true;
                }
                _ => return unsupported(),
            }
        }
        let position = |axis: &str| {
            names.iter().position(|&n| n == axis).ok_or((
                1,
                format!("the vertex element has no float property {axis}"),
            ))
        };
        let xyz = [position("x")?, position("y")?, position("z")?];
        match (vertices, topology, list) {
            (Some(vertices), Some(topology), true) => Ok(Layout {
                vertices,
                properties: names.len(),
                xyz,
                topology,
            }),
            _ => Err((
                1,
                "a vertex element and a face or tristrips element with a list property are \
                 needed"
                    .into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PLY of `vertices` (x y z vx vy vz each) and `faces`, as acm writes it.
    fn ply(vertices: &[[f32; 6]], faces: &[[u32; 3]]) -> Vec<u8> {
        let mut out = format!(
            "ply\nformat binary_little_endian 1.0\ncomment object a 0 {}\nelement vertex {}\n\
             property float x\nproperty float y\nproperty float z\nproperty float vx\n\
             property float vy\nproperty float vz\nelement face {}\n\
             property list uchar uint vertex_indices\nend_header\n",
            vertices.len(),
            vertices.len(),
            faces.len()
        )
        .into_bytes();
        for v in vertices {
            for c in v {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
        for f in faces {
            out.push(3);
            for i in f {
                out.extend_from_slice(&i.to_le_bytes());
            }
        }
        out
    }

    #[test]
    fn reads_positions_and_faces_and_skips_velocities() {
        let vertices = [
            [0.0, 1.0, 2.0, 9.0, 9.0, 9.0],
            [1.5, 0.0, 0.0, 9.0, 9.0, 9.0],
            [0.0, 0.25, 1.0, 9.0, 9.0, 9.0],
        ];
        let mesh = parse_ply(&ply(&vertices, &[[0, 2, 1]]), "f.ply").unwrap();
        assert_eq!(mesh.triangles, vec![[0, 2, 1]]);
        assert_eq!(mesh.positions[1], glam::DVec3::new(1.5, 0.0, 0.0));
        assert_eq!(mesh.positions[2], glam::DVec3::new(0.0, 0.25, 1.0));
    }

    #[test]
    fn bad_files_are_errors_naming_the_file() {
        let good = ply(&[[0.0; 6]; 3], &[[0, 1, 2]]);
        let truncated = &good[..good.len() - 1];
        let out_of_range = ply(&[[0.0; 6]; 3], &[[0, 1, 7]]);
        let text = b"ply\nformat ascii 1.0\nend_header\n".to_vec();
        for (bytes, needle) in [
            (truncated, "bytes follow"),
            (&out_of_range[..], "vertex 7"),
            (&text[..], "binary_little_endian"),
            (&b"solid x\n"[..], "not a PLY"),
        ] {
            let e = parse_ply(bytes, "f.ply").unwrap_err().to_string();
            assert!(e.contains("f.ply") && e.contains(needle), "{needle}: {e}");
        }
    }

    /// A PLY of `vertices` (x y z only) and one `tristrips` list, as `--format ply` writes it.
    fn ply_strips(vertices: &[[f32; 3]], strips: &[u32]) -> Vec<u8> {
        let mut out = format!(
            "ply\nformat binary_little_endian 1.0\nelement vertex {}\nproperty float x\n\
             property float y\nproperty float z\nelement tristrips 1\n\
             property list uint int vertex_indices\nend_header\n",
            vertices.len()
        )
        .into_bytes();
        for c in vertices.iter().flatten() {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&(strips.len() as u32).to_le_bytes());
        for i in strips {
            out.extend_from_slice(&i.to_le_bytes());
        }
        out
    }

    #[test]
    fn reads_triangle_strips() {
        let vertices = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [1.0, 1.0, 0.0],
        ];
        let mesh = parse_ply(
            &ply_strips(&vertices, &[0, 1, 2, 3, u32::MAX, 3, 2, 0]),
            "s.ply",
        );
        assert_eq!(
            mesh.unwrap().triangles,
            vec![[0, 1, 2], [2, 1, 3], [3, 2, 0]]
        );
        let good = ply_strips(&vertices, &[0, 1, 2]);
        for (bytes, needle) in [
            (ply_strips(&vertices, &[0, 1, 4]), "vertex 4"),
            (good[..good.len() - 1].to_vec(), "does not fill"),
            (good[..good.len() - 16].to_vec(), "does not fill"),
        ] {
            let e = parse_ply(&bytes, "s.ply").unwrap_err().to_string();
            assert!(e.contains("s.ply") && e.contains(needle), "{needle}: {e}");
        }
    }
}
