//! The leaves of the kinetic broad phases and the feature pairs they hand to separation slabs.
//!
//! A leaf is one triangle, or a primitive that belongs to no triangle (a loose edge or a loose
//! vertex, such as a particle). Two leaves whose volumes overlap hand their vertex-triangle and
//! edge-edge pairs sharing no vertex ([`PairKey`]) to the contact subsystem.
//!
//! Leaves bound *reference trajectories* rather than the vertices' current ones (fuzzy
//! trajectories, thesis §8.2): each vertex has a straight reference path over the horizon, and
//! each leaf volume holds its vertices' reference paths grown by `margin + slack`. A velocity
//! change that keeps a vertex within `slack` of its reference path (at the kick and at the
//! horizon's end: the distance between two linear paths is convex in time) leaves every volume
//! valid and costs no broad-phase work; only a vertex that strays gets a new reference path and
//! refits its leaves.

use glam::DVec3;
use hashbrown::HashMap;
use rayon::prelude::*;

use super::kdop::{AxisExtent, AxisHint, Path, Volume};
use super::PAR_MIN_LEN;
use crate::mesh::{Csr, TriangleList};
use crate::penalty::PairKey;
use crate::profiling::zone;
use crate::state::VertexState;

/// Marks an unused slot.
pub(crate) const NONE: u32 = u32::MAX;

/// The leaf primitives and their topology (structure of arrays, indexed by leaf id: triangles
/// first, in triangle order, then loose edges, then loose vertices).
#[derive(Debug)]
pub struct Leaves {
    /// Global edge list (vertex pairs).
    pub(crate) edges: Vec<[u32; 2]>,
    /// Global triangle list.
    pub(crate) triangles: TriangleList,
    /// The vertices of each leaf that is no triangle (leaf `triangles.len() + i` is entry `i`),
    /// `NONE`-padded; a triangle's leaf reads its vertices from `triangles`.
    loose: Vec<[u32; 3]>,
    /// Each leaf's edges (ids into `edges`), `NONE`-padded.
    leaf_edges: Vec<[u32; 3]>,
    /// Vertex -> the leaves holding it.
    pub(crate) vertex_leaves: Csr,
    /// Per leaf, which of its vertex slots (bits 0 to 2) and edge slots (bits 3 to 5) it owns:
    /// each vertex and edge is owned by the first leaf holding it.
    owned: Vec<u8>,
}

/// A vertex, triangle or edge (by id), for [`Leaves::holding`].
#[derive(Clone, Copy, Debug)]
enum Primitive {
    Vertex(u32),
    Triangle(u32),
    Edge(u32),
}

