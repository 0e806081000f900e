//! Kinetic separation slabs (thesis §5.3, DESIGN §6): the narrow-phase certificate that a
//! vertex-triangle, edge-edge or triangle-triangle pair stays at least `eta` apart.
//!
//! Vertices move linearly from a common time `t0`: `x_i(t0 + dt) = x_i + dt v_i` (the caller
//! converts from per-vertex clocks). The `N` vertices are ordered side A first: VT
//! `[p, a, b, c]` with `a_count = 1` (A = the vertex, B = the triangle); EE `[p0, p1, q0, q1]`
//! with `a_count = 2` (A = edge p, B = edge q), the same order as
//! [`crate::penalty::impulse`]; triangle pairs `[a0, a1, a2, b0, b1, b2]` with `a_count = 3`
//! (`speed.triangle_pairs`, thesis §8.3).
//!
//! With closest points `a` (on A) and `b` (on B) at time `t0`, the slab is the plane through
//! `m = (a + b) / 2` with unit normal `n = (b - a) / |b - a|` (from A towards B; note that the
//! penalty normal points the other way, from B to A), translating with velocity
//! `w = (v_a + v_b) / 2`, the average velocity of the two closest points. It certifies
//! `(x_i(t) - m - dt w) . n <= -eta/2` for every vertex of A and `>= +eta/2` for every vertex of
//! B. Each condition is linear in `dt`; by convexity (each primitive is the convex hull of its
//! vertices) while all hold the primitives are on opposite sides of a slab of width `eta`, so the
//! pair is at least `eta` apart.

use crate::penalty::closest::{edge_edge, triangle_triangle, vertex_triangle};
use glam::DVec3;

/// A kinetic separation slab: plane through `point` with unit `normal` (from side A's closest
/// point to side B's), moving with `velocity`; certifies that every vertex of A stays at signed
/// distance `<= -half_gap` and every vertex of B at `>= +half_gap` from the moving plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Slab {
    /// Unit normal `n = (b - a) / |b - a|`, from A's closest point `a` to B's closest point `b`.
    pub(crate) normal: DVec3,
    /// A point of the plane at `t0`: the midpoint `m = (a + b) / 2` of the closest points.
    pub(crate) point: DVec3,
    /// Velocity of the plane: `w = (v_a + v_b) / 2`.
    pub(crate) velocity: DVec3,
    /// Half the certified gap, `eta / 2`.
    pub(crate) half_gap: f64,
}

/// Slacks `s_i` and closing rates `k_i` of the `N` side conditions: with `sigma_i = -1` on
/// side A (`i < a_count`) and `+1` on side B, condition `i` at offset `dt` is
/// `s_i - dt k_i >= 0`, where `s_i = sigma_i (x_i - m) . n - eta/2` and
/// `k_i = -sigma_i (v_i - w) . n`. Computed as `x_i . n - m . n` so that build, failure time and
/// audit share the same bits.
#[inline(always)]
fn conditions<const N: usize>(
    slab: &Slab,
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
) -> ([f64; N], [f64; N]) {
    let n = slab.normal;
    let mn = slab.point.dot(n);
    let mut s = [0.0; N];
    for i in 0..N {
        let sigma = if i < a_count { -1.0 } else { 1.0 };
        s[i] = sigma * (x[i].dot(n) - mn) - slab.half_gap;
    }
    (s, closing_rates(slab, v, a_count))
}

/// The closing rates `k_i` of [`conditions`] alone: how fast each vertex approaches its side's
/// boundary of the moving slab (negative: it recedes).
#[inline(always)]
fn closing_rates<const N: usize>(slab: &Slab, v: &[DVec3; N], a_count: usize) -> [f64; N] {
    let n = slab.normal;
    let wn = slab.velocity.dot(n);
    let mut k = [0.0; N];
    for i in 0..N {
        let sigma = if i < a_count { -1.0 } else { 1.0 };
        k[i] = sigma * (wn - v[i].dot(n));
    }
    k
}

