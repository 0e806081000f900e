//! The feature pairs of a pair of buckets (groups of up to [`MAX_GROUP`] neighbouring leaves),
//! each once: [`Leaves::group_features`], and the near ones among them, screened on two axes
//! before the whole test ([`References::near_group_features`]).

use glam::DVec3;

use super::references::References;
use super::table::{Feature, LeafId, Leaves, NO_EDGE, NO_VERTEX};
use crate::kds::kdop::{AxisExtent, AxisHint, Volume};
use crate::mesh::{EdgeId, TriangleId};
use crate::penalty::PairKey;
use crate::state::VertexId;

/// Most leaves in a group (see [`Leaves::group_features`]).
pub(crate) const MAX_GROUP: usize = 4;

/// The distinct vertices, edges and triangles of a few leaves, on the stack.
struct Group {
    verts: [VertexId; 3 * MAX_GROUP],
    edges: [EdgeId; 3 * MAX_GROUP],
    tris: [TriangleId; MAX_GROUP],
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

impl Leaves {
    /// Calls `found` for every VT and EE pair sharing no vertex between a primitive of the
    /// leaves `a` and one of the leaves `b`, or, for `b = None`, between two primitives of the
    /// leaves `a`: the union of `features` over those leaf pairs, with the
    /// repeats of shared vertices and edges left out. At most `MAX_GROUP` leaves a side.
    pub(crate) fn group_features(
        &self,
        a: &[LeafId],
        b: Option<&[LeafId]>,
        found: &mut impl FnMut(PairKey),
    ) {
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
                    if marked && !self.triangle(t).contains(&v) && !apart() {
                        found(Feature::vertex_triangle(v, t));
                    }
                }
            }
        }
        for (i, &e) in ga.edges().iter().enumerate() {
            let ev = self.edge(e);
            // Within one group, each unordered edge pair once.
            let first = if gb.is_some() { 0 } else { i + 1 };
            for (k, &f) in h.edges().iter().enumerate().skip(first) {
                let fv = self.edge(f);
                let apart = || screen.as_ref().is_some_and(|s| s.edge_edge(i, k));
                let marked = is(ga.marked[1], i) || is(h.marked[1], k);
                if marked && e != f && !ev.iter().any(|v| fv.contains(v)) && !apart() {
                    found(Feature::edge_edge(e, f));
                }
            }
        }
    }
}

