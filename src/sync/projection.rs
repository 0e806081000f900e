//! Inelastic projection (thesis §3.6) and its friction (§3.7) on one impact zone.
//!
//! With the normalised constraint gradients `G` (one row per constraint, `g_c = w_ck n_c /
//! |w_c|` on vertex `k`), the projection solves `G M^-1 G^T lambda = G qdot - t` and sets
//! `qdot' = qdot - M^-1 G^T lambda`: the mass-weighted closest velocity whose normal relative
//! velocities are the targets `t` (zero in the thesis; a small separating speed here, see
//! [`super::filter`]). Multipliers of either sign are allowed (bilateral, §3.6). The system can be
//! singular (redundant or parallel constraints), so it is solved by conjugate gradients on the
//! Tikhonov-regularised matrix, matrix-free, with sums in constraint order (deterministic).
//!
//! Friction projects out every relative velocity of the zone's constraints (`H`, three rows per
//! constraint) to get `qdot_fix`; the sliding part `qdot' - qdot_fix` is reduced by
//! `mu |qdot' - qdot|`, at most to zero.

use glam::DVec3;

use super::constraint::Constraint;

/// Relative regularisation of the normal equations.
const REGULARISATION: f64 = 1e-10;
/// Relative residual at which conjugate gradients stop.
const CG_TOLERANCE: f64 = 1e-12;

/// What a projection did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ProjectionReport {
    /// Conjugate-gradient iterations (normal solve plus friction solve).
    pub iterations: u32,
}

/// Projects the velocities `v` of the zone with `constraints` (targets `targets`, one per
/// constraint), then applies friction `mu`. `scratch` is a per-vertex buffer, all zero on entry
/// and on return.
pub(crate) fn project(
    constraints: &[Constraint],
    targets: &[f64],
    mu: f64,
    v: &mut [DVec3],
    inv_mass: &[f64],
    scratch: &mut [DVec3],
) -> ProjectionReport {
    let k = constraints.len();
    let norms: Vec<f64> = constraints
        .iter()
        .map(|c| c.weights.iter().map(|w| w * w).sum::<f64>().sqrt())
        .collect();
    let before: Vec<(u32, DVec3)> = zone_vertices(constraints, inv_mass)
        .into_iter()
        .map(|i| (i, v[i as usize]))
        .collect();
    // Normal projection: unknowns are scalars, one per constraint.
    let row = |c: usize, k: usize| constraints[c].weights[k] / norms[c] * constraints[c].normal;
    let rhs: Vec<f64> = (0..k)
        .map(|c| {
            let g: f64 = (0..4)
                .map(|j| row(c, j).dot(v[constraints[c].feature.verts[j] as usize]))
                .sum();
            g - targets[c] / norms[c]
        })
        .collect();
    let apply = |x: &[f64], out: &mut [f64], scratch: &mut [DVec3]| {
        scatter(constraints, inv_mass, scratch, |c, j| row(c, j) * x[c]);
        for (c, o) in out.iter_mut().enumerate() {
            *o = (0..4)
                .map(|j| row(c, j).dot(scratch[constraints[c].feature.verts[j] as usize]))
                .sum();
        }
        clear(constraints, scratch);
    };
    let (lambda, mut iterations) = conjugate_gradient(&rhs, apply, scratch);
    scatter(constraints, inv_mass, scratch, |c, j| row(c, j) * lambda[c]);
    for &(i, _) in &before {
        v[i as usize] -= scratch[i as usize];
    }
    clear(constraints, scratch);
    if mu > 0.0 {
        iterations += friction(constraints, &norms, mu, &before, v, inv_mass, scratch);
    }
    ProjectionReport { iterations }
}

/// §3.7: reduces the zone's sliding velocity by `mu` times the size of the projection's change.
fn friction(
    constraints: &[Constraint],
    norms: &[f64],
    mu: f64,
    before: &[(u32, DVec3)],
    v: &mut [DVec3],
    inv_mass: &[f64],
    scratch: &mut [DVec3],
) -> u32 {
    let k = constraints.len();
    let weight = |c: usize, j: usize| constraints[c].weights[j] / norms[c];
    // Unknowns are 3-vectors per constraint, flattened (x, y, z per constraint).
    let rhs: Vec<f64> = (0..k)
        .flat_map(|c| {
            let r: DVec3 = (0..4)
                .map(|j| weight(c, j) * v[constraints[c].feature.verts[j] as usize])
                .sum();
            r.to_array()
        })
        .collect();
    let vec3 = |x: &[f64], c: usize| DVec3::new(x[3 * c], x[3 * c + 1], x[3 * c + 2]);
    let apply = |x: &[f64], out: &mut [f64], scratch: &mut [DVec3]| {
        scatter(constraints, inv_mass, scratch, |c, j| {
            weight(c, j) * vec3(x, c)
        });
        for c in 0..k {
            let r: DVec3 = (0..4)
                .map(|j| weight(c, j) * scratch[constraints[c].feature.verts[j] as usize])
                .sum();
            out[3 * c..3 * c + 3].copy_from_slice(&r.to_array());
        }
        clear(constraints, scratch);
    };
    let (lambda, iterations) = conjugate_gradient(&rhs, apply, scratch);
    // The sliding velocity is M^-1 H^T lambda.
    scatter(constraints, inv_mass, scratch, |c, j| {
        weight(c, j) * vec3(&lambda, c)
    });
    let slide_norm = before
        .iter()
        .map(|&(i, _)| scratch[i as usize].length_squared())
        .sum::<f64>()
        .sqrt();
    let change = before
        .iter()
        .map(|&(i, old)| (v[i as usize] - old).length_squared())
        .sum::<f64>()
        .sqrt();
    if slide_norm > 0.0 {
        let scale = (mu * change).min(slide_norm) / slide_norm;
        for &(i, _) in before {
            v[i as usize] -= scale * scratch[i as usize];
        }
    }
    clear(constraints, scratch);
    iterations
}

