//! Texture coordinates of a mesh, stored as OBJ stores them: an array of `(u, v)` pairs and,
//! per triangle corner, an index into it. A vertex on a UV seam has one position but several
//! texture coordinates, one for each side of the seam, so coordinates belong to corners, not
//! to vertices.

use glam::DVec2;

/// The texture coordinates of a [`TriMesh`](super::TriMesh), read from the `vt` lines and the
/// `f v/vt` references of an OBJ file and written back to OBJ frames unchanged.
///
/// Invariant: `corners` has one entry per triangle of the mesh, in the same order, and every
/// index in it is below `coords.len()`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Uvs {
    /// The `(u, v)` pairs, in the order of the `vt` lines.
    pub coords: Vec<DVec2>,
    /// Per triangle, the index into `coords` of each corner, in the triangle's vertex order.
    pub corners: Vec<[u32; 3]>,
}

impl Uvs {
    #[cfg(test)]
    /// Appends `other`'s coordinates and corners, its corner indices offset past this one's
    /// coordinates (the UV counterpart of [`TriMesh::append`](super::TriMesh::append)).
    pub(crate) fn append(&mut self, other: &Uvs) {
        let offset = self.coords.len() as u32;
        self.coords.extend_from_slice(&other.coords);
        self.corners
            .extend(other.corners.iter().map(|c| c.map(|i| i + offset)));
    }
}
