//! The raw triangle mesh: positions, triangles and optional texture coordinates.

use super::error::MeshError;
use super::uv::Uvs;
use super::validate;
use glam::{DQuat, DVec3};

/// A raw triangle mesh: positions + triangles (counter-clockwise = outward/up normal).
///
/// A `TriMesh` is just data; call [`TriMesh::validate`] (or `Topology::build`, which
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
    pub(crate) fn triangle_area(&self, t: usize) -> f64 {
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

    #[cfg(test)]
    /// Appends `other` (its indices offset past this mesh's vertices); returns that vertex offset.
    /// The result keeps texture coordinates only when both meshes have them.
    ///
    /// The caller is responsible for keeping the total vertex count below `u32::MAX`.
    pub(crate) fn append(&mut self, other: &TriMesh) -> u32 {
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

    /// Edges of exactly one triangle, counted from the triangle list alone (so tests can check
    /// [`Topology`](super::Topology)'s hinges against it).
    #[cfg(test)]
    pub(crate) fn boundary_edge_count(&self) -> usize {
        let mut uses = std::collections::HashMap::new();
        for t in &self.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *uses.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        uses.values().filter(|&&n| n == 1).count()
    }
}

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
