//! Impulses of one penalty-layer tick for one primitive pair (thesis §4.2-4.3, DESIGN §5).
//!
//! Both pair kinds reduce to four vertices `x_i` with signed closest-point coefficients `c_i`:
//! vertex-triangle `(p; a, b, c)`: `c = [1, -w0, -w1, -w2]`; edge-edge `(p0, p1; q0, q1)`:
//! `c = [1 - s, s, -(1 - t), -t]`. Then `x_A - x_B = sum_i c_i x_i` is the vector from the closest
//! point on side B (triangle / edge q) to the one on side A (vertex / edge p), `sum_i c_i = 0`,
//! the relative velocity of the closest points is `v_rel = sum_i c_i v_i`, and the effective
//! inverse mass of the pair along any direction is `K = sum_i c_i^2 / m_i`.
//!
//! **Normal.** `n = (x_A - x_B) / d`, unit, from side B to side A. When
//! `d <= 1e-12 * max_i |x_i|_inf` the direction is not trustworthy and a fallback is used (never
//! NaN): the geometric normal `g` (VT: `(b - a) x (c - a)`; EE: `(p1 - p0) x (q1 - q0)`), oriented
//! so that the pair *approaches* along it: `n = -sign(v_rel . g) g / |g|` (the vertex came from the
//! side it is moving away from; push it back there), or by `sign((x_A - x_B) . g)` when
//! `v_rel . g = 0`, else `+g`. If `g` vanishes (zero-area triangle, parallel or zero-length edges),
//! `g` is replaced by the part of `-v_rel` perpendicular to the longest edge of the pair, then by
//! any unit vector perpendicular to that edge, then by `+z`.
//!
//! **Normal impulse.** `I = h r_eff (eta - d)` if `d < eta`, else 0, with `r_eff = cor * r` if the
//! pair separates (`v_rel . n > 0`, restitution by biphasic stiffness, §4.3) and `r` otherwise.
//! Vertex `i` receives `c_i I n`. For `cor = 1` this is exactly `-h dV/dx_i` for
//! `V = 0.5 r (eta - d(x))^2` (closest-point envelope theorem: `dd/dx_i = c_i n`).
//!
//! **Friction** (§4.3). With the tangential relative velocity `v_t = v_rel - (v_rel . n) n` and
//! `tau = v_t / |v_t|`, the friction impulse on side A is `f = -F tau`, `F = mu |I|`, and vertex `i`
//! receives `c_i f` (none when `v_t = 0`). Optional cap (`friction_cap`, off by default because
//! the thesis does not cap: a cap breaks order independence of simultaneous events): since the
//! pair's relative tangential velocity changes by `-K F tau` (the normal part changes only along
//! `n`), `F = min(mu |I|, |v_t| / K)` can slow the relative sliding to zero but never reverse it
//! (no cap when `K = 0`: then the impulse moves nothing).
//!
//! **Conservation.** `sum_i c_i = 0`, so the impulses sum to zero: linear momentum is conserved
//! to round-off. Angular momentum changes by `sum_i x_i x (c_i J) = (x_A - x_B) x J` for the
//! common vector `J = I n + f`; the normal part has lever `x_A - x_B = d n` parallel to `n` and
//! conserves it exactly (up to round-off; with the fallback normal `d ~ 0`), the friction part
//! changes it by `d n x f`, an O(d) couple.

use super::closest::{edge_edge, vertex_triangle, TriangleFeature, TRIANGLE_PAIR_FEATURES};
use glam::DVec3;

/// Relative threshold (against the largest coordinate magnitude) below which the closest-point
/// separation is too small to define the normal, and the fallback normal is used.
const NORMAL_FALLBACK_REL: f64 = 1e-12;

/// Impulses of one penalty-layer tick on the `N` vertices of a pair (in the order they were
/// given), with the geometry they were computed from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairImpulse<const N: usize> {
    /// Impulse (momentum change, g cm/s) for each vertex; `v_i += inv_mass_i * impulses[i]`.
    pub impulses: [DVec3; N],
    /// Closest-point distance `d` of the pair at the tick.
    pub distance: f64,
    /// Unit contact normal `n`, from side B (triangle / edge q) to side A (vertex / edge p).
    pub normal: DVec3,
    /// Whether the pair separates: relative normal velocity `v_rel . n > 0`.
    pub separating: bool,
}

