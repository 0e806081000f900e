//! Convex parts of rigid bodies: polytopes (boxes, convex hulls) and exact spheres, in a body's
//! own frame, with what collision detection reads (vertices, face normals, edge directions) and
//! what output and mass properties read (a closed triangulated surface).

use glam::DVec3;

/// A convex polytope: its vertices, its distinct outward face normals and edge directions
/// (what separating-axis tests need), and its closed surface as outward-facing triangles.
#[derive(Clone, Debug, PartialEq)]
pub struct Polytope {
    /// Vertices.
    pub vertices: Vec<DVec3>,
    /// Distinct outward unit face normals.
    pub normals: Vec<DVec3>,
    /// Distinct unit edge directions (up to sign).
    pub edges: Vec<DVec3>,
    /// The surface, counter-clockwise seen from outside, indexing `vertices`.
    pub triangles: Vec<[u32; 3]>,
}

impl Polytope {
    /// A box of full side lengths `size` centred at `center`, axis-aligned.
    pub(crate) fn cuboid(size: DVec3, center: DVec3) -> Self {
        let h = 0.5 * size;
        let vertices = (0..8)
            .map(|i| {
                let s = DVec3::new(
                    if i & 1 == 0 { -1.0 } else { 1.0 },
                    if i & 2 == 0 { -1.0 } else { 1.0 },
                    if i & 4 == 0 { -1.0 } else { 1.0 },
                );
                center + s * h
            })
            .collect();
        // Each face as a quad, counter-clockwise from outside.
        let quads: [[u32; 4]; 6] = [
            [0, 4, 6, 2], // -x
            [1, 3, 7, 5], // +x
            [0, 1, 5, 4], // -y
            [2, 6, 7, 3], // +y
            [0, 2, 3, 1], // -z
            [4, 5, 7, 6], // +z
        ];
        let triangles = quads
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect();
        Self {
            vertices,
            normals: vec![
                DVec3::NEG_X,
                DVec3::X,
                DVec3::NEG_Y,
                DVec3::Y,
                DVec3::NEG_Z,
                DVec3::Z,
            ],
            edges: vec![DVec3::X, DVec3::Y, DVec3::Z],
            triangles,
        }
    }

    /// A polytope from a closed convex triangulated surface: face normals and edge directions
    /// are merged where coplanar or parallel within `1e-9`.
    pub(crate) fn from_surface(vertices: Vec<DVec3>, triangles: Vec<[u32; 3]>) -> Self {
        let mut normals: Vec<DVec3> = Vec::new();
        for t in &triangles {
            let [a, b, c] = t.map(|i| vertices[i as usize]);
            let n = (b - a).cross(c - a).normalize_or_zero();
            if n != DVec3::ZERO && !normals.iter().any(|m| m.dot(n) > 1.0 - 1e-9) {
                normals.push(n);
            }
        }
        let mut edges: Vec<DVec3> = Vec::new();
        for t in &triangles {
            for k in 0..3 {
                let (a, b) = (vertices[t[k] as usize], vertices[t[(k + 1) % 3] as usize]);
                let e = (b - a).normalize_or_zero();
                // An edge between two coplanar triangles is a diagonal, not an edge of the
                // polytope; keeping it only adds a redundant separating axis.
                if e != DVec3::ZERO && !edges.iter().any(|f| f.dot(e).abs() > 1.0 - 1e-9) {
                    edges.push(e);
                }
            }
        }
        Self {
            vertices,
            normals,
            edges,
            triangles,
        }
    }
}

/// One convex part of a body, in the body's frame (whose origin is the body's centre of mass).
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A convex polytope.
    Polytope(Polytope),
    /// An exact sphere.
    Sphere {
        /// Centre in the body frame.
        center: DVec3,
        /// Radius (cm).
        radius: f64,
    },
}

