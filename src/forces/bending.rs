//! Discrete Shells bending (Grinspun et al. 2003) on hinges, with position-based damping.
//!
//! A hinge `[x0, x1, x2, x3]` has interior edge `e = x1 - x0` shared by the triangles
//! `A = (x0, x1, x2)` and `B = (x1, x0, x3)`, both counter-clockwise, with area-weighted normals
//!
//! ```text
//! nA = e x (x2 - x0),    nB = (x3 - x0) x e        (|nA| = |e| hA, |nB| = |e| hB)
//! ```
//!
//! where `hA`, `hB` are the heights of `x2`, `x3` over the edge line.
//!
//! # Sign convention of the dihedral angle
//!
//! `theta = atan2(((nA x nB) . e) / |e|, nA . nB)` in `(-pi, pi]`: the angle by which `nB` is rotated
//! from `nA` about the axis `e / |e|` (right-hand rule). It is `0` for a flat, consistently oriented
//! sheet and **positive when the hinge is convex with respect to the normals**, i.e. the wings `x2`, `x3`
//! bend away from the side the normals point to, as at every edge of a convex polyhedron whose
//! triangles are counter-clockwise seen from outside (outward normals). Equivalently: rotating the
//! wing `B` rigidly by `+psi` about `e / |e|` (right-hand rule) changes `theta` by `+psi`.
//!
//! # Angle gradient
//!
//! With `gA = |e| nA / |nA|^2 = n̂A / hA`, `gB = |e| nB / |nB|^2 = n̂B / hB` and the feet of the
//! heights `alpha = (x2 - x0).e / |e|^2`, `beta = (x3 - x0).e / |e|^2`:
//!
//! ```text
//! dtheta/dx2 = -gA
//! dtheta/dx3 = -gB
//! dtheta/dx1 = alpha gA + beta gB
//! dtheta/dx0 = (1 - alpha) gA + (1 - beta) gB
//! ```
//!
//! Derivation: `theta = phiB - phiA`, the rotation angles of the two normals about `e/|e|`. Moving the
//! vertices of a triangle changes its unit normal by `dn̂ = -sum_i grad(lambda_i) (n̂ . dx_i)` (barycentric
//! coordinate gradients `lambda_i`); projecting on the in-plane direction `e/|e| x n̂` and using
//! `grad(lambda_apex) = u/h`, `grad(lambda_0) . u = -(1 - alpha)/h`, `grad(lambda_1) . u = -alpha/h`
//! (`u` the in-plane unit normal of the edge towards the apex) gives the above. The gradient sums to
//! zero (translation invariance) and `sum_i x_i x dtheta/dx_i = 0` (rotation invariance).
//!
//! # Energy
//!
//! `V = kb (theta - theta0)^2 weight` with `weight = |e0| / h0` from `rest_weight` (`h0` one third of
//! the sum of the two rest heights over the edge). Angle differences are wrapped into `(-pi, pi]`, so a
//! hinge folding through `theta = pi` sees a continuous force (identical to the plain difference
//! whenever `|theta - theta0| <= pi`).
//!
//! # Wing softening
//!
//! The angle's gradient grows as `1/h` of a wing's current height, so a wing squeezed towards its
//! edge (a triangle compressed in its plane) stiffens the hinge as `1/h^2`. Asynchronous
//! integrators keep each force's clock fixed (the one stable at rest, `stable_step`), and the
//! default `integrator.safety = 0.5` leaves room for 4 times the rest stiffness: a wing pressed
//! below half its rest height runs its hinge past stability, which pumps energy into its vertices
//! (a crushed shell's wings went to a tenth of their height, 84 times the stiffness, and it blew
//! up). The energy is therefore
//!
//! ```text
//! V = kb (theta - theta0)^2 weight Phi,    Phi = phi(hA / hA0) phi(hB / hB0),
//! phi(r) = 1 for r >= 3/4,   s^2 (2 - s^2) with s = r / (3/4) below
//! ```
//!
//! with `hA0`, `hB0` the rest heights ([`HingeRest`]). `phi` is `C^1` with `phi = 1` and
//! `phi' = 0` at `3/4`, so a hinge whose wings keep three quarters of their rest heights bends
//! exactly as without softening (bit for bit, its clock included). Below, `phi(r) <= 2 s^2`
//! cancels both `1/h` factors of the Hessian: at its rest angle a hinge is at most
//! `2 / (3/4)^2 = 3.6` times as stiff along a wing as at rest, inside the default clocks' margin,
//! whatever the wing's height, and its energy goes to zero continuously as a wing flattens (a
//! zero-area triangle has no normal to bend). `Phi` depends on lengths only, so `V` is invariant
//! under rigid motions and its impulses conserve linear and angular momentum. The damper is
//! scaled by the same `Phi`.
//!
//! # Degenerate hinges
//!
//! If a wing's height is at most `1e-12 |e|` (a zero-area triangle at round-off level, including a
//! zero-length edge), the hinge has no well-defined angle gradient: `angle_gradient` and every
//! gradient/impulse of this module return zero vectors for that hinge (never NaN), and
//! `signed_angle` stays finite.

use glam::DVec3;
use std::f64::consts::{PI, TAU};

/// A wing is degenerate when its height is at most this fraction of the edge length.
const DEGENERATE_HEIGHT_RATIO: f64 = 1e-12;

/// Wraps an angle difference into `(-pi, pi]` (input assumed in `(-3 pi, 3 pi)`).
#[inline]
fn wrap(d: f64) -> f64 {
    if d > PI {
        d - TAU
    } else if d <= -PI {
        d + TAU
    } else {
        d
    }
}