impl Leaves {
    /// Leaves over these primitives of `vertex_count` vertices.
    pub fn new(
        edges: Vec<[u32; 2]>,
        triangles: impl Into<TriangleList>,
        vertex_count: usize,
    ) -> Self {
        let triangles = triangles.into();
        let edge_id: HashMap<(u32, u32), u32> = edges
            .iter()
            .enumerate()
            .map(|(e, &[a, b])| ((a.min(b), a.max(b)), e as u32))
            .collect();
        let mut loose = Vec::new();
        let mut leaf_edges = Vec::with_capacity(triangles.len());
        let mut edge_used = vec![false; edges.len()];
        let mut vertex_used = vec![false; vertex_count];
        for &[a, b, c] in triangles.iter() {
            let mut es = [NONE; 3];
            for (k, (p, q)) in [(a, b), (b, c), (c, a)].into_iter().enumerate() {
                if let Some(&e) = edge_id.get(&(p.min(q), p.max(q))) {
                    es[k] = e;
                    edge_used[e as usize] = true;
                }
            }
            for v in [a, b, c] {
                vertex_used[v as usize] = true;
            }
            leaf_edges.push(es);
        }
        for (e, &[a, b]) in edges.iter().enumerate() {
            if !edge_used[e] {
                vertex_used[a as usize] = true;
                vertex_used[b as usize] = true;
                loose.push([a, b, NONE]);
                leaf_edges.push([e as u32, NONE, NONE]);
            }
        }
        for (v, used) in vertex_used.iter().enumerate() {
            if !used {
                loose.push([v as u32, NONE, NONE]);
                leaf_edges.push([NONE; 3]);
            }
        }
        let vertex_leaves = Csr::from_pairs(
            vertex_count,
            triangles
                .iter()
                .chain(&loose)
                .enumerate()
                .flat_map(|(l, vs)| {
                    vs.iter()
                        .filter(|&&v| v != NONE)
                        .map(move |&v| (v, l as u32))
                }),
        );
        let mut owned = Vec::with_capacity(leaf_edges.len());
        let (mut vertex_owned, mut edge_owned) = (vec![false; vertex_count], edge_used);
        edge_owned.fill(false);
        for (l, es) in leaf_edges.iter().enumerate() {
            let vs = match triangles.get(l) {
                Some(&t) => t,
                None => loose[l - triangles.len()],
            };
            let mut bits = 0u8;
            for (k, &v) in vs.iter().enumerate() {
                if v != NONE && !std::mem::replace(&mut vertex_owned[v as usize], true) {
                    bits |= 1 << k;
                }
            }
            for (k, &e) in es.iter().enumerate() {
                if e != NONE && !std::mem::replace(&mut edge_owned[e as usize], true) {
                    bits |= 1 << (3 + k);
                }
            }
            owned.push(bits);
        }
        Self {
            edges,
            triangles,
            loose,
            leaf_edges,
            vertex_leaves,
            owned,
        }
    }

    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.triangles.len() + self.loose.len()
    }

    /// Whether there is no leaf.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The triangle of leaf `l` (a triangle's leaf has the triangle's id), or `NONE`.
    #[inline]
    fn tri(&self, l: u32) -> u32 {
        if (l as usize) < self.triangles.len() {
            l
        } else {
            NONE
        }
    }

    /// The vertices of leaf `l`, `NONE`-padded.
    #[inline]
    fn vertex_slots(&self, l: u32) -> [u32; 3] {
        let l = l as usize;
        match self.triangles.get(l) {
            Some(&t) => t,
            None => self.loose[l - self.triangles.len()],
        }
    }

    /// The vertices of leaf `l`.
    #[inline]
    pub(crate) fn verts(&self, l: u32) -> impl Iterator<Item = u32> {
        self.vertex_slots(l).into_iter().filter(|&v| v != NONE)
    }

    fn edges_of(&self, l: u32) -> impl Iterator<Item = u32> + '_ {
        self.leaf_edges[l as usize]
            .into_iter()
            .filter(|&e| e != NONE)
    }

    /// Whether leaves `a` and `b` share a vertex.
    pub fn adjacent(&self, a: u32, b: u32) -> bool {
        let b = self.vertex_slots(b);
        self.verts(a).any(|v| b.contains(&v))
    }

    /// The leaves holding vertex `v`.
    #[inline]
    pub(crate) fn of_vertex(&self, v: u32) -> &[u32] {
        self.vertex_leaves.row(v as usize)
    }

    /// Calls `found` for every VT and EE pair of leaves `a` and `b` sharing no vertex.
    pub(crate) fn features(&self, a: u32, b: u32, found: &mut impl FnMut(PairKey)) {
        if a == b {
            return;
        }
        for (p, q) in [(a, b), (b, a)] {
            let t = self.tri(q);
            if t == NONE {
                continue;
            }
            let tv = self.triangles[t as usize];
            for v in self.verts(p) {
                if !tv.contains(&v) {
                    found(PairKey::VertexTriangle(v, t));
                }
            }
        }
        for e in self.edges_of(a) {
            let ev = self.edges[e as usize];
            for f in self.edges_of(b) {
                let fv = self.edges[f as usize];
                if e != f && !ev.iter().any(|v| fv.contains(v)) {
                    found(PairKey::EdgeEdge(e.min(f), e.max(f)));
                }
            }
        }
    }

    /// Calls `found` for the VT and EE pairs of leaves `a` and `b` sharing no vertex whose
    /// vertex and edges are owned by the leaves they are taken from (a VT pair's triangle is
    /// its own leaf's). Over every pair of leaves this is every feature pair once, where
    /// [`features`](Self::features) repeats a pair for every leaf that holds its vertex or edges;
    /// a leaf's volume holds its vertices, so two volumes that miss cover no missed pair.
    pub(crate) fn owned_features(&self, a: u32, b: u32, found: &mut impl FnMut(PairKey)) {
        if a == b {
            return;
        }
        let owned_verts = |l: u32| {
            let bits = self.owned[l as usize];
            (self.vertex_slots(l).into_iter().enumerate())
                .filter(move |&(k, v)| v != NONE && bits & (1 << k) != 0)
                .map(|(_, v)| v)
        };
        let owned_edges = |l: u32| {
            let bits = self.owned[l as usize];
            (self.leaf_edges[l as usize].into_iter().enumerate())
                .filter(move |&(k, e)| e != NONE && bits & (1 << (3 + k)) != 0)
                .map(|(_, e)| e)
        };
        for (p, q) in [(a, b), (b, a)] {
            let t = self.tri(q);
            if t == NONE {
                continue;
            }
            let tv = self.triangles[t as usize];
            for v in owned_verts(p) {
                if !tv.contains(&v) {
                    found(PairKey::VertexTriangle(v, t));
                }
            }
        }
        for e in owned_edges(a) {
            let ev = self.edges[e as usize];
            for f in owned_edges(b) {
                let fv = self.edges[f as usize];
                if !ev.iter().any(|v| fv.contains(v)) {
                    found(PairKey::EdgeEdge(e.min(f), e.max(f)));
                }
            }
        }
    }

    /// Calls `found` for every VT and EE pair sharing no vertex between a primitive of the
    /// leaves `a` and one of the leaves `b`, or, for `b = None`, between two primitives of the
    /// leaves `a`: the union of `features` over those leaf pairs, with the
    /// repeats of shared vertices and edges left out. At most `MAX_GROUP` leaves a side.
    pub fn group_features(&self, a: &[u32], b: Option<&[u32]>, found: &mut impl FnMut(PairKey)) {
        let every = |_| true;
        let ga = Group::of(self, a, &every);
        let gb = b.map(|b| Group::of(self, b, &every));
        self.group_pairs(&ga, gb.as_ref(), None, found);
    }

    /// [`group_features`](Self::group_features) of the groups `ga` and `gb` (`None`: within
    /// `ga`) that hold a marked primitive ([`Group::marked`]), less those that `screen` finds
    /// apart.
    fn group_pairs(
        &self,
        ga: &Group,
        gb: Option<&Group>,
        screen: Option<Screen<'_>>,
        found: &mut impl FnMut(PairKey),
    ) {
        let h = gb.unwrap_or(ga);
        let is = |marked: u16, k: usize| marked >> k & 1 != 0;
        // Vertices of `ga` against triangles of `h`, then (two groups) of `h` against `ga`.
        let sides = [(ga, h, false), (h, ga, true)];
        for &(g, h, flip) in &sides[..1 + gb.is_some() as usize] {
            for (i, &v) in g.verts().iter().enumerate() {
                for (k, &t) in h.tris().iter().enumerate() {
                    let apart = || {
                        screen
                            .as_ref()
                            .is_some_and(|s| s.vertex_triangle(flip, i, k))
                    };
                    let marked = is(g.marked[0], i) || is(h.marked[2], k);
                    if marked && !self.triangles[t as usize].contains(&v) && !apart() {
                        found(PairKey::VertexTriangle(v, t));
                    }
                }
            }
        }
        for (i, &e) in ga.edges().iter().enumerate() {
            let ev = self.edges[e as usize];
            // Within one group, each unordered edge pair once.
            let first = if gb.is_some() { 0 } else { i + 1 };
            for (k, &f) in h.edges().iter().enumerate().skip(first) {
                let fv = self.edges[f as usize];
                let apart = || screen.as_ref().is_some_and(|s| s.edge_edge(i, k));
                let marked = is(ga.marked[1], i) || is(h.marked[1], k);
                if marked && e != f && !ev.iter().any(|v| fv.contains(v)) && !apart() {
                    found(PairKey::EdgeEdge(e.min(f), e.max(f)));
                }
            }
        }
    }

    /// The four vertices of `key`.
    pub(crate) fn key_vertices(&self, key: PairKey) -> [u32; 4] {
        match key {
            PairKey::VertexTriangle(v, t) => {
                let [a, b, c] = self.triangles[t as usize];
                [v, a, b, c]
            }
            PairKey::EdgeEdge(e, f) => {
                let ([a, b], [c, d]) = (self.edges[e as usize], self.edges[f as usize]);
                [a, b, c, d]
            }
        }
    }

    /// Whether `key` is one of the feature pairs of leaves `a` and `b`.
    pub(crate) fn covers(&self, a: u32, b: u32, key: PairKey) -> bool {
        let holds_edge = |l: u32, e: u32| self.leaf_edges[l as usize].contains(&e);
        let holds_vertex = |l: u32, v: u32| self.vertex_slots(l).contains(&v);
        match key {
            PairKey::VertexTriangle(v, t) => {
                (self.tri(b) == t && holds_vertex(a, v)) || (self.tri(a) == t && holds_vertex(b, v))
            }
            PairKey::EdgeEdge(e, f) => {
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
        impl Iterator<Item = u32> + Clone + '_,
        impl Iterator<Item = u32> + Clone + '_,
    ) {
        let (a, b) = match key {
            PairKey::VertexTriangle(v, t) => (Primitive::Vertex(v), Primitive::Triangle(t)),
            PairKey::EdgeEdge(e, f) => (Primitive::Edge(e), Primitive::Edge(f)),
        };
        (self.holding(a), self.holding(b))
    }

    /// The leaves holding primitive `p`: those of its first vertex that hold it (no table of
    /// the leaves of each edge is kept).
    fn holding(&self, p: Primitive) -> impl Iterator<Item = u32> + Clone + '_ {
        let anchor = match p {
            Primitive::Vertex(v) => v,
            Primitive::Triangle(t) => self.triangles[t as usize][0],
            Primitive::Edge(e) => self.edges[e as usize][0],
        };
        self.of_vertex(anchor)
            .iter()
            .copied()
            .filter(move |&l| match p {
                Primitive::Vertex(_) => true,
                Primitive::Triangle(t) => l == t,
                Primitive::Edge(e) => self.leaf_edges[l as usize].contains(&e),
            })
    }

    /// The centroid of leaf `l` at time `s`.
    pub fn centroid(&self, l: u32, state: &VertexState, s: f64) -> DVec3 {
        let (sum, n) = self.verts(l).fold((DVec3::ZERO, 0.0), |(sum, n), v| {
            (sum + state.position_at(v as usize, s), n + 1.0)
        });
        sum / n
    }
}

