//! Closest points between contact primitives: vertex-triangle (VT) and edge-edge (EE), and
//! between two triangles (the nearest of their fifteen VT and EE feature pairs).
//!
//! Both queries are total: for finite input they return finite weights/parameters in range and
//! a finite distance, whatever the geometry (zero-area triangles, zero-length or parallel
//! segments). Ties are broken deterministically (first candidate in a fixed order wins), so the
//! same input always gives the same bits.

use glam::DVec3;

/// Below this value of `sin^2` of the angle between two edges, a triangle is treated as
/// degenerate (collinear or zero-area) and its closest point is taken on its edges.
const SIN2_DEGENERATE: f64 = 1e-20;

/// Above this value of `sin^2` of the angle between two segments, the unconstrained minimiser of
/// their distance is accurate (its error grows as `eps / sin^2`: here at most about `1e-10` of
/// the segments' length); below it the segments are nearly parallel, and the minimiser is only a
/// starting guess, refined by exact one-variable minimisations and compared with the boundary
/// candidates.
const SIN2_WELL_CONDITIONED: f64 = 1e-6;

/// Closest points between point `p` and triangle `(a, b, c)`: barycentric weights `w`
/// (`w` sum to 1, each `>= 0`) of the closest point `q = w0 a + w1 b + w2 c`, and the distance
/// `|p - q|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct VtClosest {
    /// Barycentric weights `[w0, w1, w2]` of the closest point on the triangle.
    pub weights: [f64; 3],
    /// Distance `|p - q|` from the point to its closest point on the triangle.
    pub distance: f64,
}

/// Closest points between segments `(p0, p1)` and `(q0, q1)`: parameters `s, t` in `[0, 1]` of
/// the points `p0 + s (p1 - p0)` and `q0 + t (q1 - q0)`, and their distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EeClosest {
    /// Parameter of the closest point on the first segment, in `[0, 1]`.
    pub s: f64,
    /// Parameter of the closest point on the second segment, in `[0, 1]`.
    pub t: f64,
    /// Distance `|p0 + s (p1 - p0) - q0 - t (q1 - q0)|`.
    pub distance: f64,
}

/// Closest point on segment `(a, b)` to `p`: parameter `t = clamp((p - a).(b - a) / |b - a|^2,
/// 0, 1)` (`t = 0` for a zero-length segment) and the squared distance `|p - a - t (b - a)|^2`.
#[inline]
pub(crate) fn point_segment(p: DVec3, a: DVec3, b: DVec3) -> (f64, f64) {
    let ab = b - a;
    let ap = p - a;
    let len2 = ab.length_squared();
    let t = if len2 > 0.0 {
        // Written out rather than `clamp`: maps NaN to 0.
        let t = ap.dot(ab) / len2;
        if t > 0.0 {
            t.min(1.0)
        } else {
            0.0
        }
    } else {
        0.0
    };
    (t, (ap - t * ab).length_squared())
}

