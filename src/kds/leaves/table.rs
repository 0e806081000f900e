//! The leaf table: the primitives, their topology and which leaf owns each vertex and edge.

use glam::DVec3;
use hashbrown::HashMap;

use crate::mesh::{Csr, EdgeId, TriangleId, TriangleList};
use crate::penalty::PairKey;
use crate::state::{VertexId, VertexState};
use crate::typed_index::typed_index;

typed_index! {
    /// A leaf: the triangles first, in triangle order (a triangle's leaf has the triangle's
    /// index), then the loose edges, then the loose vertices.
    pub(crate) struct LeafId;
}

/// Pads the vertex slots of a leaf with fewer than three vertices.
pub(super) const NO_VERTEX: VertexId = VertexId::new(u32::MAX);

/// Pads the edge slots of a leaf with fewer than three edges.
pub(super) const NO_EDGE: EdgeId = EdgeId::new(u32::MAX);

/// The leaf primitives and their topology (structure of arrays, indexed by [`LeafId`]).
#[derive(Debug)]
pub(crate) struct Leaves {
    /// Global edge list (vertex pairs), as the engine numbers edges.
    edges: Vec<[u32; 2]>,
    /// Global triangle list, as the engine numbers triangles.
    triangles: TriangleList,
    /// The vertices of each leaf that is no triangle (leaf `triangles.len() + i` is entry `i`),
    /// `NO_VERTEX`-padded; a triangle's leaf reads its vertices from `triangles`.
    loose: Vec<[VertexId; 3]>,
    /// Each leaf's edges, `NO_EDGE`-padded.
    leaf_edges: Vec<[EdgeId; 3]>,
    /// Vertex -> the leaves holding it.
    vertex_leaves: Csr<LeafId>,
    /// Per leaf, which of its vertex slots (bits 0 to 2) and edge slots (bits 3 to 5) it owns:
    /// each vertex and edge is owned by the first leaf holding it.
    owned: Vec<u8>,
}

/// A vertex, triangle or edge, for [`Leaves::holding`].
#[derive(Clone, Copy, Debug)]
enum Primitive {
    Vertex(VertexId),
    Triangle(TriangleId),
    Edge(EdgeId),
}

/// A feature pair in typed indices: the broad phases read and make [`PairKey`]s, which the
/// engine numbers by raw `u32`s, through these.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Feature {
    /// A vertex against a triangle.
    VertexTriangle(VertexId, TriangleId),
    /// Two edges.
    EdgeEdge(EdgeId, EdgeId),
}

impl Feature {
    /// The feature pair `key` names.
    #[inline]
    pub(crate) fn of(key: PairKey) -> Self {
        match key {
            PairKey::VertexTriangle(v, t) => {
                Self::VertexTriangle(VertexId::new(v), TriangleId::new(t))
            }
            PairKey::EdgeEdge(e, f) => Self::EdgeEdge(EdgeId::new(e), EdgeId::new(f)),
        }
    }

    /// The key of vertex `v` against triangle `t`.
    #[inline]
    pub(crate) fn vertex_triangle(v: VertexId, t: TriangleId) -> PairKey {
        PairKey::VertexTriangle(v.get(), t.get())
    }

    /// The key of edges `e` and `f`, in ascending order.
    #[inline]
    pub(crate) fn edge_edge(e: EdgeId, f: EdgeId) -> PairKey {
        PairKey::EdgeEdge(e.min(f).get(), e.max(f).get())
    }
}