/// Most leaves in a group (see [`Leaves::group_features`]).
pub(crate) const MAX_GROUP: usize = 4;

/// The distinct vertices, edges and triangles of a few leaves, on the stack.
struct Group {
    verts: [u32; 3 * MAX_GROUP],
    edges: [u32; 3 * MAX_GROUP],
    tris: [u32; MAX_GROUP],
    /// Counts of `verts`, `edges`, `tris`.
    len: [usize; 3],
    /// For each vertex, the triangles of the group holding it (bit `k` for `tris[k]`).
    vert_tris: [u8; 3 * MAX_GROUP],
    /// For each edge, the triangles of the group holding it.
    edge_tris: [u8; 3 * MAX_GROUP],
    /// The vertices, edges and triangles holding a marked vertex (bit `k` for the `k`-th).
    marked: [u16; 3],
    /// Each triangle's vertices and each edge's ends, as places in `verts`.
    tri_verts: [[u8; 3]; MAX_GROUP],
    edge_verts: [[u8; 2]; 3 * MAX_GROUP],
}

/// A group's primitives projected on the two screening axes of the VT and EE tests
/// ([`Volume::screening_axes`]), in the order of the group's lists: vertices and triangles on
/// the VT test's, edges on the EE test's.
struct GroupExtents {
    verts: [[AxisExtent; 3 * MAX_GROUP]; 2],
    tris: [[AxisExtent; MAX_GROUP]; 2],
    edges: [[AxisExtent; 3 * MAX_GROUP]; 2],
    /// The largest magnitude of the vertices' extents on every axis, so of every extent's.
    magnitude: f64,
}

