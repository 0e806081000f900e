//! Contact constraints of the implicit step (the paper's §3.2): vertex-triangle and edge-edge
//! pairs closer than the safety distance `delta` at the start of the step, and pairs that
//! continuous collision detection finds on the motion to a tentative end of the step, each
//! linearized (at the time of impact for the latter) as the velocity constraint
//!
//! ```text
//! n . sum w_k v_k >= -g0 / h,   g0 = n . sum w_k x0_k - delta
//! ```
//!
//! (the separation along the normal at the start of the step, minus `delta`). Detection is the
//! synchronous baseline's: its broad phase, its robust CCD ([`crate::sync::ccd`]), and its
//! constraint geometry ([`Constraint`]). The friction pyramid of each contact is aligned with
//! the unconstrained tangential relative velocity (§3.4), with any tangent when that is zero.

use glam::DVec3;

use super::ica::ContactRow;
use crate::sync::broad;
use crate::sync::constraint::{any_perpendicular, Constraint};
use crate::sync::filter::{self, GAP_FRACTION};
use crate::sync::primitives::{Feature, Primitives};

/// Finds the contacts of a scene's triangles.
#[derive(Clone, Debug)]
pub(crate) struct Detector {
    prims: Primitives,
    delta: f64,
    gap: f64,
}

impl Detector {
    /// A detector for `triangles` over `vertex_count` vertices with safety distance `delta`;
    /// CCD reports pairs that come within a thousandth of it.
    pub(crate) fn new(triangles: &[[u32; 3]], vertex_count: usize, delta: f64) -> Self {
        Self {
            prims: Primitives::new(triangles, vertex_count),
            delta,
            gap: GAP_FRACTION * delta,
        }
    }

    /// The safety distance.
    pub(crate) fn delta(&self) -> f64 {
        self.delta
    }

    /// The feature pairs that can come within `delta` during the motion `x + s h v`.
    pub(crate) fn candidates(
        &self,
        x: &[DVec3],
        v: &[DVec3],
        h: f64,
        inv_mass: &[f64],
    ) -> Vec<Feature> {
        let end: Vec<DVec3> = x.iter().zip(v).map(|(&p, &u)| p + h * u).collect();
        broad::candidates(&self.prims, x, &end, 0.5 * self.delta, inv_mass)
    }

    /// The pairs of `candidates` closer than `delta` at `x`.
    pub(crate) fn proximity(
        &self,
        candidates: &[Feature],
        x: &[DVec3],
        v: &[DVec3],
        h: f64,
    ) -> Vec<Constraint> {
        filter::proximities(candidates, x, v, h, self.delta, self.gap)
    }

    /// The collisions of the motion `x + s h v` among `candidates`.
    pub(crate) fn collisions(
        &self,
        candidates: &[Feature],
        x: &[DVec3],
        v: &[DVec3],
        h: f64,
    ) -> Vec<Constraint> {
        filter::collisions(candidates, x, v, h, self.gap)
    }

    /// The row of constraint `c` for a step of length `h` from `x0`, with the friction pyramid
    /// (coefficient `mu`) aligned with the relative velocity of `v_star`; multipliers zero.
    pub(crate) fn row(
        &self,
        c: &Constraint,
        x0: &[DVec3],
        v_star: &[DVec3],
        h: f64,
        mu: f64,
    ) -> ContactRow {
        let n = c.normal;
        let rel = c.relative(v_star);
        let tangential = rel - n.dot(rel) * n;
        let speed = tangential.length();
        let t1 = if speed > 0.0 && speed.is_finite() {
            tangential / speed
        } else {
            any_perpendicular(n)
        };
        ContactRow {
            verts: c.feature.verts,
            weights: c.weights,
            dirs: [n, t1, n.cross(t1)],
            target: (self.delta - c.separation(x0)) / h,
            mu,
            lambda: 0.0,
            gamma: [0.0; 2],
        }
    }
}