/// Closest point on triangle `(a, b, c)` to point `p`.
///
/// Non-degenerate triangle (`|n|^2 > 1e-20 * l_max^4`, `n = (b - a) x (c - a)`): the projection
/// of `p` onto the plane has barycentrics `w1 = ((p - a) x (c - a)) . n / |n|^2`,
/// `w2 = ((b - a) x (p - a)) . n / |n|^2`, `w0 = 1 - w1 - w2`; if all are `>= 0` it is the closest
/// point and the distance is the plane distance `|(p - a) . n| / |n|` (accurate; never larger
/// than the true distance). Otherwise, and for degenerate (collinear, zero-area) triangles, the
/// closest point lies on the boundary: the nearest of the closest points on edges `ab`, `bc`,
/// `ca` (in that order; the first wins ties).
#[inline]
pub(crate) fn vertex_triangle(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> VtClosest {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let n = ab.cross(ac);
    let nn = n.length_squared();
    let lmax2 = ab
        .length_squared()
        .max(ac.length_squared())
        .max((c - b).length_squared());
    if nn > SIN2_DEGENERATE * lmax2 * lmax2 {
        let w1 = ap.cross(ac).dot(n) / nn;
        let w2 = ab.cross(ap).dot(n) / nn;
        let w0 = 1.0 - w1 - w2;
        if w0 >= 0.0 && w1 >= 0.0 && w2 >= 0.0 {
            return VtClosest {
                weights: [w0, w1, w2],
                distance: ap.dot(n).abs() / nn.sqrt(),
            };
        }
    }
    // Boundary: edges ab, bc, ca.
    let (t_ab, d_ab) = point_segment(p, a, b);
    let (t_bc, d_bc) = point_segment(p, b, c);
    let (t_ca, d_ca) = point_segment(p, c, a);
    let mut best = ([1.0 - t_ab, t_ab, 0.0], d_ab);
    if d_bc < best.1 {
        best = ([0.0, 1.0 - t_bc, t_bc], d_bc);
    }
    if d_ca < best.1 {
        best = ([t_ca, 0.0, 1.0 - t_ca], d_ca);
    }
    VtClosest {
        weights: best.0,
        distance: best.1.sqrt(),
    }
}

/// Closest points between segments `(p0, p1)` and `(q0, q1)`.
///
/// With `d1 = p1 - p0`, `d2 = q1 - q0`, `r = p0 - q0`, the squared distance
/// `|r + s d1 - t d2|^2`, a convex quadratic, is minimised over `[0, 1]^2`. If the segments are
/// far from parallel (`|d1 x d2|^2 > 1e-6 |d1|^2 |d2|^2`), the unconstrained minimiser
/// `s = (b f - c e) / D`, `t = (a f - b c) / D` (`a = d1.d1`, `b = d1.d2`, `c = d1.r`,
/// `e = d2.d2`, `f = d2.r`, `D = |d1 x d2|^2 = a e - b^2`) is accurate and is the answer when it
/// lies in `[0, 1]^2`. Otherwise the minimum is on the boundary of the parameter square, the
/// nearest of four point-segment candidates: `p0` and `p1` against `(q0, q1)`, then `q0` and `q1`
/// against `(p0, p1)` (in that order; the first wins ties, so parallel overlapping segments get
/// the candidate at `s = 0` when it is among the minimisers). For nearly parallel segments
/// (`0 < D <= 1e-6 a e`) the formula's `s` can be wrong by the whole segment (its numerators
/// cancel), so it is only a guess: clamped, then `t` and `s` each minimised exactly given the
/// other, and the result competes with the four candidates. The distance is always that of the
/// two points returned, so it is never below the true distance (up to round-off), and the guess
/// keeps it within `eps^2 |r|^2 / sin^2` of it in squared distance where the minimiser is
/// interior. Zero-length segments fall out of the same code (their parameter is 0).
#[inline]
pub(crate) fn edge_edge(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> EeClosest {
    let d1 = p1 - p0;
    let d2 = q1 - q0;
    let r = p0 - q0;
    let a = d1.length_squared();
    let e = d2.length_squared();
    let denom = d1.cross(d2).length_squared();
    let mut guess = None;
    if denom > 0.0 {
        let b = d1.dot(d2);
        let c = d1.dot(r);
        let f = d2.dot(r);
        let s = (b * f - c * e) / denom;
        let t = (a * f - b * c) / denom;
        if denom > SIN2_WELL_CONDITIONED * a * e {
            if (0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&t) {
                return EeClosest {
                    s,
                    t,
                    distance: (r + s * d1 - t * d2).length(),
                };
            }
        } else {
            guess = Some(refine_nearly_parallel(s, p0, p1, q0, q1));
        }
    }
    let (t0, dd0) = point_segment(p0, q0, q1);
    let (t1, dd1) = point_segment(p1, q0, q1);
    let (s0, dd2) = point_segment(q0, p0, p1);
    let (s1, dd3) = point_segment(q1, p0, p1);
    let mut best = (0.0, t0, dd0);
    if dd1 < best.2 {
        best = (1.0, t1, dd1);
    }
    if dd2 < best.2 {
        best = (s0, 0.0, dd2);
    }
    if dd3 < best.2 {
        best = (s1, 1.0, dd3);
    }
    if let Some(cand) = guess {
        if cand.2 < best.2 {
            best = cand;
        }
    }
    EeClosest {
        s: best.0,
        t: best.1,
        distance: best.2.sqrt(),
    }
}

/// For nearly parallel segments: from a guess `s` of the parameter on `(p0, p1)` (clamped to
/// `[0, 1]`, NaN to 0), the parameter `t` on `(q0, q1)` nearest to it, then the `s` nearest to
/// that; returns `(s, t, squared distance)`. Each step minimises exactly over one variable, so
/// the distance never grows, and it is well conditioned however parallel the segments are.
fn refine_nearly_parallel(s: f64, p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> (f64, f64, f64) {
    let s = if s > 0.0 { s.min(1.0) } else { 0.0 };
    let (t, _) = point_segment(p0 + s * (p1 - p0), q0, q1);
    let on_q = q0 + t * (q1 - q0);
    let (s, dd) = point_segment(on_q, p0, p1);
    (s, t, dd)
}

/// Closest points between triangles `A` and `B`: barycentric weights of the closest point on
/// each, and their distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TtClosest {
    /// Weights of the closest point on `A` over `A`'s three vertices (sum 1, each `>= 0`).
    pub weights_a: [f64; 3],
    /// Weights of the closest point on `B` over `B`'s three vertices.
    pub weights_b: [f64; 3],
    /// Distance between the two closest points.
    pub distance: f64,
}

/// One of the fifteen feature pairs of two triangles, by local vertex index (`0..3` are
/// triangle A's vertices, `3..6` triangle B's), in the vertex order of
/// [`crate::penalty::impulse`]: VT `[p, a, b, c]`, EE `[p0, p1, q0, q1]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TriangleFeature {
    /// A vertex of one triangle against the other triangle.
    VertexTriangle([usize; 4]),
    /// An edge of A against an edge of B.
    EdgeEdge([usize; 4]),
}

impl TriangleFeature {
    /// The feature's four local vertex indices.
    pub(crate) const fn verts(self) -> [usize; 4] {
        match self {
            Self::VertexTriangle(v) | Self::EdgeEdge(v) => v,
        }
    }
}

/// The fifteen feature pairs of two vertex-disjoint triangles, in a fixed order: each vertex
/// of A against B, each vertex of B against A, then the edges of A (`01, 12, 20`) against
/// those of B, row by row.
pub(crate) const TRIANGLE_PAIR_FEATURES: [TriangleFeature; 15] = {
    use TriangleFeature::{EdgeEdge, VertexTriangle};
    const E: [[usize; 2]; 3] = [[0, 1], [1, 2], [2, 0]];
    let mut out = [VertexTriangle([0; 4]); 15];
    let mut i = 0;
    while i < 3 {
        out[i] = VertexTriangle([i, 3, 4, 5]);
        out[3 + i] = VertexTriangle([3 + i, 0, 1, 2]);
        let mut j = 0;
        while j < 3 {
            out[6 + 3 * i + j] = EdgeEdge([E[i][0], E[i][1], 3 + E[j][0], 3 + E[j][1]]);
            j += 1;
        }
        i += 1;
    }
    out
};

/// Closest points between triangles `a` and `b`.
///
/// Two triangles that do not intersect are closest at a vertex of one against the other or at
/// an edge of each, so the answer is the nearest of the fifteen feature pairs
/// ([`TRIANGLE_PAIR_FEATURES`], in that order; the first wins ties). For intersecting triangles
/// the distance is that of the nearest feature pair, not 0: callers use it only between
/// triangles kept apart.
#[inline]
pub(crate) fn triangle_triangle(a: [DVec3; 3], b: [DVec3; 3]) -> TtClosest {
    let x = [a[0], a[1], a[2], b[0], b[1], b[2]];
    let mut best = ([0.0; 6], f64::INFINITY);
    for feature in TRIANGLE_PAIR_FEATURES {
        // Weights of each closest point over its own triangle's vertices.
        let mut w = [0.0; 6];
        let distance = match feature {
            TriangleFeature::VertexTriangle([p, q0, q1, q2]) => {
                let c = vertex_triangle(x[p], x[q0], x[q1], x[q2]);
                w[p] = 1.0;
                (w[q0], w[q1], w[q2]) = (c.weights[0], c.weights[1], c.weights[2]);
                c.distance
            }
            TriangleFeature::EdgeEdge([p0, p1, q0, q1]) => {
                let c = edge_edge(x[p0], x[p1], x[q0], x[q1]);
                (w[p0], w[p1], w[q0], w[q1]) = (1.0 - c.s, c.s, 1.0 - c.t, c.t);
                c.distance
            }
        };
        if distance < best.1 {
            best = (w, distance);
        }
    }
    let (w, distance) = best;
    TtClosest {
        weights_a: [w[0], w[1], w[2]],
        weights_b: [w[3], w[4], w[5]],
        distance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v3(a: [f64; 3]) -> DVec3 {
        DVec3::from_array(a)
    }

    /// Dense sampling of the triangle: minimum distance over an n x n barycentric grid.
    fn brute_vt(p: DVec3, a: DVec3, b: DVec3, c: DVec3, n: usize) -> f64 {
        let mut best = f64::INFINITY;
        for i in 0..=n {
            for j in 0..=(n - i) {
                let u = i as f64 / n as f64;
                let v = j as f64 / n as f64;
                let q = a + u * (b - a) + v * (c - a);
                best = best.min((p - q).length());
            }
        }
        best
    }

    fn brute_ee(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3, n: usize) -> f64 {
        // For each sampled s the best t is exact (point-segment), so this is a tight upper bound.
        let mut best = f64::INFINITY;
        for i in 0..=n {
            let s = i as f64 / n as f64;
            let (_, d2) = point_segment(p0 + s * (p1 - p0), q0, q1);
            best = best.min(d2.sqrt());
        }
        best
    }

    fn check_vt(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> VtClosest {
        let r = vertex_triangle(p, a, b, c);
        let w = r.weights;
        assert!(w.iter().all(|x| x.is_finite() && *x >= 0.0), "{r:?}");
        assert!((w[0] + w[1] + w[2] - 1.0).abs() < 1e-12, "{r:?}");
        assert!(r.distance.is_finite() && r.distance >= 0.0);
        let q = w[0] * a + w[1] * b + w[2] * c;
        let scale = 1.0 + p.length().max(a.length()).max(b.length()).max(c.length());
        // Distance consistent with the weights.
        assert!(
            ((p - q).length() - r.distance).abs() <= 1e-9 * scale,
            "{r:?}"
        );
        r
    }

    fn check_ee(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> EeClosest {
        let r = edge_edge(p0, p1, q0, q1);
        assert!(
            (0.0..=1.0).contains(&r.s) && (0.0..=1.0).contains(&r.t),
            "{r:?}"
        );
        assert!(r.distance.is_finite() && r.distance >= 0.0);
        let x = p0 + r.s * (p1 - p0);
        let y = q0 + r.t * (q1 - q0);
        let scale = 1.0
            + p0.length()
                .max(p1.length())
                .max(q0.length())
                .max(q1.length());
        assert!(
            ((x - y).length() - r.distance).abs() <= 1e-9 * scale,
            "{r:?}"
        );
        r
    }

    fn pt() -> impl Strategy<Value = [f64; 3]> {
        prop::array::uniform3(-2.0f64..2.0)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn vt_matches_brute_force(p in pt(), a in pt(), b in pt(), c in pt()) {
            let (p, a, b, c) = (v3(p), v3(a), v3(b), v3(c));
            let r = check_vt(p, a, b, c);
            let brute = brute_vt(p, a, b, c, 150);
            // Never larger than any sampled point (up to round-off).
            prop_assert!(r.distance <= brute + 1e-12);
            // And the grid is fine enough to be close: within its spacing.
            let lmax = (b - a).length().max((c - a).length());
            prop_assert!(brute - r.distance <= 2.0 * lmax / 150.0 + 1e-12);
        }

        #[test]
        fn vt_exact_at_vertices_and_edges(a in pt(), b in pt(), c in pt(), t in 0.0f64..1.0) {
            // Points on the triangle are at distance ~0.
            let (a, b, c) = (v3(a), v3(b), v3(c));
            for p in [a, b, c, a + t * (b - a), b + t * (c - b)] {
                let r = check_vt(p, a, b, c);
                prop_assert!(r.distance <= 1e-12 * (1.0 + a.length() + b.length() + c.length()));
            }
        }

        #[test]
        fn ee_matches_brute_force(p0 in pt(), p1 in pt(), q0 in pt(), q1 in pt()) {
            let (p0, p1, q0, q1) = (v3(p0), v3(p1), v3(q0), v3(q1));
            let r = check_ee(p0, p1, q0, q1);
            let brute = brute_ee(p0, p1, q0, q1, 2000);
            prop_assert!(r.distance <= brute + 1e-12);
            // The minimum is attained: the brute force converges to it.
            let fine = brute_ee(p0 + r.s * (p1 - p0), p0 + r.s * (p1 - p0), q0, q1, 1);
            prop_assert!((fine - r.distance).abs() <= 1e-9 * (1.0 + r.distance));
            // Symmetry: swapping the segments gives the same distance.
            let sw = edge_edge(q0, q1, p0, p1);
            prop_assert!((sw.distance - r.distance).abs() <= 1e-9 * (1.0 + r.distance));
        }

        #[test]
        fn ee_parallel_and_collinear(p0 in pt(), dir in pt(), off in pt(), s0 in -2.0f64..2.0, s1 in -2.0f64..2.0) {
            let (p0, dir, off) = (v3(p0), v3(dir), v3(off));
            let p1 = p0 + dir;
            let q0 = p0 + off + s0 * dir;
            let q1 = p0 + off + s1 * dir;
            let r = check_ee(p0, p1, q0, q1);
            prop_assert!(r.distance <= brute_ee(p0, p1, q0, q1, 2000) + 1e-12);
            // Collinear too.
            let r2 = check_ee(p0, p1, p0 + s0 * dir, p0 + s1 * dir);
            prop_assert!(r2.distance <= brute_ee(p0, p1, p0 + s0 * dir, p0 + s1 * dir, 2000) + 1e-12);
        }

        #[test]
        fn ee_nearly_parallel(
            p0 in pt(), dir in pt(), off in pt(), s0 in -2.0f64..2.0, s1 in -2.0f64..2.0,
            tilt in pt(), log_tilt in -12.0f64..-6.0
        ) {
            // Parallel segments, each end tilted by 1e-12 to 1e-6 across: the minimiser of the
            // distance is ill-conditioned along the segments.
            let (p0, dir, off) = (v3(p0), v3(dir), v3(off));
            let tilt = v3(tilt) * 10f64.powf(log_tilt);
            let p1 = p0 + dir;
            let q0 = p0 + off + s0 * dir - tilt;
            let q1 = p0 + off + s1 * dir + tilt;
            let r = check_ee(p0, p1, q0, q1);
            prop_assert!(r.distance <= brute_ee(p0, p1, q0, q1, 2000) + 1e-12, "{r:?}");
            let sw = check_ee(q0, q1, p0, p1);
            prop_assert!(sw.distance <= brute_ee(q0, q1, p0, p1, 2000) + 1e-12, "{sw:?}");
        }

        #[test]
        fn ee_edges_of_stacked_grid_sheets(
            i in -10i32..10, k in -2i32..=2, y in -0.01f64..0.01, gap in 0.001f64..1.0,
            z in -5.0f64..5.0, e0 in -1e-9f64..1e-9, e1 in -1e-9f64..1e-9
        ) {
            // Edges along x of two sheets of 0.5 cm cells stacked in y, k cells apart along x,
            // their ends perturbed by round-off in z: exactly the coordinates at which the
            // formula's numerators cancel.
            let h = 0.5;
            let x = |j: i32| f64::from(j) * h;
            let p0 = DVec3::new(x(i), y, z + e0);
            let p1 = DVec3::new(x(i + 1), y, z + e1);
            let q0 = DVec3::new(x(i + k), y + gap, z + e1);
            let q1 = DVec3::new(x(i + k + 1), y + gap, z + e0);
            let r = check_ee(p0, p1, q0, q1);
            prop_assert!(r.distance <= brute_ee(p0, p1, q0, q1, 2000) + 1e-12, "{r:?}");
        }

        #[test]
        fn tt_is_the_nearest_points_of_two_separate_triangles(
            a0 in pt(), a1 in pt(), a2 in pt(), b0 in pt(), b1 in pt(), b2 in pt(), gap in 0.0f64..3.0
        ) {
            // B above A along z (possibly overlapping in z: then the triangles may be closest
            // anywhere, but must not intersect, which a shift past A's extent guarantees).
            let shift = DVec3::new(0.0, 0.0, 4.0 + gap);
            let a = [v3(a0), v3(a1), v3(a2)];
            let b = [v3(b0) + shift, v3(b1) + shift, v3(b2) + shift];
            let r = triangle_triangle(a, b);
            for w in [r.weights_a, r.weights_b] {
                prop_assert!(w.iter().all(|&x| x >= 0.0));
                prop_assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            }
            let pa = r.weights_a[0] * a[0] + r.weights_a[1] * a[1] + r.weights_a[2] * a[2];
            let pb = r.weights_b[0] * b[0] + r.weights_b[1] * b[1] + r.weights_b[2] * b[2];
            prop_assert!(((pa - pb).length() - r.distance).abs() <= 1e-9 * (1.0 + r.distance));
            // Sampling A densely against B exactly: never nearer than the answer, and within
            // the grid's spacing of it.
            let n = 60;
            let mut brute = f64::INFINITY;
            for i in 0..=n {
                for j in 0..=(n - i) {
                    let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                    let p = a[0] + u * (a[1] - a[0]) + v * (a[2] - a[0]);
                    brute = brute.min(vertex_triangle(p, b[0], b[1], b[2]).distance);
                }
            }
            prop_assert!(r.distance <= brute + 1e-12);
            let lmax = (a[1] - a[0]).length().max((a[2] - a[0]).length());
            prop_assert!(brute - r.distance <= 2.0 * lmax / n as f64 + 1e-12);
        }

        #[test]
        fn vt_degenerate_triangles(p in pt(), a in pt(), d in pt(), t in -1.0f64..2.0) {
            let (p, a, d) = (v3(p), v3(a), v3(d));
            // Collinear: c on the line through a and b (possibly outside the segment ab).
            let b = a + d;
            let c = a + t * d;
            let r = check_vt(p, a, b, c);
            prop_assert!(r.distance <= brute_vt(p, a, b, c, 100) + 1e-12);
            // Two coincident vertices, and a point triangle.
            let r = check_vt(p, a, a, b);
            prop_assert!(r.distance <= brute_vt(p, a, a, b, 100) + 1e-12);
            let r = check_vt(p, a, a, a);
            prop_assert!((r.distance - (p - a).length()).abs() <= 1e-12);
        }
    }

    #[test]
    fn vt_simple_cases() {
        let a = DVec3::ZERO;
        let b = DVec3::X;
        let c = DVec3::Y;
        let r = vertex_triangle(DVec3::new(0.25, 0.25, 2.0), a, b, c);
        assert!((r.distance - 2.0).abs() < 1e-15);
        assert!((r.weights[0] - 0.5).abs() < 1e-15);
        // Vertex region of b.
        let r = vertex_triangle(DVec3::new(3.0, -1.0, 0.0), a, b, c);
        assert_eq!(r.weights, [0.0, 1.0, 0.0]);
        // Edge region of bc.
        let r = vertex_triangle(DVec3::new(1.0, 1.0, 0.0), a, b, c);
        assert!((r.weights[1] - 0.5).abs() < 1e-15 && (r.weights[2] - 0.5).abs() < 1e-15);
        assert!((r.distance - 0.5f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn ee_end_to_end_nearly_parallel_edges_meet_at_their_shared_end() {
        // Two edges of stacked sheets, end to end along x and 0.069 apart in y, each tilted by
        // 1e-10 in z: the formula's minimiser cancels to (0, 0), 0.505 apart; the edges come
        // closest at p1 and q0.
        let p0 = DVec3::new(-2.0, -0.00016484749111436437, -4.499999999978977);
        let p1 = DVec3::new(-1.5, -0.00010873602696101081, -4.500000000091523);
        let q0 = DVec3::new(-1.5, 0.06874779149489212, -4.500000000091523);
        let q1 = DVec3::new(-1.0, 0.06880390295904545, -4.499999999978977);
        let r = check_ee(p0, p1, q0, q1);
        assert_eq!((r.s, r.t), (1.0, 0.0));
        assert_eq!(r.distance, (q0 - p1).length());
    }

    #[test]
    fn ee_simple_and_degenerate_cases() {
        // Crossing segments at distance 1.
        let r = edge_edge(
            DVec3::new(-1.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, -1.0, 1.0),
            DVec3::new(0.0, 1.0, 1.0),
        );
        assert!((r.s - 0.5).abs() < 1e-15 && (r.t - 0.5).abs() < 1e-15);
        assert!((r.distance - 1.0).abs() < 1e-15);
        // Two points.
        let r = edge_edge(DVec3::ONE, DVec3::ONE, DVec3::ZERO, DVec3::ZERO);
        assert_eq!((r.s, r.t), (0.0, 0.0));
        assert!((r.distance - 3f64.sqrt()).abs() < 1e-15);
        // Parallel overlapping: deterministic s = 0 answer.
        let r = edge_edge(
            DVec3::ZERO,
            DVec3::X,
            DVec3::new(-1.0, 1.0, 0.0),
            DVec3::new(2.0, 1.0, 0.0),
        );
        assert_eq!(r.s, 0.0);
        assert!((r.t - 1.0 / 3.0).abs() < 1e-15);
        assert!((r.distance - 1.0).abs() < 1e-15);
        // Identical segments.
        let r = edge_edge(DVec3::ZERO, DVec3::X, DVec3::ZERO, DVec3::X);
        assert_eq!(r.distance, 0.0);
        // Finite on huge and tiny inputs.
        let big = DVec3::splat(1e150);
        let r = edge_edge(
            -big,
            big,
            DVec3::new(1e150, -1e150, 0.0),
            DVec3::new(-1e150, 1e150, 1.0),
        );
        assert!(r.s.is_finite() && r.t.is_finite() && r.distance.is_finite());
        let tiny = DVec3::splat(1e-300);
        let r = vertex_triangle(
            DVec3::ZERO,
            tiny,
            2.0 * tiny,
            DVec3::new(1e-300, 0.0, 3e-300),
        );
        assert!(r.weights.iter().all(|w| w.is_finite()) && r.distance.is_finite());
    }
}
