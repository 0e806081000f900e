//! One contact constraint between a vertex and a triangle or two edges (thesis §3.3): four
//! vertices with signed weights and a unit normal.
//!
//! The weights are those of the closest points, negative on the first primitive's side (the
//! triangle, or the first edge) and positive on the second (the vertex, or the second edge), so
//! `sum w_k x_k` is the vector from the first primitive's closest point to the second's, and
//! `sum w_k = 0`: an impulse distributed with these weights conserves momentum. The normal
//! points from the first primitive to the second; the constraint is `n . sum w_k v_k >= target`.

use glam::DVec3;

use super::ccd::Kind;
use super::primitives::Feature;
use crate::penalty::closest;

/// A contact constraint (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Constraint {
    /// The feature pair.
    pub feature: Feature,
    /// Signed weights of the four vertices.
    pub weights: [f64; 4],
    /// Unit normal from the first primitive to the second.
    pub normal: DVec3,
    /// Distance between the primitives where the constraint was made.
    pub distance: f64,
}

impl Constraint {
    /// The constraint of `feature` at positions `p` (its four vertices), with the normal
    /// oriented by the positions `start` at the start of the step (the second primitive on the
    /// positive side) or, when they are level, against the displacement `disp` over the step (so
    /// the pair approaches along the normal).
    ///
    /// The normal is the direction between the closest points when they are more than `gap`
    /// apart; closer than that (at a collision) it is the triangle normal, or the cross product
    /// of the edges (thesis §3.4), with the closest-point direction at `start` as the fallback
    /// for parallel edges and degenerate triangles.
    pub(crate) fn new(
        feature: Feature,
        p: [DVec3; 4],
        start: [DVec3; 4],
        disp: [DVec3; 4],
        gap: f64,
    ) -> Self {
        let (weights, distance, geometric) = match feature.kind {
            Kind::VertexTriangle => {
                let c = closest::vertex_triangle(p[0], p[1], p[2], p[3]);
                let w = c.weights;
                let n = (p[2] - p[1]).cross(p[3] - p[1]);
                ([1.0, -w[0], -w[1], -w[2]], c.distance, n)
            }
            Kind::EdgeEdge => {
                let c = closest::edge_edge(p[0], p[1], p[2], p[3]);
                let n = (p[1] - p[0]).cross(p[3] - p[2]);
                ([c.s - 1.0, -c.s, 1.0 - c.t, c.t], c.distance, n)
            }
        };
        let combine = |x: &[DVec3; 4]| -> DVec3 { (0..4).map(|k| weights[k] * x[k]).sum() };
        let rel = combine(&p);
        let rel_start = combine(&start);
        let mut normal = if distance > gap {
            rel / rel.length()
        } else {
            unit_or_zero(geometric)
        };
        if normal == DVec3::ZERO {
            normal = unit_or_zero(rel_start);
        }
        if normal == DVec3::ZERO {
            normal = any_perpendicular(p[1] - p[0]);
        }
        let side = normal.dot(rel_start);
        let flip = if side.abs() > 1e-3 * gap {
            side < 0.0
        } else {
            normal.dot(combine(&disp)) > 0.0
        };
        if flip {
            normal = -normal;
        }
        Self {
            feature,
            weights,
            normal,
            distance,
        }
    }

    /// The relative velocity `sum w_k v_k` of the pair.
    pub(crate) fn relative(&self, v: &[DVec3]) -> DVec3 {
        (0..4)
            .map(|k| self.weights[k] * v[self.feature.verts[k] as usize])
            .sum()
    }

    /// The signed separation along the normal, `n . sum w_k x_k`, at positions `x`.
    pub(crate) fn separation(&self, x: &[DVec3]) -> f64 {
        self.normal.dot(self.relative(x))
    }

    /// `sum w_k^2 / m_k`: how much a unit impulse changes the relative velocity.
    pub(crate) fn inverse_mass(&self, inv_mass: &[f64]) -> f64 {
        (0..4)
            .map(|k| self.weights[k] * self.weights[k] * inv_mass[self.feature.verts[k] as usize])
            .sum()
    }

    /// Changes the relative velocity by `delta` with the smallest kinetic energy change:
    /// vertex `k` gets `w_k delta / (m_k sum w^2/m)`. Returns false (changing nothing) if every
    /// vertex is immovable.
    pub(crate) fn change_relative(&self, delta: DVec3, v: &mut [DVec3], inv_mass: &[f64]) -> bool {
        let w = self.inverse_mass(inv_mass);
        if w <= 0.0 {
            return false;
        }
        for k in 0..4 {
            let i = self.feature.verts[k] as usize;
            v[i] += (inv_mass[i] * self.weights[k] / w) * delta;
        }
        true
    }
}

fn unit_or_zero(n: DVec3) -> DVec3 {
    let l = n.length();
    if l > 0.0 && l.is_finite() {
        n / l
    } else {
        DVec3::ZERO
    }
}

/// A unit vector perpendicular to `d` (or +y for a zero `d`).
pub(crate) fn any_perpendicular(d: DVec3) -> DVec3 {
    let axis = if d.x.abs() < 0.5 * d.length() {
        DVec3::X
    } else {
        DVec3::Y
    };
    let n = unit_or_zero(d.cross(axis));
    if n == DVec3::ZERO {
        DVec3::Y
    } else {
        n
    }
}
