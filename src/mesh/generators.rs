//! Deterministic generators for the standard test shapes.
//!
//! Every generator checks its arguments, validates its output (so a returned mesh always
//! passes [`TriMesh::validate`]) and reports problems as [`MeshError::InvalidGenerator`].

use super::error::MeshError;
use super::tri_mesh::TriMesh;
use glam::{DQuat, DVec3};
use hashbrown::HashMap;
use std::f64::consts::TAU;

/// Largest vertex count a generator will produce (indices must fit in `u32`, with room for
/// the `u32::MAX` markers of missing entries).
const MAX_VERTICES: usize = (u32::MAX / 2) as usize;

fn invalid(generator: &'static str, message: impl Into<String>) -> MeshError {
    MeshError::InvalidGenerator {
        generator,
        message: message.into(),
    }
}

fn positive(generator: &'static str, name: &str, value: f64) -> Result<(), MeshError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(invalid(
            generator,
            format!("`{name}` must be finite and > 0, got {value}"),
        ))
    }
}

fn at_least(
    generator: &'static str,
    name: &str,
    value: usize,
    min: usize,
) -> Result<(), MeshError> {
    if value >= min {
        Ok(())
    } else {
        Err(invalid(
            generator,
            format!("`{name}` must be at least {min}, got {value}"),
        ))
    }
}

/// Checks that the product of `factors` vertices stays below [`MAX_VERTICES`] and fits in the
/// machine's memory once simulated ([`super::budget`]), before anything is allocated.
fn vertex_budget(generator: &'static str, factors: &[usize]) -> Result<(), MeshError> {
    let total = factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f))
        .filter(|&n| n <= MAX_VERTICES);
    let Some(total) = total else {
        return Err(invalid(
            generator,
            format!("too many vertices (limit {MAX_VERTICES}); use a coarser resolution"),
        ));
    };
    super::budget::check_vertices(total as u64).map_err(|e| {
        invalid(
            generator,
            format!("{total} vertices are too many for this machine: {e}"),
        )
    })
}

/// Validates a generated mesh; a failure (e.g. a degenerate triangle from extreme arguments)
/// becomes [`MeshError::InvalidGenerator`].
fn finish(generator: &'static str, mesh: TriMesh) -> Result<TriMesh, MeshError> {
    match mesh.validate() {
        Ok(()) => Ok(mesh),
        Err(e) => Err(invalid(
            generator,
            format!("these arguments produce an invalid mesh ({e})"),
        )),
    }
}

/// Triangulates a grid of `nu x nv` cells whose corner `(u, v)` (u in 0..=nu, v in 0..=nv) is
/// vertex `idx(u, v)`. Quads are split with alternating (checkerboard) diagonals. Triangles are
/// counter-clockwise seen from the side `dV x dU` points to, where dU and dV are the directions
/// in which positions advance with u and v.
fn grid_triangles(
    nu: usize,
    nv: usize,
    idx: impl Fn(usize, usize) -> u32,
    out: &mut Vec<[u32; 3]>,
) {
    for v in 0..nv {
        for u in 0..nu {
            let a = idx(u, v);
            let b = idx(u + 1, v);
            let c = idx(u + 1, v + 1);
            let d = idx(u, v + 1);
            if (u + v) % 2 == 0 {
                out.push([a, d, c]);
                out.push([a, c, b]);
            } else {
                out.push([a, d, b]);
                out.push([b, d, c]);
            }
        }
    }
}

/// A flat rectangular sheet of `nx * ny` vertices (nx, ny >= 2) in the XZ plane (y = 0),
/// centred at the origin: x in [-width/2, width/2], z in [-depth/2, depth/2].
///
/// Vertex `j * nx + i` is at column i (along x), row j (along z). Quads are split with
/// alternating (checkerboard) diagonals; normals point +y.
pub fn sheet(nx: usize, ny: usize, width: f64, depth: f64) -> Result<TriMesh, MeshError> {
    const G: &str = "sheet";
    at_least(G, "nx", nx, 2)?;
    at_least(G, "ny", ny, 2)?;
    positive(G, "width", width)?;
    positive(G, "depth", depth)?;
    vertex_budget(G, &[nx, ny])?;
    let mut positions = Vec::with_capacity(nx * ny);
    for j in 0..ny {
        let z = -0.5 * depth + depth * j as f64 / (ny - 1) as f64;
        for i in 0..nx {
            let x = -0.5 * width + width * i as f64 / (nx - 1) as f64;
            positions.push(DVec3::new(x, 0.0, z));
        }
    }
    let mut triangles = Vec::with_capacity(2 * (nx - 1) * (ny - 1));
    // u along +x, v along +z: normal z x x = +y.
    grid_triangles(nx - 1, ny - 1, |i, j| (j * nx + i) as u32, &mut triangles);
    finish(G, TriMesh::new(positions, triangles))
}

