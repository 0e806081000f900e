//! A small Wavefront OBJ reader and writer (positions and faces only).

use super::{MeshError, TriMesh};
use glam::DVec3;
use std::io::Write;
use std::path::Path;

/// Reads an OBJ file; see [`parse_obj`]. Does not validate topology.
pub fn read_obj(path: &Path) -> Result<TriMesh, MeshError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| MeshError::Io {
        path: name.clone(),
        message: e.to_string(),
    })?;
    parse_obj(&text, &name)
}

/// Parses OBJ text into a [`TriMesh`]; `path_for_errors` names the source in error messages.
///
/// Understands `v x y z [w]` (w and any trailing vertex colours are ignored) and
/// `f a b c ...` with `a`, `a/b`, `a//c`, `a/b/c` vertex forms, 1-based or negative (relative)
/// indices (each must refer to a vertex defined on an earlier line, as the OBJ format
/// requires); polygons are fan-triangulated around their first vertex. `vt`, `vn`, `o`, `g`,
/// `s`, `usemtl`, `mtllib`, comments, blank lines and other statements are ignored.
/// Bad numbers, index 0, out-of-range indices and faces with fewer than three vertices give
/// [`MeshError::Parse`] with the 1-based line number. Does not validate topology: call
/// [`TriMesh::validate`] afterwards.
pub fn parse_obj(text: &str, path_for_errors: &str) -> Result<TriMesh, MeshError> {
    let mut mesh = TriMesh::default();
    let mut face: Vec<u32> = Vec::new();
    for (line_index, raw) in text.lines().enumerate() {
        let line_no = line_index + 1;
        let err = |message: String| MeshError::Parse {
            path: path_for_errors.to_string(),
            line: line_no,
            message,
        };
        let content = raw.split('#').next().unwrap_or("");
        let mut tokens = content.split_whitespace();
        match tokens.next() {
            Some("v") => {
                let mut xyz = [0.0f64; 3];
                let mut count = 0;
                for tok in tokens {
                    let value: f64 = tok.parse().map_err(|_| {
                        err(format!(
                            "`{tok}` is not a number; a vertex line is `v x y z` with decimal \
                             coordinates"
                        ))
                    })?;
                    if !value.is_finite() {
                        return Err(err(format!(
                            "vertex coordinate `{tok}` is not finite; positions must be finite"
                        )));
                    }
                    if count < 3 {
                        xyz[count] = value;
                    }
                    count += 1;
                }
                if count < 3 {
                    return Err(err(format!(
                        "vertex has {count} coordinate(s), but `v` needs x, y and z"
                    )));
                }
                mesh.positions.push(DVec3::from_array(xyz));
            }
            Some("f") => {
                face.clear();
                let defined = mesh.positions.len();
                for tok in tokens {
                    face.push(parse_face_index(tok, defined).map_err(err)?);
                }
                if face.len() < 3 {
                    return Err(err(format!(
                        "face has {} vertex reference(s); a face needs at least 3",
                        face.len()
                    )));
                }
                for k in 1..face.len() - 1 {
                    mesh.triangles.push([face[0], face[k], face[k + 1]]);
                }
            }
            _ => {}
        }
    }
    Ok(mesh)
}

/// Resolves one `a`, `a/b`, `a//c` or `a/b/c` face token to a 0-based vertex index, given the
/// number of vertices defined so far.
fn parse_face_index(tok: &str, defined: usize) -> Result<u32, String> {
    let mut parts = tok.split('/');
    let first = parts.next().unwrap_or("");
    if parts.clone().count() > 2 {
        return Err(format!(
            "face vertex `{tok}` has too many `/`; use a, a/b, a//c or a/b/c"
        ));
    }
    for p in parts.filter(|p| !p.is_empty()) {
        if p.parse::<i64>().is_err() {
            return Err(format!(
                "`{p}` in face vertex `{tok}` is not an integer index"
            ));
        }
    }
    let index: i64 = first
        .parse()
        .map_err(|_| format!("`{first}` in face vertex `{tok}` is not an integer vertex index"))?;
    let resolved = match index {
        0 => {
            return Err(format!(
                "face vertex `{tok}` uses index 0, but OBJ indices start at 1 (or are negative \
                 for relative references)"
            ))
        }
        i if i > 0 => i - 1,
        i => defined as i64 + i,
    };
    if resolved < 0 || resolved >= defined as i64 {
        return Err(format!(
            "face vertex `{tok}` refers to a vertex that does not exist: {defined} vertices are \
             defined before this line (valid indices 1 to {defined}, or -1 to -{defined})"
        ));
    }
    u32::try_from(resolved).map_err(|_| format!("face vertex `{tok}` exceeds the u32 index range"))
}