/// Edge vector, its squared length, and the two area-weighted normals.
#[inline]
fn frame(x0: DVec3, x1: DVec3, x2: DVec3, x3: DVec3) -> (DVec3, f64, DVec3, DVec3) {
    let e = x1 - x0;
    let na = e.cross(x2 - x0);
    let nb = (x3 - x0).cross(e);
    (e, e.length_squared(), na, nb)
}

/// Angle from the frame; `el = |e|`. `atan2(0, 0) = 0` for degenerate input.
#[inline]
fn angle_of(e: DVec3, el: f64, na: DVec3, nb: DVec3) -> f64 {
    f64::atan2(na.cross(nb).dot(e), na.dot(nb) * el)
}

/// Angle and its gradient.
#[inline]
fn angle_and_gradient(x: [DVec3; 4]) -> (f64, [DVec3; 4]) {
    let bent = bend(x, &UNSOFTENED);
    (bent.theta, bent.gradient)
}

/// A hinge's rest shape, which its energy measures the bent shape against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HingeRest {
    /// Rest dihedral angle `theta0` (`signed_angle`).
    pub angle: f64,
    /// Rest `|e0| / h0` (`rest_weight`).
    pub weight: f64,
    /// Rest heights `[hA0, hB0]` of the two wings over the edge (see the module docs), in `f32`
    /// (8 bytes a hinge less), rounded down.
    pub heights: [f32; 2],
}

impl HingeRest {
    /// The rest shape of the hinge at positions `x`.
    pub(crate) fn of(x: [DVec3; 4]) -> Self {
        let (_, e2, na, nb) = frame(x[0], x[1], x[2], x[3]);
        let el = e2.sqrt();
        let height = |n: DVec3| {
            let h = if el > 0.0 { n.length() / el } else { 0.0 };
            let rounded = h as f32;
            if f64::from(rounded) > h {
                f32::from_bits(rounded.to_bits() - 1) // the next f32 down (rounded > h >= 0)
            } else {
                rounded
            }
        };
        Self {
            angle: signed_angle(x[0], x[1], x[2], x[3]),
            weight: rest_weight(x[0], x[1], x[2], x[3]),
            heights: [height(na), height(nb)],
        }
    }
}

/// The fraction of its rest height below which a wing is softened (module docs).
const SOFT_BELOW: f64 = 0.75;

/// A rest shape whose wings are never softened (no rest heights), for the bare angle.
const UNSOFTENED: HingeRest = HingeRest {
    angle: 0.0,
    weight: 0.0,
    heights: [0.0; 2],
};

/// `phi(r)` and `dphi/dh` of a wing at `height` whose rest height is `rest` (module docs); a wing
/// with no rest height is not softened.
#[inline]
fn wing_factor(height: f64, rest: f32) -> (f64, f64) {
    let knee = f64::from(rest) * SOFT_BELOW;
    let s = height / knee;
    if s >= 1.0 || knee <= 0.0 || s.is_nan() {
        (1.0, 0.0)
    } else {
        let s2 = s * s;
        (s2 * (2.0 - s2), 4.0 * s * (1.0 - s2) / knee)
    }
}

/// [`wing_factor`] of a wing whose area-weighted normal has squared length `n2 = e2 h^2`, over
/// an edge of squared length `e2` and length `el`. A wing well above its knee (by a margin far
/// beyond rounding, so the answer is the same) is not softened, and its height, a square root
/// and two divisions, is not worked out.
#[inline]
fn wing_softening(n2: f64, e2: f64, el: f64, rest: f32) -> (f64, f64) {
    let knee = f64::from(rest) * SOFT_BELOW;
    if n2 > knee * knee * e2 * (1.0 + 1e-9) {
        (1.0, 0.0)
    } else {
        wing_factor(n2.sqrt() / el, rest)
    }
}

/// A bent hinge: its angle and gradient, the softening `Phi` and `dPhi/dx` (`None` where it is
/// zero, which it is unless a wing is below three quarters of its rest height).
struct Bent {
    theta: f64,
    gradient: [DVec3; 4],
    softening: f64,
    softening_gradient: Option<[DVec3; 4]>,
}

/// The angle, its gradient and the softening of the hinge at `x`, sharing all intermediate terms.
#[inline]
fn bend(x: [DVec3; 4], rest: &HingeRest) -> Bent {
    let (e, e2, na, nb) = frame(x[0], x[1], x[2], x[3]);
    let el = e2.sqrt();
    let theta = angle_of(e, el, na, nb);
    let la2 = na.length_squared();
    let lb2 = nb.length_squared();
    let (phi_a, dphi_a) = wing_softening(la2, e2, el, rest.heights[0]);
    let (phi_b, dphi_b) = wing_softening(lb2, e2, el, rest.heights[1]);
    // |n|^2 = |e|^2 h^2 <= (ratio |e|)^2 |e|^2 flags a degenerate wing (also e == 0, and NaN).
    let tol = DEGENERATE_HEIGHT_RATIO * DEGENERATE_HEIGHT_RATIO * e2 * e2;
    if !(la2 > tol && lb2 > tol) {
        return Bent {
            theta,
            gradient: [DVec3::ZERO; 4],
            softening: phi_a * phi_b,
            softening_gradient: None,
        };
    }
    let ga = na * (el / la2);
    let gb = nb * (el / lb2);
    let inv_e2 = e2.recip();
    let alpha = (x[2] - x[0]).dot(e) * inv_e2;
    let beta = (x[3] - x[0]).dot(e) * inv_e2;
    let g1 = ga * alpha + gb * beta;
    // (1 - alpha) gA + (1 - beta) gB, written so that the four terms cancel to round-off.
    let g0 = ga + gb - g1;
    let softening_gradient = (dphi_a != 0.0 || dphi_b != 0.0).then(|| {
        // A wing's dh/dx: +u at its tip, -(1 - foot) u and -foot u at the edge's ends (u the unit
        // vector from the edge line to the tip, foot the tip's parameter along the edge).
        let (ha, hb) = (la2.sqrt() / el, lb2.sqrt() / el);
        let ua = ((x[2] - x[0]) - e * alpha) * (phi_b * dphi_a / ha);
        let ub = ((x[3] - x[0]) - e * beta) * (phi_a * dphi_b / hb);
        let d1 = ua * alpha + ub * beta;
        [d1 - ua - ub, -d1, ua, ub]
    });
    Bent {
        theta,
        gradient: [g0, g1, -ga, -gb],
        softening: phi_a * phi_b,
        softening_gradient,
    }
}

