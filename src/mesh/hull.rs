//! Convex polyhedra from OBJ meshes: the convexity check of a given surface, and the convex
//! hull of a point set (incremental, with exact orientation tests from `robust`).

use glam::DVec3;
use hashbrown::HashMap;

/// Checks that `triangles` over `vertices` bound a convex solid: closed (every edge shared by
/// two triangles, in opposite directions), of positive volume, and every vertex on the inner
/// side of every face plane (within `1e-9` of the mesh's size).
pub(crate) fn check_convex(vertices: &[DVec3], triangles: &[[u32; 3]]) -> Result<(), String> {
    if vertices.len() < 4 || triangles.len() < 4 {
        return Err("a convex solid needs at least 4 vertices and 4 triangles".into());
    }
    if let Some(t) = triangles
        .iter()
        .position(|t| t.iter().any(|&i| i as usize >= vertices.len()))
    {
        return Err(format!(
            "triangle {t} refers to a vertex that does not exist"
        ));
    }
    let mut edges: HashMap<(u32, u32), i32> = HashMap::new();
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *edges.entry((a.min(b), a.max(b))).or_default() += if a < b { 1 } else { -1 };
        }
    }
    // The first bad edge in vertex order, so the message does not depend on the map's order.
    if let Some((a, b)) = edges.iter().filter(|(_, &n)| n != 0).map(|(&e, _)| e).min() {
        return Err(format!(
            "not a closed, consistently oriented surface: edge {a}-{b} is not shared by two \
             opposite triangles"
        ));
    }
    let size = vertices
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs().max_element()))
        .max(1e-300);
    let volume: f64 = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| vertices[i as usize]);
            a.dot(b.cross(c)) / 6.0
        })
        .sum();
    if volume <= 0.0 {
        return Err(format!(
            "encloses volume {volume:e}: faces must be counter-clockwise seen from outside"
        ));
    }
    for (k, t) in triangles.iter().enumerate() {
        let [a, b, c] = t.map(|i| vertices[i as usize]);
        let n = (b - a).cross(c - a).normalize_or_zero();
        if let Some(v) = vertices.iter().position(|v| n.dot(*v - a) > 1e-9 * size) {
            return Err(format!(
                "not convex: vertex {v} lies outside the plane of triangle {k} (use hull = true \
                 for its convex hull)"
            ));
        }
    }
    Ok(())
}

/// The convex hull of `points`: its vertices and outward triangles. `None` when the points
/// are coplanar (no solid).
pub(crate) fn convex_hull(points: &[DVec3]) -> Option<(Vec<DVec3>, Vec<[u32; 3]>)> {
    let orient = |a: DVec3, b: DVec3, c: DVec3, d: DVec3| {
        let p = |v: DVec3| robust::Coord3D {
            x: v.x,
            y: v.y,
            z: v.z,
        };
        // Positive when d is below the plane of a, b, c seen counter-clockwise.
        robust::orient3d(p(a), p(b), p(c), p(d))
    };
    // A first tetrahedron of non-coplanar points.
    let i0 = 0;
    let i1 = (1..points.len()).find(|&i| points[i] != points[i0])?;
    let i2 = (1..points.len()).find(|&i| {
        (points[i1] - points[i0])
            .cross(points[i] - points[i0])
            .length_squared()
            > 0.0
    })?;
    let i3 = (1..points.len())
        .find(|&i| orient(points[i0], points[i1], points[i2], points[i]) != 0.0)?;
    let mut faces: Vec<[usize; 3]> = if orient(points[i0], points[i1], points[i2], points[i3]) > 0.0
    {
        vec![[i0, i1, i2], [i0, i3, i1], [i1, i3, i2], [i2, i3, i0]]
    } else {
        vec![[i0, i2, i1], [i0, i1, i3], [i1, i2, i3], [i2, i0, i3]]
    };
    for (p, &point) in points.iter().enumerate() {
        if [i0, i1, i2, i3].contains(&p) {
            continue;
        }
        // Faces that see the point (it is strictly above them).
        let visible: Vec<bool> = faces
            .iter()
            .map(|f| orient(points[f[0]], points[f[1]], points[f[2]], point) < 0.0)
            .collect();
        if !visible.contains(&true) {
            continue;
        }
        // The horizon: edges of visible faces whose twin belongs to a hidden face.
        let mut directed: HashMap<(usize, usize), bool> = HashMap::new();
        for (f, &v) in faces.iter().zip(&visible) {
            for k in 0..3 {
                directed.insert((f[k], f[(k + 1) % 3]), v);
            }
        }
        let mut next = Vec::with_capacity(faces.len() + 2);
        for (f, &v) in faces.iter().zip(&visible) {
            if !v {
                next.push(*f);
                continue;
            }
            for k in 0..3 {
                let (a, b) = (f[k], f[(k + 1) % 3]);
                if directed.get(&(b, a)) == Some(&false) {
                    next.push([a, b, p]);
                }
            }
        }
        faces = next;
    }
    let mut index: HashMap<usize, u32> = HashMap::new();
    let mut vertices = Vec::new();
    let triangles = faces
        .iter()
        .map(|f| {
            f.map(|p| {
                *index.entry(p).or_insert_with(|| {
                    vertices.push(points[p]);
                    (vertices.len() - 1) as u32
                })
            })
        })
        .collect();
    Some((vertices, triangles))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hull_of_a_cube_and_inner_points_is_the_cube_and_convex() {
        let mut points: Vec<DVec3> = (0..8)
            .map(|i| DVec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64))
            .collect();
        points.push(DVec3::splat(0.5));
        points.push(DVec3::new(0.2, 0.3, 0.4));
        let (v, t) = convex_hull(&points).expect("a solid");
        assert_eq!(v.len(), 8);
        assert_eq!(t.len(), 12);
        check_convex(&v, &t).expect("convex");
    }
}
