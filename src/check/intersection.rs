//! Exact triangle-triangle intersection test.
//!
//! Every decision is taken from the exact sign of an orientation determinant, never from a
//! rounded value compared with an epsilon:
//!
//! * inputs whose nonzero coordinates all lie in `[2^-200, 2^200]` use the adaptive predicates of
//!   the `robust` crate, which are exact there (no intermediate underflow or overflow can occur);
//! * anything else (subnormal or huge coordinates) falls back to the same determinants evaluated
//!   on arbitrary-precision integers (every finite `f64` is an integer multiple of `2^-1074`).
//!
//! The geometric reduction is:
//!
//! 1. A triangle whose vertices are collinear is replaced by the segment between its two extreme
//!    points (or by a point); collinearity is exact (all three coordinate projections have a zero
//!    2D orientation).
//! 2. Two proper triangles: if all vertices of one lie strictly on one side of the other's plane
//!    they are disjoint. If they are coplanar the test runs in exact 2D on the coordinate plane that
//!    the common normal is not parallel to. Otherwise the two closed triangles meet iff some edge
//!    of one meets the other triangle (the intersection with the common line is an interval whose
//!    endpoints lie on edges); an edge that crosses or touches the other plane meets the triangle
//!    iff its supporting line passes through the closed triangle (three `orient3d` signs not of
//!    mixed strict sign), and an edge lying in the plane is tested in exact 2D.
//! 3. Segment against triangle uses the same edge test; segment against segment requires a zero
//!    `orient3d` (coplanar) and an intersection in all three coordinate projections.

use glam::DVec3;
use std::cmp::Ordering;

/// Returns `true` iff the two closed triangles `a` and `b` share at least one point.
///
/// The answer is exact for every finite input, including degenerate triangles (collinear or
/// coincident vertices are treated as the segment or point they span), touching configurations
/// (vertex on face, edge on edge, shared vertex) and coplanar triangles. If any coordinate is not
/// finite the triangles are reported as not intersecting (callers that care, such as the audit,
/// reject non-finite input first).
pub(crate) fn triangles_intersect(a: [DVec3; 3], b: [DVec3; 3]) -> bool {
    if !a.iter().chain(b.iter()).all(|p| p.is_finite()) {
        return false;
    }
    let pred = Pred {
        big: !a.iter().chain(b.iter()).all(|&p| in_fast_range(p)),
    };
    match (pred.classify(a), pred.classify(b)) {
        (Shape::Tri(a), Shape::Tri(b)) => pred.tri_tri(a, b),
        (Shape::Tri(t), Shape::Seg(p, q)) | (Shape::Seg(p, q), Shape::Tri(t)) => {
            pred.seg_tri(p, q, t)
        }
        (Shape::Seg(p, q), Shape::Seg(r, s)) => pred.seg_seg_3d(p, q, r, s),
    }
}

/// Smallest and largest magnitudes for which the `robust` predicates are exact with margin.
const FAST_MIN: f64 = 6.223_015_277_861_142e-61; // 2^-200
const FAST_MAX: f64 = 1.606_938_044_258_990_3e60; // 2^200

fn in_fast_range(p: DVec3) -> bool {
    p.to_array().iter().all(|&x| {
        let m = x.abs();
        m == 0.0 || (FAST_MIN..=FAST_MAX).contains(&m)
    })
}

/// A triangle after exact degeneracy classification.
enum Shape {
    Tri([DVec3; 3]),
    /// Closed segment; both ends equal for a point.
    Seg(DVec3, DVec3),
}

/// Sign of a float as -1, 0, 1 (NaN maps to 0; inputs are finite by then).
fn sign(x: f64) -> i8 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

/// Drops coordinate `axis` of `p`.
fn proj(p: DVec3, axis: usize) -> [f64; 2] {
    match axis {
        0 => [p.y, p.z],
        1 => [p.z, p.x],
        _ => [p.x, p.y],
    }
}

/// `true` unless the signs contain both a strict positive and a strict negative.
fn no_mixed(s: [i8; 3]) -> bool {
    !(s.contains(&1) && s.contains(&-1))
}