impl Leaves {
    /// Leaves over these primitives of `vertex_count` vertices (the engine's edge and triangle
    /// lists: vertex pairs and triples).
    pub(crate) fn new(
        edges: Vec<[u32; 2]>,
        triangles: impl Into<TriangleList>,
        vertex_count: usize,
    ) -> Self {
        let triangles = triangles.into();
        let edge_id: HashMap<(u32, u32), EdgeId> = edges
            .iter()
            .enumerate()
            .map(|(e, &[a, b])| ((a.min(b), a.max(b)), EdgeId::from_usize(e)))
            .collect();
        let mut loose = Vec::new();
        let mut leaf_edges = Vec::with_capacity(triangles.len());
        let mut edge_used = vec![false; edges.len()];
        let mut vertex_used = vec![false; vertex_count];
        for &[a, b, c] in triangles.iter() {
            let mut es = [NO_EDGE; 3];
            for (k, (p, q)) in [(a, b), (b, c), (c, a)].into_iter().enumerate() {
                if let Some(&e) = edge_id.get(&(p.min(q), p.max(q))) {
                    es[k] = e;
                    edge_used[e.index()] = true;
                }
            }
            for v in [a, b, c].map(VertexId::new) {
                vertex_used[v.index()] = true;
            }
            leaf_edges.push(es);
        }
        for (e, ends) in edges.iter().enumerate() {
            if !edge_used[e] {
                let [a, b] = ends.map(VertexId::new);
                vertex_used[a.index()] = true;
                vertex_used[b.index()] = true;
                loose.push([a, b, NO_VERTEX]);
                leaf_edges.push([EdgeId::from_usize(e), NO_EDGE, NO_EDGE]);
            }
        }
        for (v, used) in vertex_used.iter().enumerate() {
            if !used {
                loose.push([VertexId::from_usize(v), NO_VERTEX, NO_VERTEX]);
                leaf_edges.push([NO_EDGE; 3]);
            }
        }
        let slots = |l: usize| match triangles.get(l) {
            Some(&t) => t.map(VertexId::new),
            None => loose[l - triangles.len()],
        };
        let vertex_leaves = Csr::from_pairs(
            vertex_count,
            (0..leaf_edges.len()).flat_map(|l| {
                (slots(l).into_iter())
                    .filter(|&v| v != NO_VERTEX)
                    .map(move |v| (v.get(), LeafId::from_usize(l)))
            }),
        );
        let owned = Self::owners(&leaf_edges, slots, vertex_count, edges.len());
        Self {
            edges,
            triangles,
            loose,
            leaf_edges,
            vertex_leaves,
            owned,
        }
    }

    /// Per leaf, the bits of [`owned`](Self::owned): which of its vertex and edge slots hold a
    /// vertex or an edge no earlier leaf holds.
    fn owners(
        leaf_edges: &[[EdgeId; 3]],
        slots: impl Fn(usize) -> [VertexId; 3],
        vertex_count: usize,
        edge_count: usize,
    ) -> Vec<u8> {
        let mut owned = Vec::with_capacity(leaf_edges.len());
        let (mut vertex_owned, mut edge_owned) =
            (vec![false; vertex_count], vec![false; edge_count]);
        for (l, es) in leaf_edges.iter().enumerate() {
            let mut bits = 0u8;
            for (k, v) in slots(l).into_iter().enumerate() {
                if v != NO_VERTEX && !std::mem::replace(&mut vertex_owned[v.index()], true) {
                    bits |= 1 << k;
                }
            }
            for (k, &e) in es.iter().enumerate() {
                if e != NO_EDGE && !std::mem::replace(&mut edge_owned[e.index()], true) {
                    bits |= 1 << (3 + k);
                }
            }
            owned.push(bits);
        }
        owned
    }

    /// Number of leaves.
    pub(crate) fn len(&self) -> usize {
        self.triangles.len() + self.loose.len()
    }