impl References {
    /// Calls `found` for the feature pairs of leaves `a` and `b` ([`Leaves::group_features`])
    /// with a vertex that `marked` holds that are [`near`](Self::near), in the same order.
    /// Where volumes of kind `V` have screening axes ([`Volume::screening_axes`]), each vertex
    /// of the two groups is projected on them once, and a pair apart there (or whose triangles
    /// are) needs no whole test: most pairs of leaves that overlap are neighbours on a surface,
    /// and most of their feature pairs are apart on the first axis tried (89% on the crushed
    /// compactor).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn near_group_features<V: Volume>(
        &self,
        leaves: &Leaves,
        (a, b): (&[LeafId], Option<&[LeafId]>),
        pad: f64,
        span: (f64, f64),
        hints: [&AxisHint; 2],
        marked: impl Fn(VertexId) -> bool,
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
                *x = AxisExtent::of_paths(&[refs.path(v)], vt[n], u);
            }
            // Edges project on the EE test's axis; its vertices are projected again where it
            // differs from the VT test's.
            let ends = if ee[n] == vt[n] {
                &*verts
            } else {
                for (x, &v) in on_ee.iter_mut().zip(g.verts()) {
                    *x = AxisExtent::of_paths(&[refs.path(v)], ee[n], u);
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

/// Adds `x` to the first `len` entries of `list` if it is not there; its place in the list.
fn add<T: Copy + PartialEq>(list: &mut [T], len: &mut usize, x: T) -> usize {
    match list[..*len].iter().position(|&y| y == x) {
        Some(k) => k,
        None => {
            list[*len] = x;
            *len += 1;
            *len - 1
        }
    }
}

impl Group {
    /// The primitives of leaves `ls` (at most [`MAX_GROUP`]); those holding a vertex that
    /// `marked` holds are marked.
    fn of(leaves: &Leaves, ls: &[LeafId], marked: &impl Fn(VertexId) -> bool) -> Self {
        debug_assert!(ls.len() <= MAX_GROUP);
        let mut g = Group {
            verts: [NO_VERTEX; 3 * MAX_GROUP],
            edges: [NO_EDGE; 3 * MAX_GROUP],
            tris: [TriangleId::new(u32::MAX); MAX_GROUP],
            len: [0; 3],
            vert_tris: [0; 3 * MAX_GROUP],
            edge_tris: [0; 3 * MAX_GROUP],
            marked: [0; 3],
            tri_verts: [[0; 3]; MAX_GROUP],
            edge_verts: [[0; 2]; 3 * MAX_GROUP],
        };
        for &l in ls {
            let slots = leaves.vertex_slots(l);
            let marks = slots.map(|v| v != NO_VERTEX && marked(v));
            let mut places = [0u8; 3];
            for (j, &v) in slots.iter().enumerate().filter(|&(_, &v)| v != NO_VERTEX) {
                let k = add(&mut g.verts, &mut g.len[0], v);
                g.marked[0] |= u16::from(marks[j]) << k;
                places[j] = k as u8;
            }
            let place = |v: VertexId| {
                let j = slots.iter().position(|&w| w == v);
                places[j.expect("a leaf's triangle and edges are on its vertices")]
            };
            let bit = match leaves.tri(l) {
                None => 0,
                Some(t) => {
                    let k = add(&mut g.tris, &mut g.len[2], t);
                    g.marked[2] |= u16::from(marks.contains(&true)) << k;
                    g.tri_verts[k] = leaves.triangle(t).map(place);
                    1 << k
                }
            };
            for (&v, &k) in slots.iter().zip(&places) {
                if v != NO_VERTEX {
                    g.vert_tris[k as usize] |= bit;
                }
            }
            for e in leaves.edges_of(l) {
                let k = add(&mut g.edges, &mut g.len[1], e);
                g.edge_tris[k] |= bit;
                let ends = leaves.edge(e).map(place);
                let marked_end = ends.iter().any(|&p| g.marked[0] >> p & 1 != 0);
                g.marked[1] |= u16::from(marked_end) << k;
                g.edge_verts[k] = ends;
            }
        }
        g
    }

    fn verts(&self) -> &[VertexId] {
        &self.verts[..self.len[0]]
    }

    fn edges(&self) -> &[EdgeId] {
        &self.edges[..self.len[1]]
    }

    fn tris(&self) -> &[TriangleId] {
        &self.tris[..self.len[2]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kds::kdop::Dop18;
    use crate::state::{VertexKind, VertexState};
    use crate::test_rng::Rng;

    /// The screened search hands over exactly the marked near feature pairs of the unscreened
    /// one, in the same order, on a crumpled sheet with random velocities (some pairs near,
    /// most apart), over groups of one to four leaves, within one group and between two.
    #[test]
    fn screened_feature_pairs_are_the_marked_near_ones() {
        let sheet = crate::mesh::sheet(6, 6, 3.0, 3.0).unwrap();
        let topo = crate::mesh::Topology::build(&sheet).unwrap();
        let n = sheet.positions.len();
        let l = Leaves::new(topo.edges.clone(), sheet.triangles.clone(), n);
        let mut rng = Rng(11);
        // Each vertex's reference path ends at its position moved by up to 0.2, at the time
        // (0) its state is given at.
        let mut state = VertexState::default();
        for &x in &sheet.positions {
            state.x.push(x + rng.vec(0.2));
            state.v.push(rng.vec(1.0));
            state.t.push(0.0);
            state.mass.push(1.0);
            state.inv_mass.push(1.0);
            state.kind.push(VertexKind::Free);
        }
        let mut refs = References::new(n);
        refs.reset_all(&state, 0.0);
        let hints = [AxisHint::new(true), AxisHint::new(true)];
        let (mut near, mut apart) = (0, 0);
        for case in 0..400 {
            let mut group = || -> Vec<LeafId> {
                let n = 1 + (rng.next_u64() % MAX_GROUP as u64) as usize;
                (0..n)
                    .map(|_| LeafId::new((rng.next_u64() % l.len() as u64) as u32))
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
            let marked = |v: VertexId| case % 2 == 0 || marks >> (v.get() % 64) & 1 != 0;
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
}
