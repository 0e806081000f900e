//! Triangle-pair contact (`speed.triangle_pairs`, thesis §8.3): a contact pair of two
//! vertex-disjoint triangles stands for their fifteen VT and EE feature pairs
//! ([`TRIANGLE_PAIR_FEATURES`]), with one separation slab and one penalty-layer membership
//! for all of them.
//!
//! A feature pair lies in every vertex-disjoint triangle pair that contains it: VT `(p, T)` in
//! `(S, T)` for each triangle `S` around `p`, EE `(e, f)` in `(S, T)` for each triangle `S` on
//! `e` and `T` on `f`. Each of those `k` triangle pairs applies `1/k` of the feature's penalty
//! impulse ([`TriangleTopology::multiplicities`]). A feature pair in no vertex-disjoint triangle pair
//! (a particle's vertex, or a vertex whose every triangle touches `T`) stays a contact pair of
//! its own.

use crate::mesh::{Csr, TriangleList};
use crate::penalty::closest::{TriangleFeature, TRIANGLE_PAIR_FEATURES};
use crate::penalty::{ContactKey, PairKey};
use hashbrown::HashMap;

/// No triangle on this side of an edge (a boundary edge).
const NONE: u32 = u32::MAX;

/// The adjacency that maps feature pairs to triangle pairs and back.
#[derive(Debug)]
pub(super) struct TriangleTopology {
    triangles: TriangleList,
    /// Per vertex, its triangles.
    vertex_triangles: Csr,
    /// Per edge, its one or two triangles ([`NONE`] for the missing one).
    edge_triangles: Vec<[u32; 2]>,
    /// Per triangle, its edges `v0 v1`, `v1 v2`, `v2 v0`: the order of
    /// [`TRIANGLE_PAIR_FEATURES`].
    triangle_edges: Vec<[u32; 3]>,
}

impl TriangleTopology {
    /// Builds the adjacency of `triangles` over `vertices` vertices and the contact `edges`
    /// (every triangle edge is one of them).
    pub(super) fn new(vertices: usize, edges: &[[u32; 2]], triangles: TriangleList) -> Self {
        let edge_ids: HashMap<[u32; 2], u32> = edges
            .iter()
            .enumerate()
            .map(|(e, &[a, b])| ([a.min(b), a.max(b)], e as u32))
            .collect();
        let mut edge_triangles = vec![[NONE; 2]; edges.len()];
        let triangle_edges = triangles
            .iter()
            .enumerate()
            .map(|(t, tri)| {
                [0, 1, 2].map(|i| {
                    let (a, b) = (tri[i], tri[(i + 1) % 3]);
                    let e = edge_ids[&[a.min(b), a.max(b)]];
                    let slot = &mut edge_triangles[e as usize];
                    let side = usize::from(slot[0] != NONE);
                    slot[side] = t as u32;
                    e
                })
            })
            .collect();
        let vertex_triangles = Csr::vertex_triangles(vertices, &triangles);
        Self {
            triangles,
            vertex_triangles,
            edge_triangles,
            triangle_edges,
        }
    }

    fn disjoint(&self, s: u32, t: u32) -> bool {
        let (a, b) = (self.triangles[s as usize], self.triangles[t as usize]);
        a.iter().all(|v| !b.contains(v))
    }

    /// Calls `found(s, t)` for each vertex-disjoint triangle pair containing feature pair
    /// `key`, `s` on the vertex's (VT) or the first edge's (EE) side.
    fn each_containing(&self, key: PairKey, mut found: impl FnMut(u32, u32)) {
        match key {
            PairKey::VertexTriangle(v, t) => {
                for &s in self.vertex_triangles.row(v as usize) {
                    if self.disjoint(s, t) {
                        found(s, t);
                    }
                }
            }
            PairKey::EdgeEdge(e, f) => {
                for &s in &self.edge_triangles[e as usize] {
                    for &t in &self.edge_triangles[f as usize] {
                        if s != NONE && t != NONE && self.disjoint(s, t) {
                            found(s, t);
                        }
                    }
                }
            }
        }
    }

    /// Appends the contact pairs that stand for feature pair `key`: the vertex-disjoint
    /// triangle pairs containing it, or the feature pair itself if there is none.
    pub(super) fn contact_keys(&self, key: PairKey, out: &mut Vec<ContactKey>) {
        let before = out.len();
        self.each_containing(key, |s, t| {
            out.push(ContactKey::Triangles(s.min(t), s.max(t)));
        });
        if out.len() == before {
            out.push(ContactKey::Feature(key));
        }
    }

    /// The vertices of triangle pair `(s, t)`: `s`'s, then `t`'s.
    pub(super) fn verts(&self, s: u32, t: u32) -> [u32; 6] {
        let (a, b) = (self.triangles[s as usize], self.triangles[t as usize]);
        [a[0], a[1], a[2], b[0], b[1], b[2]]
    }