/// Uniform Catmull-Rom point at local parameter `t` in [0, 1] between `p1` and `p2`.
fn catmull_rom(p0: DVec3, p1: DVec3, p2: DVec3, p3: DVec3, t: f64) -> DVec3 {
    let t2 = t * t;
    let t3 = t2 * t;
    0.5 * (2.0 * p1
        + (p2 - p0) * t
        + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t2
        + (3.0 * p1 - p0 - 3.0 * p2 + p3) * t3)
}

/// Derivative of [`catmull_rom`] with respect to `t`.
fn catmull_rom_tangent(p0: DVec3, p1: DVec3, p2: DVec3, p3: DVec3, t: f64) -> DVec3 {
    0.5 * ((p2 - p0)
        + 2.0 * (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t
        + 3.0 * (3.0 * p1 - p0 - 3.0 * p2 + p3) * t * t)
}

/// A ribbon (strip) of `along x across` vertices following a smooth curve.
///
/// The centreline is a uniform Catmull-Rom spline through `control_points` (>= 2, consecutive
/// points distinct; the end points are duplicated as phantom points), sampled at `along` (>= 2)
/// stations evenly spaced in spline parameter. Each station carries a frame (tangent T, normal
/// N) transported along the curve with minimal rotation, starting from world Y projected
/// perpendicular to the first tangent (world X if the tangent is nearly parallel to Y). N is
/// rotated about T by `twist * s` radians, s in [0, 1] along the ribbon. The `across` (>= 2)
/// vertices of a station span `width` along `N x T`, centred on the curve, so the ribbon's
/// surface normal is N (for a ribbon along +z without twist: vertices across +x, normal +y,
/// exactly like [`sheet`]).
///
/// Vertex `k * across + a` is station k, position a across. Quads alternate diagonals.
pub fn ribbon(
    control_points: &[DVec3],
    width: f64,
    along: usize,
    across: usize,
    twist: f64,
) -> Result<TriMesh, MeshError> {
    const G: &str = "ribbon";
    if control_points.len() < 2 {
        return Err(invalid(
            G,
            format!(
                "need at least 2 control points, got {}",
                control_points.len()
            ),
        ));
    }
    if let Some(i) = control_points.iter().position(|p| !p.is_finite()) {
        return Err(invalid(G, format!("control point {i} is not finite")));
    }
    if let Some(i) = control_points.windows(2).position(|w| w[0] == w[1]) {
        return Err(invalid(
            G,
            format!(
                "control points {i} and {} coincide; consecutive points must differ",
                i + 1
            ),
        ));
    }
    positive(G, "width", width)?;
    at_least(G, "along", along, 2)?;
    at_least(G, "across", across, 2)?;
    if !twist.is_finite() {
        return Err(invalid(G, format!("`twist` must be finite, got {twist}")));
    }
    vertex_budget(G, &[along, across])?;

    let n = control_points.len();
    let point = |i: isize| control_points[i.clamp(0, n as isize - 1) as usize];
    let segments = (n - 1) as f64;
    let mut centres = Vec::with_capacity(along);
    let mut tangents = Vec::with_capacity(along);
    for k in 0..along {
        let s = k as f64 / (along - 1) as f64;
        let u = s * segments;
        let seg = (u.floor() as usize).min(n - 2);
        let t = u - seg as f64;
        let i = seg as isize;
        let (p0, p1, p2, p3) = (point(i - 1), point(i), point(i + 1), point(i + 2));
        centres.push(catmull_rom(p0, p1, p2, p3, t));
        tangents.push(catmull_rom_tangent(p0, p1, p2, p3, t));
    }
    // Normalise tangents; where the analytic derivative vanishes (a cusp), fall back to the
    // chord through the neighbouring stations, then to the previous tangent.
    let scale = control_points
        .windows(2)
        .map(|w| (w[1] - w[0]).length())
        .fold(0.0, f64::max);
    let mut unit = Vec::with_capacity(along);
    for k in 0..along {
        let chord = centres[(k + 1).min(along - 1)] - centres[k.saturating_sub(1)];
        let candidates = [tangents[k], chord];
        let t = candidates
            .iter()
            .find(|c| c.length() > 1e-9 * scale)
            .map(|c| c.normalize())
            .or_else(|| unit.last().copied())
            .unwrap_or(DVec3::Z);
        unit.push(t);
    }
    // Rotation-minimising frame by parallel transport.
    let t0 = unit[0];
    let mut normal = if t0.y.abs() < 0.9 {
        (DVec3::Y - t0.y * t0).normalize()
    } else {
        (DVec3::X - t0.x * t0).normalize()
    };
    let mut positions = Vec::with_capacity(along * across);
    for k in 0..along {
        let t = unit[k];
        if k > 0 {
            normal = DQuat::from_rotation_arc(unit[k - 1], t) * normal;
            normal = (normal - normal.dot(t) * t).normalize_or(normal);
        }
        let s = k as f64 / (along - 1) as f64;
        let twisted = DQuat::from_axis_angle(t, twist * s) * normal;
        let side = twisted.cross(t);
        for a in 0..across {
            let offset = -0.5 * width + width * a as f64 / (across - 1) as f64;
            positions.push(centres[k] + offset * side);
        }
    }
    let mut triangles = Vec::with_capacity(2 * (along - 1) * (across - 1));
    // u across (N x T), v along (T): normal T x (N x T) = N.
    grid_triangles(
        across - 1,
        along - 1,
        |a, k| (k * across + a) as u32,
        &mut triangles,
    );
    finish(G, TriMesh::new(positions, triangles))
}

/// A geodesic sphere centred at the origin with outward normals: a regular icosahedron whose
/// faces are split into four `subdivisions` times (at most 10), vertices pushed onto the
/// sphere. It has `10 * 4^s + 2` vertices (12, 42, 162, ...) and `20 * 4^s` triangles.
pub fn icosphere(radius: f64, subdivisions: u32) -> Result<TriMesh, MeshError> {
    const G: &str = "icosphere";
    positive(G, "radius", radius)?;
    if subdivisions > 10 {
        return Err(invalid(
            G,
            format!("`subdivisions` must be at most 10 (10.5M vertices), got {subdivisions}"),
        ));
    }
    vertex_budget(G, &[10 * 4usize.pow(subdivisions) + 2])?;
    // Icosahedron vertices: cyclic permutations of (0, +-1, +-phi).
    let phi = 0.5 * (1.0 + 5f64.sqrt());
    let mut positions = Vec::with_capacity(12);
    for &(a, b) in &[(-1.0, phi), (1.0, phi), (-1.0, -phi), (1.0, -phi)] {
        positions.push(DVec3::new(a, b, 0.0));
    }
    for &(a, b) in &[(-1.0, phi), (1.0, phi), (-1.0, -phi), (1.0, -phi)] {
        positions.push(DVec3::new(0.0, a, b));
    }
    for &(a, b) in &[(-1.0, phi), (1.0, phi), (-1.0, -phi), (1.0, -phi)] {
        positions.push(DVec3::new(b, 0.0, a));
    }
    // Faces: the triples of mutually adjacent vertices (edge length 2), oriented outward.
    let mut triangles = Vec::with_capacity(20);
    let adjacent = |i: usize, j: usize| ((positions[i] - positions[j]).length() - 2.0).abs() < 1e-9;
    for i in 0..12 {
        for j in i + 1..12 {
            for k in j + 1..12 {
                if adjacent(i, j) && adjacent(j, k) && adjacent(i, k) {
                    let (a, b, c) = (positions[i], positions[j], positions[k]);
                    let outward = (b - a).cross(c - a).dot(a + b + c) > 0.0;
                    let (i, j, k) = (i as u32, j as u32, k as u32);
                    triangles.push(if outward { [i, j, k] } else { [i, k, j] });
                }
            }
        }
    }
    for p in &mut positions {
        *p = p.normalize();
    }
    for _ in 0..subdivisions {
        let mut midpoints: HashMap<(u32, u32), u32> = HashMap::new();
        let mut next = Vec::with_capacity(triangles.len() * 4);
        let mut midpoint = |a: u32, b: u32, positions: &mut Vec<DVec3>| -> u32 {
            let key = (a.min(b), a.max(b));
            *midpoints.entry(key).or_insert_with(|| {
                let p = (positions[a as usize] + positions[b as usize]).normalize();
                positions.push(p);
                (positions.len() - 1) as u32
            })
        };
        for &[a, b, c] in &triangles {
            let ab = midpoint(a, b, &mut positions);
            let bc = midpoint(b, c, &mut positions);
            let ca = midpoint(c, a, &mut positions);
            next.extend_from_slice(&[[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        triangles = next;
    }
    for p in &mut positions {
        *p *= radius;
    }
    finish(G, TriMesh::new(positions, triangles))
}

/// Maps grid corner `(u, v)` of one box face to its lattice point `[i, j, k]`.
type LatticeMap<'a> = &'a dyn Fn(usize, usize) -> [usize; 3];

/// An open box (a tray): floor at y = 0 and four walls up to `size.y`, no top, normals facing
/// inward (the inside is where things go). x in [-size.x/2, size.x/2], z likewise.
///
/// The cell size is `max(size) / cells`; each axis gets `max(1, round(len / cell))` cells, so
/// the longest side of the box has exactly `cells` cells and cells are roughly square.
/// Shared edges and corners are welded: the box is one connected manifold surface (a disk,
/// Euler characteristic 1) whose boundary is the top rim. Quads alternate diagonals.
pub fn open_box(size: DVec3, cells: usize) -> Result<TriMesh, MeshError> {
    const G: &str = "open_box";
    positive(G, "size.x", size.x)?;
    positive(G, "size.y", size.y)?;
    positive(G, "size.z", size.z)?;
    at_least(G, "cells", cells, 1)?;
    let h = size.max_element() / cells as f64;
    let count = |len: f64| ((len / h).round() as usize).max(1);
    let (nx, ny, nz) = (count(size.x), count(size.y), count(size.z));
    vertex_budget(G, &[nx + 1, nz + 1, 2])?;
    vertex_budget(G, &[nx + nz + 2, ny + 1, 2])?;

    let mut positions = Vec::new();
    let mut lattice: HashMap<[usize; 3], u32> = HashMap::new();
    let mut vertex = |i: usize, j: usize, k: usize| -> u32 {
        *lattice.entry([i, j, k]).or_insert_with(|| {
            positions.push(DVec3::new(
                -0.5 * size.x + size.x * i as f64 / nx as f64,
                size.y * j as f64 / ny as f64,
                -0.5 * size.z + size.z * k as f64 / nz as f64,
            ));
            (positions.len() - 1) as u32
        })
    };
    let mut triangles = Vec::new();
    // Each face: (cells along u, cells along v, lattice point of (u, v)); inward normal = dV x dU.
    // Floor: u = x, v = z, normal z x x = +y.
    let mut ids = Vec::new();
    let faces: [(usize, usize, LatticeMap<'_>); 5] = [
        (nx, nz, &|u, v| [u, 0, v]),
        // Wall z = -size.z/2: u = y, v = x, normal x x y = +z.
        (ny, nx, &|u, v| [v, u, 0]),
        // Wall z = +size.z/2: u = x, v = y, normal y x x = -z.
        (nx, ny, &|u, v| [u, v, nz]),
        // Wall x = -size.x/2: u = z, v = y, normal y x z = +x.
        (nz, ny, &|u, v| [0, v, u]),
        // Wall x = +size.x/2: u = y, v = z, normal z x y = -x.
        (ny, nz, &|u, v| [nx, u, v]),
    ];
    for (nu, nv, lattice_point) in faces {
        ids.clear();
        for v in 0..=nv {
            for u in 0..=nu {
                let [i, j, k] = lattice_point(u, v);
                ids.push(vertex(i, j, k));
            }
        }
        grid_triangles(nu, nv, |u, v| ids[v * (nu + 1) + u], &mut triangles);
    }
    finish(G, TriMesh::new(positions, triangles))
}

/// A cylinder around the Y axis from y = 0 to y = `height`, outward normals.
///
/// The side has `segments` (>= 3) vertices around and `rings` (>= 1) bands of quads along the
/// height, i.e. `rings + 1` circles of vertices; vertex `r * segments + s` is on circle r
/// (bottom first) at angle `2 pi s / segments` measured from +x towards +z. When `capped`, a
/// centre vertex at each end (bottom then top, after the side vertices) is fanned to its circle,
/// closing the surface (Euler characteristic 2; open: 0).
pub fn cylinder(
    radius: f64,
    height: f64,
    segments: usize,
    rings: usize,
    capped: bool,
) -> Result<TriMesh, MeshError> {
    const G: &str = "cylinder";
    positive(G, "radius", radius)?;
    positive(G, "height", height)?;
    at_least(G, "segments", segments, 3)?;
    at_least(G, "rings", rings, 1)?;
    vertex_budget(G, &[segments, rings + 2])?;
    let mut positions = Vec::with_capacity(segments * (rings + 1) + 2);
    for r in 0..=rings {
        let y = height * r as f64 / rings as f64;
        for s in 0..segments {
            let angle = TAU * s as f64 / segments as f64;
            positions.push(DVec3::new(radius * angle.cos(), y, radius * angle.sin()));
        }
    }
    let mut triangles = Vec::with_capacity(2 * segments * rings + 2 * segments);
    // u around (+z at angle 0), v up: normal y x z = +x at angle 0, i.e. outward.
    grid_triangles(
        segments,
        rings,
        |s, r| (r * segments + s % segments) as u32,
        &mut triangles,
    );
    if capped {
        let bottom = positions.len() as u32;
        positions.push(DVec3::ZERO);
        let top = bottom + 1;
        positions.push(DVec3::new(0.0, height, 0.0));
        let top_ring = rings * segments;
        for s in 0..segments {
            let (s0, s1) = (s as u32, ((s + 1) % segments) as u32);
            triangles.push([bottom, s0, s1]);
            triangles.push([top, top_ring as u32 + s1, top_ring as u32 + s0]);
        }
    }
    finish(G, TriMesh::new(positions, triangles))
}

/// A `rows x cols` grid of nails centred at the origin in XZ (rows along z, columns along x,
/// `spacing` apart), bases at y = 0.
///
/// Each nail is a square pyramid without its base: four corners of a square of side `base`
/// (which must be smaller than `spacing`) plus an apex at y = `height`, giving four sliver side
/// triangles with outward normals. Nails are separate components (Euler characteristic 1
/// each); nail `r * cols + c` uses vertices `5 * (r * cols + c) ..`, apex last.
pub fn bed_of_nails(
    rows: usize,
    cols: usize,
    spacing: f64,
    height: f64,
    base: f64,
) -> Result<TriMesh, MeshError> {
    const G: &str = "bed_of_nails";
    at_least(G, "rows", rows, 1)?;
    at_least(G, "cols", cols, 1)?;
    positive(G, "spacing", spacing)?;
    positive(G, "height", height)?;
    positive(G, "base", base)?;
    if base >= spacing {
        return Err(invalid(
            G,
            format!(
                "`base` ({base}) must be smaller than `spacing` ({spacing}) so nails do not touch"
            ),
        ));
    }
    vertex_budget(G, &[rows, cols, 5])?;
    let b = 0.5 * base;
    // Corners counter-clockwise seen from +y.
    let corners = [
        DVec3::new(-b, 0.0, -b),
        DVec3::new(-b, 0.0, b),
        DVec3::new(b, 0.0, b),
        DVec3::new(b, 0.0, -b),
    ];
    let mut positions = Vec::with_capacity(rows * cols * 5);
    let mut triangles = Vec::with_capacity(rows * cols * 4);
    for r in 0..rows {
        for c in 0..cols {
            let centre = DVec3::new(
                (c as f64 - 0.5 * (cols - 1) as f64) * spacing,
                0.0,
                (r as f64 - 0.5 * (rows - 1) as f64) * spacing,
            );
            let first = positions.len() as u32;
            positions.extend(corners.iter().map(|&k| centre + k));
            positions.push(centre + DVec3::new(0.0, height, 0.0));
            for k in 0..4u32 {
                triangles.push([first + k, first + (k + 1) % 4, first + 4]);
            }
        }
    }
    finish(G, TriMesh::new(positions, triangles))
}

/// Deterministic uniform number in `[0, 1)` for `(seed, index)` (a splitmix64 hash): the source
/// of every seeded quantity in generated scenes, identical on every platform.
pub(crate) fn seeded_unit(seed: u64, index: u64) -> f64 {
    let mut z = seed
        .wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A closed lumpy blob centred at the origin with outward normals: a cube whose faces are split
/// into `cells x cells` (>= 1) quads, projected onto the sphere of `radius` (a "cube sphere",
/// nearly uniform, unlike a UV sphere's crowded poles), each vertex pushed radially to
/// `radius * (1 + noise * f(d))`, where `f` in [-1, 1] is a smooth sum of three sinusoids of the
/// direction `d` whose axes and phases come from `seed`. `noise` must lie in [0, 0.5).
///
/// It has `6 * cells^2 + 2` vertices (a stand-in for the thesis's 1,768-vertex bunny:
/// `cells = 17` gives 1,736) and `12 * cells^2` triangles; quads alternate diagonals.
pub fn lumpy_sphere(
    radius: f64,
    cells: usize,
    noise: f64,
    seed: u64,
) -> Result<TriMesh, MeshError> {
    const G: &str = "lumpy_sphere";
    positive(G, "radius", radius)?;
    at_least(G, "cells", cells, 1)?;
    if !(noise.is_finite() && (0.0..0.5).contains(&noise)) {
        return Err(invalid(
            G,
            format!("`noise` must lie in [0, 0.5), got {noise}"),
        ));
    }
    vertex_budget(G, &[cells + 1, cells + 1, 6])?;
    let waves: Vec<(DVec3, f64)> = (0..3u64)
        .map(|k| {
            let z = 2.0 * seeded_unit(seed, 4 * k) - 1.0;
            let a = TAU * seeded_unit(seed, 4 * k + 1);
            let r = (1.0 - z * z).sqrt();
            let axis = DVec3::new(r * a.cos(), z, r * a.sin());
            (axis * (2.0 + k as f64), TAU * seeded_unit(seed, 4 * k + 2))
        })
        .collect();
    let n = cells;
    let mut positions = Vec::new();
    let mut lattice: HashMap<[usize; 3], u32> = HashMap::new();
    let mut vertex = |p: [usize; 3]| -> u32 {
        *lattice.entry(p).or_insert_with(|| {
            let d = DVec3::new(p[0] as f64, p[1] as f64, p[2] as f64) / n as f64 * 2.0 - DVec3::ONE;
            let d = d.normalize();
            let f: f64 = waves
                .iter()
                .map(|(w, ph)| (w.dot(d) + ph).sin())
                .sum::<f64>()
                / 3.0;
            positions.push(d * radius * (1.0 + noise * f));
            (positions.len() - 1) as u32
        })
    };
    // Each face: lattice point of (u, v); outward normal = dV x dU.
    let faces: [LatticeMap<'_>; 6] = [
        &|u, v| [0, u, v],
        &|u, v| [n, v, u],
        &|u, v| [v, 0, u],
        &|u, v| [u, n, v],
        &|u, v| [u, v, 0],
        &|u, v| [v, u, n],
    ];
    let mut triangles = Vec::with_capacity(12 * n * n);
    let mut ids = Vec::with_capacity((n + 1) * (n + 1));
    for lattice_point in faces {
        ids.clear();
        for v in 0..=n {
            for u in 0..=n {
                ids.push(vertex(lattice_point(u, v)));
            }
        }
        grid_triangles(n, n, |u, v| ids[v * (n + 1) + u], &mut triangles);
    }
    finish(G, TriMesh::new(positions, triangles))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::Topology;

    fn normal(m: &TriMesh, t: usize) -> DVec3 {
        let [a, b, c] = m.triangles[t].map(|v| m.positions[v as usize]);
        (b - a).cross(c - a)
    }

    fn centroid(m: &TriMesh, t: usize) -> DVec3 {
        let [a, b, c] = m.triangles[t].map(|v| m.positions[v as usize]);
        (a + b + c) / 3.0
    }

    /// (Euler characteristic, connected components, boundary edges), checking validity.
    fn shape(m: &TriMesh) -> (i64, usize, usize) {
        let topo = Topology::build(m).unwrap();
        let chi = m.positions.len() as i64 - topo.edges.len() as i64 + m.triangles.len() as i64;
        let n = m.positions.len();
        let vertex_edges = topo.vertex_edges(n);
        let mut seen = vec![false; n];
        let mut components = 0;
        for start in 0..n {
            if seen[start] {
                continue;
            }
            components += 1;
            let mut stack = vec![start];
            seen[start] = true;
            while let Some(v) = stack.pop() {
                for &e in vertex_edges.row(v) {
                    for w in topo.edges[e as usize] {
                        if !seen[w as usize] {
                            seen[w as usize] = true;
                            stack.push(w as usize);
                        }
                    }
                }
            }
        }
        (chi, components, m.boundary_edge_count())
    }

    fn assert_invalid(r: Result<TriMesh, MeshError>, generator: &str) {
        match r {
            Err(MeshError::InvalidGenerator { generator: g, .. }) => assert_eq!(g, generator),
            other => panic!("expected InvalidGenerator for {generator}, got {other:?}"),
        }
    }

    #[test]
    fn sheet_layout_counts_and_normals() {
        let m = sheet(4, 3, 3.0, 2.0).unwrap();
        assert_eq!(m.positions.len(), 12);
        assert_eq!(m.triangles.len(), 2 * 3 * 2);
        assert_eq!(m.positions[0], DVec3::new(-1.5, 0.0, -1.0));
        assert_eq!(m.positions[4 + 2], DVec3::new(0.5, 0.0, 0.0));
        assert_eq!(m.positions[11], DVec3::new(1.5, 0.0, 1.0));
        assert_eq!(
            m.bounds(),
            (DVec3::new(-1.5, 0.0, -1.0), DVec3::new(1.5, 0.0, 1.0))
        );
        for t in 0..m.triangles.len() {
            let n = normal(&m, t);
            assert!(n.y > 0.0 && n.x == 0.0 && n.z == 0.0, "triangle {t}: {n}");
        }
        // Alternating diagonals: quad (0,0) uses diagonal 0-5, quad (1,0) uses diagonal 2-5.
        let has_edge = |t: [u32; 3], a: u32, b: u32| t.contains(&a) && t.contains(&b);
        assert!(has_edge(m.triangles[0], 0, 5) && has_edge(m.triangles[1], 0, 5));
        assert!(has_edge(m.triangles[2], 2, 5) && has_edge(m.triangles[3], 2, 5));
        assert_eq!(shape(&m), (1, 1, 2 * (3 + 2)));
        let area: f64 = (0..m.triangles.len()).map(|t| m.triangle_area(t)).sum();
        assert!((area - 6.0).abs() < 1e-12);
    }

    #[test]
    fn sheet_rejects_bad_arguments() {
        assert_invalid(sheet(1, 3, 1.0, 1.0), "sheet");
        assert_invalid(sheet(3, 1, 1.0, 1.0), "sheet");
        assert_invalid(sheet(3, 3, 0.0, 1.0), "sheet");
        assert_invalid(sheet(3, 3, 1.0, f64::NAN), "sheet");
        assert_invalid(sheet(3, 3, f64::INFINITY, 1.0), "sheet");
        assert_invalid(sheet(usize::MAX, 3, 1.0, 1.0), "sheet");
        let e = sheet(1, 3, 1.0, 1.0).unwrap_err().to_string();
        assert!(e.contains("sheet") && e.contains("nx"), "{e}");
    }

    #[test]
    fn straight_ribbon_matches_sheet_layout() {
        // Same triangles and the same vertices across; along the ribbon the stations are even in
        // spline parameter, which (with duplicated end points) is not even in arc length.
        let s = sheet(5, 7, 2.0, 3.0).unwrap();
        let r = ribbon(
            &[DVec3::new(0.0, 0.0, -1.5), DVec3::new(0.0, 0.0, 1.5)],
            2.0,
            7,
            5,
            0.0,
        )
        .unwrap();
        assert_eq!(r.triangles, s.triangles);
        for (p, q) in r.positions.iter().zip(&s.positions) {
            assert!((p.x - q.x).abs() < 1e-12 && p.y.abs() < 1e-12, "{p} vs {q}");
        }
        let z: Vec<f64> = (0..7).map(|k| r.positions[5 * k].z).collect();
        assert!(z.windows(2).all(|w| w[0] < w[1]), "{z:?}");
        assert!((z[0] + 1.5).abs() < 1e-12 && (z[6] - 1.5).abs() < 1e-12);
        assert!(z[3].abs() < 1e-12);
        for t in 0..r.triangles.len() {
            assert!(normal(&r, t).y > 0.0);
        }
    }

    #[test]
    fn curved_twisted_ribbon_is_a_valid_strip() {
        let pts = [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.5, 0.0),
            DVec3::new(2.0, 0.0, 1.0),
            DVec3::new(2.0, 2.0, 2.0),
            DVec3::new(0.0, 3.0, 0.0),
        ];
        let (along, across) = (40, 4);
        let m = ribbon(&pts, 0.3, along, across, std::f64::consts::PI).unwrap();
        assert_eq!(m.positions.len(), along * across);
        assert_eq!(m.triangles.len(), 2 * (along - 1) * (across - 1));
        assert_eq!(shape(&m), (1, 1, 2 * (along - 1 + across - 1)));
        // Passes through the end points; each station spans `width`.
        let mid = |k: usize| 0.5 * (m.positions[k * across] + m.positions[k * across + across - 1]);
        assert!((mid(0) - pts[0]).length() < 1e-12);
        assert!((mid(along - 1) - pts[4]).length() < 1e-12);
        for k in 0..along {
            let w = (m.positions[k * across + across - 1] - m.positions[k * across]).length();
            assert!((w - 0.3).abs() < 1e-9, "station {k}: {w}");
        }
        assert_eq!(
            m,
            ribbon(&pts, 0.3, along, across, std::f64::consts::PI).unwrap()
        );
    }

    #[test]
    fn ribbon_twist_flips_the_end() {
        let pts = [DVec3::ZERO, DVec3::new(0.0, 0.0, 4.0)];
        let m = ribbon(&pts, 1.0, 9, 2, std::f64::consts::PI).unwrap();
        let side = |k: usize| m.positions[2 * k + 1] - m.positions[2 * k];
        assert!((side(0) - DVec3::X).length() < 1e-12);
        assert!((side(8) + DVec3::X).length() < 1e-12);
        // Right-handed twist about the tangent (+z): the side direction X turns towards +Y.
        assert!((side(4) - DVec3::Y).length() < 1e-12, "{}", side(4));
    }

    #[test]
    fn ribbon_rejects_bad_arguments() {
        let pts = [DVec3::ZERO, DVec3::X];
        assert_invalid(ribbon(&pts[..1], 1.0, 4, 2, 0.0), "ribbon");
        assert_invalid(
            ribbon(&[DVec3::ZERO, DVec3::ZERO], 1.0, 4, 2, 0.0),
            "ribbon",
        );
        assert_invalid(ribbon(&[DVec3::ZERO, DVec3::NAN], 1.0, 4, 2, 0.0), "ribbon");
        assert_invalid(ribbon(&pts, 0.0, 4, 2, 0.0), "ribbon");
        assert_invalid(ribbon(&pts, 1.0, 1, 2, 0.0), "ribbon");
        assert_invalid(ribbon(&pts, 1.0, 4, 1, 0.0), "ribbon");
        assert_invalid(ribbon(&pts, 1.0, 4, 2, f64::INFINITY), "ribbon");
        // Doubling back makes a cusp: either a valid mesh or an error, never a panic.
        let back = [DVec3::ZERO, DVec3::X, DVec3::ZERO];
        if let Err(e) = ribbon(&back, 0.5, 9, 3, 0.0) {
            assert!(matches!(e, MeshError::InvalidGenerator { .. }));
        }
        // A ribbon along Y starts its frame from world X instead.
        assert!(ribbon(&[DVec3::ZERO, DVec3::Y], 1.0, 4, 3, 0.0).is_ok());
    }

    #[test]
    fn icosphere_counts_radius_and_outward_normals() {
        for (s, v) in [(0, 12), (1, 42), (2, 162), (3, 642)] {
            let m = icosphere(2.5, s).unwrap();
            assert_eq!(m.positions.len(), v);
            assert_eq!(m.triangles.len(), 20 * 4usize.pow(s));
            for p in &m.positions {
                assert!((p.length() - 2.5).abs() < 1e-12);
            }
            for t in 0..m.triangles.len() {
                assert!(normal(&m, t).dot(centroid(&m, t)) > 0.0);
            }
            assert_eq!(shape(&m), (2, 1, 0));
        }
        assert_invalid(icosphere(0.0, 1), "icosphere");
        assert_invalid(icosphere(1.0, 11), "icosphere");
    }

    #[test]
    fn open_box_is_welded_inward_tray() {
        let size = DVec3::new(4.0, 1.0, 2.0);
        let m = open_box(size, 8).unwrap();
        let (nx, ny, nz) = (8, 2, 4);
        assert_eq!(m.positions.len(), (nx + 1) * (nz + 1) + 2 * (nx + nz) * ny);
        assert_eq!(m.triangles.len(), 2 * (nx * nz + 2 * nx * ny + 2 * nz * ny));
        assert_eq!(shape(&m), (1, 1, 2 * (nx + nz)));
        assert_eq!(
            m.bounds(),
            (DVec3::new(-2.0, 0.0, -1.0), DVec3::new(2.0, 1.0, 1.0))
        );
        for t in 0..m.triangles.len() {
            let (n, c) = (normal(&m, t), centroid(&m, t));
            if m.triangles[t]
                .iter()
                .all(|&v| m.positions[v as usize].y == 0.0)
            {
                assert!(n.y > 0.0, "floor triangle {t} faces down");
            } else {
                assert!(
                    n.dot(DVec3::new(-c.x, 0.0, -c.z)) > 0.0,
                    "wall triangle {t}"
                );
                assert!(n.y.abs() < 1e-12);
            }
        }
        let area: f64 = (0..m.triangles.len()).map(|t| m.triangle_area(t)).sum();
        assert!((area - (8.0 + 2.0 * 4.0 + 2.0 * 2.0)).abs() < 1e-12);
        assert_eq!(open_box(DVec3::splat(1.0), 1).unwrap().triangles.len(), 10);
        assert_invalid(open_box(DVec3::new(1.0, 0.0, 1.0), 4), "open_box");
        assert_invalid(open_box(DVec3::ONE, 0), "open_box");
    }

    #[test]
    fn lumpy_sphere_is_closed_outward_and_deterministic() {
        let m = lumpy_sphere(5.0, 17, 0.2, 7).unwrap();
        assert_eq!(m.positions.len(), 6 * 17 * 17 + 2);
        let (chi, comps, boundary) = shape(&m);
        assert_eq!((chi, comps, boundary), (2, 1, 0));
        for t in 0..m.triangles.len() {
            assert!(normal(&m, t).dot(centroid(&m, t)) > 0.0, "triangle {t}");
        }
        assert_eq!(m, lumpy_sphere(5.0, 17, 0.2, 7).unwrap());
        assert_ne!(m, lumpy_sphere(5.0, 17, 0.2, 8).unwrap());
        assert!(lumpy_sphere(5.0, 17, 0.5, 7).is_err());
        assert!(lumpy_sphere(5.0, 0, 0.1, 7).is_err());
    }

    #[test]
    fn cylinder_counts_euler_and_normals() {
        for capped in [false, true] {
            let m = cylinder(0.5, 2.0, 12, 3, capped).unwrap();
            let extra = if capped { 2 } else { 0 };
            assert_eq!(m.positions.len(), 12 * 4 + extra);
            assert_eq!(m.triangles.len(), 2 * 12 * 3 + 12 * extra);
            let (chi, comps, boundary) = shape(&m);
            assert_eq!((chi, comps), (if capped { 2 } else { 0 }, 1));
            assert_eq!(boundary, if capped { 0 } else { 24 });
            let mid = DVec3::new(0.0, 1.0, 0.0);
            for t in 0..m.triangles.len() {
                assert!(
                    normal(&m, t).dot(centroid(&m, t) - mid) > 0.0,
                    "triangle {t}"
                );
            }
            let (lo, hi) = m.bounds();
            assert!((lo.y, hi.y) == (0.0, 2.0) && (hi.x - 0.5).abs() < 1e-15);
        }
        assert!(cylinder(1.0, 1.0, 3, 1, true).is_ok());
        assert_invalid(cylinder(1.0, 1.0, 2, 1, false), "cylinder");
        assert_invalid(cylinder(1.0, 1.0, 8, 0, false), "cylinder");
        assert_invalid(cylinder(-1.0, 1.0, 8, 1, false), "cylinder");
        assert_invalid(cylinder(1.0, f64::NAN, 8, 1, false), "cylinder");
    }

    #[test]
    fn bed_of_nails_components_and_normals() {
        let m = bed_of_nails(2, 3, 1.0, 2.0, 0.2).unwrap();
        assert_eq!(m.positions.len(), 6 * 5);
        assert_eq!(m.triangles.len(), 6 * 4);
        assert_eq!(shape(&m), (6, 6, 6 * 4));
        let (lo, hi) = m.bounds();
        assert!((lo - DVec3::new(-1.1, 0.0, -0.6)).length() < 1e-12, "{lo}");
        assert!((hi - DVec3::new(1.1, 2.0, 0.6)).length() < 1e-12, "{hi}");
        for t in 0..m.triangles.len() {
            let apex = m.positions[m.triangles[t][2] as usize];
            let offset = centroid(&m, t) - apex;
            let n = normal(&m, t);
            assert!(n.x * offset.x + n.z * offset.z > 0.0, "triangle {t}");
            assert!(n.y > 0.0);
        }
        assert_invalid(bed_of_nails(0, 3, 1.0, 1.0, 0.1), "bed_of_nails");
        assert_invalid(bed_of_nails(2, 3, 1.0, 1.0, 1.0), "bed_of_nails");
        assert_invalid(bed_of_nails(2, 3, 1.0, 0.0, 0.1), "bed_of_nails");
    }
}
