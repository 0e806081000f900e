//! Each contact point is pushed once: which feature pair acts when several share a closest
//! point (thesis §3.1: vertex-edge and vertex-vertex contacts are degenerate VT and EE
//! contacts, counted without duplicates).
//!
//! A vertex `p` whose closest point on triangle `T` lies on an edge or a vertex `F` of `T` is
//! as close to every other triangle sharing `F` (the point lies in each of them), or closer.
//! Pushing `p` from every one of them counts one contact `k` times (a vertex at the centre of
//! a fan of 256 triangles got 256 forces), and a neighbour whose own closest point is inside
//! it gives a sideways push at a shared edge of a flat surface. So a VT pair whose closest
//! point is on the boundary `F` of its triangle acts only if its triangle is the *owner* of
//! `F` for `p`: the lowest-indexed triangle among those sharing `F` (leaving out those that
//! contain `p`, which have no VT pair with it), and none of the others is closer (then the
//! closer one acts instead). The pair that acts has the distance of `p` to the union of the
//! triangles around `F`, so the barrier (the layers of the nearest pair) is kept; each acting
//! pair's impulses sum to zero, so momentum is conserved.
//!
//! A vertex-vertex contact between two surfaces has a VT pair on each side: `p` against the
//! owner around `q`, and `q` against the owner around `p`. Where each vertex is the other's
//! closest point, both would push the same two vertices apart along the same line: one
//! contact with twice the barrier's stiffness. Then only the pair of the lower-indexed
//! vertex acts. Where the other vertex is nearest some other point of the first surface,
//! the two pairs push different contact points and both act.
//!
//! An EE pair whose closest point is an end of one edge is a vertex-edge (or vertex-vertex)
//! contact, which the VT pairs of that vertex and the triangles on the other edge cover: it
//! acts only when both closest points are inside their edges, or when no such triangle exists
//! (every triangle on the other edge contains the vertex). With both closest points inside,
//! it acts only if the separation points into none of the triangles on either edge: otherwise
//! that triangle is nearer to the other edge than this edge is (an edge lying over a fan of
//! spokes crosses each of them), and the nearest features of the edge and that triangle (an
//! end of the edge against the triangle, or the edge against another of its edges) act.

use glam::DVec3;

use crate::mesh::{Csr, TriangleList};
use crate::penalty::closest::{edge_edge, vertex_triangle};
use crate::penalty::PairKey;

/// Lengths below this fraction of the coordinates' magnitude are rounding: a closest point
/// that near a triangle's edge is on it, a separation leaning that little into a triangle
/// does not (so a vertex exactly over a shared vertex or edge has an owner).
const TIE_REL: f64 = 1e-12;

/// Lengths along a surface below this fraction of the pair's distance are rounding too. A
/// closest point on a triangle's boundary is the nearest of its edges by squared distance,
/// which holds the squared distance off the triangle's plane as well: two edges whose in-plane
/// distances differ by less than about `sqrt(epsilon) d` (`d` the pair's distance) tie, and
/// the routine may return either. A vertex that near the centre of a fan then finds its
/// closest point on a different spoke of each triangle, each leaning away from its neighbour,
/// and without this band a dozen pairs each owned their spoke (8 times `sqrt(epsilon)`).
const TIE_DISTANCE_REL: f64 = 1.2e-7;

/// The tie length of a pair at positions `x` and distance `distance`.
fn tie(x: &[DVec3; 4], distance: f64) -> f64 {
    let coordinates = TIE_REL * x.iter().fold(0.0f64, |m, y| m.max(y.abs().max_element()));
    coordinates.max(TIE_DISTANCE_REL * distance)
}

/// What a VT pair does at one instant ([`FeatureOwners::acts`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Push {
    /// It does not push: another pair owns the contact point.
    None,
    /// It pushes, its closest point on the triangle being the triangle's vertex `q`.
    AtVertex(u32),
    /// It pushes, its closest point being inside the triangle or on an edge.
    Other,
}

/// The triangles of the contact surfaces and the triangles around each vertex (see the module
/// docs).
#[derive(Debug)]
pub(super) struct FeatureOwners {
    triangles: TriangleList,
    around: Csr,
}

impl FeatureOwners {
    /// The owners over `vertices` vertices and `triangles`.
    pub(super) fn new(vertices: usize, triangles: TriangleList) -> Self {
        let around = Csr::vertex_triangles(vertices, &triangles);
        Self { triangles, around }
    }