impl GroupExtents {
    /// Extents of no group, to be [`fill`](Self::fill)ed in place (they are 2 KB, and were
    /// copied when returned).
    const EMPTY: Self = Self {
        verts: [[AxisExtent::EMPTY; 3 * MAX_GROUP]; 2],
        tris: [[AxisExtent::EMPTY; MAX_GROUP]; 2],
        edges: [[AxisExtent::EMPTY; 3 * MAX_GROUP]; 2],
        magnitude: 0.0,
    };

    /// Sets these to the extents of `g`'s vertices and triangles on the axes `vt` and of its
    /// edges on the axes `ee`, at `u = t - t_end`.
    fn fill(&mut self, g: &Group, refs: &References, [vt, ee]: [[DVec3; 2]; 2], u: f64) {
        let out = self;
        out.magnitude = 0.0;
        let mut on_ee = [AxisExtent::EMPTY; 3 * MAX_GROUP];
        for n in 0..2 {
            let (verts, tris, edges) = (&mut out.verts[n], &mut out.tris[n], &mut out.edges[n]);
            for (x, &v) in verts.iter_mut().zip(g.verts()) {
                *x = AxisExtent::of_paths(&[&refs.paths[v as usize]], vt[n], u);
            }
            // Edges project on the EE test's axis; its vertices are projected again where it
            // differs from the VT test's.
            let ends = if ee[n] == vt[n] {
                &*verts
            } else {
                for (x, &v) in on_ee.iter_mut().zip(g.verts()) {
                    *x = AxisExtent::of_paths(&[&refs.paths[v as usize]], ee[n], u);
                }
                &on_ee
            };
            let union = |of: &[AxisExtent], places: &[u8]| {
                (places.iter()).fold(AxisExtent::EMPTY, |e, &k| e.union(&of[k as usize]))
            };
            for (x, places) in tris.iter_mut().zip(&g.tri_verts[..g.tris().len()]) {
                *x = union(verts, places);
            }
            for (x, places) in edges.iter_mut().zip(&g.edge_verts[..g.edges().len()]) {
                *x = union(ends, places);
            }
            let listed = (verts[..g.verts().len()].iter())
                .chain(&ends[..g.verts().len()])
                .map(AxisExtent::magnitude);
            out.magnitude = listed.fold(out.magnitude, f64::max);
        }
    }
}