/// One object for [`write_obj_positions`]: `(name, positions, triangles, first)`, where the
/// triangles' vertex `first + i` is `positions[i]` (so a simulation's global triangles can be
/// written without a copy in object-local indices).
pub type ObjGroup<'a> = (&'a str, &'a [DVec3], &'a [[u32; 3]], u32);

/// Writes several meshes as one OBJ file: per group an `o name` line, its `v` lines, then its
/// `f` lines with global 1-based indices. Coordinates are written so they parse back bit-exact.
pub fn write_obj(w: &mut impl Write, groups: &[(&str, &TriMesh)]) -> std::io::Result<()> {
    let slices: Vec<ObjGroup<'_>> = groups
        .iter()
        .map(|(name, m)| (*name, m.positions.as_slice(), m.triangles.as_slice(), 0))
        .collect();
    write_obj_positions(w, &slices)
}

/// `name` as one word for a frame file: whitespace replaced by `_`, `unnamed` when empty.
pub fn single_word(name: &str) -> String {
    if name.is_empty() {
        return "unnamed".into();
    }
    name.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// Like [`write_obj`], but from raw position and triangle slices (e.g. simulation frames).
///
/// Whitespace in names is replaced by `_`; an empty name becomes `unnamed`.
pub fn write_obj_positions(w: &mut impl Write, groups: &[ObjGroup<'_>]) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, w);
    let mut offset: u64 = 1;
    for &(name, positions, triangles, first) in groups {
        writeln!(out, "o {}", single_word(name))?;
        // `{:?}` prints the shortest representation that round-trips exactly, and switches to
        // exponent notation for very large or small magnitudes (unlike `{}`).
        for p in positions {
            writeln!(out, "v {:?} {:?} {:?}", p.x, p.y, p.z)?;
        }
        for t in triangles {
            let [a, b, c] = t.map(|v| u64::from(v) + offset - u64::from(first));
            writeln!(out, "f {a} {b} {c}")?;
        }
        offset += positions.len() as u64;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{icosphere, sheet};

    fn parse_err_line(text: &str) -> (usize, String) {
        match parse_obj(text, "test.obj") {
            Err(e @ MeshError::Parse { line, .. }) => (line, e.to_string()),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn round_trip_is_bit_exact() {
        let mut a = icosphere(1.0 / 3.0, 2).unwrap();
        a.positions[0] = DVec3::new(1e-300, -2.5e300, f64::MIN_POSITIVE);
        a.positions[1] = DVec3::new(-0.0, 0.1 + 0.2, std::f64::consts::PI);
        let b = sheet(4, 3, 1.7, 0.9).unwrap();
        let mut buf = Vec::new();
        write_obj(&mut buf, &[("sphere", &a), ("sheet one", &b)]).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.starts_with("o sphere\n"));
        assert!(text.contains("o sheet_one\n"));
        let parsed = parse_obj(&text, "mem").unwrap();
        let mut both = a.clone();
        both.append(&b);
        assert_eq!(parsed.triangles, both.triangles);
        assert_eq!(parsed.positions.len(), both.positions.len());
        for (p, q) in parsed.positions.iter().zip(&both.positions) {
            for k in 0..3 {
                assert_eq!(p[k].to_bits(), q[k].to_bits());
            }
        }
    }

    #[test]
    fn write_obj_positions_matches_write_obj() {
        let m = sheet(3, 3, 1.0, 1.0).unwrap();
        let mut a = Vec::new();
        let mut b = Vec::new();
        write_obj(&mut a, &[("m", &m)]).unwrap();
        write_obj_positions(&mut b, &[("m", &m.positions, &m.triangles, 0)]).unwrap();
        assert_eq!(a, b);
        // The same triangles in indices from 7.
        let shifted: Vec<[u32; 3]> = m.triangles.iter().map(|t| t.map(|v| v + 7)).collect();
        let mut c = Vec::new();
        write_obj_positions(&mut c, &[("m", &m.positions, &shifted, 7)]).unwrap();
        assert_eq!(a, c);
    }

    #[test]
    fn parses_all_face_forms_negative_indices_and_polygons() {
        let text = "# comment\nmtllib x.mtl\no thing\ng grp\ns 1\n\
                    v 0 0 0\nv 1 0 0 1.0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvn 0 0 1\n\
                    usemtl red\n\n\
                    f 1 2 3\nf 1/1 3/1 4/1\nf 1//1 2//1 4//1\nf -4/1/1 -3/1/1 -2/1/1 -1/1/1\n";
        let m = parse_obj(text, "t").unwrap();
        assert_eq!(m.positions.len(), 4);
        assert_eq!(m.positions[1], DVec3::new(1.0, 0.0, 0.0));
        assert_eq!(
            m.triangles,
            vec![[0, 1, 2], [0, 2, 3], [0, 1, 3], [0, 1, 2], [0, 2, 3]]
        );
    }

    #[test]
    fn crlf_and_trailing_comments() {
        let m = parse_obj(
            "v 0 0 0 # a\r\nv 1 0 0\r\nv 0 1 0\r\nf 1 2 3 # tri\r\n",
            "t",
        )
        .unwrap();
        assert_eq!(m.triangles, vec![[0, 1, 2]]);
    }

    #[test]
    fn errors_carry_line_numbers() {
        let v = "v 0 0 0\nv 1 0 0\nv 0 1 0\n";
        let (line, msg) = parse_err_line(&format!("{v}v 1 zz 0\n"));
        assert_eq!(line, 4);
        assert!(msg.contains("test.obj:4") && msg.contains("zz"), "{msg}");
        assert_eq!(parse_err_line(&format!("{v}v 1 2\n")).0, 4);
        assert_eq!(parse_err_line(&format!("{v}v 1 nan 2\n")).0, 4);
        let (line, msg) = parse_err_line(&format!("{v}\nf 0 1 2\n"));
        assert_eq!(line, 5);
        assert!(msg.contains("index 0"), "{msg}");
        let (line, msg) = parse_err_line(&format!("{v}f 1 2 4\n"));
        assert_eq!(line, 4);
        assert!(msg.contains("does not exist"), "{msg}");
        assert_eq!(parse_err_line(&format!("{v}f -1 -2 -4\n")).0, 4);
        let (line, msg) = parse_err_line(&format!("# c\n{v}f 1 2\n"));
        assert_eq!(line, 5);
        assert!(msg.contains("at least 3"), "{msg}");
        assert_eq!(parse_err_line(&format!("{v}f 1 2 x\n")).0, 4);
        assert_eq!(parse_err_line(&format!("{v}f 1 2 3/1/1/1\n")).0, 4);
        assert_eq!(parse_err_line(&format!("{v}f 1 2 3/q\n")).0, 4);
    }

    #[test]
    fn read_obj_reports_io_errors_and_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.obj");
        match read_obj(&missing) {
            Err(MeshError::Io { path, .. }) => assert!(path.contains("missing.obj")),
            other => panic!("{other:?}"),
        }
        let file = dir.path().join("s.obj");
        let m = sheet(3, 2, 1.0, 1.0).unwrap();
        let mut f = std::fs::File::create(&file).unwrap();
        write_obj(&mut f, &[("s", &m)]).unwrap();
        drop(f);
        assert_eq!(read_obj(&file).unwrap(), m);
    }
}