/// The wing softening `Phi` of the hinge at `x` (module docs): 1 unless a wing is below three
/// quarters of its rest height.
#[inline]
pub(crate) fn softening(x: [DVec3; 4], rest: &HingeRest) -> f64 {
    let (_, e2, na, nb) = frame(x[0], x[1], x[2], x[3]);
    let el = e2.sqrt();
    let (phi_a, _) = wing_softening(na.length_squared(), e2, el, rest.heights[0]);
    let (phi_b, _) = wing_softening(nb.length_squared(), e2, el, rest.heights[1]);
    phi_a * phi_b
}

/// `d(Phi d^2)/dx` for an angle difference `d`: `2 d Phi dtheta/dx + d^2 dPhi/dx`.
#[inline]
fn softened_square_gradient(bent: &Bent, d: f64) -> [DVec3; 4] {
    let s = 2.0 * d * bent.softening;
    let mut g = bent.gradient.map(|gi| gi * s);
    if let Some(dphi) = &bent.softening_gradient {
        for (gi, di) in g.iter_mut().zip(dphi) {
            *gi += *di * (d * d);
        }
    }
    g
}

/// Signed dihedral angle `theta = atan2((nA x nB) . e / |e|, nA . nB)` in `(-pi, pi]` (see the module
/// docs for the sign: positive when convex w.r.t. the normals, 0 for a flat sheet). Robust for all
/// angles (atan2 of the full sine and cosine terms); `0` for a degenerate hinge.
#[inline]
pub(crate) fn signed_angle(x0: DVec3, x1: DVec3, x2: DVec3, x3: DVec3) -> f64 {
    let (e, e2, na, nb) = frame(x0, x1, x2, x3);
    angle_of(e, e2.sqrt(), na, nb)
}

/// Rest weight `|e0| / h0 = 3 |e0|^2 / (|nA| + |nB|)`, with `h0 = (hA + hB) / 3` one third of the
/// sum of the heights of the two rest triangles over the edge (`hA = |nA| / |e0|`). Returns `0` (no
/// bending) when both rest triangles have zero area.
///
/// Note: Grinspun et al. 2003 use a third of the *average* height, i.e. twice this weight; the factor
/// is absorbed into `kb`.
#[inline]
pub(crate) fn rest_weight(x0: DVec3, x1: DVec3, x2: DVec3, x3: DVec3) -> f64 {
    let (_, e2, na, nb) = frame(x0, x1, x2, x3);
    let d = na.length() + nb.length();
    if d > 0.0 {
        3.0 * e2 / d
    } else {
        0.0
    }
}

#[cfg(test)]
/// Closed-form gradient of [`signed_angle`] w.r.t. `[x0, x1, x2, x3]` (formula in the module docs):
/// `[(1-alpha) gA + (1-beta) gB, alpha gA + beta gB, -gA, -gB]`. Sums to zero and
/// `sum_i x_i x grad_i = 0` to round-off. Zero for a degenerate hinge.
#[inline]
pub(crate) fn angle_gradient(x0: DVec3, x1: DVec3, x2: DVec3, x3: DVec3) -> [DVec3; 4] {
    angle_and_gradient([x0, x1, x2, x3]).1
}

/// Bending energy `V = kb * weight * wrap(theta - theta0)^2 * Phi` (erg; `weight = |e0| / h0`
/// from [`rest_weight`], `Phi` the wing softening of the module docs, `kb` in erg).
#[inline]
pub(crate) fn energy(x: [DVec3; 4], rest: &HingeRest, kb: f64) -> f64 {
    let d = wrap(signed_angle(x[0], x[1], x[2], x[3]) - rest.angle);
    kb * rest.weight * d * d * softening(x, rest)
}

/// Gradient of `energy`: `kb weight (2 d Phi dtheta/dx_i + d^2 dPhi/dx_i)`, `d = wrap(theta -
/// theta0)`. Zero for a degenerate hinge.
#[inline]
pub fn gradient(x: [DVec3; 4], rest: &HingeRest, kb: f64) -> [DVec3; 4] {
    gradient_angle_gradient_and_softening(x, rest, kb).0
}

/// [`gradient`], the angle's gradient ([`angle_gradient`]) and the softening `Phi`
/// ([`softening`]) from one evaluation of the hinge at `x` (for Gauss-Newton Hessians).
#[inline]
pub(crate) fn gradient_angle_gradient_and_softening(
    x: [DVec3; 4],
    rest: &HingeRest,
    kb: f64,
) -> ([DVec3; 4], [DVec3; 4], f64) {
    let bent = bend(x, rest);
    let s = kb * rest.weight;
    let g = softened_square_gradient(&bent, wrap(bent.theta - rest.angle)).map(|gi| gi * s);
    (g, bent.gradient, bent.softening)
}

#[cfg(test)]
/// Position-based damping potential `W = 0.5 * c * weight * wrap(theta - prev_theta)^2 * Phi`,
/// whose negative gradient is the damping impulse of one tick (`prev_theta`: the angle at the
/// element's previous tick; `c` in erg*s).
#[inline]
pub(crate) fn damping_energy(x: [DVec3; 4], prev_theta: f64, rest: &HingeRest, c: f64) -> f64 {
    let d = wrap(signed_angle(x[0], x[1], x[2], x[3]) - prev_theta);
    0.5 * c * rest.weight * d * d * softening(x, rest)
}