/// Exact predicates, evaluated either with `robust` or with big integers.
#[derive(Clone, Copy)]
struct Pred {
    big: bool,
}

impl Pred {
    fn o2(self, a: [f64; 2], b: [f64; 2], c: [f64; 2]) -> i8 {
        if self.big {
            big_orient2d(a, b, c)
        } else {
            let c2 = |p: [f64; 2]| robust::Coord { x: p[0], y: p[1] };
            sign(robust::orient2d(c2(a), c2(b), c2(c)))
        }
    }

    fn o3(self, a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i8 {
        if self.big {
            big_orient3d(a, b, c, d)
        } else {
            let c3 = |p: DVec3| robust::Coord3D {
                x: p.x,
                y: p.y,
                z: p.z,
            };
            sign(robust::orient3d(c3(a), c3(b), c3(c), c3(d)))
        }
    }

    /// Exact signs of the normal's components of triangle `t` (the 2D orientations of its three
    /// coordinate projections; component `k` is the projection that drops axis `k`).
    fn normal_signs(self, t: [DVec3; 3]) -> [i8; 3] {
        [0, 1, 2].map(|k| self.o2(proj(t[0], k), proj(t[1], k), proj(t[2], k)))
    }

    /// An axis whose normal component is exactly nonzero (the largest one when rounding agrees);
    /// projecting along it is injective on the triangle's plane. `None` for collinear points.
    fn drop_axis(self, t: [DVec3; 3]) -> Option<usize> {
        let n = (t[1] - t[0]).cross(t[2] - t[0]).abs();
        let best = if n.x >= n.y && n.x >= n.z {
            0
        } else if n.y >= n.z {
            1
        } else {
            2
        };
        let s = self.normal_signs(t);
        if s[best] != 0 {
            Some(best)
        } else {
            s.iter().position(|&v| v != 0)
        }
    }

    fn classify(self, t: [DVec3; 3]) -> Shape {
        if self.normal_signs(t) != [0, 0, 0] {
            return Shape::Tri(t);
        }
        // Collinear: order along the axis of largest spread is the order along the line.
        // A nonzero exact spread never rounds to zero, so the largest rounded spread is nonzero
        // whenever the points are not all equal.
        let spread = |k: usize| {
            let v = t.map(|p| p[k]);
            v[0].max(v[1]).max(v[2]) - v[0].min(v[1]).min(v[2])
        };
        let (sx, sy, sz) = (spread(0), spread(1), spread(2));
        let k = if sx >= sy && sx >= sz {
            0
        } else if sy >= sz {
            1
        } else {
            2
        };
        let mut lo = t[0];
        let mut hi = t[0];
        for &p in &t[1..] {
            if p[k] < lo[k] {
                lo = p;
            }
            if p[k] > hi[k] {
                hi = p;
            }
        }
        Shape::Seg(lo, hi)
    }

    fn tri_tri(self, a: [DVec3; 3], b: [DVec3; 3]) -> bool {
        let sb = b.map(|p| self.o3(a[0], a[1], a[2], p));
        if sb == [1, 1, 1] || sb == [-1, -1, -1] {
            return false;
        }
        if sb == [0, 0, 0] {
            return self.coplanar_tri_tri(a, b);
        }
        let sa = a.map(|p| self.o3(b[0], b[1], b[2], p));
        if sa == [1, 1, 1] || sa == [-1, -1, -1] {
            return false;
        }
        if sa == [0, 0, 0] {
            // Impossible in exact arithmetic when `sb` is not all zero; kept for totality.
            return self.coplanar_tri_tri(a, b);
        }
        (0..3).any(|i| {
            let j = (i + 1) % 3;
            self.seg_tri_signed(a[i], a[j], sa[i], sa[j], b)
                || self.seg_tri_signed(b[i], b[j], sb[i], sb[j], a)
        })
    }

    /// Closed segment `pq` against proper triangle `t`.
    fn seg_tri(self, p: DVec3, q: DVec3, t: [DVec3; 3]) -> bool {
        let sp = self.o3(t[0], t[1], t[2], p);
        let sq = self.o3(t[0], t[1], t[2], q);
        self.seg_tri_signed(p, q, sp, sq, t)
    }

    /// Closed segment `pq` against proper triangle `t`, given the exact sides of `p` and `q`
    /// relative to the plane of `t`.
    fn seg_tri_signed(self, p: DVec3, q: DVec3, sp: i8, sq: i8, t: [DVec3; 3]) -> bool {
        if sp * sq > 0 {
            return false;
        }
        if sp == 0 && sq == 0 {
            let Some(k) = self.drop_axis(t) else {
                return false;
            };
            let t2 = t.map(|v| proj(v, k));
            return self.seg_tri_2d(proj(p, k), proj(q, k), t2);
        }
        // The line pq is transversal to the plane and the segment contains the piercing point:
        // it lies in the closed triangle iff the line's side products with the three edges are
        // not of mixed strict sign.
        no_mixed([
            self.o3(p, q, t[0], t[1]),
            self.o3(p, q, t[1], t[2]),
            self.o3(p, q, t[2], t[0]),
        ])
    }

    fn coplanar_tri_tri(self, a: [DVec3; 3], b: [DVec3; 3]) -> bool {
        let Some(k) = self.drop_axis(a) else {
            return false;
        };
        let a2 = a.map(|v| proj(v, k));
        let b2 = b.map(|v| proj(v, k));
        a2.iter().any(|&p| self.point_in_tri_2d(p, b2))
            || b2.iter().any(|&p| self.point_in_tri_2d(p, a2))
            || (0..3).any(|i| {
                (0..3).any(|j| self.seg_seg_2d(a2[i], a2[(i + 1) % 3], b2[j], b2[(j + 1) % 3]))
            })
    }

    /// Closed point in closed proper 2D triangle.
    fn point_in_tri_2d(self, p: [f64; 2], t: [[f64; 2]; 3]) -> bool {
        no_mixed([
            self.o2(t[0], t[1], p),
            self.o2(t[1], t[2], p),
            self.o2(t[2], t[0], p),
        ])
    }

    /// Closed segment against closed proper 2D triangle.
    fn seg_tri_2d(self, p: [f64; 2], q: [f64; 2], t: [[f64; 2]; 3]) -> bool {
        self.point_in_tri_2d(p, t)
            || self.point_in_tri_2d(q, t)
            || (0..3).any(|i| self.seg_seg_2d(p, q, t[i], t[(i + 1) % 3]))
    }

    /// Closed 2D segments (either may be a point).
    fn seg_seg_2d(self, p: [f64; 2], q: [f64; 2], r: [f64; 2], s: [f64; 2]) -> bool {
        let o1 = self.o2(p, q, r);
        let o2 = self.o2(p, q, s);
        if o1 * o2 > 0 {
            return false;
        }
        let o3 = self.o2(r, s, p);
        let o4 = self.o2(r, s, q);
        if o3 * o4 > 0 {
            return false;
        }
        if o1 == 0 && o2 == 0 && o3 == 0 && o4 == 0 {
            // All four points on one line (or points): overlap of both coordinate intervals.
            return (0..2)
                .all(|k| p[k].min(q[k]) <= r[k].max(s[k]) && r[k].min(s[k]) <= p[k].max(q[k]));
        }
        true
    }

    /// Closed 3D segments (either may be a point).
    fn seg_seg_3d(self, p: DVec3, q: DVec3, r: DVec3, s: DVec3) -> bool {
        if self.o3(p, q, r, s) != 0 {
            return false;
        }
        // Coplanar: some coordinate projection is injective on a plane (or line) holding both,
        // and any intersection shows in every projection.
        (0..3).all(|k| self.seg_seg_2d(proj(p, k), proj(q, k), proj(r, k), proj(s, k)))
    }
}

// ---------------------------------------------------------------------------------------------
// Exact fallback: determinants on signed big integers (value * 2^1074 is an integer for every
// finite f64).

/// Signed arbitrary-precision integer: little-endian magnitude without high zero limbs.
#[derive(Clone, Debug, PartialEq)]
struct Big {
    neg: bool,
    mag: Vec<u64>,
}

fn trim(mut v: Vec<u64>) -> Vec<u64> {
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

fn cmp_mag(a: &[u64], b: &[u64]) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

fn add_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let (a, b) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(a.len() + 1);
    let mut carry = 0u64;
    for (i, &x) in a.iter().enumerate() {
        let y = b.get(i).copied().unwrap_or(0);
        let (s1, c1) = x.overflowing_add(y);
        let (s2, c2) = s1.overflowing_add(carry);
        out.push(s2);
        carry = u64::from(c1) + u64::from(c2);
    }
    out.push(carry);
    trim(out)
}

/// `a - b` for `|a| >= |b|`.
fn sub_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0u64;
    for (i, &x) in a.iter().enumerate() {
        let y = b.get(i).copied().unwrap_or(0);
        let (d1, b1) = x.overflowing_sub(y);
        let (d2, b2) = d1.overflowing_sub(borrow);
        out.push(d2);
        borrow = u64::from(b1) + u64::from(b2);
    }
    trim(out)
}