/// Two groups' extents on the screening axes (the same twice within one group): a feature pair
/// apart there is not near ([`Volume::screening_axes`]). Pairs are first screened by the
/// triangles holding their primitives, whose extents hold the primitives' (apart on any one axis
/// is apart), then by their own extents; both with one growth for the whole group pair, at least
/// that of each pair's own test ([`AxisExtent::apart_grown`]).
struct Screen<'a> {
    /// The two groups and their extents.
    a: (&'a Group, &'a GroupExtents),
    b: (&'a Group, &'a GroupExtents),
    growth: f64,
    /// For each triangle of `b`, the triangles of `a` apart from it.
    apart_from_b: [u8; MAX_GROUP],
    /// For each triangle of `a`, the triangles of `b` apart from it.
    apart_from_a: [u8; MAX_GROUP],
    /// For each edge of `b`, the triangles of `a` apart from a triangle holding it.
    apart_from_b_edge: [u8; 3 * MAX_GROUP],
}

impl<'a> Screen<'a> {
    /// The screen of groups `a` and `b` with their extents, each side grown by `pad`.
    fn new(a: (&'a Group, &'a GroupExtents), b: (&'a Group, &'a GroupExtents), pad: f64) -> Self {
        let growth = AxisExtent::growth(pad, a.1.magnitude.max(b.1.magnitude));
        let (mut apart_from_b, mut apart_from_a) = ([0u8; MAX_GROUP], [0u8; MAX_GROUP]);
        for (i, ta) in a.1.tris[0][..a.0.tris().len()].iter().enumerate() {
            for (k, tb) in b.1.tris[0][..b.0.tris().len()].iter().enumerate() {
                if ta.apart_grown(tb, growth) {
                    apart_from_b[k] |= 1 << i;
                    apart_from_a[i] |= 1 << k;
                }
            }
        }
        let mut apart_from_b_edge = [0u8; 3 * MAX_GROUP];
        for (x, &tris) in apart_from_b_edge.iter_mut().zip(&b.0.edge_tris) {
            let mut rest = tris;
            while rest != 0 {
                *x |= apart_from_b[rest.trailing_zeros() as usize];
                rest &= rest - 1;
            }
        }
        Self {
            a,
            b,
            growth,
            apart_from_b,
            apart_from_a,
            apart_from_b_edge,
        }
    }

    /// Whether vertex `v` of the first group (the second if `flip`) is apart from triangle `t`
    /// of the other.
    #[inline]
    fn vertex_triangle(&self, flip: bool, v: usize, t: usize) -> bool {
        let ((g, eg), (_, eh), apart_from_h) = if flip {
            (self.b, self.a, &self.apart_from_a)
        } else {
            (self.a, self.b, &self.apart_from_b)
        };
        g.vert_tris[v] & apart_from_h[t] != 0
            || eg.verts[0][v].apart_grown(&eh.tris[0][t], self.growth)
            || eg.verts[1][v].apart_grown(&eh.tris[1][t], self.growth)
    }

    /// Whether edge `e` of the first group is apart from edge `f` of the second.
    #[inline]
    fn edge_edge(&self, e: usize, f: usize) -> bool {
        let ((ga, ea), (_, eb)) = (self.a, self.b);
        ga.edge_tris[e] & self.apart_from_b_edge[f] != 0
            || ea.edges[0][e].apart_grown(&eb.edges[0][f], self.growth)
            || ea.edges[1][e].apart_grown(&eb.edges[1][f], self.growth)
    }
}