/// Parameters of one layer tick: `eta = eta(l)`, `r = r(l)`, `h = h(l)`, restitution and
/// friction coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PenaltyParams {
    /// Layer thickness `eta(l)`.
    pub eta: f64,
    /// Layer stiffness `r(l)`.
    pub r: f64,
    /// Layer clock `h(l)`.
    pub h: f64,
    /// Coefficient of restitution `e_COR`: stiffness multiplier while the pair separates.
    pub cor: f64,
    /// Coulomb friction coefficient `mu`: tangential impulse `mu |I|`.
    pub mu: f64,
    /// Cap friction so it cannot reverse the relative tangential velocity (default: off).
    pub friction_cap: bool,
}

/// Impulses of one tick of a penalty layer on a vertex-triangle pair.
///
/// `x = [p, a, b, c]` positions at the tick, `v` their velocities, `inv_mass` their inverse
/// masses (used only by the friction cap). Closest point `q = w0 a + w1 b + w2 c`,
/// `d = |p - q|`, `n = (p - q) / d`; with `I = h r_eff (eta - d)` for `d < eta` (see the module
/// docs for `r_eff`, the fallback normal and friction) the impulses are `p: +I n`,
/// `a, b, c: -w_i I n`, plus friction with the same weights.
#[inline]
pub fn vertex_triangle_impulse(
    x: [DVec3; 4],
    v: [DVec3; 4],
    inv_mass: [f64; 4],
    params: &PenaltyParams,
) -> PairImpulse<4> {
    let cl = vertex_triangle(x[0], x[1], x[2], x[3]);
    let w = cl.weights;
    let c = [1.0, -w[0], -w[1], -w[2]];
    let e1 = x[2] - x[1];
    let e2 = x[3] - x[1];
    let geometric = e1.cross(e2);
    let e3 = x[3] - x[2];
    let longest = longest_of([e1, e2, e3]);
    pair_impulse(c, x, v, inv_mass, cl.distance, geometric, longest, params)
}

/// Impulses of one tick of a penalty layer on an edge-edge pair.
///
/// `x = [p0, p1, q0, q1]`; closest points `p0 + s (p1 - p0)`, `q0 + t (q1 - q0)` at distance
/// `d`, `n` from the point on `q` to the point on `p`; with `I = h r_eff (eta - d)` for `d < eta`
/// the impulses are `p0: +(1 - s) I n`, `p1: +s I n`, `q0: -(1 - t) I n`, `q1: -t I n`, plus
/// friction with the same weights (see the module docs).
#[inline]
pub(crate) fn edge_edge_impulse(
    x: [DVec3; 4],
    v: [DVec3; 4],
    inv_mass: [f64; 4],
    params: &PenaltyParams,
) -> PairImpulse<4> {
    let cl = edge_edge(x[0], x[1], x[2], x[3]);
    let c = [1.0 - cl.s, cl.s, -(1.0 - cl.t), -cl.t];
    let d1 = x[1] - x[0];
    let d2 = x[3] - x[2];
    let geometric = d1.cross(d2);
    let longest = longest_of([d1, d2, d2]);
    pair_impulse(c, x, v, inv_mass, cl.distance, geometric, longest, params)
}

