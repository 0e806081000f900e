//! The interim broad phase: swept bounding boxes over a fixed window, on a hash grid.
//!
//! **Interim**: the kinetic k-DOP hierarchy of thesis §5.3 replaces it (issue 4). It is simple and
//! provably complete: time is cut into windows `[k W, (k + 1) W)`; each vertex's box holds its
//! linear trajectory from its last velocity change to the end of the window, and is recomputed
//! whenever its velocity changes. A primitive's box is the union of its vertices' boxes, grown by
//! `eta1 / 2`: two primitives whose boxes do not overlap stay at least `eta1` apart until one of
//! their vertices changes velocity or the window ends, so no pair is ever missed. Pairs whose
//! boxes overlap are the candidates handed to separation slabs.

use glam::DVec3;
use hashbrown::HashMap;

use super::leaves::Feature;
use crate::mesh::{Csr, EdgeId, TriangleId, TriangleList};
use crate::penalty::PairKey;
use crate::state::{VertexId, VertexState};
use crate::typed_index::typed_index;

/// Slack around each vertex sweep, as a fraction of `eta1`: a kick that keeps the sweep inside
/// it costs no broad-phase work; larger slack means more candidate pairs.
const SLACK: f64 = 0.25;

typed_index! {
    /// A primitive: the vertices first, then the edges, then the triangles.
    struct PrimId;
}

/// What a [`PrimId`] refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prim {
    Vertex(VertexId),
    Edge(EdgeId),
    Triangle(TriangleId),
}

/// Swept boxes of every vertex and a hash grid of primitive boxes (see the module docs).
#[derive(Debug)]
pub(crate) struct SweptBoxes {
    vertex_edges: Csr<EdgeId>,
    vertex_triangles: Csr<TriangleId>,
    /// Slack added around each vertex sweep, so that small velocity changes need no update.
    pad: f64,
    edges: Vec<[u32; 2]>,
    triangles: TriangleList,
    /// Per vertex: its swept box.
    lo: Vec<DVec3>,
    hi: Vec<DVec3>,
    /// Cached primitive boxes (already grown by `margin`), indexed by [`PrimId`].
    prim_lo: Vec<DVec3>,
    prim_hi: Vec<DVec3>,
    margin: f64,
    window_end: f64,
    cell: f64,
    grid: HashMap<[i64; 3], Vec<PrimId>>,
    /// Per primitive: the cells it is registered in since the last rebuild.
    registered: Vec<CellRange>,
    /// Per primitive: the query stamp that last saw it (dedupes grid queries without sorting).
    seen: Vec<u32>,
    stamp: u32,
    scratch: Vec<PrimId>,
}

/// An inclusive box of grid cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CellRange {
    lo: [i64; 3],
    hi: [i64; 3],
}

impl CellRange {
    /// The range holding no cell.
    const EMPTY: Self = Self {
        lo: [i64::MAX; 3],
        hi: [i64::MIN; 3],
    };

    fn contains_cell(&self, c: [i64; 3]) -> bool {
        (0..3).all(|k| self.lo[k] <= c[k] && c[k] <= self.hi[k])
    }

    fn contains(&self, other: &Self) -> bool {
        (0..3).all(|k| self.lo[k] <= other.lo[k] && other.hi[k] <= self.hi[k])
    }

    fn union(&self, other: &Self) -> Self {
        Self {
            lo: std::array::from_fn(|k| self.lo[k].min(other.lo[k])),
            hi: std::array::from_fn(|k| self.hi[k].max(other.hi[k])),
        }
    }

    fn cells(self) -> impl Iterator<Item = [i64; 3]> {
        let (l, h) = (self.lo, self.hi);
        (l[0]..=h[0]).flat_map(move |x| {
            (l[1]..=h[1]).flat_map(move |y| (l[2]..=h[2]).map(move |z| [x, y, z]))
        })
    }
}