impl Group {
    /// The primitives of leaves `ls` (at most [`MAX_GROUP`]); those holding a vertex that
    /// `marked` holds are marked.
    fn of(leaves: &Leaves, ls: &[u32], marked: &impl Fn(u32) -> bool) -> Self {
        debug_assert!(ls.len() <= MAX_GROUP);
        let mut g = Group {
            verts: [NONE; 3 * MAX_GROUP],
            edges: [NONE; 3 * MAX_GROUP],
            tris: [NONE; MAX_GROUP],
            len: [0; 3],
            vert_tris: [0; 3 * MAX_GROUP],
            edge_tris: [0; 3 * MAX_GROUP],
            marked: [0; 3],
            tri_verts: [[0; 3]; MAX_GROUP],
            edge_verts: [[0; 2]; 3 * MAX_GROUP],
        };
        /// Adds `x` to the list if it is not there; its place in the list.
        fn add(list: &mut [u32], len: &mut usize, x: u32) -> usize {
            match list[..*len].iter().position(|&y| y == x) {
                Some(k) => k,
                None => {
                    list[*len] = x;
                    *len += 1;
                    *len - 1
                }
            }
        }
        for &l in ls {
            let i = l as usize;
            let slots = leaves.vertex_slots(l);
            let marks = slots.map(|v| v != NONE && marked(v));
            let mut places = [0u8; 3];
            for (j, &v) in slots.iter().enumerate().filter(|&(_, &v)| v != NONE) {
                let k = add(&mut g.verts, &mut g.len[0], v);
                g.marked[0] |= u16::from(marks[j]) << k;
                places[j] = k as u8;
            }
            let place = |v: u32| {
                let j = slots.iter().position(|&w| w == v);
                places[j.expect("a leaf's triangle and edges are on its vertices")]
            };
            let t = leaves.tri(l);
            let bit = if t == NONE {
                0
            } else {
                let k = add(&mut g.tris, &mut g.len[2], t);
                g.marked[2] |= u16::from(marks.contains(&true)) << k;
                g.tri_verts[k] = leaves.triangles[t as usize].map(place);
                1 << k
            };
            for (&v, &k) in slots.iter().zip(&places) {
                if v != NONE {
                    g.vert_tris[k as usize] |= bit;
                }
            }
            for e in leaves.leaf_edges[i].into_iter().filter(|&e| e != NONE) {
                let k = add(&mut g.edges, &mut g.len[1], e);
                g.edge_tris[k] |= bit;
                let ends = leaves.edges[e as usize].map(place);
                let marked_end = ends.iter().any(|&p| g.marked[0] >> p & 1 != 0);
                g.marked[1] |= u16::from(marked_end) << k;
                g.edge_verts[k] = ends;
            }
        }
        g
    }

    fn verts(&self) -> &[u32] {
        &self.verts[..self.len[0]]
    }

    fn edges(&self) -> &[u32] {
        &self.edges[..self.len[1]]
    }

    fn tris(&self) -> &[u32] {
        &self.tris[..self.len[2]]
    }
}

/// Reference trajectories of the vertices over the horizon (see the module docs): one
/// [`Path`] a vertex, position and velocity side by side, since every use reads both.
#[derive(Debug, Default)]
pub struct References {
    paths: Vec<Path>,
}

impl References {
    /// References for `n` vertices (all at the origin until [`reset_all`](Self::reset_all)).
    pub fn new(n: usize) -> Self {
        let still = Path::new(DVec3::ZERO, DVec3::ZERO);
        Self {
            paths: vec![still; n],
        }
    }

    /// The reference position of vertex `v` at `s`.
    #[inline]
    pub(crate) fn at(&self, v: u32, s: f64, t_end: f64) -> DVec3 {
        self.paths[v as usize].at(s, t_end)
    }

    /// Makes vertex `v`'s current trajectory its reference.
    #[inline]
    pub(crate) fn reset(&mut self, v: u32, state: &VertexState, t_end: f64) {
        self.paths[v as usize] = Self::current(state, v as usize, t_end);
    }

    /// Makes every vertex's current trajectory its reference.
    pub fn reset_all(&mut self, state: &VertexState, t_end: f64) {
        (self.paths.par_iter_mut().enumerate())
            .with_min_len(PAR_MIN_LEN)
            .for_each_init(
                || zone!("list_task"),
                |_, (v, path)| *path = Self::current(state, v, t_end),
            );
    }

    /// Vertex `v`'s current trajectory as a path over a horizon ending at `t_end`.
    #[inline]
    fn current(state: &VertexState, v: usize, t_end: f64) -> Path {
        Path::new(state.position_at(v, t_end), state.v[v])
    }