#[cfg(test)]
/// Gradient of [`damping_energy`]. Zero for a degenerate hinge.
#[inline]
pub(crate) fn damping_gradient(
    x: [DVec3; 4],
    prev_theta: f64,
    rest: &HingeRest,
    c: f64,
) -> [DVec3; 4] {
    let bent = bend(x, rest);
    let s = 0.5 * c * rest.weight;
    softened_square_gradient(&bent, wrap(bent.theta - prev_theta)).map(|gi| gi * s)
}

/// Impulse of one tick of length `h`, `-(h dV/dx + dW/dx)`:
/// `I_i = -weight ((2 h kb d0 + c dp) Phi dtheta/dx_i + (h kb d0^2 + c dp^2 / 2) dPhi/dx_i)` with
/// `d0 = wrap(theta - theta0)`, `dp = wrap(theta - prev_theta)`, plus the current angle `theta`
/// (store it as the next `prev_theta`). Computes the angle and its gradient once. Zero impulse
/// for a degenerate hinge.
#[inline]
pub(crate) fn tick_impulse(
    x: [DVec3; 4],
    rest: &HingeRest,
    kb: f64,
    c: f64,
    prev_theta: f64,
    h: f64,
) -> ([DVec3; 4], f64) {
    let bent = bend(x, rest);
    let d0 = wrap(bent.theta - rest.angle);
    let dp = wrap(bent.theta - prev_theta);
    let s = -rest.weight * (2.0 * h * kb * d0 + c * dp) * bent.softening;
    let mut impulse = bent.gradient.map(|gi| gi * s);
    if let Some(dphi) = &bent.softening_gradient {
        let s = -rest.weight * (h * kb * d0 * d0 + 0.5 * c * dp * dp);
        for (i, di) in impulse.iter_mut().zip(dphi) {
            *i += *di * s;
        }
    }
    (impulse, bent.theta)
}

/// Stable clock for the hinge from the lumped inverse masses (`0` for a fixed vertex), evaluated at
/// the configuration `x` (the rest configuration).
///
/// Derivation: at rest (`theta = theta0`) the Hessian of `V` is exactly `2 kb weight g g^T` with
/// `g = dtheta/dx` (the `(theta - theta0) d2theta/dx2` term vanishes), and the damper's is
/// `c weight g g^T`. In mass-weighted coordinates both are rank one along `M^-1/2 g`, with
/// `G = sum_i |g_i|^2 / m_i`: a single mode of frequency `w^2 = 2 kb weight G` and damper
/// `D = c weight G` per unit mass; all other modes are free. That mode obeys the same recurrence as
/// the spring (see [`super::spring::stable_step`]): stable iff `(h w)^2 + 4 zeta (h w) < 4` with
/// `zeta = D / (2 w)`, i.e.
///
/// ```text
/// h = safety * 2/w * (sqrt(zeta^2 + 1) - zeta) = safety * 2 / (sqrt(w^2 + g^2) + g),  g = D / 2
/// ```
///
/// This bound is sharp for small deviations from rest; choose `safety < 1` for large folds (where
/// the curvature term adds stiffness). Returns `f64::INFINITY` when nothing can move or
/// `kb == c == 0` (and for a degenerate hinge, whose force is zero).
///
/// When `G = 0` although a vertex can move, the free vertices are edge vertices whose gradients
/// cancel at this shape (a flat hinge whose wings project symmetrically on the edge, as in a
/// regular grid): the hinge moves them as soon as it bends, so its clock comes from a bound on
/// their gradients that holds at every shape (`edge_gradient_bound`) instead of being infinite.
#[inline]
pub(crate) fn stable_step(
    x: [DVec3; 4],
    inv_masses: [f64; 4],
    weight: f64,
    kb: f64,
    c: f64,
    safety: f64,
) -> f64 {
    let g = angle_and_gradient(x).1;
    let mut big_g: f64 = (0..4).map(|i| g[i].length_squared() * inv_masses[i]).sum();
    if big_g == 0.0 {
        let edge = edge_gradient_bound(x, g).powi(2);
        big_g = (inv_masses[0] + inv_masses[1]) * edge;
    }
    super::spring::damped_stable_step(2.0 * kb * weight * big_g, 0.5 * c * weight * big_g, safety)
}