/// Impulses of one tick of a penalty layer on a pair of vertex-disjoint triangles
/// (`speed.triangle_pairs`, thesis §8.3): the sum over their fifteen feature pairs
/// ([`TRIANGLE_PAIR_FEATURES`]) of each feature's VT or EE impulse scaled by `shares[f]`.
///
/// `x = [a0, a1, a2, b0, b1, b2]`. A feature pair lies in `k` triangle pairs, and each of
/// them applies `1/k` of its impulse (`shares[f] = 1/k`): a feature pair closer than `eta`
/// makes every triangle pair it lies in closer than `eta` too, so all `k` tick together and
/// the feature's full impulse is applied once, up to rounding.
///
/// Feature pairs that the triangles' planes show to be farther than `eta` (a vertex far from
/// the other triangle's plane, an edge wholly on one side of it) are skipped: their impulse is
/// zero ([`FarFeatures`]). The distance, normal and `separating` flag are those of the nearest
/// feature pair evaluated (the first in the fixed order wins ties); when every one was
/// skipped, the distance is `+inf`, the normal the direction from B's centroid to A's, and the
/// pair separates if the centroids move apart.
#[inline]
pub(crate) fn triangle_pair_impulse(
    x: [DVec3; 6],
    v: [DVec3; 6],
    inv_mass: [f64; 6],
    shares: &[f64; 15],
    params: &PenaltyParams,
) -> PairImpulse<6> {
    let far = FarFeatures::new(&x, params.eta);
    let mut out = PairImpulse {
        impulses: [DVec3::ZERO; 6],
        distance: f64::INFINITY,
        normal: DVec3::Z,
        separating: false,
    };
    for (f, (feature, &share)) in TRIANGLE_PAIR_FEATURES.iter().zip(shares).enumerate() {
        if far.skips(f) {
            continue;
        }
        let l = feature.verts();
        let (xf, vf, mf) = (l.map(|i| x[i]), l.map(|i| v[i]), l.map(|i| inv_mass[i]));
        let impulse = match feature {
            TriangleFeature::VertexTriangle(_) => vertex_triangle_impulse(xf, vf, mf, params),
            TriangleFeature::EdgeEdge(_) => edge_edge_impulse(xf, vf, mf, params),
        };
        if impulse.distance < params.eta {
            for (&i, j) in l.iter().zip(impulse.impulses) {
                out.impulses[i] += share * j;
            }
        }
        if impulse.distance < out.distance {
            out.distance = impulse.distance;
            out.normal = impulse.normal;
            out.separating = impulse.separating;
        }
    }
    if out.distance == f64::INFINITY {
        let centroid = |y: &[DVec3]| (y[0] + y[1] + y[2]) / 3.0;
        out.normal = (centroid(&x[..3]) - centroid(&x[3..]))
            .try_normalize()
            .unwrap_or(DVec3::Z);
        out.separating = true;
    }
    out
}

/// Which feature pairs of a triangle pair are certainly farther apart than `eta`, by the
/// triangles' planes: a triangle lies in its plane, so a vertex (or an edge wholly on one side)
/// farther than `eta` from one triangle's plane is farther than `eta` from every feature of
/// that triangle. A tolerance of `1e-9` of the coordinates' magnitude covers the rounding of
/// the plane distances, so a skipped feature pair's own distance test would find it beyond
/// `eta` too. A degenerate triangle's plane skips nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FarFeatures {
    /// Per vertex of the pair: whether it is farther than `eta` from the other triangle's
    /// plane, and on which side (`1.0` or `-1.0`; `0.0` when not far).
    side: [f64; 6],
}

impl FarFeatures {
    /// The far vertices of triangle pair `x = [a0, a1, a2, b0, b1, b2]` for layer thickness
    /// `eta`.
    #[inline]
    pub(crate) fn new(x: &[DVec3; 6], eta: f64) -> Self {
        let scale = x.iter().fold(0.0f64, |m, p| m.max(p.abs().max_element()));
        let reach = eta + 1e-9 * scale;
        let mut side = [0.0; 6];
        for (own, other) in [(0, 3), (3, 0)] {
            let (o0, o1, o2) = (x[other], x[other + 1], x[other + 2]);
            let Some(n) = (o1 - o0).cross(o2 - o0).try_normalize() else {
                continue;
            };
            for i in own..own + 3 {
                let d = (x[i] - o0).dot(n);
                if d.abs() > reach {
                    side[i] = d.signum();
                }
            }
        }
        Self { side }
    }

