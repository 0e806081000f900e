//! Derived connectivity: edges, edge -> triangles, bending hinges, vertex adjacency.

#[cfg(test)]
use super::csr::Csr;
use super::error::MeshError;
use super::tri_mesh::TriMesh;
use super::validate::validate_with_edges;

/// A bending hinge: interior edge `(v[0], v[1])` shared by triangles `(v[0], v[1], v[2])` and
/// `(v[1], v[0], v[3])`, i.e. `v[2]` and `v[3]` are the opposite ("wing") vertices.
///
/// Orientation: `v[0] -> v[1]` is the direction the edge has in the first (lower-index)
/// triangle's counter-clockwise order, so for a consistently oriented flat sheet the dihedral
/// angle is 0. If the two triangles are *not* consistently oriented, `v[3]` is still the second
/// triangle's opposite vertex; rest angles measured from the rest shape remain meaningful.
pub(crate) type Hinge = [u32; 4];

/// Derived connectivity, built once. Deterministic: same input -> same arrays.
#[derive(Clone, Debug, Default)]
pub(crate) struct Topology {
    /// Unique undirected edges, each stored `(min, max)`, sorted lexicographically.
    pub edges: Vec<[u32; 2]>,
    /// One hinge per interior edge, in edge order.
    pub hinges: Vec<Hinge>,
}

impl Topology {
    /// Validates `mesh` (see [`TriMesh::validate`]) and derives its connectivity.
    pub(crate) fn build(mesh: &TriMesh) -> Result<Topology, MeshError> {
        let uses = validate_with_edges(mesh)?;
        let mut edges = Vec::with_capacity(uses.len() / 2 + 1);
        let mut hinges = Vec::new();
        let mut i = 0;
        while i < uses.len() {
            let (a, b, t0) = uses[i];
            let second = uses
                .get(i + 1)
                .filter(|u| u.0 == a && u.1 == b)
                .map(|u| u.2);
            edges.push([a, b]);
            if let Some(t1) = second {
                hinges.push(hinge(mesh, a, b, t0, t1));
                i += 2;
            } else {
                i += 1;
            }
        }
        Ok(Topology { edges, hinges })
    }

    /// Vertex -> incident edges (edge indices, ascending), for `vertices` vertices.
    #[cfg(test)]
    pub(crate) fn vertex_edges(&self, vertices: usize) -> Csr {
        let pairs = self.edges.iter().enumerate();
        Csr::from_pairs(
            vertices,
            pairs.flat_map(|(e, &[a, b])| [(a, e as u32), (b, e as u32)]),
        )
    }
}

/// The hinge of edge {a, b} between triangles t0 (defines the orientation) and t1.
fn hinge(mesh: &TriMesh, a: u32, b: u32, t0: u32, t1: u32) -> Hinge {
    let f0 = mesh.triangles[t0 as usize];
    let f1 = mesh.triangles[t1 as usize];
    // Rotate f0 so that it starts with the edge: (v0, v1, v2) with {v0, v1} = {a, b}.
    let k = (0..3)
        .find(|&k| f0[(k + 2) % 3] != a && f0[(k + 2) % 3] != b)
        .unwrap_or(0);
    let (v0, v1, v2) = (f0[k], f0[(k + 1) % 3], f0[(k + 2) % 3]);
    let v3 = f1
        .iter()
        .copied()
        .find(|&v| v != a && v != b)
        .unwrap_or(f1[0]);
    [v0, v1, v2, v3]
}