/// A bound on the angle gradient of either edge vertex of the hinge at `x`, whose angle gradient
/// is `g`: each edge vertex's gradient is a combination of the wings' gradients `g[2]`, `g[3]`
/// with the coefficients `alpha` or `1 - alpha` of the wings' projections
/// `alpha = (x_w - x0).e / |e|^2` on the edge (the four sum to zero), so its length is at most
/// `sum over the wings of max(|alpha|, |1 - alpha|) |g_w|`. Zero for a degenerate hinge.
fn edge_gradient_bound(x: [DVec3; 4], g: [DVec3; 4]) -> f64 {
    let e = x[1] - x[0];
    let e2 = e.length_squared();
    if e2 == 0.0 {
        return 0.0;
    }
    let coefficient = |w: DVec3| {
        let alpha = (w - x[0]).dot(e) / e2;
        alpha.abs().max((1.0 - alpha).abs())
    };
    coefficient(x[2]) * g[2].length() + coefficient(x[3]) * g[3].length()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DQuat;

    use crate::test_rng::Rng;

    /// A hinge built in a local frame with known signed angle `psi`, then rigidly rotated by `q`
    /// and translated by `t`: edge along +x of length `len`; wing A in the xy plane at +y (normal +z);
    /// wing B, flat at -y, rotated by `psi` about +x.
    fn hinge(
        len: f64,
        wing_a: (f64, f64),
        wing_b: (f64, f64),
        psi: f64,
        q: DQuat,
        t: DVec3,
    ) -> [DVec3; 4] {
        let x0 = DVec3::ZERO;
        let x1 = DVec3::new(len, 0.0, 0.0);
        let x2 = DVec3::new(wing_a.0 * len, wing_a.1 * len, 0.0);
        let flat_b = DVec3::new(wing_b.0 * len, -wing_b.1 * len, 0.0);
        let x3 = DQuat::from_rotation_x(psi) * flat_b;
        [x0, x1, x2, x3].map(|p| q * p + t)
    }

    /// A random non-degenerate hinge with known angle in [-2.8, 2.8] (strong folds included).
    fn random_hinge(rng: &mut Rng) -> ([DVec3; 4], f64, f64) {
        let len = rng.uniform(0.1, 10.0);
        let a = (rng.uniform(-0.5, 1.5), rng.uniform(0.2, 1.5));
        let b = (rng.uniform(-0.5, 1.5), rng.uniform(0.2, 1.5));
        let psi = rng.uniform(-2.8, 2.8);
        let q = rng.rotation();
        let t = rng.vec(10.0);
        (hinge(len, a, b, psi, q, t), psi, len)
    }

    /// A rest shape of angle `angle` and weight `weight` whose wings are never softened.
    fn plain(angle: f64, weight: f64) -> HingeRest {
        HingeRest {
            angle,
            weight,
            heights: [0.0; 2],
        }
    }

    /// A rest shape of angle `angle` for the hinge at `x`, with its weight and random rest heights
    /// from half to twice the wings' heights at `x` (so either wing may be softened).
    fn random_rest(rng: &mut Rng, x: [DVec3; 4], angle: f64) -> HingeRest {
        let now = HingeRest::of(x);
        HingeRest {
            angle,
            weight: now.weight,
            heights: now.heights.map(|h| h * rng.uniform(0.5, 2.0) as f32),
        }
    }

    fn fd_gradient(x: [DVec3; 4], step: f64, f: impl Fn([DVec3; 4]) -> f64) -> [DVec3; 4] {
        let mut g = [DVec3::ZERO; 4];
        for i in 0..4 {
            for a in 0..3 {
                let mut xp = x;
                let mut xm = x;
                xp[i][a] += step;
                xm[i][a] -= step;
                g[i][a] = (f(xp) - f(xm)) / (2.0 * step);
            }
        }
        g
    }

    fn norm(a: [DVec3; 4]) -> f64 {
        a.iter().map(|v| v.length_squared()).sum::<f64>().sqrt()
    }

    fn rel_err(a: [DVec3; 4], b: [DVec3; 4]) -> f64 {
        norm([a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]]) / norm(b)
    }

    fn angle(x: [DVec3; 4]) -> f64 {
        signed_angle(x[0], x[1], x[2], x[3])
    }

    #[test]
    fn flat_sheet_is_zero() {
        let x = [
            DVec3::ZERO,
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.3, 0.8, 0.0),
            DVec3::new(0.6, -0.5, 0.0),
        ];
        assert_eq!(angle(x), 0.0);
        let mut rng = Rng(7);
        for _ in 0..50 {
            let (x, _, _) = {
                let len = rng.uniform(0.1, 5.0);
                let q = rng.rotation();
                let t = rng.vec(100.0);
                (hinge(len, (0.2, 0.7), (0.9, 0.4), 0.0, q, t), 0.0, len)
            };
            assert!(angle(x).abs() < 1e-12, "{}", angle(x));
        }
    }

    #[test]
    fn known_fold_angle_and_sign() {
        // Wing B folded down (away from the +z normals): convex, positive.
        let x = hinge(
            1.0,
            (0.5, 1.0),
            (0.5, 1.0),
            0.25,
            DQuat::IDENTITY,
            DVec3::ZERO,
        );
        assert!(x[3].z < 0.0);
        assert!((angle(x) - 0.25).abs() < 1e-15, "{}", angle(x));
        let x = hinge(
            1.0,
            (0.5, 1.0),
            (0.5, 1.0),
            -1.0,
            DQuat::IDENTITY,
            DVec3::ZERO,
        );
        assert!(x[3].z > 0.0);
        assert!((angle(x) + 1.0).abs() < 1e-15, "{}", angle(x));
        // Random hinges with known angle, under random rigid motions.
        let mut rng = Rng(11);
        for _ in 0..500 {
            let (x, psi, _) = random_hinge(&mut rng);
            assert!((angle(x) - psi).abs() < 1e-11, "{} vs {psi}", angle(x));
        }
        // Almost fully folded, either side of pi: stays in (-pi, pi].
        let x = hinge(
            1.0,
            (0.5, 1.0),
            (0.5, 1.0),
            PI - 1e-3,
            DQuat::IDENTITY,
            DVec3::ZERO,
        );
        assert!((angle(x) - (PI - 1e-3)).abs() < 1e-12);
        let x = hinge(
            1.0,
            (0.5, 1.0),
            (0.5, 1.0),
            PI + 1e-3,
            DQuat::IDENTITY,
            DVec3::ZERO,
        );
        assert!((angle(x) - (-PI + 1e-3)).abs() < 1e-12);
    }

    #[test]
    fn convex_polyhedron_edges_are_positive() {
        // Regular tetrahedron, faces counter-clockwise seen from outside.
        let p = [
            DVec3::new(1.0, 1.0, 1.0),
            DVec3::new(1.0, -1.0, -1.0),
            DVec3::new(-1.0, 1.0, -1.0),
            DVec3::new(-1.0, -1.0, 1.0),
        ];
        let faces = [[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]];
        for f in faces {
            let n = (p[f[1]] - p[f[0]]).cross(p[f[2]] - p[f[0]]);
            assert!(n.dot(p[f[0]]) > 0.0, "face {f:?} not outward");
        }
        let want = PI - (1.0f64 / 3.0).acos();
        for fa in faces {
            for k in 0..3 {
                let (i, j, a) = (fa[k], fa[(k + 1) % 3], fa[(k + 2) % 3]);
                // The face containing the directed edge j -> i.
                let fb = faces
                    .iter()
                    .find(|f| (0..3).any(|m| f[m] == j && f[(m + 1) % 3] == i))
                    .unwrap();
                let b = *fb.iter().find(|&&v| v != i && v != j).unwrap();
                let th = signed_angle(p[i], p[j], p[a], p[b]);
                assert!((th - want).abs() < 1e-14, "{th} vs {want}");
            }
        }
    }

    #[test]
    fn angle_invariant_under_rigid_motion() {
        let mut rng = Rng(13);
        for _ in 0..200 {
            let (x, _, _) = random_hinge(&mut rng);
            let q = rng.rotation();
            let t = rng.vec(50.0);
            let y = x.map(|p| q * p + t);
            assert!((angle(x) - angle(y)).abs() < 1e-11);
            assert!(
                (rest_weight(x[0], x[1], x[2], x[3]) - rest_weight(y[0], y[1], y[2], y[3])).abs()
                    < 1e-11 * rest_weight(x[0], x[1], x[2], x[3])
            );
        }
    }

    #[test]
    fn rest_weight_known_value() {
        // |e| = 2, heights 1 and 3: h0 = 4/3, weight = 1.5.
        let x = hinge(
            2.0,
            (0.3, 0.5),
            (0.8, 1.5),
            0.7,
            DQuat::IDENTITY,
            DVec3::ZERO,
        );
        let w = rest_weight(x[0], x[1], x[2], x[3]);
        assert!((w - 1.5).abs() < 1e-14, "{w}");
        let p = DVec3::ONE;
        assert_eq!(rest_weight(p, p, p, p), 0.0);
    }

    #[test]
    fn angle_gradient_matches_finite_differences() {
        let mut rng = Rng(17);
        for _ in 0..300 {
            let (x, _, len) = random_hinge(&mut rng);
            let g = angle_gradient(x[0], x[1], x[2], x[3]);
            let fd = fd_gradient(x, 1e-6 * len, angle);
            let err = rel_err(fd, g);
            assert!(err < 1e-6, "rel err {err} at {x:?}");
        }
    }

    #[test]
    fn angle_gradient_translation_and_rotation_invariance() {
        let mut rng = Rng(19);
        for _ in 0..300 {
            let (x, _, _) = random_hinge(&mut rng);
            let g = angle_gradient(x[0], x[1], x[2], x[3]);
            let sum: DVec3 = g.iter().sum();
            let scale: f64 = g.iter().map(|v| v.length()).sum();
            assert!(sum.length() <= 1e-12 * scale, "sum {sum} scale {scale}");
            let torque: DVec3 = (0..4).map(|i| x[i].cross(g[i])).sum();
            let tscale: f64 = (0..4).map(|i| x[i].length() * g[i].length()).sum();
            assert!(
                torque.length() <= 1e-12 * tscale,
                "torque {torque} scale {tscale}"
            );
        }
    }

    #[test]
    fn energy_gradient_matches_finite_differences() {
        let mut rng = Rng(23);
        for _ in 0..300 {
            let (x, psi, len) = random_hinge(&mut rng);
            let theta0 = psi + rng.uniform(0.05, 0.5) * if psi > 0.0 { -1.0 } else { 1.0 };
            let rest = random_rest(&mut rng, x, theta0);
            let kb = rng.uniform(1e-3, 10.0);
            let g = gradient(x, &rest, kb);
            let fd = fd_gradient(x, 1e-6 * len, |y| energy(y, &rest, kb));
            let err = rel_err(fd, g);
            assert!(err < 1e-6, "rel err {err} psi {psi} theta0 {theta0}");
        }
    }

    #[test]
    fn damping_gradient_matches_finite_differences() {
        let mut rng = Rng(29);
        for _ in 0..300 {
            let (x, psi, len) = random_hinge(&mut rng);
            let prev = psi + rng.uniform(-0.3, 0.3);
            let rest = random_rest(&mut rng, x, 0.0);
            let c = rng.uniform(1e-3, 1.0);
            let g = damping_gradient(x, prev, &rest, c);
            let fd = fd_gradient(x, 1e-6 * len, |y| damping_energy(y, prev, &rest, c));
            let err = rel_err(fd, g);
            assert!(err < 1e-6, "rel err {err} psi {psi} prev {prev}");
        }
    }

    #[test]
    fn differences_wrap_across_pi() {
        let x = hinge(
            1.0,
            (0.5, 1.0),
            (0.5, 1.0),
            PI + 0.05,
            DQuat::IDENTITY,
            DVec3::ZERO,
        );
        let th = angle(x);
        assert!((th - (-PI + 0.05)).abs() < 1e-12);
        // prev = pi - 0.05 is 0.1 behind, not 2 pi - 0.1.
        let rest = plain(PI - 0.05, 2.0);
        let w = damping_energy(x, PI - 0.05, &rest, 3.0);
        assert!((w - 0.5 * 3.0 * 2.0 * 0.01).abs() < 1e-12, "{w}");
        let v = energy(x, &rest, 3.0);
        assert!((v - 3.0 * 2.0 * 0.01).abs() < 1e-12, "{v}");
        // The force pushes back across pi: along -dtheta (theta0 is "behind").
        let g = gradient(x, &rest, 3.0);
        let dg = angle_gradient(x[0], x[1], x[2], x[3]);
        let proj: f64 = (0..4).map(|i| g[i].dot(dg[i])).sum();
        assert!(proj > 0.0);
    }

    #[test]
    fn tick_impulse_is_minus_h_grad_v_plus_grad_w() {
        let mut rng = Rng(31);
        for _ in 0..200 {
            let (x, psi, _) = random_hinge(&mut rng);
            let theta0 = rng.uniform(-1.0, 1.0);
            let rest = random_rest(&mut rng, x, theta0);
            let prev = psi + rng.uniform(-0.2, 0.2);
            let (kb, c, h) = (
                rng.uniform(1e-3, 10.0),
                rng.uniform(0.0, 1.0),
                rng.uniform(1e-6, 1e-2),
            );
            let (imp, th) = tick_impulse(x, &rest, kb, c, prev, h);
            assert_eq!(th, angle(x));
            let gv = gradient(x, &rest, kb);
            let gw = damping_gradient(x, prev, &rest, c);
            let want: [DVec3; 4] = std::array::from_fn(|i| -(gv[i] * h + gw[i]));
            let scale = norm(want);
            for i in 0..4 {
                assert!(
                    (imp[i] - want[i]).length() <= 1e-13 * scale,
                    "{imp:?} vs {want:?}"
                );
            }
        }
    }

    #[test]
    fn degenerate_hinge_gives_zero_gradient() {
        let x0 = DVec3::ZERO;
        let x1 = DVec3::new(1.0, 0.0, 0.0);
        let good = DVec3::new(0.5, 1.0, 0.3);
        // Wing A collapsed onto the edge line; then wing B; then a zero-length edge.
        let cases = [
            [x0, x1, DVec3::new(2.0, 0.0, 0.0), good],
            [x0, x1, good, DVec3::new(0.3, 0.0, 0.0)],
            [x0, x0, good, DVec3::new(0.2, -1.0, 0.0)],
        ];
        for x in cases {
            let th = angle(x);
            assert!(th.is_finite());
            assert_eq!(angle_gradient(x[0], x[1], x[2], x[3]), [DVec3::ZERO; 4]);
            let rest = plain(0.3, 1.0);
            assert_eq!(gradient(x, &rest, 1.0), [DVec3::ZERO; 4]);
            assert_eq!(damping_gradient(x, 0.3, &rest, 1.0), [DVec3::ZERO; 4]);
            let (imp, t) = tick_impulse(x, &rest, 1.0, 1.0, 0.1, 0.01);
            assert_eq!(imp, [DVec3::ZERO; 4]);
            assert!(t.is_finite());
            assert!(energy(x, &rest, 1.0).is_finite());
            assert_eq!(stable_step(x, [1.0; 4], 1.0, 1.0, 1.0, 0.9), f64::INFINITY);
        }
    }

    /// Integrates one hinge with symplectic Euler on clock `h` from a tiny perturbation of its rest
    /// state along the stiff mode; returns the largest ratio of total energy to initial energy.
    fn hinge_energy_ratio(rest: [DVec3; 4], inv_m: [f64; 4], kb: f64, c: f64, h: f64) -> f64 {
        energy_ratio_near(rest, &HingeRest::of(rest), inv_m, kb, c, h)
    }

    /// [`hinge_energy_ratio`] about the equilibrium `start` of a hinge of rest shape `shape`
    /// (`start` at the rest angle, its wings of any height).
    fn energy_ratio_near(
        start: [DVec3; 4],
        shape: &HingeRest,
        inv_m: [f64; 4],
        kb: f64,
        c: f64,
        h: f64,
    ) -> f64 {
        let g = angle_gradient(start[0], start[1], start[2], start[3]);
        let mut x: [DVec3; 4] = std::array::from_fn(|i| start[i] + g[i] * (inv_m[i] * 1e-7));
        let mut v = [DVec3::ZERO; 4];
        let total = |x: &[DVec3; 4], v: &[DVec3; 4]| {
            let ke: f64 = (0..4)
                .filter(|&i| inv_m[i] > 0.0)
                .map(|i| 0.5 * v[i].length_squared() / inv_m[i])
                .sum();
            energy(*x, shape, kb) + ke
        };
        let e0 = total(&x, &v);
        let mut prev = angle(x);
        let mut worst: f64 = 1.0;
        for _ in 0..20_000 {
            let (imp, th) = tick_impulse(x, shape, kb, c, prev, h);
            prev = th;
            for i in 0..4 {
                v[i] += imp[i] * inv_m[i];
                x[i] += v[i] * h;
            }
            worst = worst.max(total(&x, &v) / e0);
            if worst.is_nan() || worst >= 1e7 {
                break;
            }
        }
        worst
    }

    #[test]
    fn a_hinge_whose_wings_keep_three_quarters_of_their_rest_heights_bends_as_without_softening() {
        let mut rng = Rng(37);
        for _ in 0..200 {
            let (x, psi, _) = random_hinge(&mut rng);
            let now = HingeRest::of(x);
            assert_eq!(softening(x, &now), 1.0, "at rest");
            let rest = HingeRest {
                angle: psi + rng.uniform(-0.5, 0.5),
                weight: now.weight,
                heights: now.heights.map(|h| h * rng.uniform(0.2, 1.3) as f32),
            };
            let bare = plain(rest.angle, rest.weight);
            let prev = psi + rng.uniform(-0.2, 0.2);
            assert_eq!(
                tick_impulse(x, &rest, 3.0, 0.5, prev, 1e-4),
                tick_impulse(x, &bare, 3.0, 0.5, prev, 1e-4)
            );
            assert_eq!(energy(x, &rest, 3.0), energy(x, &bare, 3.0));
        }
    }

    #[test]
    fn the_shortcut_above_the_knee_gives_the_softening_bit_for_bit() {
        let mut rng = Rng(41);
        for i in 0..200_000 {
            let el = 10f64.powf(rng.uniform(-3.0, 2.0));
            let e2 = el * el;
            let rest = (el * rng.uniform(0.01, 2.0)) as f32;
            // Heights spread around the knee, half of them within rounding of it.
            let knee = f64::from(rest) * SOFT_BELOW;
            let h = if i % 2 == 0 {
                knee * rng.uniform(0.5, 1.5)
            } else {
                knee * (1.0 + rng.uniform(-1e-12, 1e-12))
            };
            let n2 = (el * h) * (el * h);
            let full = wing_factor(n2.sqrt() / el, rest);
            assert_eq!(wing_softening(n2, e2, el, rest), full, "h {h}, knee {knee}");
        }
        assert_eq!(
            wing_softening(1.0, 1.0, 1.0, 0.0),
            (1.0, 0.0),
            "no rest height"
        );
        assert_eq!(
            wing_softening(0.0, 1.0, 1.0, 0.0),
            (1.0, 0.0),
            "flat, no rest height"
        );
    }

    /// An unequal hinge, folded and moved off the axes, for the clock tests.
    fn tilted_hinge() -> [DVec3; 4] {
        hinge(
            1.3,
            (0.4, 0.9),
            (0.7, 0.6),
            0.6,
            DQuat::from_rotation_y(0.3),
            DVec3::new(1.0, 2.0, 3.0),
        )
    }

    #[test]
    fn a_hinge_squeezed_flat_stays_stable_on_its_rest_clock() {
        let rest = tilted_hinge();
        let shape = HingeRest::of(rest);
        let inv_m = [20.0, 30.0, 25.0, 40.0];
        let (kb, c) = (50.0, 0.0);
        // The engine's default safety factor.
        let h = stable_step(rest, inv_m, shape.weight, kb, c, 0.5);
        let e = (rest[1] - rest[0]).normalize();
        let foot = rest[0] + e * (rest[2] - rest[0]).dot(e);
        for r in [0.5, 0.2, 0.05, 0.01] {
            // Wing A's tip moved towards the edge in its own plane: the angle is unchanged.
            let mut squeezed = rest;
            squeezed[2] = foot + (rest[2] - foot) * r;
            assert!((angle(squeezed) - shape.angle).abs() < 1e-12);
            let softened = energy_ratio_near(squeezed, &shape, inv_m, kb, c, h);
            assert!(
                softened < 10.0,
                "wing at {r} of its height: ratio {softened}"
            );
            // Without softening the same clock is unstable: the perturbation grows until the
            // wing swings round its edge (where the angle's energy saturates).
            if r <= 0.2 {
                let bare = plain(shape.angle, shape.weight);
                let unsoftened = energy_ratio_near(squeezed, &bare, inv_m, kb, c, h);
                assert!(unsoftened > 1e3, "wing at {r}, unsoftened: {unsoftened}");
            }
        }
    }

    #[test]
    fn the_edge_gradient_bound_holds_for_random_hinges() {
        let mut rng = Rng(17);
        for _ in 0..1000 {
            let (x, _, _) = random_hinge(&mut rng);
            let g = angle_gradient(x[0], x[1], x[2], x[3]);
            let bound = edge_gradient_bound(x, g);
            for gi in &g[..2] {
                assert!(gi.length() <= bound * (1.0 + 1e-12), "{x:?}");
            }
        }
    }

    #[test]
    fn a_flat_hinge_that_moves_only_an_edge_vertex_has_a_finite_clock() {
        // Both wings over the edge's end x1, as at a grid's pinned border: the flat hinge's
        // gradient at x0 is zero, and x0 is the only vertex free.
        let x = [
            DVec3::new(0.0, 0.0, 1.0),
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(-1.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
        ];
        let g = angle_gradient(x[0], x[1], x[2], x[3]);
        assert_eq!(g[0], DVec3::ZERO);
        let w = rest_weight(x[0], x[1], x[2], x[3]);
        let h = stable_step(x, [1.0, 0.0, 0.0, 0.0], w, 50.0, 0.0, 1.0);
        assert!(h.is_finite() && h > 0.0, "{h}");
        // No slower than the same hinge moving a wing of the same mass, since the bound
        // exceeds the wing's gradient.
        assert!(h <= stable_step(x, [0.0, 0.0, 1.0, 0.0], w, 50.0, 0.0, 1.0));
        // Nothing free: infinite, as before.
        assert_eq!(stable_step(x, [0.0; 4], w, 50.0, 0.0, 1.0), f64::INFINITY);
    }

    #[test]
    fn stable_step_bound_is_sharp_and_damping_lowers_it() {
        let rest = tilted_hinge();
        let w = rest_weight(rest[0], rest[1], rest[2], rest[3]);
        let kb = 50.0;
        for inv_m in [[20.0, 30.0, 25.0, 40.0], [0.0, 30.0, 25.0, 0.0]] {
            let mut last = f64::INFINITY;
            for c in [0.0, 0.1, 1.0] {
                let h = stable_step(rest, inv_m, w, kb, c, 1.0);
                assert!(h < last, "damping must lower the step");
                last = h;
                let ok = hinge_energy_ratio(rest, inv_m, kb, c, 0.99 * h);
                assert!(ok < 1e3, "0.99x bound, c = {c}: ratio {ok}");
                let bad = hinge_energy_ratio(rest, inv_m, kb, c, 1.05 * h);
                assert!(bad > 1e6, "1.05x bound, c = {c}: ratio {bad}");
            }
        }
        // A fixed vertex (inverse mass 0) contributes nothing.
        let g = angle_gradient(rest[0], rest[1], rest[2], rest[3]);
        let big_g = g[1].length_squared() * 3.0 + g[2].length_squared() * 2.0;
        let want = 0.8 * 2.0 / (2.0 * kb * w * big_g).sqrt();
        let got = stable_step(rest, [0.0, 3.0, 2.0, 0.0], w, kb, 0.0, 0.8);
        assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    }
}