impl SweptBoxes {
    /// A broad phase over these primitives; `eta1` is the thickness of the first penalty layer.
    pub(crate) fn new(
        edges: Vec<[u32; 2]>,
        triangles: impl Into<TriangleList>,
        vertex_count: usize,
        eta1: f64,
    ) -> Self {
        let triangles = triangles.into();
        let prims = vertex_count + edges.len() + triangles.len();
        let vertex_edges = Csr::from_pairs(
            vertex_count,
            edges
                .iter()
                .enumerate()
                .flat_map(|(e, ab)| ab.map(|v| (v, EdgeId::from_usize(e)))),
        );
        let vertex_triangles = Csr::from_pairs(
            vertex_count,
            triangles
                .iter()
                .enumerate()
                .flat_map(|(t, abc)| abc.map(|v| (v, TriangleId::from_usize(t)))),
        );
        Self {
            vertex_edges,
            vertex_triangles,
            pad: SLACK * eta1,
            edges,
            triangles,
            lo: vec![DVec3::ZERO; vertex_count],
            hi: vec![DVec3::ZERO; vertex_count],
            prim_lo: vec![DVec3::ZERO; prims],
            prim_hi: vec![DVec3::ZERO; prims],
            registered: vec![CellRange::EMPTY; prims],
            seen: vec![0; prims],
            stamp: 0,
            margin: 0.5 * eta1,
            window_end: 0.0,
            cell: 1.0,
            grid: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// Global edge list.
    pub(crate) fn edges(&self) -> &[[u32; 2]] {
        &self.edges
    }

    /// Global triangle list.
    pub(crate) fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    fn prim(&self, id: PrimId) -> Prim {
        let (id, nv, ne) = (id.index(), self.lo.len(), self.edges.len());
        if id < nv {
            Prim::Vertex(VertexId::from_usize(id))
        } else if id < nv + ne {
            Prim::Edge(EdgeId::from_usize(id - nv))
        } else {
            Prim::Triangle(TriangleId::from_usize(id - nv - ne))
        }
    }

    /// The primitive id of vertex `v`.
    fn vertex_prim(&self, v: VertexId) -> PrimId {
        PrimId::new(v.get())
    }

    /// The primitive id of edge `e`.
    fn edge_prim(&self, e: EdgeId) -> PrimId {
        PrimId::from_usize(self.lo.len() + e.index())
    }

    /// The primitive id of triangle `t`.
    fn triangle_prim(&self, t: TriangleId) -> PrimId {
        PrimId::from_usize(self.lo.len() + self.edges.len() + t.index())
    }

    /// Every primitive, in id order.
    fn prims(&self) -> impl Iterator<Item = PrimId> {
        (0..self.lo.len() + self.edges.len() + self.triangles.len()).map(PrimId::from_usize)
    }

    /// The cached box of primitive `id`.
    #[inline]
    fn prim_box(&self, id: PrimId) -> (DVec3, DVec3) {
        (self.prim_lo[id.index()], self.prim_hi[id.index()])
    }

    /// Recomputes the cached box of primitive `id` from its vertices' boxes.
    fn refresh_prim(&mut self, id: PrimId) {
        let (lo, hi) = self.compute_prim_box(id);
        self.prim_lo[id.index()] = lo;
        self.prim_hi[id.index()] = hi;
    }

    fn compute_prim_box(&self, id: PrimId) -> (DVec3, DVec3) {
        let union = |vs: &[u32]| {
            (vs.iter().copied().map(VertexId::new))
                .fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(self.lo[v.index()]), hi.max(self.hi[v.index()]))
                })
        };
        let (lo, hi) = match self.prim(id) {
            Prim::Vertex(v) => union(&[v.get()]),
            Prim::Edge(e) => union(&self.edges[e.index()]),
            Prim::Triangle(t) => union(&self.triangles[t.index()]),
        };
        (lo - self.margin, hi + self.margin)
    }

    /// Sweeps vertex `i` from `t` to the window's end. Unless `reset`, a sweep that still fits
    /// in the vertex's current box changes nothing (returns false); otherwise the box becomes
    /// the sweep grown by the slack `pad` (returns true).
    fn sweep_vertex(&mut self, state: &VertexState, v: VertexId, t: f64, reset: bool) -> bool {
        let i = v.index();
        let a = state.position_at(i, t);
        let b = state.position_at(i, self.window_end.max(t));
        let (lo, hi) = (a.min(b), a.max(b));
        if !reset && lo.cmpge(self.lo[i]).all() && hi.cmple(self.hi[i]).all() {
            return false;
        }
        self.lo[i] = lo - self.pad;
        self.hi[i] = hi + self.pad;
        true
    }

    /// The range of grid cells a box covers (inclusive).
    fn cell_range(&self, lo: DVec3, hi: DVec3) -> CellRange {
        let c = |x: f64| (x / self.cell).floor() as i64;
        CellRange {
            lo: [c(lo.x), c(lo.y), c(lo.z)],
            hi: [c(hi.x), c(hi.y), c(hi.z)],
        }
    }

    /// Registers primitive `id` in every cell its current box covers that it is not yet
    /// registered in (since the last rebuild), so cells never hold duplicates.
    fn register(&mut self, id: PrimId) {
        let (lo, hi) = self.prim_box(id);
        let new = self.cell_range(lo, hi);
        let old = self.registered[id.index()];
        if old.contains(&new) {
            return;
        }
        let union = old.union(&new);
        for key in union.cells() {
            if !old.contains_cell(key) {
                self.grid.entry(key).or_default().push(id);
            }
        }
        self.registered[id.index()] = union;
    }

    /// Starts a new window `[t, window_end)`: sweeps every vertex and rebuilds the grid. Calls
    /// `found` once for every overlapping candidate pair.
    pub(crate) fn rebuild(
        &mut self,
        state: &VertexState,
        t: f64,
        window_end: f64,
        found: &mut impl FnMut(PairKey),
    ) {
        self.window_end = window_end;
        for v in (0..state.len()).map(VertexId::from_usize) {
            self.sweep_vertex(state, v, t, true);
        }
        for id in self.prims() {
            self.refresh_prim(id);
        }
        // Cells about the size of the mean triangle box: a few primitives per cell.
        let n = self.triangles.len().max(1) as f64;
        let mean: f64 = (0..self.triangles.len())
            .map(|t| {
                let (lo, hi) = self.prim_box(self.triangle_prim(TriangleId::from_usize(t)));
                (hi - lo).max_element()
            })
            .sum::<f64>()
            / n;
        self.cell = mean.max(4.0 * self.margin).max(1e-6);
        self.grid.clear();
        self.registered.fill(CellRange::EMPTY);
        for id in self.prims() {
            self.register(id);
        }
        // Each cell lists its primitives by increasing id: vertices, then edges, then
        // triangles. Only vertex-triangle and edge-edge pairs are candidates.
        let first_edge = PrimId::from_usize(self.lo.len());
        let first_triangle = PrimId::from_usize(self.lo.len() + self.edges.len());
        for ids in self.grid.values() {
            let edges_start = ids.partition_point(|&id| id < first_edge);
            let tris_start = ids.partition_point(|&id| id < first_triangle);
            for &v in &ids[..edges_start] {
                for &t in &ids[tris_start..] {
                    if let Some(pair) = self.candidate(v, t) {
                        found(pair);
                    }
                }
            }
            let edges = &ids[edges_start..tris_start];
            for (k, &a) in edges.iter().enumerate() {
                for &b in &edges[k + 1..] {
                    if let Some(pair) = self.candidate(a, b) {
                        found(pair);
                    }
                }
            }
        }
    }

    /// Re-sweeps `vertices` after their velocities changed at time `t`. A vertex whose new
    /// sweep still fits in its box changes nothing: every pair its primitives can overlap is
    /// already a candidate. For the others, calls `found` for every candidate pair involving a
    /// primitive that touches them.
    pub(crate) fn update(
        &mut self,
        state: &VertexState,
        t: f64,
        vertices: &[u32],
        found: &mut impl FnMut(PairKey),
    ) {
        let mut prims = std::mem::take(&mut self.scratch);
        prims.clear();
        for v in vertices.iter().copied().map(VertexId::new) {
            if self.sweep_vertex(state, v, t, false) {
                prims.push(self.vertex_prim(v));
                let edges = self.vertex_edges.row(v.index()).iter();
                prims.extend(edges.map(|&e| self.edge_prim(e)));
                let triangles = self.vertex_triangles.row(v.index()).iter();
                prims.extend(triangles.map(|&t| self.triangle_prim(t)));
            }
        }
        prims.sort_unstable();
        prims.dedup();
        for &id in &prims {
            self.refresh_prim(id);
        }
        for &id in &prims {
            self.register(id);
        }
        for &a in &prims {
            let (lo, hi) = self.prim_box(a);
            self.stamp = self.stamp.wrapping_add(1);
            for key in self.cell_range(lo, hi).cells() {
                let Some(ids) = self.grid.get(&key) else {
                    continue;
                };
                for &b in ids {
                    if self.seen[b.index()] != self.stamp {
                        self.seen[b.index()] = self.stamp;
                        if let Some(pair) = self.candidate(a, b) {
                            found(pair);
                        }
                    }
                }
            }
        }
        self.scratch = prims;
    }

    /// Checks that every vertex is inside its swept box at time `t` (for `--audit`).
    pub(crate) fn audit(&self, state: &VertexState, t: f64) -> Result<(), String> {
        for i in 0..state.len() {
            let p = state.position_at(i, t);
            // Positions are recomputed from the same (x, t, v), so they reproduce the sweep
            // endpoints up to one rounding of the product; allow that much.
            let slack = 1e-12 * (1.0 + p.abs().max_element());
            if p.cmplt(self.lo[i] - slack).any() || p.cmpgt(self.hi[i] + slack).any() {
                return Err(format!("vertex {i} left its broad-phase box at t = {t}"));
            }
        }
        Ok(())
    }

    /// Whether the boxes of the two primitives of `pair` overlap now.
    pub(crate) fn overlaps(&self, pair: PairKey) -> bool {
        let (a, b) = match Feature::of(pair) {
            Feature::VertexTriangle(v, t) => (self.vertex_prim(v), self.triangle_prim(t)),
            Feature::EdgeEdge(e, f) => (self.edge_prim(e), self.edge_prim(f)),
        };
        boxes_overlap(self.prim_box(a), self.prim_box(b))
    }

    /// The pair formed by primitives `a` and `b` if it is a VT or EE pair of primitives sharing no
    /// vertex whose boxes overlap.
    fn candidate(&self, a: PrimId, b: PrimId) -> Option<PairKey> {
        let pair = match (self.prim(a), self.prim(b)) {
            (Prim::Vertex(v), Prim::Triangle(t)) | (Prim::Triangle(t), Prim::Vertex(v)) => {
                if self.triangles[t.index()].contains(&v.get()) {
                    return None;
                }
                Feature::vertex_triangle(v, t)
            }
            (Prim::Edge(e), Prim::Edge(f)) if e != f => {
                let (ea, fa) = (self.edges[e.index()], self.edges[f.index()]);
                if ea.iter().any(|v| fa.contains(v)) {
                    return None;
                }
                Feature::edge_edge(e, f)
            }
            _ => return None,
        };
        boxes_overlap(self.prim_box(a), self.prim_box(b)).then_some(pair)
    }
}

fn boxes_overlap(a: (DVec3, DVec3), b: (DVec3, DVec3)) -> bool {
    a.0.cmple(b.1).all() && b.0.cmple(a.1).all()
}