    /// The fifteen feature pairs of triangle pair `(s, t)`, in the order of
    /// [`TRIANGLE_PAIR_FEATURES`].
    pub(super) fn features(&self, s: u32, t: u32) -> [PairKey; 15] {
        let verts = self.verts(s, t);
        let edges = [
            self.triangle_edges[s as usize],
            self.triangle_edges[t as usize],
        ];
        TRIANGLE_PAIR_FEATURES.map(|feature| match feature {
            TriangleFeature::VertexTriangle([p, ..]) => {
                let other = if p < 3 { t } else { s };
                PairKey::VertexTriangle(verts[p], other)
            }
            TriangleFeature::EdgeEdge([p0, p1, q0, q1]) => {
                let e = edges[0][edge_slot(p0, p1)];
                let f = edges[1][edge_slot(q0 - 3, q1 - 3)];
                PairKey::EdgeEdge(e.min(f), e.max(f))
            }
        })
    }

    /// For each feature pair of triangle pair `(s, t)`, the number `k` of vertex-disjoint
    /// triangle pairs it lies in: each applies `1/k` of its impulse (see the module docs).
    pub(super) fn multiplicities(&self, s: u32, t: u32) -> [u16; 15] {
        self.features(s, t).map(|key| {
            let mut k = 0u16;
            self.each_containing(key, |_, _| k += 1);
            k
        })
    }
}

/// Which of a triangle's edges `v0 v1`, `v1 v2`, `v2 v0` joins local vertices `i` and `j`.
fn edge_slot(i: usize, j: usize) -> usize {
    match (i, j) {
        (0, 1) => 0,
        (1, 2) => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{sheet, Topology};

    /// Two 3x3-vertex sheets, and one free vertex (a particle) after them.
    fn two_sheets() -> (usize, Vec<[u32; 2]>, Vec<[u32; 3]>) {
        let sheet = sheet(3, 3, 1.0, 1.0).unwrap();
        let topo = Topology::build(&sheet).unwrap();
        let n = sheet.positions.len() as u32;
        let mut edges = topo.edges.clone();
        let mut triangles = sheet.triangles.clone();
        edges.extend(topo.edges.iter().map(|e| e.map(|v| v + n)));
        triangles.extend(sheet.triangles.iter().map(|t| t.map(|v| v + n)));
        (2 * n as usize + 1, edges, triangles)
    }

    #[test]
    fn every_feature_of_a_triangle_pair_maps_back_to_it_and_its_shares_sum_to_one() {
        let (n, edges, triangles) = two_sheets();
        let topo = TriangleTopology::new(n, &edges, triangles.clone().into());
        let mut total_share: HashMap<PairKey, f64> = HashMap::new();
        let mut keys = Vec::new();
        for s in 0..triangles.len() as u32 {
            for t in s + 1..triangles.len() as u32 {
                if !topo.disjoint(s, t) {
                    continue;
                }
                let features = topo.features(s, t);
                let ks = topo.multiplicities(s, t);
                for (f, &key) in features.iter().enumerate() {
                    // The key is a real feature pair of the two triangles.
                    let verts = topo.verts(s, t);
                    match key {
                        PairKey::VertexTriangle(v, tri) => {
                            assert!(verts.contains(&v) && (tri == s || tri == t));
                        }
                        PairKey::EdgeEdge(e, g) => {
                            assert!(e < g);
                            for edge in [e, g] {
                                assert!(edges[edge as usize].iter().all(|v| verts.contains(v)));
                            }
                        }
                    }
                    keys.clear();
                    topo.contact_keys(key, &mut keys);
                    assert!(keys.contains(&ContactKey::Triangles(s, t)), "{key:?}");
                    assert_eq!(keys.len(), ks[f] as usize, "{key:?}");
                    *total_share.entry(key).or_default() += 1.0 / f64::from(ks[f]);
                }
            }
        }
        assert!(total_share.len() > 100);
        // Each feature pair counted once per triangle pair containing it: shares add up to 1.
        for (key, total) in total_share {
            let mut k = 0;
            topo.each_containing(key, |_, _| k += 1);
            assert!(
                (total - 1.0).abs() < 1e-12 * f64::from(k),
                "{key:?}: {total}"
            );
        }
    }

    #[test]
    fn a_feature_pair_in_no_disjoint_triangle_pair_stays_a_feature_pair() {
        let (n, edges, triangles) = two_sheets();
        let topo = TriangleTopology::new(n, &edges, triangles.clone().into());
        let particle = n as u32 - 1;
        let mut keys = Vec::new();
        topo.contact_keys(PairKey::VertexTriangle(particle, 0), &mut keys);
        assert_eq!(
            keys,
            [ContactKey::Feature(PairKey::VertexTriangle(particle, 0))]
        );
        assert_eq!(ContactKey::Triangles(0, 9).vertex_count(), 6);
        assert_eq!(ContactKey::Triangles(0, 9).a_count(), 3);
    }
}