/// A pair's closest points at one time (on side A, then on side B), their velocities and
/// their distance: what a slab is built from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ClosestPoints {
    /// The closest point of side A.
    pub(crate) a: DVec3,
    /// Its velocity.
    pub(crate) va: DVec3,
    /// The closest point of side B.
    pub(crate) b: DVec3,
    /// Its velocity.
    pub(crate) vb: DVec3,
    /// `|b - a|` as the closest-point routine computed it.
    pub(crate) distance: f64,
}

/// [`ClosestPoints`] of a vertex `x[0]` and a triangle `x[1..4]`.
#[inline(always)]
pub(crate) fn vertex_triangle_closest(x: &[DVec3; 4], v: &[DVec3; 4]) -> ClosestPoints {
    let c = vertex_triangle(x[0], x[1], x[2], x[3]);
    let w = c.weights;
    ClosestPoints {
        a: x[0],
        va: v[0],
        b: w[0] * x[1] + w[1] * x[2] + w[2] * x[3],
        vb: w[0] * v[1] + w[1] * v[2] + w[2] * v[3],
        distance: c.distance,
    }
}

/// [`ClosestPoints`] of the edges `x[0..2]` and `x[2..4]`.
#[inline(always)]
pub(crate) fn edge_edge_closest(x: &[DVec3; 4], v: &[DVec3; 4]) -> ClosestPoints {
    let c = edge_edge(x[0], x[1], x[2], x[3]);
    ClosestPoints {
        a: (1.0 - c.s) * x[0] + c.s * x[1],
        va: (1.0 - c.s) * v[0] + c.s * v[1],
        b: (1.0 - c.t) * x[2] + c.t * x[3],
        vb: (1.0 - c.t) * v[2] + c.t * v[3],
        distance: c.distance,
    }
}

/// [`ClosestPoints`] of the triangles `x[0..3]` and `x[3..6]`.
#[inline(always)]
pub(crate) fn triangles_closest(x: &[DVec3; 6], v: &[DVec3; 6]) -> ClosestPoints {
    let c = triangle_triangle([x[0], x[1], x[2]], [x[3], x[4], x[5]]);
    let combine = |w: [f64; 3], y: &[DVec3]| w[0] * y[0] + w[1] * y[1] + w[2] * y[2];
    ClosestPoints {
        a: combine(c.weights_a, &x[..3]),
        va: combine(c.weights_a, &v[..3]),
        b: combine(c.weights_b, &x[3..]),
        vb: combine(c.weights_b, &v[3..]),
        distance: c.distance,
    }
}

/// The closest points of the pair, for the shapes of the module docs; `None` for any other
/// `(N, a_count)`.
#[cfg(any(test, feature = "bench-kernels"))]
#[inline(always)]
fn closest_points<const N: usize>(
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
) -> Option<ClosestPoints> {
    let (x, v): (&[DVec3], &[DVec3]) = (x, v);
    match (N, a_count) {
        (4, 1) => Some(vertex_triangle_closest(
            x.try_into().ok()?,
            v.try_into().ok()?,
        )),
        (4, 2) => Some(edge_edge_closest(x.try_into().ok()?, v.try_into().ok()?)),
        (6, 3) => Some(triangles_closest(x.try_into().ok()?, v.try_into().ok()?)),
        _ => None,
    }
}

/// [`slab_through`] the closest points of the pair at `x`, `v` (the slab's properties are
/// tested, and its kernels benchmarked, through this).
#[cfg(any(test, feature = "bench-kernels"))]
#[inline]
pub(crate) fn build_slab<const N: usize>(
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
    eta: f64,
) -> Option<Slab> {
    slab_through(&closest_points(x, v, a_count)?, x, v, a_count, eta)
}

/// Builds the slab for the pair at time `t0` from its closest points `closest` at positions
/// `x` and velocities `v` (`a_count` vertices on side A: 1 for VT and 2 for EE with `N = 4`, 3
/// for a triangle pair with `N = 6`).
///
/// Returns `None` when the pair is already closer than `eta` (then the caller activates a layer
/// instead), and also, conservatively, when a slab cannot be certified: `eta` not finite and
/// `> 0`, or a vertex found on the wrong side of its boundary by round-off (only possible when
/// the distance is within round-off of `eta`).
#[inline]
pub(crate) fn slab_through<const N: usize>(
    closest: &ClosestPoints,
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
    eta: f64,
) -> Option<Slab> {
    if !(eta > 0.0 && eta.is_finite()) {
        return None;
    }
    let ab = closest.b - closest.a;
    if !(closest.distance >= eta && ab.length() >= eta) {
        return None;
    }
    let slab = Slab {
        normal: ab.try_normalize()?,
        point: 0.5 * (closest.a + closest.b),
        velocity: 0.5 * (closest.va + closest.vb),
        half_gap: 0.5 * eta,
    };
    let (s, _) = conditions(&slab, x, v, a_count);
    s.iter().all(|&si| si >= 0.0).then_some(slab)
}