    /// Whether feature pair `key` on vertices `verts` at positions `x` (`[p, a, b, c]` or
    /// `[p0, p1, q0, q1]`) acts; `position` gives any vertex's position at the same time.
    pub(super) fn acts(
        &self,
        key: PairKey,
        verts: &[u32; 4],
        x: &[DVec3; 4],
        position: impl Fn(u32) -> DVec3,
    ) -> bool {
        match key {
            PairKey::VertexTriangle(p, tri) => {
                match self.vertex_triangle_push(p, tri, verts, x, &position) {
                    Push::None => false,
                    Push::AtVertex(q) if q < p => !self.pushed_from(q, p, &position),
                    Push::AtVertex(_) | Push::Other => true,
                }
            }
            PairKey::EdgeEdge(..) => self.edge_edge_acts(verts, x, position),
        }
    }

    /// Whether a VT pair of vertex `q` pushes `q` off vertex `p` (the same contact from the
    /// other side): the owner, among the triangles around `p` that leave `q` out, of the
    /// closest point `p`.
    fn pushed_from(&self, q: u32, p: u32, position: &impl Fn(u32) -> DVec3) -> bool {
        self.around.row(p as usize).iter().any(|&tri| {
            let [a, b, c] = self.triangles[tri as usize];
            if [a, b, c].contains(&q) {
                return false;
            }
            let verts = [q, a, b, c];
            let x = verts.map(position);
            self.vertex_triangle_push(q, tri, &verts, &x, position) == Push::AtVertex(p)
        })
    }

    /// Whether VT pair `(p, tri)` pushes, and where its triangle's closest point is.
    fn vertex_triangle_push(
        &self,
        p: u32,
        tri: u32,
        verts: &[u32; 4],
        x: &[DVec3; 4],
        position: &impl Fn(u32) -> DVec3,
    ) -> Push {
        let closest = vertex_triangle(x[0], x[1], x[2], x[3]);
        let tie = tie(x, closest.distance);
        // The closest point's feature: the triangle's vertices whose weight puts the point
        // farther than `tie` from the opposite edge (weight times that edge's height).
        let twice_area = (x[2] - x[1]).cross(x[3] - x[1]).length();
        let mut feature = [0u32; 3];
        let mut len = 0;
        for (k, &w) in closest.weights.iter().enumerate() {
            let opposite = (x[1 + (k + 2) % 3] - x[1 + (k + 1) % 3]).length();
            if w * twice_area > tie * opposite {
                feature[len] = verts[k + 1];
                len += 1;
            }
        }
        // Inside the triangle, or a zero-area triangle (no feature to share): it acts.
        if len == 3 || len == 0 {
            return Push::Other;
        }
        let feature = &feature[..len];
        let mut sharing = self
            .around
            .row(feature[0] as usize)
            .iter()
            .copied()
            .filter(|&s| s != tri)
            .filter(|&s| {
                let t = &self.triangles[s as usize];
                feature.iter().all(|v| t.contains(v)) && !t.contains(&p)
            })
            .peekable();
        if sharing.peek().is_some_and(|&s| s < tri) {
            return Push::None;
        }
        let [w0, w1, w2] = closest.weights;
        let sep = x[0] - (w0 * x[1] + w1 * x[2] + w2 * x[3]);
        let at = position(feature[0]);
        let along = if len == 2 {
            (position(feature[1]) - at).normalize_or_zero()
        } else {
            DVec3::ZERO
        };
        // Every other triangle's closest point is on the feature too: the separation leans
        // into none of them (the component of each of its other edges off the feature).
        let owner = sharing.all(|s| {
            self.triangles[s as usize]
                .iter()
                .filter(|v| !feature.contains(v))
                .all(|&v| {
                    let r = position(v) - at;
                    sep.dot((r - r.dot(along) * along).normalize_or_zero()) <= tie
                })
        });
        match (owner, feature) {
            (false, _) => Push::None,
            (true, &[q]) => Push::AtVertex(q),
            (true, _) => Push::Other,
        }
    }

