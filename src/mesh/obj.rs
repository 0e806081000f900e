//! A small Wavefront OBJ reader and writer: positions, faces and texture coordinates.

use super::error::MeshError;
use super::tri_mesh::TriMesh;
use super::uv::Uvs;
use crate::profiling::zone;
use glam::{DVec2, DVec3};
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
/// Understands `v x y z [w]` (w and any trailing vertex colours are ignored), `vt u [v [w]]`
/// (v defaults to 0, w is ignored) and `f a b c ...` with `a`, `a/b`, `a//c`, `a/b/c` vertex
/// forms, 1-based or negative (relative) indices (each must refer to a `v` or `vt` defined on
/// an earlier line, as the OBJ format requires); polygons are fan-triangulated around their
/// first vertex. The mesh keeps texture coordinates ([`TriMesh::uvs`]) when every face gives
/// one on every corner; a file where some faces have none gets `None`. `vn`, `o`, `g`, `s`,
/// `usemtl`, `mtllib`, comments, blank lines and other statements are ignored.
/// Bad numbers, index 0, out-of-range indices, faces with fewer than three vertices and faces
/// that give a texture coordinate on some corners only give [`MeshError::Parse`] with the
/// 1-based line number. Does not validate topology: call [`TriMesh::validate`] afterwards.
pub fn parse_obj(text: &str, path_for_errors: &str) -> Result<TriMesh, MeshError> {
    let mut mesh = TriMesh::default();
    let mut uvs = Uvs::default();
    // Whether every face so far gives a texture coordinate on every corner.
    let mut textured = true;
    let mut face: Vec<(u32, Option<u32>)> = Vec::new();
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
                let xyz = coordinates::<3>(tokens, 3, "vertex", "`v x y z`").map_err(err)?;
                mesh.positions.push(DVec3::from_array(xyz));
            }
            Some("vt") => {
                let uv =
                    coordinates::<2>(tokens, 1, "texture coordinate", "`vt u v`").map_err(err)?;
                uvs.coords.push(DVec2::from_array(uv));
            }
            Some("f") => {
                face.clear();
                for tok in tokens {
                    face.push(
                        parse_face_vertex(tok, mesh.positions.len(), uvs.coords.len())
                            .map_err(err)?,
                    );
                }
                if face.len() < 3 {
                    return Err(err(format!(
                        "face has {} vertex reference(s); a face needs at least 3",
                        face.len()
                    )));
                }
                let with_uv = face.iter().filter(|(_, uv)| uv.is_some()).count();
                if with_uv != 0 && with_uv != face.len() {
                    return Err(err(format!(
                        "face gives a texture coordinate on {with_uv} of its {} corners; give \
                         one on every corner (`f 1/1 2/2 3/3`) or on none (`f 1 2 3`)",
                        face.len()
                    )));
                }
                textured &= with_uv != 0;
                for k in 1..face.len() - 1 {
                    let corners = [face[0], face[k], face[k + 1]];
                    mesh.triangles.push(corners.map(|(v, _)| v));
                    if textured {
                        uvs.corners.push(corners.map(|(_, uv)| uv.unwrap_or(0)));
                    }
                }
            }
            _ => {}
        }
    }
    if textured && !mesh.triangles.is_empty() {
        mesh.uvs = Some(uvs);
    }
    Ok(mesh)
}

/// The first `N` numbers of a `v` or `vt` line, of which at least `required` must be given
/// (missing ones are 0, later ones are checked and ignored); `what` and `form` name the
/// statement in errors.
fn coordinates<'a, const N: usize>(
    tokens: impl Iterator<Item = &'a str>,
    required: usize,
    what: &str,
    form: &str,
) -> Result<[f64; N], String> {
    let mut values = [0.0f64; N];
    let mut count = 0;
    for tok in tokens {
        let value: f64 = tok.parse().map_err(|_| {
            format!("`{tok}` is not a number; a {what} line is {form} with decimal coordinates")
        })?;
        if !value.is_finite() {
            return Err(format!(
                "coordinate `{tok}` is not finite; {what} coordinates must be finite"
            ));
        }
        if count < N {
            values[count] = value;
        }
        count += 1;
    }
    if count < required {
        return Err(format!(
            "{what} has {count} coordinate(s), but {form} needs at least {required}"
        ));
    }
    Ok(values)
}