/// Earliest offset `dt >= 0` after `t0` at which some vertex violates its side's condition, or
/// `f64::INFINITY`.
///
/// Condition `i` is `s_i - dt k_i >= 0` (see the module docs: `s_i` the slack at `t0`, `k_i` the
/// rate at which the vertex closes on its boundary); it fails at `s_i / k_i` if `k_i > 0`, never
/// if `k_i <= 0`, and at once if `s_i < 0`. The answer is the minimum over the vertices.
/// Conservative: for all `dt` in `[0, failure)` the pair is at least `eta` apart (convexity).
/// Non-finite input gives 0 (fail at once).
#[inline]
pub(crate) fn failure_time<const N: usize>(
    slab: &Slab,
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
) -> f64 {
    let (s, k) = conditions(slab, x, v, a_count);
    earliest_failure(&s, &k)
}

/// [`failure_time`] from the conditions' slacks `s` and closing rates `k`.
#[inline(always)]
fn earliest_failure<const N: usize>(s: &[f64; N], k: &[f64; N]) -> f64 {
    // Branch-free: all quotients are computed and selected (the compiler emits selects, and
    // packed divisions where available).
    let mut t = f64::INFINITY;
    for i in 0..N {
        let q = s[i] / k[i];
        let ti = if k[i] > 0.0 { q } else { f64::INFINITY };
        let ti = if s[i] >= 0.0 { ti } else { 0.0 };
        t = t.min(ti);
    }
    let all = s.iter().chain(k).fold(0.0, |sum, &y| sum + y);
    if all.is_finite() {
        t
    } else {
        0.0
    }
}

/// Whether the slab still holds at offset `dt`: every condition `s_i - dt k_i >= 0` (the same
/// arithmetic as [`failure_time`]; for the audit). NaN anywhere gives `false`.
#[inline]
pub(crate) fn holds<const N: usize>(
    slab: &Slab,
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
    dt: f64,
) -> bool {
    let (s, k) = conditions(slab, x, v, a_count);
    (0..N).all(|i| s[i] - dt * k[i] >= 0.0)
}

/// A fuzzy trajectory's allowance (thesis §8.2, "vague trajectories"): for each of the slab's
/// `N` vertices, the largest rate at which it may close on its side's boundary. While every
/// vertex closes no faster than its budget, the slab holds until the time it was scheduled for,
/// whatever kicks the vertices receive on the way, so those kicks need no re-timing.
pub(crate) type ClosingBudget<const N: usize = 4> = [f64; N];

/// A budget that no velocity fits: the slab must be re-timed at the next kick.
pub(crate) const fn no_budget<const N: usize>() -> ClosingBudget<N> {
    [f64::NEG_INFINITY; N]
}

/// Schedules a slab on fuzzy trajectories with quality loss `quality_loss` in `[0, 1)`
/// (thesis §8.2): the scheduled offset is `(1 - QL) * failure_time` and each vertex's closing
/// budget is the largest constant closing rate that keeps its condition until then,
/// `s_i / dt_scheduled`. `QL = 0` schedules at the exact failure time, where the vertex that
/// sets it has no room left; larger `QL` looks earlier and tolerates larger kicks. A slab
/// that never fails gets budgets of 0: any velocity that does not close on the slab keeps it.
///
/// Returns the scheduled offset and the budget; a slab failing at once gets [`no_budget`].
#[inline]
pub(crate) fn fuzzy_schedule<const N: usize>(
    slab: &Slab,
    x: &[DVec3; N],
    v: &[DVec3; N],
    a_count: usize,
    quality_loss: f64,
) -> (f64, ClosingBudget<N>) {
    let (s, k) = conditions(slab, x, v, a_count);
    let dt = earliest_failure(&s, &k);
    if dt <= 0.0 || dt.is_nan() {
        return (0.0, no_budget());
    }
    // `dt > 0` means every slack is finite and >= 0. Shading each budget down by four
    // roundings keeps `dt_scheduled * budget_i <= s_i` despite the division's rounding.
    const SHADE: f64 = 1.0 - 4.0 * f64::EPSILON;
    let scheduled = (1.0 - quality_loss) * dt;
    (scheduled, s.map(|si| si / scheduled * SHADE))
}

