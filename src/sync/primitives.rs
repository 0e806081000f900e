//! The contact primitives of a whole scene: triangles, their edges, and isolated vertices
//! (point particles), with the feature pairs (vertex-triangle, edge-edge) that two of them
//! can form.

use hashbrown::HashMap;

use super::ccd::Kind;

/// A vertex-triangle or edge-edge pair in global vertex indices, ordered as [`Kind`] expects
/// (`[p, a, b, c]` or `[p0, p1, q0, q1]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Feature {
    /// Vertex-triangle or edge-edge.
    pub kind: Kind,
    /// The four vertices.
    pub verts: [u32; 4],
}

/// Triangles, unique edges and isolated vertices, in global vertex indices.
///
/// `tri_edges[t]` are the indices into `edges` of triangle `t`'s three edges; edges are sorted
/// `[low, high]` pairs in increasing order, so every table is a pure function of the triangles.
#[derive(Clone, Debug, Default)]
pub(crate) struct Primitives {
    /// Triangles.
    pub triangles: Vec<[u32; 3]>,
    /// Unique edges, sorted.
    pub edges: Vec<[u32; 2]>,
    /// Per triangle, its edges.
    pub tri_edges: Vec<[u32; 3]>,
    /// Vertices in no triangle (point particles), sorted.
    pub isolated: Vec<u32>,
}

impl Primitives {
    /// The primitives of `triangles` over `vertex_count` vertices.
    pub(crate) fn new(triangles: &[[u32; 3]], vertex_count: usize) -> Self {
        let mut edges: Vec<[u32; 2]> = triangles
            .iter()
            .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
            .map(|[a, b]| [a.min(b), a.max(b)])
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let index: HashMap<[u32; 2], u32> = edges
            .iter()
            .enumerate()
            .map(|(i, &e)| (e, i as u32))
            .collect();
        let edge_of = |a: u32, b: u32| index[&[a.min(b), a.max(b)]];
        let tri_edges = triangles
            .iter()
            .map(|t| {
                [
                    edge_of(t[0], t[1]),
                    edge_of(t[1], t[2]),
                    edge_of(t[2], t[0]),
                ]
            })
            .collect();
        let mut used = vec![false; vertex_count];
        for t in triangles {
            for &v in t {
                used[v as usize] = true;
            }
        }
        let isolated = (0..vertex_count as u32)
            .filter(|&v| !used[v as usize])
            .collect();
        Self {
            triangles: triangles.to_vec(),
            edges,
            tri_edges,
            isolated,
        }
    }

    /// Number of broad-phase items: triangles, then isolated vertices.
    pub(crate) fn item_count(&self) -> usize {
        self.triangles.len() + self.isolated.len()
    }

    /// The vertices of broad-phase item `i` (a triangle or an isolated vertex).
    pub(crate) fn item_vertices(&self, i: usize) -> &[u32] {
        match self.triangles.get(i) {
            Some(t) => t,
            None => std::slice::from_ref(&self.isolated[i - self.triangles.len()]),
        }
    }

    /// Appends the feature pairs of items `a` and `b` that `keep` accepts, as keys: each vertex
    /// of one against the other's triangle (`vt`: vertex << 32 | triangle), each edge against
    /// each edge (`ee`: low edge << 32 | high edge). Pairs that share a vertex are skipped.
    pub(crate) fn features_of(
        &self,
        a: usize,
        b: usize,
        keep: impl Fn(&Feature) -> bool,
        vt: &mut Vec<u64>,
        ee: &mut Vec<u64>,
    ) {
        let nt = self.triangles.len();
        let mut push_vt = |v: u32, t: usize| {
            let [x, y, z] = self.triangles[t];
            let f = Feature {
                kind: Kind::VertexTriangle,
                verts: [v, x, y, z],
            };
            if v != x && v != y && v != z && keep(&f) {
                vt.push(u64::from(v) << 32 | t as u64);
            }
        };
        match (a < nt, b < nt) {
            (true, true) => {
                for &v in &self.triangles[a] {
                    push_vt(v, b);
                }
                for &v in &self.triangles[b] {
                    push_vt(v, a);
                }
                for &ea in &self.tri_edges[a] {
                    for &eb in &self.tri_edges[b] {
                        let (lo, hi) = (ea.min(eb), ea.max(eb));
                        let f = self.edge_edge(lo, hi);
                        let [p0, p1, q0, q1] = f.verts;
                        if p0 != q0 && p0 != q1 && p1 != q0 && p1 != q1 && keep(&f) {
                            ee.push(u64::from(lo) << 32 | u64::from(hi));
                        }
                    }
                }
            }
            (true, false) => push_vt(self.isolated[b - nt], a),
            (false, true) => push_vt(self.isolated[a - nt], b),
            (false, false) => {}
        }
    }

    /// The feature of a vertex-triangle key.
    pub(crate) fn vertex_triangle(&self, key: u64) -> Feature {
        let [x, y, z] = self.triangles[(key & 0xFFFF_FFFF) as usize];
        Feature {
            kind: Kind::VertexTriangle,
            verts: [(key >> 32) as u32, x, y, z],
        }
    }

    /// The feature of edges `lo` and `hi`.
    pub(crate) fn edge_edge(&self, lo: u32, hi: u32) -> Feature {
        let [p0, p1] = self.edges[lo as usize];
        let [q0, q1] = self.edges[hi as usize];
        Feature {
            kind: Kind::EdgeEdge,
            verts: [p0, p1, q0, q1],
        }
    }
}