/// Resolves one `a`, `a/b`, `a//c` or `a/b/c` face token to a 0-based vertex index and, for
/// the forms with `b`, a 0-based texture coordinate index, given the numbers of `v` and `vt`
/// lines defined so far. Normal indices (`c`) must be integers and are otherwise ignored.
fn parse_face_vertex(
    tok: &str,
    vertices: usize,
    texture_coordinates: usize,
) -> Result<(u32, Option<u32>), String> {
    let parts: Vec<&str> = tok.split('/').collect();
    if parts.len() > 3 {
        return Err(format!(
            "face vertex `{tok}` has too many `/`; use a, a/b, a//c or a/b/c"
        ));
    }
    if let Some(p) = parts.get(2).filter(|p| !p.is_empty()) {
        if p.parse::<i64>().is_err() {
            return Err(format!(
                "`{p}` in face vertex `{tok}` is not an integer index"
            ));
        }
    }
    let vertex = resolve_index(tok, parts[0], vertices, "vertex", "v")?;
    let uv = match parts.get(1).filter(|p| !p.is_empty()) {
        Some(p) => Some(resolve_index(
            tok,
            p,
            texture_coordinates,
            "texture coordinate",
            "vt",
        )?),
        None => None,
    };
    Ok((vertex, uv))
}

/// Resolves the 1-based or negative (relative) index `index` of face vertex `tok` to a 0-based
/// index among the `defined` `statement` lines (`v` or `vt`) so far; `what` names them.
fn resolve_index(
    tok: &str,
    index: &str,
    defined: usize,
    what: &str,
    statement: &str,
) -> Result<u32, String> {
    let index: i64 = index
        .parse()
        .map_err(|_| format!("`{index}` in face vertex `{tok}` is not an integer {what} index"))?;
    let resolved = match index {
        0 => {
            return Err(format!(
                "face vertex `{tok}` uses {what} index 0, but OBJ indices start at 1 (or are \
                 negative for relative references)"
            ))
        }
        i if i > 0 => i - 1,
        i => defined as i64 + i,
    };
    if resolved < 0 || resolved >= defined as i64 {
        return Err(format!(
            "face vertex `{tok}` refers to a {what} that does not exist: {defined} `{statement}` \
             lines are defined before this line (valid indices 1 to {defined}, or -1 to \
             -{defined})"
        ));
    }
    u32::try_from(resolved).map_err(|_| format!("face vertex `{tok}` exceeds the u32 index range"))
}

/// One object for `write_obj_positions`: its vertices `positions` and `triangles` whose
/// vertex `first + i` is `positions[i]` (so a simulation's global triangles can be written
/// without a copy in object-local indices), and its texture coordinates if it has them.
#[derive(Clone, Copy, Debug)]
pub struct ObjGroup<'a> {
    /// The object's name (the `o` line).
    pub name: &'a str,
    /// Its vertex positions (cm).
    pub positions: &'a [DVec3],
    /// Its triangles, in indices from `first`.
    pub triangles: &'a [[u32; 3]],
    /// The index of `positions[0]` in `triangles`.
    pub first: u32,
    /// Its texture coordinates, one corner triple per triangle.
    pub uvs: Option<&'a Uvs>,
}

impl<'a> ObjGroup<'a> {
    /// The group of a whole mesh called `name`.
    pub(crate) fn of(name: &'a str, mesh: &'a TriMesh) -> Self {
        Self {
            name,
            positions: &mesh.positions,
            triangles: &mesh.triangles,
            first: 0,
            uvs: mesh.uvs.as_ref(),
        }
    }
}

/// Writes several meshes as one OBJ file; see `write_obj_positions`.
pub fn write_obj(w: &mut impl Write, groups: &[(&str, &TriMesh)]) -> std::io::Result<()> {
    let groups: Vec<ObjGroup<'_>> = groups
        .iter()
        .map(|&(name, mesh)| ObjGroup::of(name, mesh))
        .collect();
    write_obj_positions(w, &groups)
}