    /// Whether there is no leaf.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every leaf, in order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = LeafId> {
        (0..self.len()).map(LeafId::from_usize)
    }

    /// Number of vertices.
    pub(crate) fn vertex_count(&self) -> usize {
        self.vertex_leaves.rows()
    }

    /// The global edge list, as the engine numbers edges.
    pub(crate) fn edge_list(&self) -> &[[u32; 2]] {
        &self.edges
    }

    /// The global triangle list, as the engine numbers triangles.
    pub(crate) fn triangle_list(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// The vertices of triangle `t`.
    #[inline]
    pub(crate) fn triangle(&self, t: TriangleId) -> [VertexId; 3] {
        self.triangles[t.index()].map(VertexId::new)
    }

    /// The two vertices of edge `e`.
    #[inline]
    pub(crate) fn edge(&self, e: EdgeId) -> [VertexId; 2] {
        self.edges[e.index()].map(VertexId::new)
    }

    /// The triangle of leaf `l` (a triangle's leaf has the triangle's index), if it is one.
    #[inline]
    pub(super) fn tri(&self, l: LeafId) -> Option<TriangleId> {
        (l.index() < self.triangles.len()).then(|| TriangleId::new(l.get()))
    }

    /// The vertices of leaf `l`, `NO_VERTEX`-padded.
    #[inline]
    pub(super) fn vertex_slots(&self, l: LeafId) -> [VertexId; 3] {
        match self.tri(l) {
            Some(t) => self.triangle(t),
            None => self.loose[l.index() - self.triangles.len()],
        }
    }

    /// The vertices of leaf `l`.
    #[inline]
    pub(crate) fn verts(&self, l: LeafId) -> impl Iterator<Item = VertexId> {
        self.vertex_slots(l).into_iter().filter(|&v| v != NO_VERTEX)
    }

    /// The edges of leaf `l`, `NO_EDGE`-padded.
    #[inline]
    fn edge_slots(&self, l: LeafId) -> [EdgeId; 3] {
        self.leaf_edges[l.index()]
    }

    /// The edges of leaf `l`.
    pub(super) fn edges_of(&self, l: LeafId) -> impl Iterator<Item = EdgeId> {
        self.edge_slots(l).into_iter().filter(|&e| e != NO_EDGE)
    }

    /// Whether leaves `a` and `b` share a vertex.
    pub(crate) fn adjacent(&self, a: LeafId, b: LeafId) -> bool {
        let b = self.vertex_slots(b);
        self.verts(a).any(|v| b.contains(&v))
    }

    /// The leaves holding vertex `v`.
    #[inline]
    pub(crate) fn of_vertex(&self, v: VertexId) -> &[LeafId] {
        self.vertex_leaves.row(v.index())
    }

    /// Calls `found` for every VT and EE pair of leaves `a` and `b` sharing no vertex.
    pub(crate) fn features(&self, a: LeafId, b: LeafId, found: &mut impl FnMut(PairKey)) {
        if a == b {
            return;
        }
        for (p, q) in [(a, b), (b, a)] {
            let Some(t) = self.tri(q) else {
                continue;
            };
            let tv = self.triangle(t);
            for v in self.verts(p) {
                if !tv.contains(&v) {
                    found(Feature::vertex_triangle(v, t));
                }
            }
        }
        for e in self.edges_of(a) {
            let ev = self.edge(e);
            for f in self.edges_of(b) {
                let fv = self.edge(f);
                if e != f && !ev.iter().any(|v| fv.contains(v)) {
                    found(Feature::edge_edge(e, f));
                }
            }
        }
    }

    /// Calls `found` for the VT and EE pairs of leaves `a` and `b` sharing no vertex whose
    /// vertex and edges are owned by the leaves they are taken from (a VT pair's triangle is
    /// its own leaf's). Over every pair of leaves this is every feature pair once, where
    /// [`features`](Self::features) repeats a pair for every leaf that holds its vertex or edges;
    /// a leaf's volume holds its vertices, so two volumes that miss cover no missed pair.
    pub(crate) fn owned_features(&self, a: LeafId, b: LeafId, found: &mut impl FnMut(PairKey)) {
        if a == b {
            return;
        }
        let owned_verts = |l: LeafId| {
            let bits = self.owned[l.index()];
            (self.vertex_slots(l).into_iter().enumerate())
                .filter(move |&(k, v)| v != NO_VERTEX && bits & (1 << k) != 0)
                .map(|(_, v)| v)
        };
        let owned_edges = |l: LeafId| {
            let bits = self.owned[l.index()];
            (self.edge_slots(l).into_iter().enumerate())
                .filter(move |&(k, e)| e != NO_EDGE && bits & (1 << (3 + k)) != 0)
                .map(|(_, e)| e)
        };
        for (p, q) in [(a, b), (b, a)] {
            let Some(t) = self.tri(q) else {
                continue;
            };
            let tv = self.triangle(t);
            for v in owned_verts(p) {
                if !tv.contains(&v) {
                    found(Feature::vertex_triangle(v, t));
                }
            }
        }
        for e in owned_edges(a) {
            let ev = self.edge(e);
            for f in owned_edges(b) {
                let fv = self.edge(f);
                if !ev.iter().any(|v| fv.contains(v)) {
                    found(Feature::edge_edge(e, f));
                }
            }
        }
    }

    /// The four vertices of `key`.
    pub(crate) fn key_vertices(&self, key: PairKey) -> [VertexId; 4] {
        match Feature::of(key) {
            Feature::VertexTriangle(v, t) => {
                let [a, b, c] = self.triangle(t);
                [v, a, b, c]
            }
            Feature::EdgeEdge(e, f) => {
                let ([a, b], [c, d]) = (self.edge(e), self.edge(f));
                [a, b, c, d]
            }
        }
    }

    /// Whether `key` is one of the feature pairs of leaves `a` and `b`.
    pub(crate) fn covers(&self, a: LeafId, b: LeafId, key: PairKey) -> bool {
        let holds_edge = |l: LeafId, e: EdgeId| self.edge_slots(l).contains(&e);
        let holds_vertex = |l: LeafId, v: VertexId| self.vertex_slots(l).contains(&v);
        match Feature::of(key) {
            Feature::VertexTriangle(v, t) => {
                (self.tri(b) == Some(t) && holds_vertex(a, v))
                    || (self.tri(a) == Some(t) && holds_vertex(b, v))
            }
            Feature::EdgeEdge(e, f) => {
                (holds_edge(a, e) && holds_edge(b, f)) || (holds_edge(a, f) && holds_edge(b, e))
            }
        }
    }

    /// Leaves whose feature pairs may include `key`, paired with the leaves to look for: for a
    /// VT pair the vertex's leaves against the triangle's leaf, for an EE pair the first edge's
    /// leaves against the second's.
    pub(crate) fn sides(
        &self,
        key: PairKey,
    ) -> (
        impl Iterator<Item = LeafId> + Clone + '_,
        impl Iterator<Item = LeafId> + Clone + '_,
    ) {
        let (a, b) = match Feature::of(key) {
            Feature::VertexTriangle(v, t) => (Primitive::Vertex(v), Primitive::Triangle(t)),
            Feature::EdgeEdge(e, f) => (Primitive::Edge(e), Primitive::Edge(f)),
        };
        (self.holding(a), self.holding(b))
    }

    /// The leaves holding primitive `p`: those of its first vertex that hold it (no table of
    /// the leaves of each edge is kept).
    fn holding(&self, p: Primitive) -> impl Iterator<Item = LeafId> + Clone + '_ {
        let anchor = match p {
            Primitive::Vertex(v) => v,
            Primitive::Triangle(t) => self.triangle(t)[0],
            Primitive::Edge(e) => self.edge(e)[0],
        };
        self.of_vertex(anchor)
            .iter()
            .copied()
            .filter(move |&l| match p {
                Primitive::Vertex(_) => true,
                Primitive::Triangle(t) => self.tri(l) == Some(t),
                Primitive::Edge(e) => self.edge_slots(l).contains(&e),
            })
    }

    /// The centroid of leaf `l` at time `s`.
    pub(crate) fn centroid(&self, l: LeafId, state: &VertexState, s: f64) -> DVec3 {
        let (sum, n) = self.verts(l).fold((DVec3::ZERO, 0.0), |(sum, n), v| {
            (sum + state.position_at(v.index(), s), n + 1.0)
        });
        sum / n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two triangles sharing the edge 1-2, plus a particle (vertex 4).
    fn quad() -> Leaves {
        let edges = vec![[0, 1], [1, 2], [2, 0], [1, 3], [3, 2]];
        let triangles = vec![[0, 1, 2], [1, 3, 2]];
        Leaves::new(edges, triangles, 5)
    }

    /// Leaf `l`.
    fn leaf(l: u32) -> LeafId {
        LeafId::new(l)
    }

    #[test]
    fn owned_features_hand_over_every_feature_pair_once() {
        // A 4 x 4 sheet (18 triangles), a loose edge and a particle.
        let sheet = crate::mesh::sheet(4, 4, 3.0, 3.0).unwrap();
        let topo = crate::mesh::Topology::build(&sheet).unwrap();
        let n = sheet.positions.len() as u32;
        let mut edges = topo.edges.clone();
        edges.push([n, n + 1]);
        let l = Leaves::new(edges, sheet.triangles.clone(), n as usize + 3);
        assert_eq!(l.len(), 18 + 2);
        let (mut every, mut owned) = (Vec::new(), Vec::new());
        for a in l.ids() {
            for b in l.ids().filter(|&b| b > a) {
                l.features(a, b, &mut |k| every.push(k));
                l.owned_features(a, b, &mut |k| owned.push(k));
            }
        }
        every.sort_unstable();
        every.dedup();
        let handed = owned.len();
        owned.sort_unstable();
        owned.dedup();
        assert_eq!(owned.len(), handed, "a feature pair was handed over twice");
        assert_eq!(owned, every);
    }

    #[test]
    fn loose_vertices_become_leaves() {
        let l = quad();
        assert_eq!(l.len(), 3);
        let v = VertexId::new;
        assert_eq!(l.verts(leaf(2)).collect::<Vec<_>>(), vec![v(4)]);
        assert_eq!(l.of_vertex(v(4)), &[leaf(2)]);
        assert_eq!(l.of_vertex(v(1)), &[leaf(0), leaf(1)]);
    }

    #[test]
    fn leaves_are_the_triangles_then_loose_edges_then_loose_vertices() {
        let edges = vec![[0, 1], [1, 2], [2, 0], [1, 3], [3, 2], [5, 6]];
        let l = Leaves::new(edges, vec![[0, 1, 2], [1, 3, 2]], 7);
        assert_eq!(l.len(), 4);
        let verts = |i: u32| l.verts(leaf(i)).map(VertexId::get).collect::<Vec<_>>();
        assert_eq!(verts(0), vec![0, 1, 2]);
        assert_eq!(verts(1), vec![1, 3, 2]);
        assert_eq!(verts(2), vec![5, 6]);
        assert_eq!(verts(3), vec![4]);
        assert_eq!(l.of_vertex(VertexId::new(5)), &[leaf(2)]);
        assert_eq!(l.of_vertex(VertexId::new(4)), &[leaf(3)]);
        assert!(l.adjacent(leaf(0), leaf(1)));
        assert!(!l.adjacent(leaf(1), leaf(2)) && !l.adjacent(leaf(2), leaf(3)));
        let t = |i: u32| Some(TriangleId::new(i));
        assert_eq!(
            [0, 1, 2, 3].map(|i| l.tri(leaf(i))),
            [t(0), t(1), None, None]
        );
    }

    #[test]
    fn sides_list_the_leaves_holding_each_primitive() {
        let edges = vec![[0, 1], [1, 2], [2, 0], [1, 3], [3, 2], [5, 6]];
        let l = Leaves::new(edges, vec![[0, 1, 2], [1, 3, 2]], 7);
        let sides = |key| {
            let (a, b) = l.sides(key);
            (
                a.map(LeafId::get).collect::<Vec<_>>(),
                b.map(LeafId::get).collect::<Vec<_>>(),
            )
        };
        assert_eq!(sides(PairKey::VertexTriangle(2, 1)), (vec![0, 1], vec![1]));
        assert_eq!(sides(PairKey::VertexTriangle(4, 0)), (vec![3], vec![0]));
        // Edge 1-2 is in both triangles, 0-1 in the first, 5-6 a loose edge's leaf.
        assert_eq!(sides(PairKey::EdgeEdge(1, 0)), (vec![0, 1], vec![0]));
        assert_eq!(sides(PairKey::EdgeEdge(3, 5)), (vec![1], vec![2]));
    }

    #[test]
    fn features_skip_shared_vertices() {
        let l = quad();
        let mut found = Vec::new();
        l.features(leaf(0), leaf(1), &mut |k| found.push(k));
        found.sort();
        // Vertex 0 against triangle 1, vertex 3 against triangle 0, edge 0-1 against 3-2 and
        // edge 2-0 against 1-3; everything else shares a vertex.
        assert_eq!(
            found,
            vec![
                PairKey::VertexTriangle(0, 1),
                PairKey::VertexTriangle(3, 0),
                PairKey::EdgeEdge(0, 4),
                PairKey::EdgeEdge(2, 3),
            ]
        );
        for &k in &found {
            assert!(l.covers(leaf(0), leaf(1), k) && l.covers(leaf(1), leaf(0), k));
        }
        let mut particle = Vec::new();
        l.features(leaf(2), leaf(0), &mut |k| particle.push(k));
        assert_eq!(particle, vec![PairKey::VertexTriangle(4, 0)]);
    }
}