impl Shape {
    /// The shape moved by `offset` (used to put the body's centre of mass at its origin).
    pub(crate) fn shifted(&self, offset: DVec3) -> Self {
        match self {
            Self::Polytope(p) => Self::Polytope(Polytope {
                vertices: p.vertices.iter().map(|&v| v + offset).collect(),
                ..p.clone()
            }),
            Self::Sphere { center, radius } => Self::Sphere {
                center: *center + offset,
                radius: *radius,
            },
        }
    }

    /// Whether the shape is a sphere centred on the frame's origin (the body's centre of mass):
    /// turning the body does not move it.
    pub(crate) fn is_centred_sphere(&self) -> bool {
        matches!(self, Self::Sphere { center, radius } if center.length() <= 1e-12 * radius)
    }

    /// The farthest any point of the shape is from the frame's origin.
    pub(crate) fn reach(&self) -> f64 {
        match self {
            Self::Polytope(p) => p.vertices.iter().map(|v| v.length()).fold(0.0, f64::max),
            Self::Sphere { center, radius } => center.length() + radius,
        }
    }
}

/// Mass, centre of mass and inertia tensor (about the centre of mass) of a solid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MassProperties {
    /// Mass (g).
    pub mass: f64,
    /// Centre of mass.
    pub center: DVec3,
    /// Inertia tensor about the centre of mass (g cm^2), row-major.
    pub inertia: glam::DMat3,
}

impl MassProperties {
    /// The solid bounded by the closed, outward-oriented surface `triangles` over `vertices`,
    /// of uniform `density` (g/cm^3): sums over the tetrahedra that join each triangle to the
    /// origin (signed volumes, so the origin may lie anywhere).
    pub(crate) fn of_surface(vertices: &[DVec3], triangles: &[[u32; 3]], density: f64) -> Self {
        let mut volume = 0.0;
        let mut first = DVec3::ZERO;
        // Second moments: integral of x_i x_j over the solid.
        let mut second = [[0.0f64; 3]; 3];
        for t in triangles {
            let [a, b, c] = t.map(|i| vertices[i as usize]);
            let v = a.dot(b.cross(c)) / 6.0;
            volume += v;
            first += v * (a + b + c) / 4.0;
            // Over a tetrahedron (0, a, b, c): integral x_i x_j = V/20 (sum over vertex pairs
            // with the diagonal doubled) = V/20 (sum_k p_k,i p_k,j + s_i s_j), s = a + b + c.
            let s = a + b + c;
            for i in 0..3 {
                for j in 0..3 {
                    let pp = a[i] * a[j] + b[i] * b[j] + c[i] * c[j];
                    second[i][j] += v / 20.0 * (pp + s[i] * s[j]);
                }
            }
        }
        let mass = density * volume;
        let center = first / volume;
        // About the centre: C = int x x^T - V c c^T; inertia = trace(C) I - C.
        let mut cov = [[0.0f64; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                cov[i][j] = density * (second[i][j] - volume * center[i] * center[j]);
            }
        }
        let trace = cov[0][0] + cov[1][1] + cov[2][2];
        let inertia = glam::DMat3::from_cols_array_2d(&std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                if i == j {
                    trace - cov[i][j]
                } else {
                    -cov[i][j]
                }
            })
        }));
        Self {
            mass,
            center,
            inertia,
        }
    }

    /// A solid sphere of `radius` centred at `center`.
    pub(crate) fn of_sphere(center: DVec3, radius: f64, density: f64) -> Self {
        let mass = density * 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3);
        Self {
            mass,
            center,
            inertia: glam::DMat3::from_diagonal(DVec3::splat(0.4 * mass * radius * radius)),
        }
    }

    /// The union of disjoint solids: masses add, inertias are moved to the common centre
    /// (parallel axis theorem).
    pub(crate) fn combine(parts: &[Self]) -> Self {
        let mass: f64 = parts.iter().map(|p| p.mass).sum();
        let center = parts.iter().map(|p| p.mass * p.center).sum::<DVec3>() / mass;
        let mut inertia = glam::DMat3::ZERO;
        for p in parts {
            let d = p.center - center;
            let shift = glam::DMat3::from_diagonal(DVec3::splat(d.length_squared())) - outer(d, d);
            inertia += p.inertia + shift * p.mass;
        }
        Self {
            mass,
            center,
            inertia,
        }
    }
}