/// The free vertices of the constraints, sorted and unique.
fn zone_vertices(constraints: &[Constraint], inv_mass: &[f64]) -> Vec<u32> {
    let mut out: Vec<u32> = constraints
        .iter()
        .flat_map(|c| c.feature.verts)
        .filter(|&i| inv_mass[i as usize] > 0.0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `scratch[i] += inv_mass[i] * term(c, j)` for every vertex `i = verts[j]` of every constraint
/// `c`, in constraint order.
fn scatter(
    constraints: &[Constraint],
    inv_mass: &[f64],
    scratch: &mut [DVec3],
    term: impl Fn(usize, usize) -> DVec3,
) {
    for (c, con) in constraints.iter().enumerate() {
        for j in 0..4 {
            let i = con.feature.verts[j] as usize;
            if inv_mass[i] > 0.0 {
                scratch[i] += inv_mass[i] * term(c, j);
            }
        }
    }
}

fn clear(constraints: &[Constraint], scratch: &mut [DVec3]) {
    for c in constraints {
        for &i in &c.feature.verts {
            scratch[i as usize] = DVec3::ZERO;
        }
    }
}

/// Solves `(A + eps I) x = b` for symmetric positive semi-definite `A` given as `apply(x, out)`,
/// with `eps` a tiny multiple of the mean diagonal (estimated from `b`'s scale); returns the
/// solution and the iterations used.
fn conjugate_gradient<S: ?Sized>(
    b: &[f64],
    mut apply: impl FnMut(&[f64], &mut [f64], &mut S),
    scratch: &mut S,
) -> (Vec<f64>, u32) {
    let n = b.len();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut x = vec![0.0; n];
    let mut ap = vec![0.0; n];
    // Regularisation from the matrix's scale: A's diagonal mean via one product with ones.
    let ones = vec![1.0; n];
    apply(&ones, &mut ap, scratch);
    let scale = ap.iter().map(|a| a.abs()).sum::<f64>() / n.max(1) as f64;
    let eps = REGULARISATION * scale.max(f64::MIN_POSITIVE);
    let mut r = b.to_vec();
    let mut p = r.clone();
    let mut rr = dot(&r, &r);
    let stop = CG_TOLERANCE * CG_TOLERANCE * rr;
    let max_iterations = (2 * n).max(50) as u32;
    let mut iterations = 0;
    while iterations < max_iterations && rr > stop && rr > 0.0 {
        apply(&p, &mut ap, scratch);
        for (a, q) in ap.iter_mut().zip(&p) {
            *a += eps * q;
        }
        let pap = dot(&p, &ap);
        if pap <= 0.0 || !pap.is_finite() {
            break;
        }
        let alpha = rr / pap;
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        let next = dot(&r, &r);
        let beta = next / rr;
        rr = next;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
        iterations += 1;
    }
    (x, iterations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::ccd::Kind;
    use crate::sync::primitives::Feature;

    #[test]
    fn projection_meets_redundant_targets_and_keeps_momentum() {
        // A vertex against a triangle, twice (a redundant, singular system), plus an edge pair.
        let vt = Constraint {
            feature: Feature {
                kind: Kind::VertexTriangle,
                verts: [0, 1, 2, 3],
            },
            weights: [1.0, -0.2, -0.3, -0.5],
            normal: DVec3::Y,
            distance: 0.0,
        };
        let ee = Constraint {
            feature: Feature {
                kind: Kind::EdgeEdge,
                verts: [1, 2, 4, 5],
            },
            weights: [-0.5, -0.5, 0.5, 0.5],
            normal: DVec3::new(0.0, 0.6, 0.8),
            distance: 0.0,
        };
        let constraints = [vt, vt, ee];
        let targets = [0.5, 0.5, 0.0];
        let mass = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0];
        let inv_mass = mass.map(|m| 1.0 / m);
        let mut v: Vec<DVec3> = (0..6)
            .map(|i| DVec3::new(i as f64, -2.0 * i as f64, 1.0 - i as f64))
            .collect();
        let p0: DVec3 = (0..6).map(|i| mass[i] * v[i]).sum();
        let mut scratch = vec![DVec3::ZERO; 6];
        project(&constraints, &targets, 0.0, &mut v, &inv_mass, &mut scratch);
        for (c, t) in constraints.iter().zip(targets) {
            assert!((c.normal.dot(c.relative(&v)) - t).abs() < 1e-8);
        }
        let p1: DVec3 = (0..6).map(|i| mass[i] * v[i]).sum();
        assert!((p1 - p0).length() < 1e-12);
        assert!(scratch.iter().all(|s| *s == DVec3::ZERO));
        // Friction keeps momentum too, and never speeds the sliding up.
        let slide_before = ee.relative(&v) - ee.normal * ee.normal.dot(ee.relative(&v));
        project(&[ee], &[0.0], 0.5, &mut v, &inv_mass, &mut scratch);
        let p2: DVec3 = (0..6).map(|i| mass[i] * v[i]).sum();
        assert!((p2 - p0).length() < 1e-12);
        let slide_after = ee.relative(&v) - ee.normal * ee.normal.dot(ee.relative(&v));
        assert!(slide_after.length() <= slide_before.length() + 1e-12);
    }
}
