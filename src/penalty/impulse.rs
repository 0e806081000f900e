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
//! **Normal impulse.** `I = h r_eff (eta - d) + I_damp` if `d < eta`, else 0, with
//! `r_eff = cor * r` if the pair separates (`v_rel . n > 0`, restitution by biphasic stiffness,
//! §4.3) and `r` otherwise. Vertex `i` receives `c_i I n`. For `cor = 1` (no damping) this is
//! exactly `-h dV/dx_i` for `V = 0.5 r (eta - d(x))^2` (closest-point envelope theorem:
//! `dd/dx_i = c_i n`).
//!
//! **Approach damping** (`cor < 1`, the strain-rate damping §4.3 mentions and leaves out): a
//! dashpot on how far the gap closed since the pair's last tick within a layer,
//! `I_damp = beta (d_last - d) / (h K)` while it closes (never pulling),
//! `beta = (1 - cor) min(1, 2 h sqrt(r K))`: critical damping of the layer's spring at
//! `cor = 0`. Over an interval the gap returns to where it was, as at rest under a steady load,
//! it applies nothing, so the rest distance is the layer's.
//!
//! **Friction** (§4.3, with static friction the thesis leaves to future work). With the
//! tangential relative velocity `v_t = v_rel - (v_rel . n) n`, a pair that has stuck keeps an
//! *anchor*: the coefficients `c_i` of the tick it stuck at, so `sum_i c_i x_i` is the material
//! offset it holds. Static friction is budgeted over the pair's *window*
//! `T = max(h, PenaltyParams::kick)`, the longest interval between the kicks (elastic, gravity)
//! that load its vertices: a kick delivers in one instant the impulse of a force acting over
//! its clock, and friction must be able to answer it with what it can apply over the same
//! interval, not over one layer tick. So each pair keeps a *credit* of friction impulse
//! (`PairHistory::credit`): every tick adds its cone `mu I` and the credit is capped at
//! `C = mu T F`, `F` the normal force of all the pair's active layers at its distance
//! (`PenaltyParams::stack`; at least this tick's cone). The impulse that stops the sliding and
//! takes the pair back to its anchor over the window is `J_s = -(v_t + o_t / T) / K` (`o_t`
//! the tangential part of the anchor's offset). Within the credit it is applied (the pair
//! sticks; the first such tick sets the anchor) and the credit drawn down by `|J_s|`. Beyond
//! it, if the pair's layers could still stop its sliding over the window (`|v_t| <= C K`),
//! the whole credit is applied towards `J_s` and the anchor kept (a deep layer's short clock
//! asks for the whole return in its own tick, and a layer the pair barely reaches has a cone
//! too small to hold it alone), except the part of the offset that even `SLIP_WINDOWS`
//! windows of the pair's layers could not return: that part slips (the anchor moves towards
//! where the pair is by the fraction `1 - SLIP_WINDOWS C / |J_s|`), as in an elastic-plastic
//! friction law (without it, seven edge-edge pairs between two resting squares spent nearly
//! every tick here, and two squares kept vibrating); otherwise the pair slides: kinetic
//! friction `f = -mu I tau`, `tau = v_t / |v_t|`, the anchor is reset to where it is (by a
//! tick that pushes) and the credit spent. A tick that pushes nothing (a separating pair with `cor = 0`) can still draw
//! on the credit its pair's earlier ticks left: the normal load a resting pair carries comes
//! in bursts, its friction need not. Over any stretch of ticks a pair's friction impulse is at
//! most `C` plus the sum of their cones, so a sliding pair still feels `mu I` a tick. Side A
//! receives `f`, vertex `i` `c_i f`. `K` is the pair's effective inverse mass
//! `sum_i c_i^2 / m_i`, each vertex's mass split by the caller among the pairs of the tick
//! that touch it (their impulses are computed side by side from the same state). An
//! edge-edge pair's anchor is a material point on each edge (the coefficients at the tick it
//! stuck), so its offset is the tangential part of the vector between those two points: where
//! the edges' closest points move without the edges sliding (nearly parallel edges), the
//! anchored points do not. The optional cap (`friction_cap`, off by default) bounds kinetic
//! friction by `|v_t| / K` so it cannot reverse the sliding.
//!
//! **Conservation.** `sum_i c_i = 0`, so the impulses sum to zero: linear momentum is conserved
//! to round-off. Angular momentum changes by `sum_i x_i x (c_i J) = (x_A - x_B) x J` for the
//! common vector `J = I n + f`; the normal part has lever `x_A - x_B = d n` parallel to `n` and
//! conserves it exactly (up to round-off; with the fallback normal `d ~ 0`); the friction part
//! would change it by the couple `d n x f`. Normal impulses `g_i n` on the free vertices, summing
//! to zero, cancel that couple (`torque_free_couple`): angular momentum is conserved to
//! round-off whenever three free vertices of the pair span the tangent plane. Otherwise (a
//! pair against fixed or scripted vertices, which take the torque, or nearly collinear free
//! vertices) the couple `|d f| <= eta mu I` is left.

