//! Floating-point distances between triangles, segments and points.
//!
//! This is the audit's own measure, deliberately independent of the contact code. Every value is
//! the distance between two actual points of the primitives (or an exact plane distance), so
//! rounding can only make it slightly larger or smaller by a few ulps, never wildly wrong, and
//! degenerate inputs (zero-length segments, parallel segments, collinear triangles) are handled
//! by falling back to endpoint distances.

#[cfg(test)]
use super::intersection::triangles_intersect;
use glam::DVec3;

/// Distance from `p` to the closed segment `ab` (a point when `a == b`).
pub(crate) fn point_segment_distance(p: DVec3, a: DVec3, b: DVec3) -> f64 {
    let d = b - a;
    let dd = d.length_squared();
    let t = if dd > 0.0 {
        ((p - a).dot(d) / dd).clamp(0.0, 1.0)
    } else {
        0.0
    };
    // `clamp` keeps NaN; map it to an endpoint so the result stays a real distance.
    let t = if t.is_nan() { 0.0 } else { t };
    p.distance(a + d * t)
}

/// Distance from `p` to the closed triangle `tri` (degenerate triangles are handled as the
/// segments or point they span).
pub(crate) fn point_triangle_distance(p: DVec3, tri: [DVec3; 3]) -> f64 {
    let [a, b, c] = tri;
    let n = (b - a).cross(c - a);
    let nn = n.length_squared();
    if nn > 0.0 && nn.is_finite() {
        // Inside the prism over the triangle: the distance is the distance to the plane.
        let inside = n.dot((b - a).cross(p - a)) >= 0.0
            && n.dot((c - b).cross(p - b)) >= 0.0
            && n.dot((a - c).cross(p - c)) >= 0.0;
        if inside {
            return n.dot(p - a).abs() / nn.sqrt();
        }
    }
    point_segment_distance(p, a, b)
        .min(point_segment_distance(p, b, c))
        .min(point_segment_distance(p, c, a))
}

/// Distance between the closed segments `p0 p1` and `q0 q1` (either may have zero length;
/// parallel segments are fine).
pub(crate) fn segment_segment_distance(p0: DVec3, p1: DVec3, q0: DVec3, q1: DVec3) -> f64 {
    // The minimum is attained at an endpoint of one segment, or at interior points of both
    // where the connecting vector is perpendicular to both directions (non-parallel case).
    let mut best = point_segment_distance(p0, q0, q1)
        .min(point_segment_distance(p1, q0, q1))
        .min(point_segment_distance(q0, p0, p1))
        .min(point_segment_distance(q1, p0, p1));
    let u = p1 - p0;
    let v = q1 - q0;
    let w = p0 - q0;
    let (a, b, c) = (u.dot(u), u.dot(v), v.dot(v));
    let (d, e) = (u.dot(w), v.dot(w));
    let den = a * c - b * b;
    if den > 0.0 && den.is_finite() {
        let s = (b * e - c * d) / den;
        let t = (a * e - b * d) / den;
        if (0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&t) {
            best = best.min((p0 + u * s).distance(q0 + v * t));
        }
    }
    best
}

/// Distance between two closed triangles: `0.0` when they intersect (decided exactly by
/// [`triangles_intersect`]), otherwise the minimum over the 6 vertex-triangle and 9 edge-edge
/// distances. Returns NaN if any coordinate is not finite.
#[cfg(test)]
pub(crate) fn triangle_distance(a: [DVec3; 3], b: [DVec3; 3]) -> f64 {
    if !a.iter().chain(b.iter()).all(|p| p.is_finite()) {
        return f64::NAN;
    }
    if triangles_intersect(a, b) {
        return 0.0;
    }
    separated_triangle_distance(a, b)
}