    /// Whether the two primitives of `key` may come within `eta1` before `t_end`: the unions
    /// of their vertices' reference paths on `[now, t_end]`, each grown by `pad` (half of `eta1`
    /// plus the reference slack; the union of a triangle's or an edge's paths holds every point
    /// of it grown by the same pad), overlap at some time in volumes of kind `V`
    /// ([`Volume::paths_meet`]). Leaf pairs hand over only these feature pairs; the others stay
    /// apart until `t_end` or until a vertex of theirs strays from its reference (which refits
    /// its leaves and looks again). `hints` order the axes of the VT and EE tests (see
    /// [`AxisHint`]).
    #[inline]
    pub fn near<V: Volume>(
        &self,
        leaves: &Leaves,
        key: PairKey,
        pad: f64,
        span: (f64, f64),
        hints: [&AxisHint; 2],
    ) -> bool {
        let path = |v: u32| &self.paths[v as usize];
        match key {
            PairKey::VertexTriangle(v, t) => {
                let [a, b, c] = leaves.triangles[t as usize];
                V::paths_meet(
                    &[path(v)],
                    &[path(a), path(b), path(c)],
                    pad,
                    span,
                    hints[0],
                )
            }
            PairKey::EdgeEdge(e, f) => {
                let [a, b] = leaves.edges[e as usize];
                let [c, d] = leaves.edges[f as usize];
                V::paths_meet(
                    &[path(a), path(b)],
                    &[path(c), path(d)],
                    pad,
                    span,
                    hints[1],
                )
            }
        }
    }

    /// Calls `found` for the feature pairs of leaves `a` and `b` ([`Leaves::group_features`])
    /// with a vertex that `marked` holds that are [`near`](Self::near), in the same order.
    /// Where volumes of kind `V` have screening axes ([`Volume::screening_axes`]), each vertex
    /// of the two groups is projected on them once, and a pair apart there (or whose triangles
    /// are) needs no whole test: most pairs of leaves that overlap are neighbours on a surface,
    /// and most of their feature pairs are apart on the first axis tried (89% on the crushed
    /// compactor).
    #[allow(clippy::too_many_arguments)]
    pub fn near_group_features<V: Volume>(
        &self,
        leaves: &Leaves,
        (a, b): (&[u32], Option<&[u32]>),
        pad: f64,
        span: (f64, f64),
        hints: [&AxisHint; 2],
        marked: impl Fn(u32) -> bool,
        found: &mut impl FnMut(PairKey),
    ) {
        let ga = Group::of(leaves, a, &marked);
        let gb = b.map(|b| Group::of(leaves, b, &marked));
        if ga.marked == [0; 3] && gb.as_ref().is_none_or(|g| g.marked == [0; 3]) {
            return;
        }
        let axes = V::screening_axes(hints[0]).zip(V::screening_axes(hints[1]));
        let (mut ea, mut eb) = (GroupExtents::EMPTY, GroupExtents::EMPTY);
        let screen = axes.map(|(vt, ee)| {
            ea.fill(&ga, self, [vt, ee], span.0 - span.1);
            if let Some(g) = &gb {
                eb.fill(g, self, [vt, ee], span.0 - span.1);
            }
            let b = gb.as_ref().map_or((&ga, &ea), |g| (g, &eb));
            Screen::new((&ga, &ea), b, pad)
        });
        leaves.group_pairs(&ga, gb.as_ref(), screen, &mut |key| {
            if self.near::<V>(leaves, key, pad, span, hints) {
                found(key);
            }
        });
    }

    /// Whether vertex `v` stays within `slack` of its reference from `t` to `t_end`.
    #[inline]
    pub(crate) fn follows(
        &self,
        v: u32,
        state: &VertexState,
        t: f64,
        t_end: f64,
        slack: f64,
    ) -> bool {
        let i = v as usize;
        (state.position_at(i, t) - self.at(v, t, t_end)).length_squared() <= slack * slack
            && (state.position_at(i, t_end) - self.paths[i].end).length_squared() <= slack * slack
    }

