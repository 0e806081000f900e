//! Triangle meshes: the raw [`TriMesh`], validation with teaching errors ([`MeshError`]),
//! derived connectivity ([`Topology`], [`Csr`], [`Hinge`]), lumped masses, texture
//! coordinates ([`Uvs`]), a small OBJ reader and writer, and deterministic generators for the
//! standard test shapes.
//!
//! Conventions: positions are `f64` ([`DVec3`]), vertex indices are `u32`, triangles are
//! counter-clockwise seen from the side their normal points to (the "outward" or "up" side).
//! Everything here is deterministic: the same input always gives the same arrays.

pub mod budget;
mod csr;
mod generators;
mod obj;
mod ply;
mod strip;
mod topology;
mod uv;
mod validate;

pub use csr::Csr;

/// A triangle list (global vertex indices) shared read-only by the simulation, its broad
/// phase and its contact topology: one copy in memory (12 bytes a triangle each otherwise).
pub type TriangleList = std::sync::Arc<[[u32; 3]]>;

typed_index! {
    /// A triangle: an index into a triangle list ([`TriMesh::triangles`], [`TriangleList`]).
    pub(crate) struct TriangleId;
}

typed_index! {
    /// An edge: an index into an edge list of vertex pairs ([`Topology::edges`]).
    pub(crate) struct EdgeId;
}
pub(crate) use generators::seeded_unit;
pub use generators::{bed_of_nails, cylinder, icosphere, lumpy_sphere, open_box, ribbon, sheet};
pub use obj::{parse_obj, read_obj, single_word, write_obj, write_obj_positions, ObjGroup};
pub use ply::parse_ply;
pub use strip::{strip_triangles, triangle_strips, RESTART};
pub use topology::{lumped_masses, Hinge, Topology, NO_TRIANGLE};
pub use uv::Uvs;

use crate::typed_index::typed_index;
use glam::{DQuat, DVec3};

/// A raw triangle mesh: positions + triangles (counter-clockwise = outward/up normal).
///
/// A `TriMesh` is just data; call [`TriMesh::validate`] (or [`Topology::build`], which
/// validates first) before trusting it. Vertices that no triangle uses are allowed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriMesh {
    /// Vertex positions (cm).
    pub positions: Vec<DVec3>,
    /// Triangles as 0-based vertex indices, counter-clockwise seen from the normal side.
    pub triangles: Vec<[u32; 3]>,
    /// Texture coordinates, when the mesh was read from an OBJ file that gives one on every
    /// face corner; `None` for generated meshes. The simulation ignores them; OBJ frames carry
    /// them.
    pub uvs: Option<Uvs>,
}

impl TriMesh {
    /// Wraps positions and triangles (no texture coordinates); does not validate.
    pub fn new(positions: Vec<DVec3>, triangles: Vec<[u32; 3]>) -> Self {
        Self {
            positions,
            triangles,
            uvs: None,
        }
    }

    /// Checks the mesh is usable for simulation; returns the first problem found.
    ///
    /// Checks, in order: at least one triangle; every coordinate finite; then per triangle
    /// (in index order) indices in range, three distinct vertices, non-degenerate area
    /// (`area <= 1e-12 * longest_edge^2` is rejected), not a duplicate of an earlier triangle;
    /// finally every edge is shared by at most two triangles.
    ///
    /// Unused vertices are *not* an error (their lumped mass is 0); callers that cannot handle
    /// massless free vertices should reject them themselves.
    pub fn validate(&self) -> Result<(), MeshError> {
        validate::validate_with_edges(self).map(|_| ())
    }

    /// Returns a copy with every position mapped `x -> rotation * (scale * x) + translation`.
    ///
    /// When the scale is a mirror (an odd number of negative components) the winding of every
    /// triangle (and of its texture coordinates) is reversed as well, so that normals keep
    /// pointing to the mapped outward side.
    pub fn transformed(&self, scale: DVec3, rotation: DQuat, translation: DVec3) -> TriMesh {
        let positions = self
            .positions
            .iter()
            .map(|&x| rotation * (scale * x) + translation)
            .collect();
        let mirror = scale.x * scale.y * scale.z < 0.0;
        let wound = |corners: &[[u32; 3]]| -> Vec<[u32; 3]> {
            if mirror {
                corners.iter().map(|&[a, b, c]| [a, c, b]).collect()
            } else {
                corners.to_vec()
            }
        };
        TriMesh {
            positions,
            triangles: wound(&self.triangles),
            uvs: self.uvs.as_ref().map(|uvs| Uvs {
                coords: uvs.coords.clone(),
                corners: wound(&uvs.corners),
            }),
        }
    }