    /// Whether feature pair `f` (an index into [`TRIANGLE_PAIR_FEATURES`]) is farther than
    /// `eta`: a VT pair whose vertex is far, or an EE pair with an edge whose two ends are far
    /// on the same side.
    #[inline]
    pub(crate) fn skips(&self, f: usize) -> bool {
        match TRIANGLE_PAIR_FEATURES[f] {
            TriangleFeature::VertexTriangle([p, ..]) => self.side[p] != 0.0,
            TriangleFeature::EdgeEdge([p0, p1, q0, q1]) => {
                let wholly =
                    |a: usize, b: usize| self.side[a] != 0.0 && self.side[a] == self.side[b];
                wholly(p0, p1) || wholly(q0, q1)
            }
        }
    }
}

#[inline]
fn longest_of(e: [DVec3; 3]) -> DVec3 {
    let mut best = e[0];
    for &ei in &e[1..] {
        if ei.length_squared() > best.length_squared() {
            best = ei;
        }
    }
    best
}

/// Fallback normal when the separation is ~0 (see the module docs).
#[inline]
fn fallback_normal(geometric: DVec3, longest: DVec3, sep: DVec3, v_rel: DVec3) -> DVec3 {
    let g = match geometric.try_normalize() {
        Some(g) => g,
        None => match longest.try_normalize() {
            Some(e) => (-v_rel + v_rel.dot(e) * e)
                .try_normalize()
                .unwrap_or_else(|| e.any_orthonormal_vector()),
            None => DVec3::Z,
        },
    };
    let vn = v_rel.dot(g);
    if vn > 0.0 {
        -g
    } else if vn < 0.0 || sep.dot(g) >= 0.0 {
        g
    } else {
        -g
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn pair_impulse(
    c: [f64; 4],
    x: [DVec3; 4],
    v: [DVec3; 4],
    inv_mass: [f64; 4],
    distance: f64,
    geometric: DVec3,
    longest: DVec3,
    params: &PenaltyParams,
) -> PairImpulse<4> {
    let sep = c[0] * x[0] + c[1] * x[1] + c[2] * x[2] + c[3] * x[3];
    let v_rel = c[0] * v[0] + c[1] * v[1] + c[2] * v[2] + c[3] * v[3];
    let scale = x[0]
        .abs()
        .max(x[1].abs())
        .max(x[2].abs())
        .max(x[3].abs())
        .max_element();
    let sep_len = sep.length();
    let normal = if sep_len > NORMAL_FALLBACK_REL * scale && sep_len.is_finite() {
        sep / sep_len
    } else {
        fallback_normal(geometric, longest, sep, v_rel)
    };
    let vn = v_rel.dot(normal);
    let separating = vn > 0.0;
    let mut impulses = [DVec3::ZERO; 4];
    let active = distance < params.eta; // false for NaN
    if !active {
        return PairImpulse {
            impulses,
            distance,
            normal,
            separating,
        };
    }
    let r_eff = if separating {
        params.r * params.cor
    } else {
        params.r
    };
    let i_n = params.h * r_eff * (params.eta - distance);
    let mut j = i_n * normal;
    let vt = v_rel - vn * normal;
    if params.mu != 0.0 {
        if let Some(tau) = vt.try_normalize() {
            let mut f = params.mu * i_n.abs();
            if params.friction_cap {
                let k = c[0] * c[0] * inv_mass[0]
                    + c[1] * c[1] * inv_mass[1]
                    + c[2] * c[2] * inv_mass[2]
                    + c[3] * c[3] * inv_mass[3];
                if k > 0.0 {
                    f = f.min(vt.length() / k);
                }
            }
            j -= f * tau;
        }
    }
    for i in 0..4 {
        impulses[i] = c[i] * j;
    }
    PairImpulse {
        impulses,
        distance,
        normal,
        separating,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v3(a: [f64; 3]) -> DVec3 {
        DVec3::from_array(a)
    }

    fn params(eta: f64, cor: f64, mu: f64, cap: bool) -> PenaltyParams {
        PenaltyParams {
            eta,
            r: 1000.0,
            h: 1e-3,
            cor,
            mu,
            friction_cap: cap,
        }
    }

    fn pts() -> impl Strategy<Value = [[f64; 3]; 4]> {
        prop::array::uniform4(prop::array::uniform3(-1.0f64..1.0))
    }

    type Kernel = fn([DVec3; 4], [DVec3; 4], [f64; 4], &PenaltyParams) -> PairImpulse<4>;

    fn dist(kind: usize, x: [DVec3; 4]) -> f64 {
        if kind == 0 {
            vertex_triangle(x[0], x[1], x[2], x[3]).distance
        } else {
            edge_edge(x[0], x[1], x[2], x[3]).distance
        }
    }

    const KERNELS: [Kernel; 2] = [vertex_triangle_impulse, edge_edge_impulse];

    /// Is the closest-point configuration unambiguous enough for finite differences?
    fn smooth(kind: usize, x: [DVec3; 4]) -> bool {
        let d = dist(kind, x);
        if d < 1e-2 {
            return false;
        }
        if kind == 0 {
            let n = (x[2] - x[1]).cross(x[3] - x[1]);
            n.length() > 1e-2
        } else {
            let n = (x[1] - x[0]).cross(x[3] - x[2]);
            n.length() > 1e-2
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn a_triangle_pair_sums_its_feature_impulses_by_share(
            a in prop::array::uniform3(prop::array::uniform3(-1.0f64..1.0)),
            b in prop::array::uniform3(prop::array::uniform3(-1.0f64..1.0)),
            vs in prop::array::uniform6(prop::array::uniform3(-1.0f64..1.0)),
            lift in 2.0f64..2.5, mu in 0.0f64..1.0,
        ) {
            let mut x = [DVec3::ZERO; 6];
            for i in 0..3 {
                x[i] = v3(a[i]);
                x[3 + i] = v3(b[i]) + DVec3::new(0.0, 0.0, lift);
            }
            let v = vs.map(v3);
            let p = params(1.5, 0.5, mu, false);
            let shares: [f64; 15] = std::array::from_fn(|f| 1.0 / (1 + f % 4) as f64);
            let out = triangle_pair_impulse(x, v, [1.0; 6], &shares, &p);
            let mut expect = [DVec3::ZERO; 6];
            let mut nearest = f64::INFINITY;
            for (feature, share) in TRIANGLE_PAIR_FEATURES.iter().zip(shares) {
                let l = feature.verts();
                let kernel = match feature {
                    TriangleFeature::VertexTriangle(_) => KERNELS[0],
                    TriangleFeature::EdgeEdge(_) => KERNELS[1],
                };
                let f = kernel(l.map(|i| x[i]), l.map(|i| v[i]), [1.0; 4], &p);
                nearest = nearest.min(f.distance);
                for k in 0..4 {
                    expect[l[k]] += share * f.impulses[k];
                }
            }
            // The nearest feature pair, when it is within eta; beyond eta, at least eta.
            if nearest < p.eta {
                prop_assert_eq!(out.distance, nearest);
            } else {
                prop_assert!(out.distance >= p.eta);
            }
            // Every feature pair skipped by the planes' test is beyond eta.
            let far = FarFeatures::new(&x, p.eta);
            for (f, feature) in TRIANGLE_PAIR_FEATURES.iter().enumerate() {
                let [p0, p1, p2, p3] = feature.verts().map(|i| x[i]);
                let d = match feature {
                    TriangleFeature::VertexTriangle(_) => vertex_triangle(p0, p1, p2, p3).distance,
                    TriangleFeature::EdgeEdge(_) => edge_edge(p0, p1, p2, p3).distance,
                };
                prop_assert!(!far.skips(f) || d >= p.eta, "feature {f} at {d} < {}", p.eta);
            }
            let scale = expect.iter().map(|j| j.length()).fold(0.0, f64::max);
            let mut total = DVec3::ZERO;
            for (got, want) in out.impulses.iter().zip(expect) {
                prop_assert!((*got - want).length() <= 1e-12 * (1.0 + scale));
                total += *got;
            }
            // Every feature's impulses sum to zero, so the pair's do: momentum is conserved.
            prop_assert!(total.length() <= 1e-12 * (1.0 + scale));
        }

        #[test]
        fn impulse_is_minus_h_grad_energy(xs in pts(), kind in 0usize..2) {
            let x = xs.map(v3);
            prop_assume!(smooth(kind, x));
            let d0 = dist(kind, x);
            let p = params(d0 * 1.5 + 0.1, 1.0, 0.0, false);
            let out = KERNELS[kind](x, [DVec3::ZERO; 4], [1.0; 4], &p);
            let energy = |x: [DVec3; 4]| {
                let d = dist(kind, x);
                if d < p.eta { 0.5 * p.r * (p.eta - d) * (p.eta - d) } else { 0.0 }
            };
            let eps = 1e-6;
            for i in 0..4 {
                for k in 0..3 {
                    let mut xp = x;
                    let mut xm = x;
                    xp[i][k] += eps;
                    xm[i][k] -= eps;
                    let g = (energy(xp) - energy(xm)) / (2.0 * eps);
                    let expect = -p.h * g;
                    let got = out.impulses[i][k];
                    prop_assert!((got - expect).abs() <= 1e-6 * (1.0 + expect.abs()) * p.h * p.r,
                        "vertex {} axis {}: {} vs {}", i, k, got, expect);
                }
            }
        }

        #[test]
        fn momentum_conserved_with_friction(xs in pts(), vs in pts(), kind in 0usize..2, mu in 0.0f64..2.0, cap: bool) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let p = params(2.0, 0.5, mu, cap);
            let out = KERNELS[kind](x, v, [1.0, 2.0, 0.5, 0.0], &p);
            let sum: DVec3 = out.impulses.iter().sum();
            let mag: f64 = out.impulses.iter().map(|j| j.length()).sum();
            prop_assert!(sum.length() <= 1e-14 * (1.0 + mag), "{sum:?}");
            prop_assert!(out.normal.is_finite() && (out.normal.length() - 1.0).abs() < 1e-12);
            // Angular momentum: the normal part is exact; with friction the change is the
            // O(d) couple (x_A - x_B) x f, |.| <= d |f|.
            let torque: DVec3 = x.iter().zip(out.impulses.iter()).map(|(xi, ji)| xi.cross(*ji)).sum();
            let i_mag = out.impulses[0].length().max(out.impulses[1].length()).max(out.impulses[2].length()).max(out.impulses[3].length());
            let f_max = mu * p.h * p.r * p.eta * 2.0;
            prop_assert!(torque.length() <= out.distance * f_max + 1e-12 * (1.0 + i_mag));
        }

        #[test]
        fn normal_impulse_conserves_angular_momentum(xs in pts(), vs in pts(), kind in 0usize..2) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let out = KERNELS[kind](x, v, [1.0; 4], &params(2.0, 0.3, 0.0, false));
            let torque: DVec3 = x.iter().zip(out.impulses.iter()).map(|(xi, ji)| xi.cross(*ji)).sum();
            let i_mag: f64 = out.impulses.iter().map(|j| j.length()).sum();
            prop_assert!(torque.length() <= 1e-13 * (1.0 + i_mag));
        }

        #[test]
        fn zero_beyond_eta(xs in pts(), vs in pts(), kind in 0usize..2) {
            let x = xs.map(v3);
            let d = dist(kind, x);
            let out = KERNELS[kind](x, vs.map(v3), [1.0; 4], &params(d, 1.0, 1.0, false));
            prop_assert!(out.impulses.iter().all(|j| *j == DVec3::ZERO));
            let out = KERNELS[kind](x, vs.map(v3), [1.0; 4], &params(d * 0.5, 1.0, 1.0, false));
            prop_assert!(out.impulses.iter().all(|j| *j == DVec3::ZERO));
        }

        #[test]
        fn separating_pair_with_zero_cor_gets_no_normal_impulse(xs in pts(), vs in pts(), kind in 0usize..2) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let out = KERNELS[kind](x, v, [1.0; 4], &params(3.0, 0.0, 0.0, false));
            if out.separating {
                prop_assert!(out.impulses.iter().all(|j| *j == DVec3::ZERO));
            } else {
                // Approaching: full stiffness, repulsive along n on side A.
                prop_assert!(out.impulses[0].dot(out.normal) >= 0.0);
            }
        }

        #[test]
        fn friction_opposes_sliding_and_scales_with_mu(xs in pts(), vs in pts(), kind in 0usize..2, mu in 0.01f64..2.0) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let m = [1.0, 2.0, 0.5, 1.5];
            let base = KERNELS[kind](x, v, m, &params(3.0, 1.0, 0.0, false));
            let fr = KERNELS[kind](x, v, m, &params(3.0, 1.0, mu, false));
            let fr2 = KERNELS[kind](x, v, m, &params(3.0, 1.0, 2.0 * mu, false));
            let n = fr.normal;
            let c = coeffs(kind, x);
            let v_rel: DVec3 = (0..4).map(|i| c[i] * v[i]).sum();
            let vt = v_rel - v_rel.dot(n) * n;
            prop_assume!(vt.length() > 1e-9);
            // Friction part of the side-A (vertex 0 weight c0 > 0 or c1 > 0) common vector.
            let (i, ci) = if c[0].abs() >= c[1].abs() { (0, c[0]) } else { (1, c[1]) };
            prop_assume!(ci.abs() > 1e-3);
            let f = (fr.impulses[i] - base.impulses[i]) / ci;
            let f2 = (fr2.impulses[i] - base.impulses[i]) / ci;
            let i_n = base.impulses[i].length() / ci.abs();
            prop_assert!(f.dot(vt) < 0.0 || i_n == 0.0);
            prop_assert!(f.dot(n).abs() <= 1e-12 * (1.0 + f.length()));
            prop_assert!((f.length() - mu * i_n).abs() <= 1e-12 * (1.0 + i_n));
            prop_assert!((f2.length() - 2.0 * f.length()).abs() <= 1e-12 * (1.0 + i_n));
            // Friction is parallel to -v_t.
            prop_assert!(f.cross(vt).length() <= 1e-9 * f.length() * vt.length() + 1e-15);
        }

        #[test]
        fn capped_friction_never_reverses_sliding(xs in pts(), vs in pts(), kind in 0usize..2, mu in 0.0f64..50.0, ms in prop::array::uniform4(0.0f64..3.0)) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let p = PenaltyParams { eta: 3.0, r: 1e4, h: 1e-2, cor: 1.0, mu, friction_cap: true };
            let out = KERNELS[kind](x, v, ms, &p);
            let vnew: Vec<DVec3> = (0..4).map(|i| v[i] + ms[i] * out.impulses[i]).collect();
            let c = coeffs(kind, x);
            let n = out.normal;
            let rel = |v: &[DVec3]| {
                let vr: DVec3 = (0..4).map(|i| c[i] * v[i]).sum();
                vr - vr.dot(n) * n
            };
            let before = rel(&v);
            let after = rel(&vnew);
            // Same direction (a non-negative multiple), never longer.
            prop_assert!(after.dot(before) >= -1e-9 * (1.0 + before.length_squared()));
            prop_assert!(after.length() <= before.length() * (1.0 + 1e-9) + 1e-12);
            prop_assert!(after.cross(before).length() <= 1e-9 * (1.0 + before.length_squared()));
        }
    }

    fn coeffs(kind: usize, x: [DVec3; 4]) -> [f64; 4] {
        if kind == 0 {
            let w = vertex_triangle(x[0], x[1], x[2], x[3]).weights;
            [1.0, -w[0], -w[1], -w[2]]
        } else {
            let e = edge_edge(x[0], x[1], x[2], x[3]);
            [1.0 - e.s, e.s, -(1.0 - e.t), -e.t]
        }
    }

    #[test]
    fn uncapped_friction_can_reverse_but_cap_stops() {
        // Vertex sliding along +x over a triangle in z = 0, inside the layer.
        let x = [DVec3::new(0.2, 0.2, 0.01), DVec3::ZERO, DVec3::X, DVec3::Y];
        let v = [
            DVec3::new(1e-3, 0.0, 0.0),
            DVec3::ZERO,
            DVec3::ZERO,
            DVec3::ZERO,
        ];
        let m = [1.0, 0.0, 0.0, 0.0];
        let p = PenaltyParams {
            eta: 0.1,
            r: 1e4,
            h: 1e-2,
            cor: 1.0,
            mu: 1.0,
            friction_cap: false,
        };
        let out = vertex_triangle_impulse(x, v, m, &p);
        assert!((out.normal - DVec3::Z).length() < 1e-12);
        let vx = v[0].x + out.impulses[0].x;
        assert!(vx < 0.0, "uncapped friction reverses: {vx}");
        let out = vertex_triangle_impulse(
            x,
            v,
            m,
            &PenaltyParams {
                friction_cap: true,
                ..p
            },
        );
        let vx = v[0].x + out.impulses[0].x;
        assert!(vx.abs() < 1e-18, "capped friction stops exactly: {vx}");
        // z impulse is h r (eta - d).
        assert!((out.impulses[0].z - 1e-2 * 1e4 * 0.09).abs() < 1e-12);
    }

    #[test]
    fn fallback_normals_are_finite_and_push_back() {
        let p = params(0.1, 1.0, 0.5, true);
        // Vertex exactly on the triangle, moving down (-z): pushed up (+z).
        let x = [DVec3::new(0.2, 0.2, 0.0), DVec3::ZERO, DVec3::X, DVec3::Y];
        let v = [
            DVec3::new(0.3, 0.0, -1.0),
            DVec3::ZERO,
            DVec3::ZERO,
            DVec3::ZERO,
        ];
        let out = vertex_triangle_impulse(x, v, [1.0; 4], &p);
        assert_eq!(out.normal, DVec3::Z);
        assert!(!out.separating);
        assert!(out.impulses[0].z > 0.0);
        // Moving up: pushed down.
        let v = [
            DVec3::new(0.0, 0.0, 1.0),
            DVec3::ZERO,
            DVec3::ZERO,
            DVec3::ZERO,
        ];
        assert_eq!(
            vertex_triangle_impulse(x, v, [1.0; 4], &p).normal,
            -DVec3::Z
        );
        // Crossing edges at distance 0.
        let x = [-DVec3::X, DVec3::X, -DVec3::Y, DVec3::Y];
        let v = [DVec3::Z, DVec3::Z, DVec3::ZERO, DVec3::ZERO];
        let out = edge_edge_impulse(x, v, [1.0; 4], &p);
        assert_eq!(out.normal, -DVec3::Z);
        // Fully degenerate: everything at one point, at rest, or collinear edges.
        for x in [
            [DVec3::ONE; 4],
            [DVec3::ZERO, DVec3::X, DVec3::X * 0.5, DVec3::X * 2.0],
        ] {
            for v in [
                [DVec3::ZERO; 4],
                [DVec3::Y, DVec3::ZERO, DVec3::X, DVec3::Z],
            ] {
                for k in KERNELS {
                    let out = k(x, v, [1.0; 4], &p);
                    assert!(out.normal.is_finite() && (out.normal.length() - 1.0).abs() < 1e-12);
                    assert!(out.impulses.iter().all(|j| j.is_finite()));
                    let s: DVec3 = out.impulses.iter().sum();
                    assert!(s.length() < 1e-15);
                }
            }
        }
        // Coplanar triangle containing the vertex, moving within the plane: the normal is
        // perpendicular to the in-plane motion.
        let x = [DVec3::new(0.2, 0.2, 0.0), DVec3::ZERO, DVec3::X, DVec3::Y];
        let v = [DVec3::X, DVec3::ZERO, DVec3::ZERO, DVec3::ZERO];
        let out = vertex_triangle_impulse(x, v, [1.0; 4], &p);
        assert_eq!(out.normal, DVec3::Z);
    }
}