/// Lumped vertex masses: `density` (g/cm^2) times one third of the area of each incident
/// triangle. Unused vertices get mass 0. Triangles with out-of-range indices are skipped
/// (validate the mesh first).
pub(crate) fn lumped_masses(mesh: &TriMesh, density: f64) -> Vec<f64> {
    let n = mesh.positions.len();
    let mut m = vec![0.0; n];
    for (t, tri) in mesh.triangles.iter().enumerate() {
        if tri.iter().any(|&v| v as usize >= n) {
            continue;
        }
        let third = density * mesh.triangle_area(t) / 3.0;
        for &v in tri {
            m[v as usize] += third;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{icosphere, sheet};
    use glam::DVec3;

    use crate::mesh::test_square as square;

    #[test]
    fn square_has_five_edges_and_one_oriented_hinge() {
        let m = square();
        let topo = Topology::build(&m).unwrap();
        assert_eq!(topo.edges, vec![[0, 1], [0, 2], [0, 3], [1, 2], [2, 3]]);
        assert_eq!(m.boundary_edge_count(), 4);
        // Edge 0-2 (edge 1, the only interior one) runs 2 -> 0 in triangle (0, 1, 2); wing
        // vertices 1 and 3.
        assert_eq!(topo.hinges, vec![[2, 0, 1, 3]]);
        let vertex_edges = topo.vertex_edges(4);
        assert_eq!(vertex_edges.row(0), &[0, 1, 2]);
        assert_eq!(vertex_edges.row(2), &[1, 3, 4]);
    }

    #[test]
    fn hinge_triangles_match_definition() {
        // For a consistently oriented mesh, (v0, v1, v2) and (v1, v0, v3) are the triangles
        // up to rotation.
        let m = sheet(5, 4, 2.0, 1.0).unwrap();
        let topo = Topology::build(&m).unwrap();
        let rot = |t: [u32; 3]| [t, [t[1], t[2], t[0]], [t[2], t[0], t[1]]];
        for h in &topo.hinges {
            let f0 = [h[0], h[1], h[2]];
            let f1 = [h[1], h[0], h[3]];
            assert!(m.triangles.iter().any(|&t| rot(t).contains(&f0)), "{h:?}");
            assert!(m.triangles.iter().any(|&t| rot(t).contains(&f1)), "{h:?}");
        }
        // Interior edges of a grid with 4x3 quads: E - boundary edges.
        assert_eq!(
            topo.hinges.len(),
            topo.edges.len() - m.boundary_edge_count()
        );
        assert_eq!(m.boundary_edge_count(), 2 * (4 + 3));
    }

    #[test]
    fn icosphere_is_closed() {
        for s in 0..3 {
            let m = icosphere(1.0, s).unwrap();
            let topo = Topology::build(&m).unwrap();
            let (v, e, f) = (m.positions.len(), topo.edges.len(), m.triangles.len());
            assert_eq!(m.boundary_edge_count(), 0);
            assert_eq!(2 * e, 3 * f);
            assert_eq!(v as i64 - e as i64 + f as i64, 2);
            assert_eq!(topo.hinges.len(), e);
        }
    }

    #[test]
    fn csr_rows_sorted_and_deterministic() {
        let m = icosphere(1.0, 2).unwrap();
        let a = Topology::build(&m).unwrap();
        let b = Topology::build(&m).unwrap();
        let n = m.positions.len();
        let vertex_triangles = Csr::vertex_triangles(n, &m.triangles);
        let vertex_edges = a.vertex_edges(n);
        assert_eq!(vertex_edges, b.vertex_edges(n));
        assert_eq!(a.edges, b.edges);
        assert_eq!(a.hinges, b.hinges);
        for v in 0..n {
            for csr in [&vertex_triangles, &vertex_edges] {
                assert!(csr.row(v).windows(2).all(|w| w[0] < w[1]));
            }
            // A closed surface: as many triangles as edges around each vertex.
            assert_eq!(vertex_triangles.row(v).len(), vertex_edges.row(v).len());
        }
        assert!(a.edges.windows(2).all(|w| w[0] < w[1]));
        assert!(a.edges.iter().all(|e| e[0] < e[1]));
    }

    #[test]
    fn lumped_masses_sum_to_density_times_area() {
        let mut m = sheet(7, 5, 3.0, 2.0).unwrap();
        m.positions.push(DVec3::new(9.0, 9.0, 9.0)); // unused vertex
        let masses = lumped_masses(&m, 0.25);
        let total: f64 = masses.iter().sum();
        assert!((total - 0.25 * 6.0).abs() < 1e-12, "{total}");
        assert_eq!(*masses.last().unwrap(), 0.0);
        assert!(masses[..masses.len() - 1].iter().all(|&x| x > 0.0));
    }

    #[test]
    fn build_rejects_invalid() {
        let mut m = square();
        m.triangles.push([0, 1, 2]);
        assert!(matches!(
            Topology::build(&m),
            Err(MeshError::DuplicateTriangle { .. })
        ));
    }
}