use super::closest::{edge_edge, vertex_triangle, TriangleFeature, TRIANGLE_PAIR_FEATURES};
use super::layers::LayerSchedule;
use glam::DVec3;

/// Relative threshold (against the largest coordinate magnitude) below which the closest-point
/// separation is too small to define the normal, and the fallback normal is used.
const NORMAL_FALLBACK_REL: f64 = 1e-12;

/// Impulses of one penalty-layer tick on the `N` vertices of a pair (in the order they were
/// given), with the geometry they were computed from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PairImpulse<const N: usize> {
    /// Impulse (momentum change, g cm/s) for each vertex; `v_i += inv_mass_i * impulses[i]`.
    pub impulses: [DVec3; N],
    /// Closest-point distance `d` of the pair at the tick.
    pub distance: f64,
    /// Unit contact normal `n`, from side B (triangle / edge q) to side A (vertex / edge p).
    pub normal: DVec3,
    /// Whether the pair separates: relative normal velocity `v_rel . n > 0`.
    pub separating: bool,
    /// The pair's static-friction anchor after the tick (see [`PairHistory::anchor`]).
    pub anchor: Option<[f64; 4]>,
    /// The pair's static-friction credit after the tick (see [`PairHistory::credit`]).
    pub credit: f64,
}

/// What a pair's earlier ticks left for its next one (one contact episode; empty at its start).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PairHistory {
    /// Where the pair sticks: the closest-point coefficients `c_i` at the tick the contact was
    /// loaded without sliding, so that `sum_i c_i x_i` is the material offset it holds at zero
    /// tangential displacement; `None` until then and after a slip resets it.
    pub anchor: Option<[f64; 4]>,
    /// The pair's distance at its last tick within a layer's thickness (any layer): how far
    /// the gap closed since drives the approach damping.
    pub gap: Option<f64>,
    /// The friction impulse the pair's ticks have earned and not yet used (each tick's cone,
    /// capped at what its layers could apply over its friction window): static friction may
    /// spend it at once on a kick that came between two ticks (the module docs, "Friction").
    pub credit: f64,
}

/// Parameters of one layer tick: `eta = eta(l)`, `r = r(l)`, `h = h(l)`, restitution and
/// friction coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PenaltyParams {
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
    /// Cap kinetic friction so it cannot reverse the relative tangential velocity (default:
    /// off).
    pub friction_cap: bool,
    /// The layers holding the pair: their schedule and how many the pair has active. Its
    /// static friction is capped at what all of them together could apply over its window
    /// (see [`Self::kick`]); `None`: at this tick's cone.
    pub stack: Option<(LayerSchedule, u32)>,
    /// The longest interval between the regular kicks (elastic, gravity) that load the pair's
    /// free vertices, 0 if unknown: the pair's friction window is the larger of it and `h`
    /// (the module docs, "Friction").
    pub kick: f64,
}

/// A sticking pair's anchor slips by the part of its offset that its layers' friction over
/// this many windows could not return (see the module docs, "Friction"). Measured on the twelve
/// squares of `sync_squares_incline` (friction 0.5), the largest RMS of a square's centre about
/// its mean over [2.5, 3.0) s: 0.002 cm with 2 (at most 0.003 in every half second from 1 s),
/// 0.018 with no slip, 0.009 with 1, 0.004 with 4, 0.013 with 8; with 1, a particle 4% inside
/// the friction cone creeps at 0.005 cm/s (`tests/resting_contact.rs`).
const SLIP_WINDOWS: f64 = 2.0;