    /// Area of triangle `t`.
    ///
    /// # Panics
    /// If `t` or one of its vertex indices is out of range (validate the mesh first).
    pub fn triangle_area(&self, t: usize) -> f64 {
        let [a, b, c] = self.triangles[t];
        let (a, b, c) = (
            self.positions[a as usize],
            self.positions[b as usize],
            self.positions[c as usize],
        );
        0.5 * (b - a).cross(c - a).length()
    }

    /// Axis-aligned bounds `(min, max)` of all positions; `(ZERO, ZERO)` if there are none.
    pub fn bounds(&self) -> (DVec3, DVec3) {
        if self.positions.is_empty() {
            return (DVec3::ZERO, DVec3::ZERO);
        }
        self.positions.iter().fold(
            (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)),
            |(lo, hi), &p| (lo.min(p), hi.max(p)),
        )
    }

    /// Appends `other` (its indices offset past this mesh's vertices); returns that vertex offset.
    /// The result keeps texture coordinates only when both meshes have them.
    ///
    /// The caller is responsible for keeping the total vertex count below `u32::MAX`.
    pub fn append(&mut self, other: &TriMesh) -> u32 {
        match (&mut self.uvs, &other.uvs) {
            (Some(mine), Some(theirs)) => mine.append(theirs),
            _ => self.uvs = None,
        }
        let offset = self.positions.len() as u32;
        self.positions.extend_from_slice(&other.positions);
        self.triangles.extend(
            other
                .triangles
                .iter()
                .map(|t| [t[0] + offset, t[1] + offset, t[2] + offset]),
        );
        offset
    }
}