impl Big {
    fn from_f64(x: f64) -> Big {
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7ff) as u32;
        let m = bits & ((1u64 << 52) - 1);
        let (mant, shift) = if e == 0 {
            (m, 0)
        } else {
            (m | (1u64 << 52), e - 1)
        };
        let w = (shift / 64) as usize;
        let b = shift % 64;
        let mut mag = vec![0u64; w + 2];
        mag[w] = mant << b;
        if b > 0 {
            mag[w + 1] = mant >> (64 - b);
        }
        let mag = trim(mag);
        Big {
            neg: bits >> 63 == 1 && !mag.is_empty(),
            mag,
        }
    }

    fn add(&self, o: &Big) -> Big {
        if self.neg == o.neg {
            return Big {
                neg: self.neg,
                mag: add_mag(&self.mag, &o.mag),
            };
        }
        match cmp_mag(&self.mag, &o.mag) {
            Ordering::Equal => Big {
                neg: false,
                mag: Vec::new(),
            },
            Ordering::Greater => Big {
                neg: self.neg,
                mag: sub_mag(&self.mag, &o.mag),
            },
            Ordering::Less => Big {
                neg: o.neg,
                mag: sub_mag(&o.mag, &self.mag),
            },
        }
    }

    fn negated(&self) -> Big {
        Big {
            neg: !self.neg && !self.mag.is_empty(),
            mag: self.mag.clone(),
        }
    }

    fn sub(&self, o: &Big) -> Big {
        self.add(&o.negated())
    }

    fn mul(&self, o: &Big) -> Big {
        if self.mag.is_empty() || o.mag.is_empty() {
            return Big {
                neg: false,
                mag: Vec::new(),
            };
        }
        let mut out = vec![0u64; self.mag.len() + o.mag.len()];
        for (i, &x) in self.mag.iter().enumerate() {
            let mut carry = 0u128;
            for (j, &y) in o.mag.iter().enumerate() {
                let cur = u128::from(out[i + j]) + u128::from(x) * u128::from(y) + carry;
                out[i + j] = cur as u64;
                carry = cur >> 64;
            }
            out[i + o.mag.len()] = carry as u64;
        }
        Big {
            neg: self.neg != o.neg,
            mag: trim(out),
        }
    }

    fn sign(&self) -> i8 {
        if self.mag.is_empty() {
            0
        } else if self.neg {
            -1
        } else {
            1
        }
    }
}

