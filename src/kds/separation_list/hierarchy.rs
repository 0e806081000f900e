//! What a separation list bounds: the leaves, their vertices' reference paths and the hierarchy
//! of volumes over them, with the pads the volumes are grown by, and the feature-pair tests
//! that read them.

use crate::kds::bvh::{Bvh, NodeId};
use crate::kds::kdop::{AxisHint, Volume};
use crate::kds::leaves::{Leaves, References};
use crate::penalty::PairKey;
use crate::state::{VertexId, VertexState};

/// A rebuild replaces the hierarchy when refits have grown its
/// [`Bvh::spread`](crate::kds::bvh::Bvh::spread) past this multiple of its spread when built:
/// the internal volumes then hold leaves that have drifted apart, and the list holds many pairs
/// that a fresh hierarchy would not need.
const LOOSE_TREE: f64 = 2.0;

/// The leaves, references and hierarchy of a separation list (see the module docs).
#[derive(Debug)]
pub(super) struct Hierarchy<V> {
    pub(super) leaves: Leaves,
    pub(super) refs: References,
    pub(super) bvh: Bvh<V>,
    /// Half of `eta1`: two leaves apart are at least `eta1` apart.
    pub(super) margin: f64,
    /// How far a vertex may stray from its reference path without a refit.
    pub(super) slack: f64,
    /// [`Bvh::spread`] just after the hierarchy was built (`+inf` before the first rebuild).
    built_spread: f64,
    /// Axis orders of the VT and EE feature-pair tests.
    near_axes: [AxisHint; 2],
}

impl<V: Volume> Hierarchy<V> {
    /// A hierarchy over `leaves` at their positions in `state` at time 0; `eta1` is the first
    /// layer's thickness, `slack` the references' (see
    /// [`SeparationList::new`](super::SeparationList::new)).
    pub(super) fn new(leaves: Leaves, state: &VertexState, eta1: f64, slack: f64) -> Self {
        Self {
            refs: References::new(state.len()),
            bvh: Bvh::over(&leaves, state, 0.0),
            leaves,
            margin: 0.5 * eta1,
            slack,
            built_spread: f64::INFINITY,
            near_axes: [AxisHint::new(false), AxisHint::new(false)],
        }
    }

    /// Turns adaptive axis ordering of the feature-pair tests on or off.
    pub(super) fn set_adaptive_axes(&mut self, on: bool) {
        self.near_axes.iter_mut().for_each(|h| h.set_adaptive(on));
    }

    /// What leaf volumes are grown by: the margin and the slack.
    pub(super) fn pad(&self) -> f64 {
        self.margin + self.slack
    }

    /// Refits every volume over `span`, from the references.
    pub(super) fn refit_all(&mut self, span: (f64, f64)) {
        let (pad, grow) = (self.pad(), self.slack);
        self.bvh
            .refit_all(&self.leaves, &self.refs, span, pad, grow);
    }

    /// Whether refits have let the hierarchy grow loose: its [`Bvh::spread`] is past
    /// [`LOOSE_TREE`] times its spread when built.
    pub(super) fn is_loose(&self) -> bool {
        self.bvh.spread() > LOOSE_TREE * self.built_spread
    }

    /// Notes the spread of a hierarchy just built and fitted.
    pub(super) fn note_built(&mut self) {
        self.built_spread = self.bvh.spread();
    }

    /// Replaces the hierarchy by one built over the leaves at `t` (not yet fitted); the old
    /// one goes first, so that the process never holds two.
    pub(super) fn replace(&mut self, state: &VertexState, t: f64) {
        self.bvh = Bvh::build(&[], |_, _| false, Bvh::placeholder());
        self.bvh = Bvh::over(&self.leaves, state, t);
    }

    /// Calls `found` for the feature pairs of leaf nodes `a` and `b` (within the bucket for
    /// `a == b`; [`Leaves::group_features`]).
    pub(super) fn node_features(&self, a: NodeId, b: NodeId, found: &mut impl FnMut(PairKey)) {
        let (Some(ba), Some(bb)) = (self.bvh.bucket(a), self.bvh.bucket(b)) else {
            return;
        };
        self.leaves
            .group_features(ba, (a != b).then_some(bb), found);
    }

    /// Calls `found` for the feature pairs of leaf nodes `a` and `b` with a vertex that `marked`
    /// holds that may come within `eta1` over `span`, the rest of the horizon
    /// ([`References::near_group_features`]).
    pub(super) fn near_node_features(
        &self,
        a: NodeId,
        b: NodeId,
        span: (f64, f64),
        marked: impl Fn(VertexId) -> bool,
        found: &mut impl FnMut(PairKey),
    ) {
        let (Some(ba), Some(bb)) = (self.bvh.bucket(a), self.bvh.bucket(b)) else {
            return;
        };
        let [vt, ee] = &self.near_axes;
        let buckets = (ba, (a != b).then_some(bb));
        (self.refs).near_group_features::<V>(
            &self.leaves,
            buckets,
            self.pad(),
            span,
            [vt, ee],
            marked,
            found,
        );
    }

    /// [`References::near`] over `span`, the rest of the horizon.
    pub(super) fn near(&self, key: PairKey, span: (f64, f64)) -> bool {
        let [vt, ee] = &self.near_axes;
        (self.refs).near::<V>(&self.leaves, key, self.pad(), span, [vt, ee])
    }

    /// Heap bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bvh.bytes() + self.refs.bytes()
    }
}
