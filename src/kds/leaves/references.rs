//! The vertices' reference trajectories over the horizon (see the parent module's docs) and
//! the test that filters feature pairs by them ([`References::near`]).

use glam::DVec3;
use rayon::prelude::*;

use super::table::{Feature, LeafId, Leaves};
use crate::kds::kdop::{AxisHint, Path, Volume};
use crate::kds::PAR_MIN_LEN;
use crate::penalty::PairKey;
use crate::profiling::zone;
use crate::state::{VertexId, VertexState};

/// Reference trajectories of the vertices over the horizon: one [`Path`] a vertex, position
/// and velocity side by side, since every use reads both.
#[derive(Debug, Default)]
pub(crate) struct References {
    paths: Vec<Path>,
}

impl References {
    /// References for `n` vertices (all at the origin until [`reset_all`](Self::reset_all)).
    pub(crate) fn new(n: usize) -> Self {
        let still = Path::new(DVec3::ZERO, DVec3::ZERO);
        Self {
            paths: vec![still; n],
        }
    }

    /// Vertex `v`'s reference path.
    #[inline]
    pub(crate) fn path(&self, v: VertexId) -> &Path {
        &self.paths[v.index()]
    }

    /// The reference position of vertex `v` at `s`.
    #[inline]
    pub(crate) fn at(&self, v: VertexId, s: f64, t_end: f64) -> DVec3 {
        self.path(v).at(s, t_end)
    }

    /// Makes vertex `v`'s current trajectory its reference.
    #[inline]
    pub(crate) fn reset(&mut self, v: VertexId, state: &VertexState, t_end: f64) {
        self.paths[v.index()] = Self::current(state, v.index(), t_end);
    }

    /// Makes every vertex's current trajectory its reference.
    pub(crate) fn reset_all(&mut self, state: &VertexState, t_end: f64) {
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
    pub(crate) fn near<V: Volume>(
        &self,
        leaves: &Leaves,
        key: PairKey,
        pad: f64,
        span: (f64, f64),
        hints: [&AxisHint; 2],
    ) -> bool {
        let path = |v: VertexId| self.path(v);
        match Feature::of(key) {
            Feature::VertexTriangle(v, t) => {
                let [a, b, c] = leaves.triangle(t);
                V::paths_meet(
                    &[path(v)],
                    &[path(a), path(b), path(c)],
                    pad,
                    span,
                    hints[0],
                )
            }
            Feature::EdgeEdge(e, f) => {
                let [a, b] = leaves.edge(e);
                let [c, d] = leaves.edge(f);
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

    /// Whether vertex `v` stays within `slack` of its reference from `t` to `t_end`.
    #[inline]
    pub(crate) fn follows(
        &self,
        v: VertexId,
        state: &VertexState,
        t: f64,
        t_end: f64,
        slack: f64,
    ) -> bool {
        let i = v.index();
        (state.position_at(i, t) - self.at(v, t, t_end)).length_squared() <= slack * slack
            && (state.position_at(i, t_end) - self.paths[i].end).length_squared() <= slack * slack
    }

    /// Appends the reference points of leaf `l` at `t` and at `t_end` to `p0` and `p1`.
    pub(crate) fn leaf_points(
        &self,
        leaves: &Leaves,
        l: LeafId,
        t: f64,
        t_end: f64,
        p0: &mut Vec<DVec3>,
        p1: &mut Vec<DVec3>,
    ) {
        for v in leaves.verts(l) {
            p0.push(self.at(v, t, t_end));
            p1.push(self.path(v).end);
        }
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.paths.capacity() * std::mem::size_of::<Path>()
    }
}