    fn edge_edge_acts(
        &self,
        verts: &[u32; 4],
        x: &[DVec3; 4],
        position: impl Fn(u32) -> DVec3,
    ) -> bool {
        let closest = edge_edge(x[0], x[1], x[2], x[3]);
        let (s, t) = (closest.s, closest.t);
        let end = |u: f64| u == 0.0 || u == 1.0;
        let [p0, p1, q0, q1] = *verts;
        if end(s) || end(t) {
            let endpoint = |u: f64, a: u32, b: u32| if u == 0.0 { a } else { b };
            let covered = |vertex: u32, edge: [u32; 2]| {
                self.around.row(edge[0] as usize).iter().any(|&tri| {
                    let tri = &self.triangles[tri as usize];
                    tri.contains(&edge[1]) && !tri.contains(&vertex)
                })
            };
            return !(end(t) && covered(endpoint(t, q0, q1), [p0, p1])
                || end(s) && covered(endpoint(s, p0, p1), [q0, q1]));
        }
        let sep = (x[0] + s * (x[1] - x[0])) - (x[2] + t * (x[3] - x[2]));
        let tie = tie(x, sep.length());
        // The separation must lie in the normal cone of each surface at its edge: pointing into
        // no triangle on the edge (else that triangle is nearer, and its own pairs act).
        let outside = |edge: [u32; 2], a: DVec3, b: DVec3, other: [u32; 2], sep: DVec3| {
            let along = (b - a).normalize_or_zero();
            self.around.row(edge[0] as usize).iter().all(|&tri| {
                let tri = &self.triangles[tri as usize];
                if !tri.contains(&edge[1]) || other.iter().any(|v| tri.contains(v)) {
                    return true;
                }
                let third = tri.iter().find(|v| !edge.contains(v)).copied();
                let Some(third) = third else {
                    return true;
                };
                let r = position(third) - a;
                let inward = (r - r.dot(along) * along).normalize_or_zero();
                sep.dot(inward) <= tie
            })
        };
        outside([q0, q1], x[2], x[3], [p0, p1], sep)
            && outside([p0, p1], x[0], x[1], [q0, q1], -sep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat fan of `k` triangles around vertex 0 at the origin in the plane y = 0 (rim
    /// vertices `1..=k`), and a vertex `k + 1` at `p`.
    fn fan(k: u32, p: DVec3) -> (FeatureOwners, Vec<DVec3>) {
        let mut x = vec![DVec3::ZERO];
        for i in 0..k {
            let a = std::f64::consts::TAU * f64::from(i) / f64::from(k);
            x.push(DVec3::new(a.cos(), 0.0, a.sin()));
        }
        x.push(p);
        let triangles: Vec<[u32; 3]> = (0..k).map(|i| [0, 1 + i, 1 + (i + 1) % k]).collect();
        (FeatureOwners::new(x.len(), triangles.into()), x)
    }

    fn vt_acting(owners: &FeatureOwners, x: &[DVec3], p: u32) -> Vec<u32> {
        (0..owners.triangles.len() as u32)
            .filter(|&t| {
                let [a, b, c] = owners.triangles[t as usize];
                if [a, b, c].contains(&p) {
                    return false;
                }
                let verts = [p, a, b, c];
                let xs = verts.map(|v| x[v as usize]);
                owners.acts(PairKey::VertexTriangle(p, t), &verts, &xs, |v| {
                    x[v as usize]
                })
            })
            .collect()
    }

    #[test]
    fn a_vertex_over_a_shared_vertex_or_edge_is_pushed_once() {
        // Exactly over the centre: every triangle's closest point is the centre; the first owns it.
        let (owners, x) = fan(256, DVec3::new(0.0, 0.02, 0.0));
        assert_eq!(vt_acting(&owners, &x, 257), vec![0]);
        // Over the inside of one triangle near the centre: that triangle alone.
        let a = std::f64::consts::TAU * 10.5 / 256.0;
        let (owners, x) = fan(256, DVec3::new(1e-3 * a.cos(), 0.02, 1e-3 * a.sin()));
        assert_eq!(vt_acting(&owners, &x, 257), vec![10]);
        // Over the spoke between triangles 9 and 10: the lower index.
        let a = std::f64::consts::TAU * 10.0 / 256.0;
        let (owners, x) = fan(256, DVec3::new(0.5 * a.cos(), 0.02, 0.5 * a.sin()));
        assert_eq!(vt_acting(&owners, &x, 257), vec![9]);
        // A ridge: the centre raised, the vertex over it: still once.
        let (owners, mut x) = fan(6, DVec3::new(0.0, 0.5, 0.0));
        x[0].y = 0.3;
        assert_eq!(vt_acting(&owners, &x, 7), vec![0]);
        // Outside the fan past a rim vertex: the two triangles at that vertex, the first.
        let (owners, x) = fan(4, DVec3::new(1.05, 0.01, 0.0));
        assert_eq!(vt_acting(&owners, &x, 5), vec![0]);
    }

    /// Fan `Q` of `k` triangles around vertex 0 (rim `1..=k`, in the plane y = 0, its centre
    /// raised by `peak`), and fan `P` around vertex `k + 1` at `apex` whose rim `k + 2..` rises
    /// `rise` above it (its triangles numbered from `k`).
    fn two_fans(k: u32, peak: f64, apex: DVec3, rise: f64) -> (FeatureOwners, Vec<DVec3>) {
        let (_, mut x) = fan(k, apex);
        x[0].y = peak;
        for i in 0..k {
            let a = std::f64::consts::TAU * (f64::from(i) + 0.5) / f64::from(k);
            x.push(apex + DVec3::new(a.cos(), rise, a.sin()));
        }
        let q_fan = (0..k).map(|i| [0, 1 + i, 1 + (i + 1) % k]);
        let p_fan = (0..k).map(|i| [k + 1, k + 2 + i, k + 2 + (i + 1) % k]);
        let triangles: Vec<[u32; 3]> = q_fan.chain(p_fan).collect();
        (FeatureOwners::new(x.len(), triangles.into()), x)
    }

    #[test]
    fn two_vertices_meeting_are_pushed_once_by_the_lower_ones_pair() {
        // P's lowest vertex 7 right over Q's centre 0: each is the other's closest point.
        let (owners, x) = two_fans(6, 0.0, DVec3::new(0.0, 0.02, 0.0), 0.5);
        assert_eq!(vt_acting(&owners, &x, 0), vec![6], "vertex 0 against P");
        assert_eq!(
            vt_acting(&owners, &x, 7),
            Vec::<u32>::new(),
            "vertex 7 against Q"
        );
        // The same with the two surfaces' numbers swapped round: still one, vertex 0's.
        let (owners, x) = two_fans(6, 0.0, DVec3::new(0.0, -0.02, 0.0), -0.5);
        assert_eq!(vt_acting(&owners, &x, 0).len(), 1);
        assert_eq!(vt_acting(&owners, &x, 7), Vec::<u32>::new());
    }

    #[test]
    fn a_vertex_over_a_peak_and_the_peak_under_a_face_are_two_contacts() {
        // Q's centre is a sharp peak; P is flat, a little off to the side above it. P's
        // centre 7 is nearest the peak 0, but the peak is nearest the inside of one of P's
        // triangles: not the same contact point, so both pairs push.
        let (owners, x) = two_fans(6, 3.0, DVec3::new(0.005, 3.02, 0.0), 0.0);
        assert_eq!(vt_acting(&owners, &x, 7), vec![0], "vertex 7 against Q");
        // (Every triangle of Q holds vertex 0, so these are P's.)
        assert_eq!(vt_acting(&owners, &x, 0).len(), 1, "vertex 0 against P");
    }

    #[test]
    fn a_vertex_within_rounding_of_a_fans_centre_is_pushed_once() {
        // A fan of radius 10 at height 5 and a vertex 0.02 above it, 3.5e-10 off the centre
        // (where a ball's lowest vertex came to rest): the closest point on each of the
        // triangles near it ties between their spokes, and a dozen of them acted.
        let (owners, mut x) = fan(256, DVec3::ZERO);
        for y in &mut x {
            *y = 10.0 * *y + DVec3::new(0.0, 5.0, 0.0);
        }
        x[257] = DVec3::new(
            -2.711199172298007e-10,
            5.020190382779194,
            -2.173251582144984e-10,
        );
        assert_eq!(vt_acting(&owners, &x, 257).len(), 1);
        // Off the centre by more than rounding: the triangle under it.
        let a = std::f64::consts::TAU * 155.5 / 256.0;
        x[257] = DVec3::new(1e-6 * a.cos(), 5.02, 1e-6 * a.sin());
        assert_eq!(vt_acting(&owners, &x, 257), vec![155]);
    }

    #[test]
    fn an_edge_over_a_fan_is_pushed_by_its_ends_not_by_each_spoke_it_crosses() {
        // Edge (9, 10) of triangle (9, 10, 11) tilted over a fan of 8, crossing spokes.
        let (_, mut x) = fan(8, DVec3::new(0.4, 0.02, 0.1));
        x.push(DVec3::new(-0.4, 0.05, 0.2));
        x.push(DVec3::new(0.0, 0.5, 0.15));
        let mut triangles: Vec<[u32; 3]> = (0..8).map(|i| [0, 1 + i, 1 + (i + 1) % 8]).collect();
        triangles.push([9, 10, 11]);
        let owners = FeatureOwners::new(x.len(), triangles.into());
        let mut crossed = 0;
        for spoke in 1..=8 {
            let verts = [9, 10, 0, spoke];
            let xs = verts.map(|v| x[v as usize]);
            let cl = edge_edge(xs[0], xs[1], xs[2], xs[3]);
            if cl.s > 0.0 && cl.s < 1.0 && cl.t > 0.0 && cl.t < 1.0 {
                crossed += 1;
                let key = PairKey::EdgeEdge(0, spoke);
                assert!(
                    !owners.acts(key, &verts, &xs, |v| x[v as usize]),
                    "spoke {spoke}"
                );
            }
        }
        assert!(crossed >= 2, "{crossed} spokes crossed");
        // Its low end is pushed, by the triangle under it.
        assert_eq!(vt_acting(&owners, &x, 9).len(), 1);
    }
}