impl PenaltyParams {
    /// The pair's friction window `T = max(h, kick)`.
    fn window(&self) -> f64 {
        self.h.max(self.kick)
    }

    /// The friction impulse that all the pair's layers at `distance` could apply over its
    /// window, at least `cone` (this tick's): the most static friction credit it can hold.
    fn hold(&self, distance: f64, cone: f64) -> f64 {
        self.stack.map_or(cone, |(schedule, layers)| {
            let force: f64 = (1..=layers)
                .map(|l| schedule.r(l) * (schedule.eta(l) - distance).max(0.0))
                .sum();
            (self.mu * self.window() * force).max(cone)
        })
    }
}

/// Impulses of one tick of a penalty layer on a vertex-triangle pair.
///
/// `x = [p, a, b, c]` positions at the tick, `v` their velocities, `inv_mass` their inverse
/// masses (used only by the friction cap). Closest point `q = w0 a + w1 b + w2 c`,
/// `d = |p - q|`, `n = (p - q) / d`; with `I = h r_eff (eta - d)` for `d < eta` (see the module
/// docs for `r_eff`, the fallback normal and friction) the impulses are `p: +I n`,
/// `a, b, c: -w_i I n`, plus friction with the same weights.
#[inline]
pub(crate) fn vertex_triangle_impulse(
    x: [DVec3; 4],
    v: [DVec3; 4],
    inv_mass: [f64; 4],
    history: &PairHistory,
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
    let geometry = Geometry {
        distance: cl.distance,
        geometric,
        longest,
    };
    pair_impulse(c, x, v, inv_mass, geometry, history, params)
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
    history: &PairHistory,
    params: &PenaltyParams,
) -> PairImpulse<4> {
    let cl = edge_edge(x[0], x[1], x[2], x[3]);
    let c = [1.0 - cl.s, cl.s, -(1.0 - cl.t), -cl.t];
    let d1 = x[1] - x[0];
    let d2 = x[3] - x[2];
    let geometric = d1.cross(d2);
    let longest = longest_of([d1, d2, d2]);
    let geometry = Geometry {
        distance: cl.distance,
        geometric,
        longest,
    };
    pair_impulse(c, x, v, inv_mass, geometry, history, params)
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
        anchor: None,
        credit: 0.0,
    };
    for (f, (feature, &share)) in TRIANGLE_PAIR_FEATURES.iter().zip(shares).enumerate() {
        if far.skips(f) {
            continue;
        }
        let l = feature.verts();
        let (xf, vf, mf) = (l.map(|i| x[i]), l.map(|i| v[i]), l.map(|i| inv_mass[i]));
        let impulse = match feature {
            TriangleFeature::VertexTriangle(_) => {
                vertex_triangle_impulse(xf, vf, mf, &PairHistory::default(), params)
            }
            TriangleFeature::EdgeEdge(_) => {
                edge_edge_impulse(xf, vf, mf, &PairHistory::default(), params)
            }
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

/// The closest-point geometry of a feature pair: its distance, its geometric normal and its
/// longest edge (for the fallback normal).
#[derive(Clone, Copy, Debug)]
struct Geometry {
    distance: f64,
    geometric: DVec3,
    longest: DVec3,
}

#[inline]
fn pair_impulse(
    c: [f64; 4],
    x: [DVec3; 4],
    v: [DVec3; 4],
    inv_mass: [f64; 4],
    geometry: Geometry,
    history: &PairHistory,
    params: &PenaltyParams,
) -> PairImpulse<4> {
    let distance = geometry.distance;
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
        fallback_normal(geometry.geometric, geometry.longest, sep, v_rel)
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
            anchor: history.anchor,
            credit: history.credit,
        };
    }
    let r_eff = if separating {
        params.r * params.cor
    } else {
        params.r
    };
    let k = c[0] * c[0] * inv_mass[0]
        + c[1] * c[1] * inv_mass[1]
        + c[2] * c[2] * inv_mass[2]
        + c[3] * c[3] * inv_mass[3];
    let i_n =
        params.h * r_eff * (params.eta - distance) + approach_damping(distance, k, history, params);
    let mut j = i_n * normal;
    let vt = v_rel - vn * normal;
    let mut anchor = history.anchor;
    let mut credit = history.credit;
    if params.mu != 0.0 && k > 0.0 && (i_n > 0.0 || credit > 0.0) {
        let cone = params.mu * i_n;
        let window = params.window();
        let hold = params.hold(distance, cone);
        let available = (credit + cone).min(hold);
        // The tangential impulse that stops the sliding and takes the pair back to its anchor
        // over its window; within the credit the contact sticks.
        let offset = anchor.map_or(DVec3::ZERO, |a| {
            let held = a[0] * x[0] + a[1] * x[1] + a[2] * x[2] + a[3] * x[3];
            held - held.dot(normal) * normal
        });
        let stick = -(vt + offset / window) / k;
        let need = stick.length();
        if need <= available {
            j += stick;
            credit = available - need;
            anchor.get_or_insert(c);
        } else if vt.length() <= hold * k && anchor.is_some() {
            // More than the credit, but not sliding faster than the pair's layers together can
            // stop over its window: spend the credit towards the anchor, and keep it but for
            // what even `SLIP_WINDOWS` windows of friction could not return, which slips.
            j += stick * (available / need);
            credit = 0.0;
            let slip = (1.0 - SLIP_WINDOWS * hold / need).max(0.0);
            if let Some(a) = anchor.as_mut() {
                for (held, now) in a.iter_mut().zip(c) {
                    *held += slip * (now - *held);
                }
            }
        } else {
            if let Some(tau) = vt.try_normalize().or_else(|| (-stick).try_normalize()) {
                let mut f = cone;
                if params.friction_cap {
                    f = f.min(vt.length() / k);
                }
                j -= f * tau;
            }
            // A tick that pushes nothing (spending credit while separating) slides nowhere.
            if i_n > 0.0 {
                anchor = Some(c);
            }
            credit = 0.0;
        }
    }
    for i in 0..4 {
        impulses[i] = c[i] * j;
    }
    if j != i_n * normal {
        // Friction acted: cancel its couple.
        let couple = torque_free_couple(x, inv_mass, sep.cross(j), normal);
        for i in 0..4 {
            impulses[i] += couple[i] * normal;
        }
    }
    PairImpulse {
        impulses,
        distance,
        normal,
        separating,
        anchor,
        credit,
    }
}

