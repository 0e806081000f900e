//! Mesh validation.

use super::error::MeshError;
use super::tri_mesh::TriMesh;
use hashbrown::HashMap;

/// One triangle's use of an undirected edge: `(min vertex, max vertex, triangle)`.
pub(super) type EdgeUse = (u32, u32, u32);

/// Relative degeneracy threshold: `area <= DEGENERATE_RATIO * longest_edge^2` is degenerate.
const DEGENERATE_RATIO: f64 = 1e-12;

/// Validates `mesh` (see [`TriMesh::validate`]) and returns every edge use, sorted
/// lexicographically, so that topology construction does not have to redo that work.
pub(super) fn validate_with_edges(mesh: &TriMesh) -> Result<Vec<EdgeUse>, MeshError> {
    if mesh.triangles.is_empty() {
        return Err(MeshError::Empty);
    }
    if let Some(vertex) = mesh.positions.iter().position(|p| !p.is_finite()) {
        return Err(MeshError::NonFiniteCoordinate { vertex });
    }
    if let Some(vertex) = mesh
        .positions
        .iter()
        .position(|p| p.abs().max_element() > super::MAX_COORDINATE)
    {
        let position = mesh.positions[vertex];
        return Err(MeshError::CoordinateTooLarge { vertex, position });
    }
    let n = mesh.positions.len();
    let mut seen: HashMap<[u32; 3], usize> = HashMap::with_capacity(mesh.triangles.len());
    for (t, tri) in mesh.triangles.iter().enumerate() {
        if let Some(&index) = tri.iter().find(|&&v| v as usize >= n) {
            return Err(MeshError::IndexOutOfRange {
                triangle: t,
                index,
                vertices: n,
            });
        }
        let [a, b, c] = *tri;
        if a == b || b == c || a == c {
            return Err(MeshError::RepeatedVertex { triangle: t });
        }
        let (pa, pb, pc) = (
            mesh.positions[a as usize],
            mesh.positions[b as usize],
            mesh.positions[c as usize],
        );
        let area = 0.5 * (pb - pa).cross(pc - pa).length();
        let longest2 = (pb - pa)
            .length_squared()
            .max((pc - pb).length_squared())
            .max((pa - pc).length_squared());
        if area <= DEGENERATE_RATIO * longest2 || !area.is_finite() {
            return Err(MeshError::DegenerateTriangle { triangle: t, area });
        }
        let mut key = *tri;
        key.sort_unstable();
        if let Some(&first) = seen.get(&key) {
            return Err(MeshError::DuplicateTriangle { triangle: t, first });
        }
        seen.insert(key, t);
    }
    drop(seen);

    let mut uses: Vec<EdgeUse> = Vec::with_capacity(mesh.triangles.len() * 3);
    for (t, tri) in mesh.triangles.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            uses.push((a.min(b), a.max(b), t as u32));
        }
    }
    uses.sort_unstable();
    let mut start = 0;
    while start < uses.len() {
        let (a, b, _) = uses[start];
        let mut end = start + 1;
        while end < uses.len() && uses[end].0 == a && uses[end].1 == b {
            end += 1;
        }
        if end - start > 2 {
            return Err(MeshError::NonManifoldEdge {
                a,
                b,
                triangles: uses[start..end].iter().map(|u| u.2 as usize).collect(),
            });
        }
        start = end;
    }
    Ok(uses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec3;

    use crate::mesh::test_square as square;

    #[test]
    fn valid_square_passes_and_unused_vertex_is_allowed() {
        let mut m = square();
        assert_eq!(m.validate(), Ok(()));
        m.positions.push(DVec3::new(5.0, 5.0, 5.0));
        assert_eq!(m.validate(), Ok(()));
    }

    #[test]
    fn empty() {
        let m = TriMesh::new(vec![DVec3::ZERO], vec![]);
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::Empty);
        assert!(e.to_string().contains("no triangles"));
    }

    #[test]
    fn non_finite_coordinate() {
        let mut m = square();
        m.positions[2].y = f64::NAN;
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::NonFiniteCoordinate { vertex: 2 });
        assert!(e.to_string().contains("vertex 2"));
        m.positions[2].y = f64::INFINITY;
        assert_eq!(
            m.validate(),
            Err(MeshError::NonFiniteCoordinate { vertex: 2 })
        );
    }

    #[test]
    fn index_out_of_range() {
        let mut m = square();
        m.triangles[1] = [0, 2, 7];
        let e = m.validate().unwrap_err();
        assert_eq!(
            e,
            MeshError::IndexOutOfRange {
                triangle: 1,
                index: 7,
                vertices: 4
            }
        );
        let s = e.to_string();
        assert!(s.contains("triangle 1") && s.contains("vertex 7"), "{s}");
    }

    #[test]
    fn repeated_vertex() {
        let mut m = square();
        m.triangles[1] = [0, 2, 0];
        let e = m.validate().unwrap_err();
        assert_eq!(e, MeshError::RepeatedVertex { triangle: 1 });
        assert!(e.to_string().contains("triangle 1"));
    }

    #[test]
    fn degenerate_triangle() {
        let mut m = square();
        m.positions.push(DVec3::new(2.0, 0.0, 0.0));
        m.triangles.push([0, 1, 4]); // collinear along x
        let e = m.validate().unwrap_err();
        assert!(
            matches!(e, MeshError::DegenerateTriangle { triangle: 2, area } if area == 0.0),
            "{e:?}"
        );
        let s = e.to_string();
        assert!(s.contains("triangle 2") && s.contains("collinear"), "{s}");
    }

    #[test]
    fn degenerate_test_is_relative() {
        // A tiny but well-shaped triangle is fine; a long sliver with relative area < 1e-12 is not.
        let tiny = TriMesh::new(
            vec![
                DVec3::ZERO,
                DVec3::new(1e-9, 0.0, 0.0),
                DVec3::new(0.0, 1e-9, 0.0),
            ],
            vec![[0, 1, 2]],
        );
        assert_eq!(tiny.validate(), Ok(()));
        let sliver = TriMesh::new(
            vec![
                DVec3::ZERO,
                DVec3::new(1.0, 0.0, 0.0),
                DVec3::new(0.5, 1e-13, 0.0),
            ],
            vec![[0, 1, 2]],
        );
        assert!(matches!(
            sliver.validate(),
            Err(MeshError::DegenerateTriangle { triangle: 0, .. })
        ));
    }

    #[test]
    fn duplicate_triangle() {
        let mut m = square();
        m.triangles.push([2, 0, 1]); // same set as triangle 0, other order
        let e = m.validate().unwrap_err();
        assert_eq!(
            e,
            MeshError::DuplicateTriangle {
                triangle: 2,
                first: 0
            }
        );
        let s = e.to_string();
        assert!(s.contains("triangle 2") && s.contains("triangle 0"), "{s}");
    }

    #[test]
    fn non_manifold_edge() {
        let mut m = square();
        m.positions.push(DVec3::new(0.5, 0.5, 1.0));
        m.triangles.push([0, 2, 4]); // third triangle on edge (0, 2)
        let e = m.validate().unwrap_err();
        assert_eq!(
            e,
            MeshError::NonManifoldEdge {
                a: 0,
                b: 2,
                triangles: vec![0, 1, 2]
            }
        );
        let s = e.to_string();
        assert!(
            s.contains("edge (0, 2)") && s.contains("3 triangles"),
            "{s}"
        );
    }
}