/// `name` as one word for a frame file: whitespace replaced by `_`, `unnamed` when empty.
pub(crate) fn single_word(name: &str) -> String {
    if name.is_empty() {
        return "unnamed".into();
    }
    name.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// Writes groups as one OBJ file: per group an `o name` line (whitespace in names replaced by
/// `_`, an empty name written `unnamed`), its `v` lines, its `vt` lines, then its `f` lines
/// with global 1-based indices. Coordinates are written so they parse back bit-exact.
///
/// Texture coordinates are written (`vt` lines and `f v/vt` faces) only when every group has
/// them, so a file is either textured everywhere or nowhere (as [`parse_obj`] keeps them only
/// when every face has them): a scene with a generated mesh (which has none) writes no `vt`
/// for any object.
pub(crate) fn write_obj_positions(
    w: &mut impl Write,
    groups: &[ObjGroup<'_>],
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, w);
    let mut blocks = LineBlocks::default();
    let textured = groups.iter().all(|g| g.uvs.is_some());
    let (mut offset, mut uv_offset): (u64, u64) = (1, 1);
    for group in groups {
        writeln!(out, "o {}", single_word(group.name))?;
        // `{:?}` prints the shortest representation that round-trips exactly, and switches to
        // exponent notation for very large or small magnitudes (unlike `{}`).
        blocks.write(&mut out, group.positions, |line, _, p| {
            writeln!(line, "v {:?} {:?} {:?}", p.x, p.y, p.z)
        })?;
        let global = |t: &[u32; 3]| t.map(|v| u64::from(v) + offset - u64::from(group.first));
        match group.uvs.filter(|_| textured) {
            Some(uvs) => {
                blocks.write(&mut out, &uvs.coords, |line, _, uv| {
                    writeln!(line, "vt {:?} {:?}", uv.x, uv.y)
                })?;
                blocks.write(&mut out, group.triangles, |line, i, t| {
                    let [a, b, c] = global(t);
                    let [ta, tb, tc] = uvs.corners[i].map(|i| u64::from(i) + uv_offset);
                    writeln!(line, "f {a}/{ta} {b}/{tb} {c}/{tc}")
                })?;
                uv_offset += uvs.coords.len() as u64;
            }
            None => {
                blocks.write(&mut out, group.triangles, |line, _, t| {
                    let [a, b, c] = global(t);
                    writeln!(line, "f {a} {b} {c}")
                })?;
            }
        }
        offset += group.positions.len() as u64;
    }
    out.flush()
}

/// Lines one task of [`LineBlocks`] formats.
const LINES_PER_BLOCK: usize = 4096;

/// Blocks formatted before they are written out: bounds the text held at once (about 16 MB).
const BLOCKS_PER_BATCH: usize = 64;

/// Formats the lines of a frame file on the thread pool, a block of lines per task, and
/// writes them out in order: the same bytes as formatting them one by one, with the text of
/// at most [`BLOCKS_PER_BATCH`] blocks held at once (a frame of the 10^6-vertex drape is
/// over 100 MB of text). The buffers are kept from one call to the next.
#[derive(Default)]
struct LineBlocks {
    buffers: Vec<Vec<u8>>,
}

impl LineBlocks {
    /// Writes a line per item of `items` to `out`, in order; `line(buffer, i, item)` appends
    /// the line of item `i`.
    fn write<T: Sync>(
        &mut self,
        out: &mut impl Write,
        items: &[T],
        line: impl Fn(&mut Vec<u8>, usize, &T) -> std::io::Result<()> + Sync,
    ) -> std::io::Result<()> {
        use rayon::prelude::*;
        self.buffers.resize_with(BLOCKS_PER_BATCH, Vec::new);
        let batch = LINES_PER_BLOCK * BLOCKS_PER_BATCH;
        for (b, items) in items.chunks(batch).enumerate() {
            let blocks = items.par_chunks(LINES_PER_BLOCK).zip(&mut self.buffers);
            blocks.enumerate().try_for_each_init(
                || zone!("frame_task"),
                |_, (k, (block, buffer))| {
                    buffer.clear();
                    let first = b * batch + k * LINES_PER_BLOCK;
                    (block.iter().enumerate())
                        .try_for_each(|(i, item)| line(buffer, first + i, item))
                },
            )?;
            let used = items.len().div_ceil(LINES_PER_BLOCK);
            for buffer in &self.buffers[..used] {
                out.write_all(buffer)?;
            }
        }
        Ok(())
    }
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
    fn lines_formatted_in_blocks_on_any_pool_come_out_in_order() {
        // Two whole batches and part of a third, the last block short.
        let items: Vec<u64> = (0..(2 * LINES_PER_BLOCK * BLOCKS_PER_BATCH + 4_123) as u64)
            .map(|i| i * 7919 % 100_003)
            .collect();
        let mut expected = Vec::new();
        for (i, item) in items.iter().enumerate() {
            writeln!(expected, "{i} {item}").unwrap();
        }
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut blocks = LineBlocks::default();
            let mut out = Vec::new();
            pool.install(|| {
                blocks
                    .write(&mut out, &items, |line, i, item| {
                        writeln!(line, "{i} {item}")
                    })
                    .unwrap();
                // Reused buffers hold nothing of the call before.
                blocks.write(&mut out, &items[..5], |line, i, item| {
                    writeln!(line, "{i} {item}")
                })
            })
            .unwrap();
            let short: Vec<u8> = expected
                .split_inclusive(|&c| c == b'\n')
                .take(5)
                .flatten()
                .copied()
                .collect();
            assert_eq!(out.len(), expected.len() + short.len(), "{threads} threads");
            assert!(out[..expected.len()] == expected[..], "{threads} threads");
            assert!(out[expected.len()..] == short[..], "{threads} threads");
        }
    }

    #[test]
    fn write_obj_positions_matches_write_obj() {
        let m = sheet(3, 3, 1.0, 1.0).unwrap();
        let mut a = Vec::new();
        let mut b = Vec::new();
        write_obj(&mut a, &[("m", &m)]).unwrap();
        write_obj_positions(&mut b, &[ObjGroup::of("m", &m)]).unwrap();
        assert_eq!(a, b);
        // The same triangles in indices from 7.
        let shifted: Vec<[u32; 3]> = m.triangles.iter().map(|t| t.map(|v| v + 7)).collect();
        let mut c = Vec::new();
        let group = ObjGroup {
            triangles: &shifted,
            first: 7,
            ..ObjGroup::of("m", &m)
        };
        write_obj_positions(&mut c, &[group]).unwrap();
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

    /// A unit square of two quads split along a UV seam: vertices 2 and 5 (the middle column)
    /// have one texture coordinate per side.
    const TEXTURED: &str = "v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nv 1 1 0\nv 2 1 0\n\
                            vt 0 0\nvt 0.5 0\nvt 0.5 1\nvt 0 1\nvt 0.75 0 0.5\nvt 1 0\n\
                            vt 1 1\nvt 0.75 1\n\
                            f 1/1 2/2 5/3 4/4\nf 2/5/1 3/6/1 6/7/1 5/8/1\n";

    #[test]
    fn texture_coordinates_follow_the_fan_and_survive_a_round_trip() {
        let m = parse_obj(TEXTURED, "t").unwrap();
        assert_eq!(
            m.triangles,
            vec![[0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4]]
        );
        let uvs = m
            .uvs
            .as_ref()
            .expect("every corner has a texture coordinate");
        assert_eq!(uvs.coords.len(), 8);
        assert_eq!(uvs.coords[4], DVec2::new(0.75, 0.0), "w is ignored");
        assert_eq!(
            uvs.corners,
            vec![[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]]
        );
        let mut buf = Vec::new();
        write_obj(&mut buf, &[("a", &m), ("b", &m)]).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("\nvt 0.75 0.0\n") && text.contains("\nf 2/5 3/6 6/7\n"));
        assert!(
            text.contains("\nf 7/9 8/10 11/11\n"),
            "the second group's indices are offset"
        );
        let mut both = m.clone();
        both.append(&m);
        assert_eq!(parse_obj(&text, "mem").unwrap(), both);
        // Relative references resolve against the `vt` lines read so far.
        let relative = parse_obj(
            &TEXTURED.replace("f 1/1 2/2 5/3 4/4", "f 1/-8 2/-7 5/-6 4/-5"),
            "t",
        );
        assert_eq!(relative.unwrap(), m);
    }

    #[test]
    fn a_face_without_texture_coordinates_drops_them_all() {
        let partial = format!("{TEXTURED}f 1 2 4\n");
        let m = parse_obj(&partial, "t").unwrap();
        assert_eq!(m.triangles.len(), 5);
        assert_eq!(m.uvs, None);
        // Nor does a group write any when another group has none (a generated mesh).
        let textured = parse_obj(TEXTURED, "t").unwrap();
        let generated = sheet(2, 2, 1.0, 1.0).unwrap();
        let mut buf = Vec::new();
        write_obj(&mut buf, &[("obj", &textured), ("sheet", &generated)]).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(!text.contains("vt") && !text.contains('/'), "{text}");
    }

    #[test]
    fn bad_texture_coordinates_are_errors_naming_the_line() {
        let v = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\n";
        for (text, line, needle) in [
            (format!("{v}vt\n"), 6, "at least 1"),
            (format!("{v}vt 0.5 q\n"), 6, "`q` is not a number"),
            (format!("{v}vt inf 0\n"), 6, "not finite"),
            (
                format!("{v}f 1/1 2/2 3/3\n"),
                6,
                "texture coordinate that does not exist",
            ),
            (
                format!("{v}f 1/1 2/-3 3/2\n"),
                6,
                "texture coordinate that does not exist",
            ),
            (
                format!("{v}f 1/0 2/1 3/2\n"),
                6,
                "texture coordinate index 0",
            ),
            (
                format!("{v}f 1/1 2/x 3/2\n"),
                6,
                "not an integer texture coordinate",
            ),
            (format!("{v}\nf 1/1 2/2 3\n"), 7, "on 2 of its 3 corners"),
        ] {
            let (at, msg) = parse_err_line(&text);
            assert_eq!(at, line, "{msg}");
            assert!(
                msg.contains(&format!("test.obj:{line}")) && msg.contains(needle),
                "{msg}"
            );
        }
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
