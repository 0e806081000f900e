//! Triangle meshes: the raw [`TriMesh`], validation with teaching errors ([`MeshError`]),
//! derived connectivity (`Topology`, `Csr`, `Hinge`), lumped masses, texture
//! coordinates ([`Uvs`]), a small OBJ reader and writer, and deterministic generators for the
//! standard test shapes.
//!
//! Conventions: positions are `f64` ([`glam::DVec3`]), vertex indices are `u32`, triangles are
//! counter-clockwise seen from the side their normal points to (the "outward" or "up" side).
//! Everything here is deterministic: the same input always gives the same arrays.

pub(crate) mod budget;
mod csr;
mod error;
mod generators;
pub(crate) mod hull;
mod obj;
mod ply;
mod strip;
mod topology;
mod tri_mesh;
mod uv;
mod validate;

pub(crate) use csr::Csr;
pub use error::MeshError;
pub(crate) use error::MAX_COORDINATE;
#[cfg(test)]
pub(crate) use tri_mesh::test_square;
pub use tri_mesh::TriMesh;

/// A triangle list (global vertex indices) shared read-only by the simulation, its broad
/// phase and its contact topology: one copy in memory (12 bytes a triangle each otherwise).
pub(crate) type TriangleList = std::sync::Arc<[[u32; 3]]>;

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
pub use obj::{parse_obj, read_obj, write_obj, ObjGroup};
pub(crate) use obj::{single_word, write_obj_positions};
pub use ply::parse_ply;
pub use strip::{strip_triangles, triangle_strips};
pub(crate) use topology::{lumped_masses, Topology};
pub use uv::Uvs;

use crate::typed_index::typed_index;

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DQuat, DVec3};
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
            prop_assert_eq!(m.boundary_edge_count(), 2 * (nx - 1 + ny - 1));
            prop_assert_eq!(topo.hinges.len(), e - m.boundary_edge_count());
            prop_assert_eq!(topo.vertex_edges(v).items.len(), 2 * e);
            let total: f64 = lumped_masses(&m, density).iter().sum();
            prop_assert!((total - density * w * d).abs() <= 1e-12 * density * w * d);
            let mut buf = Vec::new();
            write_obj(&mut buf, &[("s", &m)]).unwrap();
            let back = parse_obj(std::str::from_utf8(&buf).unwrap(), "mem").unwrap();
            prop_assert_eq!(back, m);
        }
    }
}