/// [`triangle_distance`] for triangles already known not to intersect.
pub(crate) fn separated_triangle_distance(a: [DVec3; 3], b: [DVec3; 3]) -> f64 {
    let mut best = f64::INFINITY;
    for i in 0..3 {
        best = best
            .min(point_triangle_distance(a[i], b))
            .min(point_triangle_distance(b[i], a));
        for j in 0..3 {
            best = best.min(segment_segment_distance(
                a[i],
                a[(i + 1) % 3],
                b[j],
                b[(j + 1) % 3],
            ));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f64, y: f64, z: f64) -> DVec3 {
        DVec3::new(x, y, z)
    }

    struct Rng(u64);
    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn point(&mut self) -> DVec3 {
            v(self.unit(), self.unit(), self.unit()) * 2.0 - DVec3::ONE
        }
    }

    /// Points of the triangle on a barycentric grid with `n` steps per side.
    fn samples(t: [DVec3; 3], n: usize) -> Vec<DVec3> {
        let mut out = Vec::new();
        for i in 0..=n {
            for j in 0..=n - i {
                let (u, w) = (i as f64 / n as f64, j as f64 / n as f64);
                out.push(t[0] + (t[1] - t[0]) * u + (t[2] - t[0]) * w);
            }
        }
        out
    }

    #[test]
    fn simple_values() {
        let t = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
        assert_eq!(point_triangle_distance(v(0.2, 0.2, 3.0), t), 3.0);
        assert_eq!(point_triangle_distance(v(-3.0, 0.5, 0.0), t), 3.0);
        assert_eq!(point_triangle_distance(v(-3.0, -4.0, 0.0), t), 5.0);
        // Parallel and zero-length segments.
        let d = segment_segment_distance(
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.5, 2.0, 0.0),
            v(3.0, 2.0, 0.0),
        );
        assert_eq!(d, 2.0);
        let d = segment_segment_distance(
            v(0.0, 0.0, 0.0),
            v(0.0, 0.0, 0.0),
            v(3.0, 4.0, 0.0),
            v(3.0, 4.0, 0.0),
        );
        assert_eq!(d, 5.0);
        // Skew segments: interior closest points.
        let d = segment_segment_distance(
            v(-1.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.0, -1.0, 2.0),
            v(0.0, 1.0, 2.0),
        );
        assert_eq!(d, 2.0);
        // Degenerate triangle (collinear) as a segment.
        let seg = [v(0.0, 0.0, 1.0), v(2.0, 0.0, 1.0), v(1.0, 0.0, 1.0)];
        assert_eq!(point_triangle_distance(v(1.0, 0.0, 3.0), seg), 2.0);
        // Stacked parallel triangles.
        let up = t.map(|p| p + v(0.0, 0.0, 0.25));
        assert_eq!(triangle_distance(t, up), 0.25);
        // Intersecting and non-finite.
        let cross = [v(0.2, 0.2, -1.0), v(0.2, 0.2, 1.0), v(3.0, 3.0, 0.0)];
        assert_eq!(triangle_distance(t, cross), 0.0);
        assert!(triangle_distance(t, [v(f64::NAN, 0.0, 0.0), t[1], t[2]]).is_nan());
    }

    #[test]
    fn bounded_by_dense_sampling() {
        let mut rng = Rng(99);
        let mut positive = 0;
        for case in 0..300 {
            let a = [rng.point(), rng.point(), rng.point()];
            let mut b = [rng.point(), rng.point(), rng.point()];
            if case % 3 == 0 {
                b = b.map(|p| p + v(0.0, 0.0, 1.5)); // mostly separated
            }
            if case % 7 == 0 {
                b[2] = b[0] * 0.5 + b[1] * 0.5; // collinear (degenerate) triangle
            }
            let d = triangle_distance(a, b);
            assert!(d >= 0.0 && d.is_finite());
            if triangles_intersect(a, b) {
                assert_eq!(d, 0.0);
                continue;
            }
            positive += 1;
            assert!(d > 0.0);
            let (sa, sb) = (samples(a, 24), samples(b, 24));
            let mut sampled = f64::INFINITY;
            for &p in &sa {
                for &q in &sb {
                    sampled = sampled.min(p.distance(q));
                }
            }
            // Sampling only overestimates the true distance; with this grid spacing it comes
            // within a small fraction of the triangle size.
            assert!(d <= sampled + 1e-12, "case {case}: {d} > sampled {sampled}");
            assert!(
                sampled - d < 0.2,
                "case {case}: {d} far below sampled {sampled}"
            );
            // Distance to sample points is an independent upper bound per vertex as well.
            for &p in &sa {
                assert!(point_triangle_distance(p, b) >= d - 1e-12);
            }
        }
        assert!(positive > 100);
    }
}