/// `a b^T`.
fn outer(a: DVec3, b: DVec3) -> glam::DMat3 {
    glam::DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// The closed surface of a jack: three boxes of `length x width x width` crossing at their
/// centres along x, y and z (a central cube with six arms), centred at the origin. Its
/// vertices are the central cube's 8 corners and each arm's 4 end corners; every face lies on
/// the boundary of the union, so the surface is the union's own.
pub(crate) fn jack_surface(length: f64, width: f64) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let (h, w) = (0.5 * length, 0.5 * width);
    let mut vertices: Vec<DVec3> = (0..8)
        .map(|i| {
            DVec3::new(
                if i & 1 == 0 { -w } else { w },
                if i & 2 == 0 { -w } else { w },
                if i & 4 == 0 { -w } else { w },
            )
        })
        .collect();
    let mut triangles = Vec::new();
    // One arm per signed axis: the central cube's face towards it is replaced by four side
    // quads and an end cap.
    for axis in 0..3 {
        for sign in [-1.0, 1.0] {
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            // The face's corners in counter-clockwise order seen from outside.
            let mut corners = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)];
            if sign < 0.0 {
                corners.reverse();
            }
            let base: Vec<u32> = corners
                .iter()
                .map(|&(su, sv)| {
                    let mut p = DVec3::ZERO;
                    p[axis] = sign * w;
                    p[u] = su * w;
                    p[v] = sv * w;
                    vertices
                        .iter()
                        .position(|q| *q == p)
                        .expect("a cube corner") as u32
                })
                .collect();
            let end: Vec<u32> = corners
                .iter()
                .map(|&(su, sv)| {
                    let mut p = DVec3::ZERO;
                    p[axis] = sign * h;
                    p[u] = su * w;
                    p[v] = sv * w;
                    vertices.push(p);
                    (vertices.len() - 1) as u32
                })
                .collect();
            for k in 0..4 {
                let (a, b) = (base[k], base[(k + 1) % 4]);
                let (c, d) = (end[(k + 1) % 4], end[k]);
                triangles.push([a, b, c]);
                triangles.push([a, c, d]);
            }
            triangles.push([end[0], end[1], end[2]]);
            triangles.push([end[0], end[2], end[3]]);
        }
    }
    (vertices, triangles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_has_the_mass_and_inertia_of_the_formulas() {
        let b = Polytope::cuboid(DVec3::new(2.0, 4.0, 6.0), DVec3::new(1.0, 2.0, 3.0));
        let m = MassProperties::of_surface(&b.vertices, &b.triangles, 0.5);
        assert!((m.mass - 24.0).abs() < 1e-12);
        assert!(m.center.distance(DVec3::new(1.0, 2.0, 3.0)) < 1e-12);
        let expect = DVec3::new(16.0 + 36.0, 4.0 + 36.0, 4.0 + 16.0) * m.mass / 12.0;
        let diag = DVec3::new(m.inertia.x_axis.x, m.inertia.y_axis.y, m.inertia.z_axis.z);
        assert!(diag.distance(expect) < 1e-9, "{diag} vs {expect}");
        assert!(m.inertia.x_axis.y.abs() < 1e-9);
    }

    #[test]
    fn a_jack_surface_encloses_the_union_volume() {
        let (v, t) = jack_surface(6.0, 1.0);
        let m = MassProperties::of_surface(&v, &t, 1.0);
        // Three 6x1x1 boxes overlap in the central cube, counted three times.
        assert!((m.mass - (3.0 * 6.0 - 2.0)).abs() < 1e-12, "{}", m.mass);
        assert!(m.center.length() < 1e-12);
    }
}