/// Everything that can be wrong with a mesh, an OBJ file or generator arguments.
///
/// Each message names the offending element and says how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// The mesh has no triangles.
    #[error("mesh has no triangles; a simulated surface needs at least one triangle")]
    Empty,
    /// A vertex position has a NaN or infinite coordinate.
    #[error(
        "vertex {vertex} has a non-finite coordinate (NaN or infinity); fix its position or the \
         transform that produced it"
    )]
    NonFiniteCoordinate {
        /// The vertex index.
        vertex: usize,
    },
    /// A vertex lies farther from the origin than [`MAX_COORDINATE`].
    #[error(
        "vertex {vertex} is at {position}, farther than {MAX_COORDINATE:e} cm from the origin; \
         acm works in centimetres, where that is 10,000 km: scale the mesh into that range"
    )]
    CoordinateTooLarge {
        /// The vertex index.
        vertex: usize,
        /// Its position (cm).
        position: glam::DVec3,
    },
    /// A triangle refers to a vertex that does not exist.
    #[error(
        "triangle {triangle} refers to vertex {index}, but the mesh has only {vertices} vertices \
         (valid indices are 0 to {vertices} - 1; triangle indices are 0-based)"
    )]
    IndexOutOfRange {
        /// The triangle index.
        triangle: usize,
        /// The offending vertex index.
        index: u32,
        /// The number of vertices in the mesh.
        vertices: usize,
    },
    /// A triangle uses the same vertex twice.
    #[error(
        "triangle {triangle} uses the same vertex more than once, so it has no area; remove it"
    )]
    RepeatedVertex {
        /// The triangle index.
        triangle: usize,
    },
    /// A triangle has (relatively) zero area.
    #[error(
        "triangle {triangle} is degenerate (area {area:e}): its three vertices are collinear or \
         coincide; remove it or fix the vertex positions"
    )]
    DegenerateTriangle {
        /// The triangle index.
        triangle: usize,
        /// Its area.
        area: f64,
    },
    /// A triangle has the same vertex set as an earlier one.
    #[error(
        "triangle {triangle} has the same three vertices as triangle {first}; remove one of them \
         (coinciding faces can never be separated by contact)"
    )]
    DuplicateTriangle {
        /// The later triangle.
        triangle: usize,
        /// The earlier triangle with the same vertices.
        first: usize,
    },
    /// An edge is shared by more than two triangles.
    #[error(
        "edge ({a}, {b}) is shared by {} triangles {triangles:?}, but a manifold surface allows at \
         most 2; split the surface along that edge (give each sheet its own copy of the vertices)",
        .triangles.len()
    )]
    NonManifoldEdge {
        /// Smaller vertex index of the edge.
        a: u32,
        /// Larger vertex index of the edge.
        b: u32,
        /// All triangles containing the edge, ascending.
        triangles: Vec<usize>,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file path.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// An OBJ file has a malformed line.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file path (or name given for errors).
        path: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A generator was called with invalid arguments.
    #[error("invalid arguments to mesh generator `{generator}`: {message}")]
    InvalidGenerator {
        /// The generator's name.
        generator: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Largest coordinate a mesh vertex may have (cm). Double precision still resolves a 1e-7 cm
/// step there, and squared lengths stay far from overflow.
pub const MAX_COORDINATE: f64 = 1e9;

/// A unit square in the XY plane split into two triangles (a fixture for the unit tests).
#[cfg(test)]
pub(crate) fn test_square() -> TriMesh {
    TriMesh::new(
        vec![
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(1.0, 1.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
        ],
        vec![[0, 1, 2], [0, 2, 3]],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bounds_append_and_area() {
        assert_eq!(TriMesh::default().bounds(), (DVec3::ZERO, DVec3::ZERO));
        let mut a = sheet(2, 2, 2.0, 2.0).unwrap();
        let b = sheet(3, 2, 1.0, 1.0).unwrap().transformed(
            DVec3::ONE,
            DQuat::IDENTITY,
            DVec3::new(5.0, 1.0, 0.0),
        );
        assert_eq!(a.append(&b), 4);
        assert_eq!(a.positions.len(), 10);
        assert_eq!(a.triangles.len(), 2 + 4);
        assert!(a.triangles[2..].iter().flatten().all(|&v| v >= 4));
        assert_eq!(a.validate(), Ok(()));
        assert_eq!(
            a.bounds(),
            (DVec3::new(-1.0, 0.0, -1.0), DVec3::new(5.5, 1.0, 1.0))
        );
        assert!((a.triangle_area(0) - 2.0).abs() < 1e-15);
    }

    #[test]
    fn transformed_maps_scale_then_rotation_then_translation() {
        let m = TriMesh::new(
            vec![DVec3::ZERO, DVec3::X, DVec3::Z],
            vec![[0, 2, 1]], // normal +y
        );
        let rot = DQuat::from_rotation_z(std::f64::consts::FRAC_PI_2);
        let t = m.transformed(DVec3::new(2.0, 1.0, 1.0), rot, DVec3::new(0.0, 0.0, 3.0));
        // X scaled to 2X, rotated to 2Y, then shifted by 3Z.
        assert!((t.positions[1] - DVec3::new(0.0, 2.0, 3.0)).length() < 1e-15);
        assert!((t.positions[2] - DVec3::new(0.0, 0.0, 4.0)).length() < 1e-15);
        assert_eq!(t.triangles, m.triangles);
    }

    #[test]
    fn mirroring_reverses_the_texture_corners_with_the_triangles() {
        let mut m = test_square();
        m.uvs = Some(Uvs {
            coords: vec![glam::DVec2::ZERO; 4],
            corners: vec![[0, 1, 2], [0, 2, 3]],
        });
        let mirrored = m.transformed(DVec3::new(-1.0, 1.0, 1.0), DQuat::IDENTITY, DVec3::ZERO);
        assert_eq!(mirrored.triangles, vec![[0, 2, 1], [0, 3, 2]]);
        assert_eq!(mirrored.uvs.unwrap().corners, mirrored.triangles);
        let moved = m.transformed(DVec3::ONE, DQuat::IDENTITY, DVec3::X);
        assert_eq!(moved.uvs, m.uvs);
        // Appending a mesh without texture coordinates drops them.
        let mut both = m.clone();
        both.append(&test_square());
        assert_eq!(both.uvs, None);
    }

    #[test]
    fn mirroring_keeps_closed_meshes_outward() {
        let s = icosphere(1.0, 1).unwrap();
        let m = s.transformed(DVec3::new(-1.0, 1.0, 1.0), DQuat::IDENTITY, DVec3::ZERO);
        assert_ne!(m.triangles, s.triangles);
        for &[a, b, c] in &m.triangles {
            let [a, b, c] = [a, b, c].map(|v| m.positions[v as usize]);
            assert!((b - a).cross(c - a).dot(a + b + c) > 0.0);
        }
    }

    proptest! {
        #[test]
        fn topology_invariants_on_sheets(nx in 2usize..9, ny in 2usize..9, w in 0.1f64..10.0,
                                         d in 0.1f64..10.0, density in 0.01f64..5.0) {
            let m = sheet(nx, ny, w, d).unwrap();
            let topo = Topology::build(&m).unwrap();
            let (v, e, f) = (m.positions.len(), topo.edges.len(), m.triangles.len());
            prop_assert_eq!(v as i64 - e as i64 + f as i64, 1);
            prop_assert_eq!(topo.boundary_edge_count(), 2 * (nx - 1 + ny - 1));
            prop_assert_eq!(topo.hinges.len(), e - topo.boundary_edge_count());
            prop_assert_eq!(topo.vertex_triangles.items.len(), 3 * f);
            prop_assert_eq!(topo.vertex_edges.items.len(), 2 * e);
            let total: f64 = lumped_masses(&m, density).iter().sum();
            prop_assert!((total - density * w * d).abs() <= 1e-12 * density * w * d);
            let mut buf = Vec::new();
            write_obj(&mut buf, &[("s", &m)]).unwrap();
            let back = parse_obj(std::str::from_utf8(&buf).unwrap(), "mem").unwrap();
            prop_assert_eq!(back, m);
        }
    }
}