    /// Appends the reference points of leaf `l` at `t` and at `t_end` to `p0` and `p1`.
    pub(crate) fn leaf_points(
        &self,
        leaves: &Leaves,
        l: u32,
        t: f64,
        t_end: f64,
        p0: &mut Vec<DVec3>,
        p1: &mut Vec<DVec3>,
    ) {
        for v in leaves.verts(l) {
            p0.push(self.at(v, t, t_end));
            p1.push(self.paths[v as usize].end);
        }
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.paths.capacity() * std::mem::size_of::<Path>()
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
        for a in 0..l.len() as u32 {
            for b in a + 1..l.len() as u32 {
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

    /// The screened search hands over exactly the marked near feature pairs of the unscreened
    /// one, in the same order, on a crumpled sheet with random velocities (some pairs near,
    /// most apart), over groups of one to four leaves, within one group and between two.
    #[test]
    fn screened_feature_pairs_are_the_marked_near_ones() {
        use crate::kds::kdop::Dop18;
        use crate::test_rng::Rng;
        let sheet = crate::mesh::sheet(6, 6, 3.0, 3.0).unwrap();
        let topo = crate::mesh::Topology::build(&sheet).unwrap();
        let l = Leaves::new(
            topo.edges.clone(),
            sheet.triangles.clone(),
            sheet.positions.len(),
        );
        let mut rng = Rng(11);
        let mut refs = References::new(sheet.positions.len());
        for (path, &x) in refs.paths.iter_mut().zip(&sheet.positions) {
            *path = Path::new(x + rng.vec(0.2), rng.vec(1.0));
        }
        let hints = [AxisHint::new(true), AxisHint::new(true)];
        let (mut near, mut apart) = (0, 0);
        for case in 0..400 {
            let mut group = || -> Vec<u32> {
                let n = 1 + (rng.next_u64() % MAX_GROUP as u64) as usize;
                (0..n)
                    .map(|_| (rng.next_u64() % l.len() as u64) as u32)
                    .collect()
            };
            let (mut a, mut b) = (group(), group());
            a.sort_unstable();
            a.dedup();
            b.sort_unstable();
            b.dedup();
            let b = (case % 3 != 0).then_some(&b[..]);
            let pad = rng.uniform(0.0, 0.3);
            let span = (rng.uniform(-0.2, 0.0), 0.0);
            let marks = rng.next_u64();
            let marked = |v: u32| case % 2 == 0 || marks >> (v % 64) & 1 != 0;
            let hints = [&hints[0], &hints[1]];
            let mut expected = Vec::new();
            l.group_features(&a, b, &mut |k| {
                if !l.key_vertices(k).iter().any(|&v| marked(v)) {
                    return;
                }
                if refs.near::<Dop18>(&l, k, pad, span, hints) {
                    expected.push(k);
                    near += 1;
                } else {
                    apart += 1;
                }
            });
            let mut got = Vec::new();
            refs.near_group_features::<Dop18>(&l, (&a, b), pad, span, hints, marked, &mut |k| {
                got.push(k)
            });
            assert_eq!(got, expected, "leaves {a:?} and {b:?}, pad {pad}");
        }
        assert!(
            near > 100 && apart > 10 * near,
            "{near} near, {apart} apart"
        );
    }

    #[test]
    fn loose_vertices_become_leaves() {
        let l = quad();
        assert_eq!(l.len(), 3);
        assert_eq!(l.verts(2).collect::<Vec<_>>(), vec![4]);
        assert_eq!(l.of_vertex(4), &[2]);
        assert_eq!(l.of_vertex(1), &[0, 1]);
    }

    #[test]
    fn leaves_are_the_triangles_then_loose_edges_then_loose_vertices() {
        let edges = vec![[0, 1], [1, 2], [2, 0], [1, 3], [3, 2], [5, 6]];
        let l = Leaves::new(edges, vec![[0, 1, 2], [1, 3, 2]], 7);
        assert_eq!(l.len(), 4);
        let verts = |leaf: u32| l.verts(leaf).collect::<Vec<_>>();
        assert_eq!(verts(0), vec![0, 1, 2]);
        assert_eq!(verts(1), vec![1, 3, 2]);
        assert_eq!(verts(2), vec![5, 6]);
        assert_eq!(verts(3), vec![4]);
        assert_eq!(l.of_vertex(5), &[2]);
        assert_eq!(l.of_vertex(4), &[3]);
        assert!(l.adjacent(0, 1) && !l.adjacent(1, 2) && !l.adjacent(2, 3));
        assert_eq!([0, 1, 2, 3].map(|leaf| l.tri(leaf)), [0, 1, NONE, NONE]);
    }

    #[test]
    fn sides_list_the_leaves_holding_each_primitive() {
        let edges = vec![[0, 1], [1, 2], [2, 0], [1, 3], [3, 2], [5, 6]];
        let l = Leaves::new(edges, vec![[0, 1, 2], [1, 3, 2]], 7);
        let sides = |key| {
            let (a, b) = l.sides(key);
            (a.collect::<Vec<_>>(), b.collect::<Vec<_>>())
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
        l.features(0, 1, &mut |k| found.push(k));
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
            assert!(l.covers(0, 1, k) && l.covers(1, 0, k));
        }
        let mut particle = Vec::new();
        l.features(2, 0, &mut |k| particle.push(k));
        assert_eq!(particle, vec![PairKey::VertexTriangle(4, 0)]);
    }
}