/// Exact sign of `(a - c) x (b - c)`, the same convention as `robust::orient2d`.
fn big_orient2d(a: [f64; 2], b: [f64; 2], c: [f64; 2]) -> i8 {
    let [ax, ay, bx, by, cx, cy] = [a[0], a[1], b[0], b[1], c[0], c[1]].map(Big::from_f64);
    let acx = ax.sub(&cx);
    let acy = ay.sub(&cy);
    let bcx = bx.sub(&cx);
    let bcy = by.sub(&cy);
    acx.mul(&bcy).sub(&acy.mul(&bcx)).sign()
}

/// Exact sign of `det[a - d; b - d; c - d]`, the same convention as `robust::orient3d`.
fn big_orient3d(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i8 {
    let big = |p: DVec3| p.to_array().map(Big::from_f64);
    let (a, b, c, d) = (big(a), big(b), big(c), big(d));
    let diff = |p: &[Big; 3]| [p[0].sub(&d[0]), p[1].sub(&d[1]), p[2].sub(&d[2])];
    let (ad, bd, cd) = (diff(&a), diff(&b), diff(&c));
    let m1 = bd[1].mul(&cd[2]).sub(&bd[2].mul(&cd[1]));
    let m2 = cd[1].mul(&ad[2]).sub(&cd[2].mul(&ad[1]));
    let m3 = ad[1].mul(&bd[2]).sub(&ad[2].mul(&bd[1]));
    ad[0]
        .mul(&m1)
        .add(&bd[0].mul(&m2))
        .add(&cd[0].mul(&m3))
        .sign()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f64, y: f64, z: f64) -> DVec3 {
        DVec3::new(x, y, z)
    }

    fn both(a: [DVec3; 3], b: [DVec3; 3]) -> bool {
        let r = triangles_intersect(a, b);
        // The answer must not depend on argument order or vertex order.
        assert_eq!(r, triangles_intersect(b, a));
        assert_eq!(
            r,
            triangles_intersect([a[1], a[2], a[0]], [b[2], b[1], b[0]])
        );
        r
    }

    fn base() -> [DVec3; 3] {
        [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)]
    }

    #[test]
    fn crossing_and_disjoint() {
        let a = base();
        let crossing = [v(0.2, 0.2, -1.0), v(0.2, 0.2, 1.0), v(5.0, 5.0, 0.5)];
        assert!(both(a, crossing));
        let above = [v(0.2, 0.2, 0.1), v(0.2, 0.2, 1.0), v(5.0, 5.0, 0.5)];
        assert!(!both(a, above));
        // Straddles the plane but passes beside the triangle.
        let beside = [v(2.0, 2.0, -1.0), v(2.0, 2.0, 1.0), v(5.0, 5.0, 0.5)];
        assert!(!both(a, beside));
    }

    #[test]
    fn touching_configurations() {
        let a = base();
        // Vertex of b on the interior of a's face.
        assert!(both(
            a,
            [v(0.25, 0.25, 0.0), v(0.0, 0.0, 1.0), v(1.0, 1.0, 1.0)]
        ));
        // Vertex of b on a's vertex.
        assert!(both(
            a,
            [v(1.0, 0.0, 0.0), v(2.0, 0.0, 1.0), v(2.0, 1.0, 1.0)]
        ));
        // Edge of b crossing edge y = 0 of a at (0.5, 0, 0).
        let ee = [v(0.5, -1.0, 1.0), v(0.5, 1.0, -1.0), v(0.5, -2.0, -1.0)];
        assert!(both(a, ee)); // the segment passes through (0.5, 0, 0) on a's edge
                              // Tilting the edge slightly makes it pierce the plane just outside (y < 0).
        let ee_miss = [
            v(0.5, -1.0, 1.0),
            v(0.5, 1.0, -1.0 - 1e-12),
            v(0.5, -2.0, -1.0),
        ];
        assert!(!both(a, ee_miss));
        let ee_hit = [
            v(0.5, -1.0, 1.0),
            v(0.5, 1.0, -1.0 + 1e-12),
            v(0.5, -2.0, -1.0),
        ];
        assert!(both(a, ee_hit));
        // Edge-on-edge, perpendicular triangles meeting along the segment [0.2, 0.8] x {0}.
        assert!(both(
            a,
            [v(0.2, 0.0, 0.0), v(0.8, 0.0, 0.0), v(0.5, 0.0, -1.0)]
        ));
        // Same but shifted off the edge by one ulp in y: no contact.
        let y = f64::from_bits(1); // smallest positive subnormal, below the edge y = 0
        assert!(!both(
            a,
            [v(0.2, -y, 0.0), v(0.8, -y, 0.0), v(0.5, -y, -1.0)]
        ));
    }

    #[test]
    fn coplanar_cases() {
        let a = base();
        // Shared edge region (overlapping collinear edges), b on the other side.
        assert!(both(
            a,
            [v(0.5, 0.0, 0.0), v(2.0, 0.0, 0.0), v(1.0, -1.0, 0.0)]
        ));
        // Containment.
        assert!(both(
            a,
            [v(0.1, 0.1, 0.0), v(0.2, 0.1, 0.0), v(0.1, 0.2, 0.0)]
        ));
        assert!(both(
            a,
            [v(-1.0, -1.0, 0.0), v(5.0, -1.0, 0.0), v(-1.0, 5.0, 0.0)]
        ));
        // Disjoint but close: 1e-300 and 1e-15 apart across a's edge x = 0.
        for gap in [1e-300, 1e-15, f64::from_bits(1)] {
            let b = [v(-gap, 0.0, 0.0), v(-gap, 1.0, 0.0), v(-1.0, 0.5, 0.0)];
            assert!(!both(a, b), "gap {gap}");
            let b = [
                v(0.0, 0.0, 0.0).with_x(-0.0),
                v(0.0, 1.0, 0.0),
                v(-1.0, 0.5, 0.0),
            ];
            assert!(both(a, b));
        }
        // Close to the hypotenuse x + y = 1 in a tilted plane.
        let t = [v(0.0, 0.0, 0.0), v(4.0, 0.0, 2.0), v(0.0, 4.0, 4.0)];
        let on = [v(2.0, 2.0, 3.0), v(4.0, 4.0, 6.0), v(6.0, 2.0, 5.0)];
        assert!(both(t, on));
        let off = on.map(|p| p + DVec3::new(1e-15, 0.0, 0.5e-15));
        assert!(!both(t, off));
    }

    #[test]
    fn one_ulp_across_the_plane_flips_the_answer() {
        // Plane z = x/3 + 2y/3 holds (1.5, 0.75, 1.0) exactly, inside the triangle.
        let a = [v(0.0, 0.0, 0.0), v(3.0, 0.0, 1.0), v(0.0, 3.0, 2.0)];
        let b = |z: f64| [v(1.5, 0.75, z), v(1.5, 0.75, 5.0), v(2.0, 0.5, 5.0)];
        assert!(both(a, b(1.0)));
        assert!(!both(a, b(f64::from_bits(1.0f64.to_bits() + 1))));
        assert!(both(a, b(f64::from_bits(1.0f64.to_bits() - 1))));
        // The same at the origin with subnormal offsets (exercises the big-integer fallback).
        let a = base();
        let b = |z: f64| [v(0.25, 0.25, z), v(0.25, 0.25, 1.0), v(2.0, 2.0, 1.0)];
        assert!(both(a, b(0.0)));
        assert!(!both(a, b(f64::from_bits(1))));
        assert!(both(a, b(-f64::from_bits(1))));
    }

    #[test]
    fn degenerate_triangles() {
        let a = base();
        // Segment (collinear triangle) piercing a.
        let seg = [v(0.2, 0.2, -1.0), v(0.2, 0.2, 0.5), v(0.2, 0.2, 1.0)];
        assert!(both(a, seg));
        let seg_beside = [v(2.0, 0.2, -1.0), v(2.0, 0.2, 0.5), v(2.0, 0.2, 1.0)];
        assert!(!both(a, seg_beside));
        // The middle vertex is not an extreme: the segment spans [-1, 1] in z.
        let seg_mid = [v(0.2, 0.2, 0.5), v(0.2, 0.2, -1.0), v(0.2, 0.2, 1.0)];
        assert!(both(a, seg_mid));
        // Point triangles.
        let p = v(0.3, 0.3, 0.0);
        assert!(both(a, [p, p, p]));
        let q = v(0.3, 0.3, 1e-300);
        assert!(!both(a, [q, q, q]));
        assert!(both([p, p, p], [p, p, p]));
        assert!(!both([p, p, p], [q, q, q]));
        // Segment against segment: crossing, skew, collinear overlap, collinear disjoint.
        let s1 = [v(0.0, 0.0, 0.0), v(1.0, 1.0, 1.0), v(2.0, 2.0, 2.0)];
        let s2 = [v(2.0, 0.0, 0.0), v(0.0, 2.0, 2.0), v(1.0, 1.0, 1.0)];
        assert!(both(s1, s2));
        let s3 = [v(2.0, 0.0, 0.0), v(0.0, 2.0, 2.5), v(1.0, 1.0, 1.25)];
        assert!(!both(s1, s3));
        let s4 = [v(2.0, 2.0, 2.0), v(3.0, 3.0, 3.0), v(2.5, 2.5, 2.5)];
        assert!(both(s1, s4));
        let s5 = [v(2.5, 2.5, 2.5), v(3.0, 3.0, 3.0), v(2.75, 2.75, 2.75)];
        assert!(!both(s1, s5));
        // Coplanar segment lying inside a's plane and crossing its edge.
        let s6 = [v(-1.0, 0.5, 0.0), v(0.0, 0.5, 0.0), v(-0.5, 0.5, 0.0)];
        assert!(both(a, s6));
        let s7 = s6.map(|p| p - DVec3::new(f64::EPSILON, 0.0, 0.0));
        assert!(!both(a, s7));
    }

    #[test]
    fn non_finite_input_is_no_intersection() {
        let a = base();
        let mut b = base();
        b[1].x = f64::NAN;
        assert!(!triangles_intersect(a, b));
        b[1].x = f64::INFINITY;
        assert!(!triangles_intersect(a, b));
    }

    #[test]
    fn big_integer_predicates_match_robust() {
        let mut rng = Rng(7);
        for _ in 0..5000 {
            let mut p = [0.0f64; 12];
            for x in &mut p {
                // Small integers make many zero determinants; scaled to exercise both paths.
                *x = (rng.below(7) as f64 - 3.0) * [1.0, 0.5, 0.1][rng.below(3) as usize];
            }
            let q = |i: usize| v(p[3 * i], p[3 * i + 1], p[3 * i + 2]);
            let fast = Pred { big: false };
            let slow = Pred { big: true };
            assert_eq!(
                fast.o3(q(0), q(1), q(2), q(3)),
                slow.o3(q(0), q(1), q(2), q(3))
            );
            let (a, b, c) = ([p[0], p[1]], [p[2], p[3]], [p[4], p[5]]);
            assert_eq!(fast.o2(a, b, c), slow.o2(a, b, c));
        }
    }

    // ------------------------------------------------------------------------------------
    // Independent oracle on integer coordinates: parametric intersection points in exact i128
    // rational arithmetic, no projections, degenerate triangles as the union of their edges.

    type I = [i128; 3];

    fn isub(a: I, b: I) -> I {
        [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
    }
    fn icross(a: I, b: I) -> I {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    }
    fn idot(a: I, b: I) -> i128 {
        a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    }
    fn iscale(a: I, s: i128) -> I {
        [a[0] * s, a[1] * s, a[2] * s]
    }

    fn oracle_seg_seg(p: I, q: I, r: I, s: I) -> bool {
        let (u, v, w) = (isub(q, p), isub(s, r), isub(r, p));
        let c = icross(u, v);
        if c != [0; 3] {
            if idot(w, c) != 0 {
                return false;
            }
            let den = idot(c, c);
            let sn = idot(icross(w, v), c);
            let tn = idot(icross(w, u), c);
            return (0..=den).contains(&sn) && (0..=den).contains(&tn);
        }
        let on = |x: I, a: I, d: I| {
            icross(isub(x, a), d) == [0; 3] && (0..=idot(d, d)).contains(&idot(isub(x, a), d))
        };
        match (u == [0; 3], v == [0; 3]) {
            (true, true) => p == r,
            (true, false) => on(p, r, v),
            (false, true) => on(r, p, u),
            (false, false) => {
                if icross(w, u) != [0; 3] {
                    return false;
                }
                let (r0, r1) = (idot(w, u), idot(isub(s, p), u));
                r0.min(r1) <= idot(u, u) && r0.max(r1) >= 0
            }
        }
    }

    /// Closed segment against a proper triangle with normal `n`.
    fn oracle_seg_tri(p: I, q: I, t: [I; 3], n: I) -> bool {
        // `x` scaled by `den > 0`.
        let inside = |x: I, den: i128| {
            (0..3).all(|i| {
                let e = isub(t[(i + 1) % 3], t[i]);
                idot(n, icross(e, isub(x, iscale(t[i], den)))) >= 0
            })
        };
        let d0 = idot(n, isub(p, t[0]));
        let d1 = idot(n, isub(q, t[0]));
        if d0.signum() * d1.signum() > 0 {
            return false;
        }
        if d0 == 0 && d1 == 0 {
            return inside(p, 1)
                || inside(q, 1)
                || (0..3).any(|i| oracle_seg_seg(p, q, t[i], t[(i + 1) % 3]));
        }
        let (num, den) = if d0 - d1 < 0 {
            (-d0, d1 - d0)
        } else {
            (d0, d0 - d1)
        };
        let x = [0, 1, 2].map(|k| p[k] * den + num * (q[k] - p[k]));
        inside(x, den)
    }

    fn oracle(a: [I; 3], b: [I; 3]) -> bool {
        let na = icross(isub(a[1], a[0]), isub(a[2], a[0]));
        let nb = icross(isub(b[1], b[0]), isub(b[2], b[0]));
        let edges = |t: [I; 3]| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])];
        match (na == [0; 3], nb == [0; 3]) {
            (false, false) => {
                edges(a).iter().any(|&(p, q)| oracle_seg_tri(p, q, b, nb))
                    || edges(b).iter().any(|&(p, q)| oracle_seg_tri(p, q, a, na))
            }
            (false, true) => edges(b).iter().any(|&(p, q)| oracle_seg_tri(p, q, a, na)),
            (true, false) => edges(a).iter().any(|&(p, q)| oracle_seg_tri(p, q, b, nb)),
            (true, true) => edges(a)
                .iter()
                .any(|&(p, q)| edges(b).iter().any(|&(r, s)| oracle_seg_seg(p, q, r, s))),
        }
    }

    /// SplitMix64: a tiny seeded generator for reproducible test cases.
    pub(super) struct Rng(pub(super) u64);
    impl Rng {
        pub(super) fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        pub(super) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn matches_exact_integer_oracle() {
        let mut rng = Rng(12345);
        let mut hits = 0;
        let mut coplanar = 0;
        let n_cases = 40_000;
        for case in 0..n_cases {
            // Small ranges give many touching, coplanar and degenerate configurations.
            let range = [3, 4, 5, 9][case % 4] as i64;
            let mut tri =
                || [0; 3].map(|_| [0; 3].map(|_| rng.below(range as u64) as i64 - range / 2));
            let (ai, bi) = (tri(), tri());
            let to_i = |t: [[i64; 3]; 3]| t.map(|p| p.map(i128::from));
            let expected = oracle(to_i(ai), to_i(bi));
            hits += usize::from(expected);
            let na = icross(
                isub(to_i(ai)[1], to_i(ai)[0]),
                isub(to_i(ai)[2], to_i(ai)[0]),
            );
            if (0..3).all(|k| idot(na, isub(to_i(bi)[k], to_i(ai)[0])) == 0) {
                coplanar += 1;
            }
            // The same configuration at several exact scales and offsets: plain, translated,
            // subnormal and huge (the last two use the big-integer fallback).
            let maps: [(f64, f64); 4] = [
                (1.0, 0.0),
                (1.0, 1024.0),
                (2f64.powi(-1065), 0.0),
                (2f64.powi(400), 0.0),
            ];
            for (scale, offset) in maps {
                let f = |t: [[i64; 3]; 3]| {
                    t.map(|p| DVec3::from_array(p.map(|c| c as f64 * scale + offset)))
                };
                assert_eq!(
                    triangles_intersect(f(ai), f(bi)),
                    expected,
                    "case {case}: {ai:?} {bi:?} scale {scale:e} offset {offset}"
                );
            }
        }
        // The generator must exercise both answers and many coplanar pairs.
        assert!(
            hits > n_cases / 10 && hits < n_cases * 9 / 10,
            "hits {hits}"
        );
        assert!(coplanar > n_cases / 50, "coplanar {coplanar}");
    }
}