/// The normal impulse of the layer's approach damping (`cor < 1`): a dashpot on how far the
/// gap closed since the pair's last tick, that pushes only while the gap closes. It is the
/// impulse `c (d_last - d)` of a dashpot `c = beta / (h K)` over that interval (`h` the
/// layer's clock), so `beta = (1 - cor) min(1, 2 h sqrt(r K))` of a closing speed kept over one
/// clock is taken out (critical damping of the layer's spring at `cor = 0`), never more. A pair
/// at rest under a steady load, whose gap returns to the same value at every tick, feels none,
/// so its rest distance is the layer's.
#[inline]
fn approach_damping(distance: f64, k: f64, history: &PairHistory, params: &PenaltyParams) -> f64 {
    let Some(last) = history.gap else {
        return 0.0;
    };
    let closed = last - distance;
    if params.cor >= 1.0 || k <= 0.0 || closed <= 0.0 {
        return 0.0;
    }
    let beta = (1.0 - params.cor) * (2.0 * params.h * (params.r * k).sqrt()).min(1.0);
    beta * closed / (params.h * k)
}

/// Normal impulses `g_i n` on the pair's four vertices, summing to zero, whose torque cancels
/// `torque` (the torque of the pair's common impulse applied with its closest-point weights,
/// `(x_A - x_B) x J`): the `g` of least `sum g_i^2 / w_i` (`w_i` the inverse masses, so fixed
/// vertices get none) with `sum g_i = 0` and `sum g_i P x_i = torque x n` (`P` the projection
/// onto the tangent plane). Zero when fewer than three free vertices span the tangent plane:
/// then no normal couple among the free vertices can cancel it (against a fixed or scripted
/// side the torque goes into what holds it, as it should), and the couple
/// `|x_A - x_B| |J_t| <= eta |J_t|` is left.
#[inline]
fn torque_free_couple(x: [DVec3; 4], w: [f64; 4], torque: DVec3, normal: DVec3) -> [f64; 4] {
    let need = torque.cross(normal);
    if need == DVec3::ZERO || w.iter().filter(|&&w| w > 0.0).count() < 3 {
        return [0.0; 4];
    }
    let (t1, t2) = normal.any_orthonormal_pair();
    let centre = (x[0] + x[1] + x[2] + x[3]) * 0.25;
    let a = x.map(|p| (p - centre).dot(t1));
    let b = x.map(|p| (p - centre).dot(t2));
    // g = W A^T lambda with A's rows [1, 1, 1, 1], a, b, and (A W A^T) lambda = (0, ra, rb).
    let one = [1.0; 4];
    let wa: [f64; 4] = std::array::from_fn(|i| w[i] * a[i]);
    let wb: [f64; 4] = std::array::from_fn(|i| w[i] * b[i]);
    let m = glam::DMat3::from_cols(
        DVec3::new(dot4(w, one), dot4(wa, one), dot4(wb, one)),
        DVec3::new(dot4(wa, one), dot4(wa, a), dot4(wa, b)),
        DVec3::new(dot4(wb, one), dot4(wb, a), dot4(wb, b)),
    );
    // Nearly singular (the free vertices' projections nearly collinear): the couple would be
    // huge and its rounding too.
    let det = m.determinant();
    if det.is_nan() || det <= 1e-6 * m.x_axis.x * m.y_axis.y * m.z_axis.z {
        return [0.0; 4];
    }
    let lambda = m.inverse() * DVec3::new(0.0, need.dot(t1), need.dot(t2));
    let g: [f64; 4] =
        std::array::from_fn(|i| w[i] * (lambda.x + lambda.y * a[i] + lambda.z * b[i]));
    // The solve's rounding taken out of the sum, so the couple moves no momentum.
    let excess = (g[0] + g[1] + g[2] + g[3]) / m.x_axis.x;
    std::array::from_fn(|i| g[i] - w[i] * excess)
}

