//! A contact pair's kinematics at one time and the slab arithmetic of its shape: four vertex
//! slots for a VT or EE pair, six for a triangle pair.

use glam::DVec3;

use crate::kds::slab::{
    edge_edge_closest, failure_time, fuzzy_schedule, holds, no_budget, slab_through,
    triangles_closest, vertex_triangle_closest, within_budget, ClosestPoints, ClosingBudget, Slab,
};
use crate::penalty::closest::{edge_edge, triangle_triangle, vertex_triangle, TriangleFeature};
use crate::penalty::{ContactKey, PairKey};

/// Closest distance of a feature pair at positions `x`.
pub(in crate::engine) fn feature_distance(key: PairKey, x: &[DVec3; 4]) -> f64 {
    match key {
        PairKey::VertexTriangle(..) => vertex_triangle(x[0], x[1], x[2], x[3]).distance,
        PairKey::EdgeEdge(..) => edge_edge(x[0], x[1], x[2], x[3]).distance,
    }
}

/// Closest distance of feature pair `feature` of a triangle pair at positions `x`.
pub(super) fn local_feature_distance(feature: TriangleFeature, x: &[DVec3; 6]) -> f64 {
    let [p, a, b, c] = feature.verts().map(|k| x[k]);
    match feature {
        TriangleFeature::VertexTriangle(_) => vertex_triangle(p, a, b, c).distance,
        TriangleFeature::EdgeEdge(_) => edge_edge(p, a, b, c).distance,
    }
}

/// The first four of a pair's six vertex slots: a feature pair's.
pub(super) fn first_four<T>(x: &[T; 6]) -> &[T; 4] {
    x.first_chunk().expect("six slots hold four")
}

/// Evaluates `$body` with `$x` (and each further name) bound to the first four or all six of
/// the given six-slot arrays, by the shape of contact pair `$key`, so that the slab functions
/// run on arrays of the pair's own length.
macro_rules! at_shape {
    ($key:expr, |$($x:ident),+| $body:expr) => {
        match $key {
            ContactKey::Triangles(..) => $body,
            ContactKey::Feature(_) => {
                $(let $x = first_four($x);)+
                $body
            }
        }
    };
}

/// Widens a feature pair's four-vertex budget to the six slots of the pair table.
fn widen<const N: usize>(budget: ClosingBudget<N>) -> ClosingBudget<6> {
    let mut out = no_budget();
    out[..N].copy_from_slice(&budget);
    out
}

/// [`within_budget`] for a pair of shape `key` (velocities and budget in six slots).
pub(super) fn within_budget_at_shape(
    key: ContactKey,
    slab: &Slab,
    v: &[DVec3; 6],
    budget: &ClosingBudget<6>,
) -> bool {
    at_shape!(key, |v, budget| within_budget(
        slab,
        v,
        key.a_count(),
        budget
    ))
}

/// A contact pair's vertices at one time, side A first, in six slots (a feature pair uses the
/// first four), and the slab arithmetic of its shape.
#[derive(Clone, Copy, Debug)]
pub(super) struct Motion {
    pub(super) key: ContactKey,
    pub(super) x: [DVec3; 6],
    pub(super) v: [DVec3; 6],
}

impl Motion {
    /// The pair's closest points (computed once per look: the distance and the slab both
    /// read them).
    pub(super) fn closest(&self) -> ClosestPoints {
        let (x, v) = (&self.x, &self.v);
        match self.key {
            ContactKey::Feature(PairKey::VertexTriangle(..)) => {
                vertex_triangle_closest(first_four(x), first_four(v))
            }
            ContactKey::Feature(PairKey::EdgeEdge(..)) => {
                edge_edge_closest(first_four(x), first_four(v))
            }
            ContactKey::Triangles(..) => triangles_closest(x, v),
        }
    }

    /// A slab of gap `eta` for the pair, from its closest points `closest` ([`Self::closest`]);
    /// `None` where none certifies ([`slab_through`]).
    pub(super) fn slab(&self, closest: &ClosestPoints, eta: f64) -> Option<Slab> {
        let (x, v, a) = (&self.x, &self.v, self.key.a_count());
        at_shape!(self.key, |x, v| slab_through(closest, x, v, a, eta))
    }

    /// When to look at a slab built or re-timed now (an offset), and the budget of kicks it
    /// tolerates until then: its exact failure time, or a fuzzy schedule with quality loss
    /// `quality_loss`.
    pub(super) fn schedule(
        &self,
        slab: &Slab,
        quality_loss: Option<f64>,
    ) -> (f64, ClosingBudget<6>) {
        let (x, v, a) = (&self.x, &self.v, self.key.a_count());
        at_shape!(self.key, |x, v| match quality_loss {
            Some(ql) => {
                let (dt, budget) = fuzzy_schedule(slab, x, v, a, ql);
                (dt, widen(budget))
            }
            None => (failure_time(slab, x, v, a), no_budget()),
        })
    }

    /// [`holds`] for the pair at offset `dt`.
    pub(super) fn holds(&self, slab: &Slab, dt: f64) -> bool {
        let (x, v, a) = (&self.x, &self.v, self.key.a_count());
        at_shape!(self.key, |x, v| holds(slab, x, v, a, dt))
    }

    /// The pair's closest distance.
    pub(super) fn distance(&self) -> f64 {
        match self.key {
            ContactKey::Feature(f) => feature_distance(f, first_four(&self.x)),
            ContactKey::Triangles(..) => {
                let x = &self.x;
                triangle_triangle([x[0], x[1], x[2]], [x[3], x[4], x[5]]).distance
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kds::slab::build_slab;
    use crate::test_rng::Rng;

    /// The closest points that a slab event computes once give the distance that the audit and
    /// the layers read, and the slab that the pair's positions alone build, bit for bit, for
    /// each shape of pair.
    #[test]
    fn one_closest_point_computation_gives_the_distance_and_the_slab_of_every_shape() {
        let mut rng = Rng(29);
        let keys = [
            ContactKey::Feature(PairKey::VertexTriangle(0, 0)),
            ContactKey::Feature(PairKey::EdgeEdge(0, 1)),
            ContactKey::Triangles(0, 1),
        ];
        let mut slabs = 0;
        for _ in 0..300 {
            for key in keys {
                let offset = rng.vec(2.0);
                let x: [DVec3; 6] = std::array::from_fn(|k| {
                    let side = if k < key.a_count() {
                        DVec3::ZERO
                    } else {
                        offset
                    };
                    side + rng.vec(1.0)
                });
                let motion = Motion {
                    key,
                    x,
                    v: std::array::from_fn(|_| rng.vec(5.0)),
                };
                let closest = motion.closest();
                assert_eq!(closest.distance.to_bits(), motion.distance().to_bits());
                let eta = rng.uniform(0.01, 1.0);
                let (x, v, a) = (&motion.x, &motion.v, key.a_count());
                let built = at_shape!(key, |x, v| build_slab(x, v, a, eta));
                assert_eq!(motion.slab(&closest, eta), built);
                slabs += usize::from(built.is_some());
            }
        }
        // Measured: 820 of the 900 pairs certify, so both sides of the slab comparison are met.
        assert!(slabs > 300, "{slabs} of 900 pairs certified");
    }
}