/// Whether velocities `v` keep every vertex within its closing `budget` (NaN: no).
#[inline]
pub(crate) fn within_budget<const N: usize>(
    slab: &Slab,
    v: &[DVec3; N],
    a_count: usize,
    budget: &ClosingBudget<N>,
) -> bool {
    let k = closing_rates(slab, v, a_count);
    (0..N).all(|i| k[i] <= budget[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v3(a: [f64; 3]) -> DVec3 {
        DVec3::from_array(a)
    }

    fn pts(r: f64) -> impl Strategy<Value = [[f64; 3]; 4]> {
        prop::array::uniform4(prop::array::uniform3(-r..r))
    }

    fn dist(x: &[DVec3; 4], a_count: usize) -> f64 {
        if a_count == 1 {
            vertex_triangle(x[0], x[1], x[2], x[3]).distance
        } else {
            edge_edge(x[0], x[1], x[2], x[3]).distance
        }
    }

    fn at(x: &[DVec3; 4], v: &[DVec3; 4], dt: f64) -> [DVec3; 4] {
        [0, 1, 2, 3].map(|i| x[i] + dt * v[i])
    }

    /// Separate the two sides: shift side B by `off` so the pair is usually apart.
    fn config(xs: [[f64; 3]; 4], off: [f64; 3], a_count: usize) -> [DVec3; 4] {
        let mut x = xs.map(v3);
        for xi in x.iter_mut().skip(a_count) {
            *xi += v3(off);
        }
        x
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(250))]

        #[test]
        fn certified_pair_never_closer_than_eta(
            xs in pts(1.0), vs in pts(1.0), off in prop::array::uniform3(-3.0f64..3.0),
            a_count in 1usize..3, frac in 0.05f64..0.99,
        ) {
            let x = config(xs, off, a_count);
            let v = vs.map(v3);
            let d = dist(&x, a_count);
            prop_assume!(d > 1e-3);
            let eta = d * frac;
            let slab = build_slab(&x, &v, a_count, eta).expect("separated pair certifies");
            let tf = failure_time(&slab, &x, &v, a_count);
            prop_assert!(tf >= 0.0);
            let horizon = tf.min(10.0);
            let n = 400;
            for j in 0..n {
                let dt = horizon * j as f64 / n as f64;
                let dj = dist(&at(&x, &v, dt), a_count);
                prop_assert!(dj >= eta * (1.0 - 1e-9), "dt = {dt}, tf = {tf}: {dj} < {eta}");
                prop_assert!(holds(&slab, &x, &v, a_count, dt));
            }
        }

        #[test]
        fn certified_triangle_pair_never_closer_than_eta(
            a in prop::array::uniform3(prop::array::uniform3(-1.0f64..1.0)),
            b in prop::array::uniform3(prop::array::uniform3(-1.0f64..1.0)),
            vs in prop::array::uniform6(prop::array::uniform3(-1.0f64..1.0)),
            off in prop::array::uniform3(-2.0f64..2.0), frac in 0.05f64..0.99,
        ) {
            // B lifted clear of A, so the triangles start apart.
            let lift = DVec3::new(off[0], off[1], 2.5 + off[2].abs());
            let [a0, a1, a2] = a.map(v3);
            let [b0, b1, b2] = b.map(|p| v3(p) + lift);
            let x = [a0, a1, a2, b0, b1, b2];
            let v = vs.map(v3);
            let dist = |x: &[DVec3; 6]| triangle_triangle([x[0], x[1], x[2]], [x[3], x[4], x[5]]).distance;
            let eta = dist(&x) * frac;
            let slab = build_slab(&x, &v, 3, eta).expect("separated triangles certify");
            let tf = failure_time(&slab, &x, &v, 3);
            prop_assert!(tf > 0.0);
            let horizon = tf.min(10.0);
            for j in 0..400 {
                let dt = horizon * j as f64 / 400.0;
                let y = [0, 1, 2, 3, 4, 5].map(|i| x[i] + dt * v[i]);
                prop_assert!(dist(&y) >= eta * (1.0 - 1e-9), "dt = {dt}, tf = {tf}");
                prop_assert!(holds(&slab, &x, &v, 3, dt));
            }
            // A pair shape the slab does not know certifies nothing.
            prop_assert!(build_slab(&x, &v, 2, eta).is_none());
        }

        #[test]
        fn failure_time_is_exact_for_the_plane_conditions(
            xs in pts(1.0), vs in pts(1.0), off in prop::array::uniform3(-3.0f64..3.0),
            a_count in 1usize..3, frac in 0.05f64..0.99,
        ) {
            let x = config(xs, off, a_count);
            let v = vs.map(v3);
            let d = dist(&x, a_count);
            prop_assume!(d > 1e-3);
            let slab = build_slab(&x, &v, a_count, d * frac).unwrap();
            let tf = failure_time(&slab, &x, &v, a_count);
            prop_assume!(tf.is_finite());
            // Signed distances from the moved plane, recomputed geometrically.
            let xt = at(&x, &v, tf);
            let m = slab.point + tf * slab.velocity;
            let slack: Vec<f64> = (0..4).map(|i| {
                let sd = (xt[i] - m).dot(slab.normal);
                if i < a_count { -sd - slab.half_gap } else { sd - slab.half_gap }
            }).collect();
            let scale = 1.0 + tf * 2.0 + 5.0;
            let min = slack.iter().cloned().fold(f64::INFINITY, f64::min);
            prop_assert!(min.abs() <= 1e-12 * scale, "{slack:?}");
            // Just after, the certificate no longer holds.
            prop_assert!(!holds(&slab, &x, &v, a_count, tf * (1.0 + 1e-9) + 1e-12));
        }

        #[test]
        fn approaching_fails_no_later_than_receding(
            xs in pts(1.0), vs in pts(1.0), off in prop::array::uniform3(-3.0f64..3.0),
            a_count in 1usize..3, speed in 0.1f64..3.0,
        ) {
            let x = config(xs, off, a_count);
            let v = vs.map(v3);
            let d = dist(&x, a_count);
            prop_assume!(d > 1e-3);
            let eta = 0.5 * d;
            let slab = build_slab(&x, &v, a_count, eta).unwrap();
            let n = slab.normal;
            // Push side A towards B (along +n) or away from it.
            let push = |sign: f64| {
                let mut w = v;
                for wi in w.iter_mut().take(a_count) {
                    *wi += sign * speed * n;
                }
                w
            };
            let (va, vr) = (push(1.0), push(-1.0));
            let sa = build_slab(&x, &va, a_count, eta).unwrap();
            let sr = build_slab(&x, &vr, a_count, eta).unwrap();
            prop_assert_eq!(sa.normal, n);
            let (ta, t0, tr) = (
                failure_time(&sa, &x, &va, a_count),
                failure_time(&slab, &x, &v, a_count),
                failure_time(&sr, &x, &vr, a_count),
            );
            prop_assert!(ta <= t0 * (1.0 + 1e-12) && t0 <= tr * (1.0 + 1e-12), "{ta} {t0} {tr}");
            prop_assert!(ta < tr || ta == f64::INFINITY);
        }

        #[test]
        fn closer_than_eta_gives_none(xs in pts(1.0), vs in pts(1.0), a_count in 1usize..3, frac in 1.0001f64..10.0) {
            let x = xs.map(v3);
            let d = dist(&x, a_count);
            prop_assert!(build_slab(&x, &vs.map(v3), a_count, d * frac + 1e-300).is_none());
        }
    }

    /// Velocities `v` moved along the slab normal where needed so that every vertex closes no
    /// faster than `budget` allows (a kick the fuzzy trajectory absorbs).
    fn clamp_to_budget(
        slab: &Slab,
        v: [DVec3; 4],
        a_count: usize,
        budget: &ClosingBudget,
    ) -> [DVec3; 4] {
        let n = slab.normal;
        let k = closing_rates(slab, &v, a_count);
        let mut out = v;
        for i in 0..4 {
            if k[i] > budget[i] {
                // k_i = sigma (w.n - v_i.n): lower it by moving v_i along sigma n.
                let sigma = if i < a_count { -1.0 } else { 1.0 };
                out[i] += sigma * (k[i] - budget[i]) * (1.0 + 1e-6) * n;
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Any piecewise-constant velocities inside the budget keep the pair `eta` apart until
        /// the scheduled time (thesis §8.2: the cone of trajectories needs no rescheduling).
        #[test]
        fn fuzzy_budget_keeps_the_pair_apart_until_the_scheduled_time(
            xs in pts(1.0), vs in pts(1.0), off in prop::array::uniform3(-3.0f64..3.0),
            a_count in 1usize..3, frac in 0.05f64..0.99, ql in 0.0f64..0.95,
            kicks in prop::collection::vec((pts(2.0), 0.0f64..1.0), 1..6),
        ) {
            let x = config(xs, off, a_count);
            let v = vs.map(v3);
            let d = dist(&x, a_count);
            prop_assume!(d > 1e-3);
            let eta = d * frac;
            let slab = build_slab(&x, &v, a_count, eta).unwrap();
            let (scheduled, budget) = fuzzy_schedule(&slab, &x, &v, a_count, ql);
            let exact = failure_time(&slab, &x, &v, a_count);
            prop_assert!(scheduled <= exact);
            let horizon = scheduled.min(10.0);
            // Kicked at random fractions of the horizon, each kick clamped into the budget.
            let mut times: Vec<f64> = kicks.iter().map(|(_, f)| f * horizon).collect();
            times.sort_by(f64::total_cmp);
            let (mut p, mut vel, mut now) = (x, v, 0.0);
            for (j, ((dv, _), &at_time)) in kicks.iter().zip(&times).enumerate() {
                for step in 0..=20 {
                    let dt = (at_time - now) * step as f64 / 20.0;
                    let dj = dist(&at(&p, &vel, dt), a_count);
                    prop_assert!(dj >= eta * (1.0 - 1e-9), "segment {j}: {dj} < {eta}");
                }
                p = at(&p, &vel, at_time - now);
                now = at_time;
                let kicked = [0, 1, 2, 3].map(|i| vel[i] + v3(dv[i]));
                vel = clamp_to_budget(&slab, kicked, a_count, &budget);
                prop_assert!(within_budget(&slab, &vel, a_count, &budget));
            }
            for step in 0..=40 {
                let dt = (horizon - now) * step as f64 / 40.0;
                let dj = dist(&at(&p, &vel, dt), a_count);
                prop_assert!(dj >= eta * (1.0 - 1e-9), "last segment: {dj} < {eta}");
            }
        }
    }

    #[test]
    fn quality_loss_trades_an_earlier_look_for_a_wider_budget() {
        let x = [DVec3::new(0.2, 0.2, 1.0), DVec3::ZERO, DVec3::X, DVec3::Y];
        let down = [
            DVec3::new(0.0, 0.0, -1.0),
            DVec3::ZERO,
            DVec3::ZERO,
            DVec3::ZERO,
        ];
        let slab = build_slab(&x, &down, 1, 0.5).unwrap();
        let exact = failure_time(&slab, &x, &down, 1);
        let (t0, b0) = fuzzy_schedule(&slab, &x, &down, 1, 0.0);
        let (t7, b7) = fuzzy_schedule(&slab, &x, &down, 1, 0.7);
        assert_eq!(t0, exact);
        assert!((t7 - 0.3 * exact).abs() < 1e-15);
        // The falling vertex closes at 0.5: no room at QL = 0, room for 1/0.3 - 1 more at 0.7.
        let k = closing_rates(&slab, &down, 1);
        assert!(b0[0] <= k[0] && b0[0] > k[0] * (1.0 - 1e-12));
        assert!(within_budget(&slab, &down, 1, &b7));
        assert!(!within_budget(&slab, &down, 1, &b0));
        let mut faster = down;
        faster[0].z = -2.0;
        assert!(within_budget(&slab, &faster, 1, &b7));
        faster[0].z = -4.0;
        assert!(!within_budget(&slab, &faster, 1, &b7));
        // Receding for ever: budgets of 0, which any velocity fits that does not close on the
        // slab (moving up at 0.5 with the vertex and the triangle splitting the difference).
        let up = down.map(|v| -v);
        let slab = build_slab(&x, &up, 1, 0.5).unwrap();
        let (t, b) = fuzzy_schedule(&slab, &x, &up, 1, 0.7);
        assert_eq!((t, b), (f64::INFINITY, [0.0; 4]));
        assert!(within_budget(&slab, &up, 1, &b));
        assert!(within_budget(&slab, &[DVec3::Z * 0.5; 4], 1, &b));
        assert!(!within_budget(&slab, &[DVec3::ZERO; 4], 1, &b));
        // Failing at once, or NaN: nothing fits.
        let mut bad = down;
        bad[2] = DVec3::splat(f64::NAN);
        assert_eq!(fuzzy_schedule(&slab, &x, &bad, 1, 0.7), (0.0, no_budget()));
        assert!(!within_budget(&slab, &bad, 1, &b));
    }

    #[test]
    fn vertex_over_triangle() {
        let x = [DVec3::new(0.2, 0.2, 1.0), DVec3::ZERO, DVec3::X, DVec3::Y];
        let still = [DVec3::ZERO; 4];
        let down = [
            DVec3::new(0.0, 0.0, -1.0),
            DVec3::ZERO,
            DVec3::ZERO,
            DVec3::ZERO,
        ];
        let up = [
            DVec3::new(0.0, 0.0, 1.0),
            DVec3::ZERO,
            DVec3::ZERO,
            DVec3::ZERO,
        ];
        let slab = build_slab(&x, &down, 1, 0.5).unwrap();
        assert_eq!(slab.normal, -DVec3::Z);
        assert_eq!(slab.half_gap, 0.25);
        // The plane is at z = 0.5 moving down at 0.5: the vertex (at 1 - dt) reaches
        // 0.5 - 0.5 dt + 0.25 at dt = 0.5; the triangle reaches 0.5 - 0.5 dt - 0.25 = 0 at 0.5.
        assert!((failure_time(&slab, &x, &down, 1) - 0.5).abs() < 1e-15);
        // True distance at failure: 0.5 = eta (the slab is tight for head-on motion).
        let slab = build_slab(&x, &still, 1, 0.5).unwrap();
        assert_eq!(failure_time(&slab, &x, &still, 1), f64::INFINITY);
        let slab = build_slab(&x, &up, 1, 0.5).unwrap();
        assert_eq!(failure_time(&slab, &x, &up, 1), f64::INFINITY);
        assert!(holds(&slab, &x, &up, 1, 1e6));
        assert!(build_slab(&x, &still, 1, 1.0).is_some());
        assert!(build_slab(&x, &still, 1, 1.0 + 1e-12).is_none());
        assert!(build_slab(&x, &still, 3, 0.5).is_none());
        assert!(build_slab(&x, &still, 1, 0.0).is_none());
        assert!(build_slab(&x, &still, 1, f64::NAN).is_none());
    }

    #[test]
    fn receding_edges_never_fail_and_nan_fails_at_once() {
        let x = [
            -DVec3::X,
            DVec3::X,
            DVec3::new(0.0, -1.0, 1.0),
            DVec3::new(0.0, 1.0, 1.0),
        ];
        let v = [DVec3::ZERO, DVec3::ZERO, DVec3::Z, DVec3::Z * 2.0];
        let slab = build_slab(&x, &v, 2, 0.9).unwrap();
        assert_eq!(slab.normal, DVec3::Z);
        assert_eq!(failure_time(&slab, &x, &v, 2), f64::INFINITY);
        let mut bad = v;
        bad[1] = DVec3::splat(f64::NAN);
        assert_eq!(failure_time(&slab, &x, &bad, 2), 0.0);
        assert!(!holds(&slab, &x, &bad, 2, 0.0));
    }
}