#[inline]
fn dot4(a: [f64; 4], b: [f64; 4]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
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
            stack: None,
            kick: 0.0,
        }
    }

    fn pts() -> impl Strategy<Value = [[f64; 3]; 4]> {
        prop::array::uniform4(prop::array::uniform3(-1.0f64..1.0))
    }

    type Kernel = fn([DVec3; 4], [DVec3; 4], [f64; 4], &PenaltyParams) -> PairImpulse<4>;

    /// The vertex-triangle kernel at the start of an episode (no anchor, no gap history).
    fn vt(x: [DVec3; 4], v: [DVec3; 4], m: [f64; 4], p: &PenaltyParams) -> PairImpulse<4> {
        vertex_triangle_impulse(x, v, m, &PairHistory::default(), p)
    }

    /// The edge-edge kernel at the start of an episode.
    fn ee(x: [DVec3; 4], v: [DVec3; 4], m: [f64; 4], p: &PenaltyParams) -> PairImpulse<4> {
        edge_edge_impulse(x, v, m, &PairHistory::default(), p)
    }

    /// The effective inverse mass `K = sum c_i^2 / m_i` of a pair.
    fn effective(c: [f64; 4], m: [f64; 4]) -> f64 {
        (0..4).map(|i| c[i] * c[i] * m[i]).sum()
    }

    fn dist(kind: usize, x: [DVec3; 4]) -> f64 {
        if kind == 0 {
            vertex_triangle(x[0], x[1], x[2], x[3]).distance
        } else {
            edge_edge(x[0], x[1], x[2], x[3]).distance
        }
    }

    const KERNELS: [Kernel; 2] = [vt, ee];

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
            // Fast enough to slide past what one tick's friction can stop.
            let v = vs.map(|u| 100.0 * v3(u));
            let m = [1.0, 2.0, 0.5, 1.5];
            let base = KERNELS[kind](x, v, m, &params(3.0, 1.0, 0.0, false));
            let fr = KERNELS[kind](x, v, m, &params(3.0, 1.0, mu, false));
            let fr2 = KERNELS[kind](x, v, m, &params(3.0, 1.0, 2.0 * mu, false));
            let n = fr.normal;
            let c = coeffs(kind, x);
            let v_rel: DVec3 = (0..4).map(|i| c[i] * v[i]).sum();
            let vt = v_rel - v_rel.dot(n) * n;
            prop_assume!(vt.length() > 1e-9);
            // Friction part of the side-A (vertex 0 weight c0 > 0 or c1 > 0) common vector,
            // its tangential part (the torque-free couple adds normal impulses).
            let (i, ci) = if c[0].abs() >= c[1].abs() { (0, c[0]) } else { (1, c[1]) };
            prop_assume!(ci.abs() > 1e-3);
            let tangential = |j: DVec3| j - j.dot(n) * n;
            let f = tangential(fr.impulses[i] - base.impulses[i]) / ci;
            let f2 = tangential(fr2.impulses[i] - base.impulses[i]) / ci;
            let i_n = base.impulses[i].length() / ci.abs();
            // Sliding faster than friction can stop in one tick: kinetic friction.
            prop_assume!(vt.length() / effective(c, m) > 2.0 * mu * i_n * (1.0 + 1e-9));
            prop_assert!(f.dot(vt) < 0.0 || i_n == 0.0);
            prop_assert!((f.length() - mu * i_n).abs() <= 1e-12 * (1.0 + i_n));
            prop_assert!((f2.length() - 2.0 * f.length()).abs() <= 1e-12 * (1.0 + i_n));
            // Friction is parallel to -v_t.
            prop_assert!(f.cross(vt).length() <= 1e-9 * f.length() * vt.length() + 1e-15);
        }

        #[test]
        fn friction_within_the_cone_sticks(xs in pts(), vs in pts(), kind in 0usize..2, ms in prop::array::uniform4(0.1f64..3.0)) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let p = PenaltyParams { eta: 3.0, r: 1e4, h: 1e-2, cor: 1.0, mu: 1e3, friction_cap: false, stack: None, kick: 0.0 };
            let out = KERNELS[kind](x, v, ms, &p);
            prop_assume!(out.distance < p.eta);
            let c = coeffs(kind, x);
            let n = out.normal;
            let rel = |v: &[DVec3]| {
                let vr: DVec3 = (0..4).map(|i| c[i] * v[i]).sum();
                vr - vr.dot(n) * n
            };
            let vnew: Vec<DVec3> = (0..4).map(|i| v[i] + ms[i] * out.impulses[i]).collect();
            // The sliding stops (to round-off), and the pair is anchored where it is.
            prop_assert!(rel(&vnew).length() <= 1e-9 * (1.0 + rel(&v).length()));
            prop_assert_eq!(out.anchor, Some(c));
        }

        #[test]
        fn friction_is_torque_free(xs in pts(), vs in pts(), kind in 0usize..2, mu in 0.01f64..2.0) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let out = KERNELS[kind](x, v, [1.0, 2.0, 0.5, 1.5], &params(3.0, 0.5, mu, false));
            let n = out.normal;
            let (t1, t2) = n.any_orthonormal_pair();
            let centre = x.iter().sum::<DVec3>() * 0.25;
            let a = x.map(|p| (p - centre).dot(t1));
            let b = x.map(|p| (p - centre).dot(t2));
            let (aa, ab, bb) = (dot4(a, a), dot4(a, b), dot4(b, b));
            // Four free points whose tangential projections span the plane.
            prop_assume!(aa * bb - ab * ab > 1e-2 * (aa + bb) * (aa + bb));
            let torque: DVec3 = x.iter().zip(out.impulses.iter()).map(|(xi, ji)| xi.cross(*ji)).sum();
            let sum: DVec3 = out.impulses.iter().sum();
            let mag: f64 = out.impulses.iter().map(|j| j.length()).sum();
            prop_assert!(torque.length() <= 1e-11 * (1.0 + mag), "{torque:?}");
            prop_assert!(sum.length() <= 1e-13 * (1.0 + mag), "{sum:?}");
        }

        #[test]
        fn approach_damping_acts_only_while_the_gap_closes(xs in pts(), kind in 0usize..2, cor in 0.0f64..1.0, rate in -10.0f64..10.0) {
            let x = xs.map(v3);
            let p = params(3.0, cor, 0.0, false);
            let plain = KERNELS[kind](x, [DVec3::ZERO; 4], [1.0; 4], &p);
            prop_assume!(plain.distance < p.eta && plain.distance > 1e-3);
            let dt = p.h;
            let history = PairHistory { gap: Some(plain.distance - rate * dt), ..PairHistory::default() };
            let kernel = [vertex_triangle_impulse, edge_edge_impulse][kind];
            let damped = kernel(x, [DVec3::ZERO; 4], [1.0; 4], &history, &p);
            let c = coeffs(kind, x);
            let i = if c[0].abs() >= c[1].abs() { 0 } else { 1 };
            let push = (damped.impulses[i] - plain.impulses[i]).dot(plain.normal) / c[i];
            if rate < 0.0 {
                // Closing: an extra push apart, at most the whole closing rate.
                let k = effective(coeffs(kind, x), [1.0; 4]);
                prop_assert!(push > 0.0 || cor == 1.0);
                prop_assert!(push * k <= -rate * (1.0 + 1e-9));
            } else {
                prop_assert_eq!(damped.impulses, plain.impulses);
            }
        }

        #[test]
        fn capped_friction_never_reverses_sliding(xs in pts(), vs in pts(), kind in 0usize..2, mu in 0.0f64..50.0, ms in prop::array::uniform4(0.0f64..3.0)) {
            let x = xs.map(v3);
            let v = vs.map(v3);
            let p = PenaltyParams { eta: 3.0, r: 1e4, h: 1e-2, cor: 1.0, mu, friction_cap: true, stack: None, kick: 0.0 };
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
    fn sticking_friction_stops_sliding_and_returns_to_its_anchor() {
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
            stack: None,
            kick: 0.0,
        };
        let out = vt(x, v, m, &p);
        assert!((out.normal - DVec3::Z).length() < 1e-12);
        let vx = v[0].x + out.impulses[0].x;
        assert!(vx.abs() < 1e-18, "sticking friction stops exactly: {vx}");
        // z impulse is h r (eta - d).
        assert!((out.impulses[0].z - 1e-2 * 1e4 * 0.09).abs() < 1e-12);
        // Anchored 1e-4 cm behind: the impulse takes it back there by the next tick.
        let history = PairHistory {
            anchor: out.anchor,
            ..PairHistory::default()
        };
        let moved = [x[0] + DVec3::new(1e-4, 0.0, 0.0), x[1], x[2], x[3]];
        let back = vertex_triangle_impulse(moved, v, m, &history, &p);
        let vx = v[0].x + back.impulses[0].x;
        assert!(
            (vx + 1e-4 / p.h).abs() < 1e-12 * 1e-4 / p.h,
            "returns at {vx}"
        );
        // Beyond the cone it slides: kinetic friction mu I_n, and the anchor follows.
        let fast = [DVec3::new(1e3, 0.0, 0.0), v[1], v[2], v[3]];
        let slide = vertex_triangle_impulse(moved, fast, m, &history, &p);
        assert!((slide.impulses[0].x + 1e-2 * 1e4 * 0.09).abs() < 1e-12);
        assert_ne!(slide.anchor, out.anchor);
    }

    /// Layer 1 of a thesis stack (eta 0.1, r 1000), ticked every 1e-3 s, friction 0.5, no
    /// restitution, its vertices kicked every 1e-2 s (the window friction budgets over).
    fn layer_one_friction() -> PenaltyParams {
        use crate::penalty::layers::LayerLaw;
        let schedule = LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap();
        PenaltyParams {
            eta: 0.1,
            r: 1000.0,
            h: 1e-3,
            cor: 0.0,
            mu: 0.5,
            friction_cap: false,
            stack: Some((schedule, 1)),
            kick: 1e-2,
        }
    }

    #[test]
    fn friction_credit_answers_a_kick_at_once_and_kinetic_friction_is_kept() {
        // A vertex of 0.01 g at rest 0.05 cm above a fixed triangle in z = 0, inside layer 1
        // (eta 0.1, r 1000: 50 dyn), anchored where it is; its vertices are kicked every
        // 10 layer ticks, so its friction budgets over 1e-2 s.
        let p = layer_one_friction();
        let x = [DVec3::new(0.2, 0.2, 0.05), DVec3::ZERO, DVec3::X, DVec3::Y];
        let m = [100.0, 0.0, 0.0, 0.0];
        let cone = 0.5 * 1e-3 * 1000.0 * 0.05;
        let hold = 0.5 * 1e-2 * 1000.0 * 0.05;
        let at_rest = vt(x, [DVec3::ZERO; 4], m, &p);
        assert!(at_rest.anchor.is_some());
        assert!((at_rest.credit - cone).abs() < 1e-15, "{}", at_rest.credit);
        // A kick of 4 cones' worth along x: one tick's cone cannot stop it, a full credit does,
        // at once, and keeps the anchor.
        let kicked = |speed: f64| {
            [
                DVec3::new(speed, 0.0, 0.0),
                DVec3::ZERO,
                DVec3::ZERO,
                DVec3::ZERO,
            ]
        };
        let v = kicked(4.0 * cone * 100.0);
        let full = PairHistory {
            anchor: at_rest.anchor,
            gap: Some(0.05),
            credit: hold,
        };
        let out = vertex_triangle_impulse(x, v, m, &full, &p);
        assert!((v[0].x + 100.0 * out.impulses[0].x).abs() < 1e-12);
        assert_eq!(out.anchor, at_rest.anchor);
        assert!((out.credit - (hold - 4.0 * cone)).abs() < 1e-12 * hold);
        // Without credit, the tick's cone only, towards the anchor, which is kept.
        let empty = PairHistory {
            credit: 0.0,
            ..full
        };
        let out = vertex_triangle_impulse(x, v, m, &empty, &p);
        assert!((out.impulses[0].x + cone).abs() < 1e-15);
        assert_eq!((out.anchor, out.credit), (at_rest.anchor, 0.0));
        // Faster than the layers can stop over the window: kinetic friction, the cone and no
        // more, and the anchor follows; the credit is spent.
        let out = vertex_triangle_impulse(x, kicked(2.0 * hold * 100.0), m, &full, &p);
        assert!((out.impulses[0].x + cone).abs() < 1e-15);
        assert_eq!(out.credit, 0.0);
        assert_ne!(out.anchor, None);
    }

    #[test]
    fn an_anchor_slips_by_what_two_windows_of_friction_cannot_return() {
        // A vertex of 0.01 g at rest 0.05 cm above a large fixed triangle in z = 0, inside
        // layer 1 (its friction over the 1e-2 s window: hold = 0.25), no credit left, anchored
        // `d` cm uphill along x. Returning over the window asks `d / (T K)` = `d`: beyond
        // 2 hold = 0.5 the anchor slips by the fraction `1 - 0.5 / d`; within it, it is kept.
        let p = layer_one_friction();
        let triangle = [DVec3::ZERO, 10.0 * DVec3::X, 10.0 * DVec3::Y];
        let at = |p: DVec3| [p, triangle[0], triangle[1], triangle[2]];
        let x = at(DVec3::new(3.0, 3.0, 0.05));
        let m = [100.0, 0.0, 0.0, 0.0];
        let held_offset = |a: [f64; 4]| {
            let held: DVec3 = (0..4).map(|i| a[i] * x[i]).sum();
            held - held.z * DVec3::Z
        };
        for (d, kept) in [(0.4, 0.4), (1.0, 0.5), (2.0, 0.5)] {
            let anchored = vt(at(DVec3::new(3.0 - d, 3.0, 0.05)), [DVec3::ZERO; 4], m, &p);
            let history = PairHistory {
                anchor: anchored.anchor,
                gap: Some(0.05),
                credit: 0.0,
            };
            let out = vertex_triangle_impulse(x, [DVec3::ZERO; 4], m, &history, &p);
            let offset = held_offset(out.anchor.expect("the anchor is kept"));
            assert!(
                (offset - DVec3::new(kept, 0.0, 0.0)).length() < 1e-12,
                "anchored {d} cm away: offset {offset} after the tick"
            );
            // The tick's cone is spent towards the anchor either way.
            assert!(
                (out.impulses[0].x + 0.025).abs() < 1e-15,
                "{}",
                out.impulses[0]
            );
        }
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
        let out = vt(x, v, [1.0; 4], &p);
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
        assert_eq!(vt(x, v, [1.0; 4], &p).normal, -DVec3::Z);
        // Crossing edges at distance 0.
        let x = [-DVec3::X, DVec3::X, -DVec3::Y, DVec3::Y];
        let v = [DVec3::Z, DVec3::Z, DVec3::ZERO, DVec3::ZERO];
        let out = ee(x, v, [1.0; 4], &p);
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
        let out = vt(x, v, [1.0; 4], &p);
        assert_eq!(out.normal, DVec3::Z);
    }
}
