//! Continuous collision detection (CCD) for linear trajectories over one step.
//!
//! Four points move linearly, `x_i(s) = x_i + s dx_i` for `s` in `[0, 1]` (the fraction of the
//! step). A vertex can touch a triangle, or an edge another edge, only when the four points are
//! coplanar, i.e. when the cubic `f(s) = det[x_1 - x_0, x_2 - x_0, x_3 - x_0](s)` vanishes
//! (Provot 1997; Bridson et al. 2002). Solving the cubic alone is fragile: double roots, motion
//! that stays coplanar (parallel edges, a sheet sliding in its own plane), and rounding near
//! the root all make roots appear or vanish. This module is robust to them by construction:
//!
//! 1. `f` is computed with a rounding-error bound `tol`; the set `Z = {s : |f(s)| <= tol}`
//!    contains every time at which the points can truly be coplanar. `Z` is found exactly as a
//!    union of intervals: `[0, 1]` is split at the critical points of `f` into monotone pieces,
//!    and on each piece the ends of `Z` are bracketed by bisection (no root is lost to a double
//!    root, a flat cubic or a cancelled leading coefficient: those pieces simply lie in `Z`).
//! 2. Inside `Z` the true primitive distance `d(s)` (the robust closest points of
//!    `crate::penalty::closest`) is searched by *conservative advancement*: `d` changes no
//!    faster than the largest relative displacement `L` of a point of one primitive against a
//!    point of the other, so from `s` no touch can happen before `s + (d(s) - gap/2) / L`.
//!    The first `s` with `d(s) <= gap` is the collision.
//!
//! Outside `Z` the points are not coplanar, so the primitives are apart. A `None` therefore
//! proves that the pair never touches during the step; a hit may be a near miss (within `gap`),
//! which only costs an unnecessary impulse.

use glam::DVec3;

use crate::penalty::closest;

/// Bisection steps for a root of a monotone piece: enough to reach adjacent doubles on `[0, 1]`.
const BISECTION_STEPS: u32 = 80;

/// Conservative-advancement steps per interval of `Z` before the pair is reported as colliding
/// (a safe answer: only reached when the primitives crawl along each other within a few `gap`).
const MAX_ADVANCE_STEPS: u32 = 4096;

/// Multiple of machine epsilon times the cube of the configuration's size that bounds the
/// rounding error of `f` (each coefficient is a sum of a few triple products).
const TOL_FACTOR: f64 = 256.0 * f64::EPSILON;

/// Which two primitives the four points form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// `[p, a, b, c]`: vertex `p` against triangle `(a, b, c)`.
    VertexTriangle,
    /// `[p0, p1, q0, q1]`: edge `(p0, p1)` against edge `(q0, q1)`.
    EdgeEdge,
}

impl Kind {
    /// How many of the four points belong to the first primitive.
    fn first_len(self) -> usize {
        match self {
            Kind::VertexTriangle => 1,
            Kind::EdgeEdge => 2,
        }
    }

    /// The distance between the two primitives.
    pub(crate) fn distance(self, p: &[DVec3; 4]) -> f64 {
        match self {
            Kind::VertexTriangle => closest::vertex_triangle(p[0], p[1], p[2], p[3]).distance,
            Kind::EdgeEdge => closest::edge_edge(p[0], p[1], p[2], p[3]).distance,
        }
    }
}

/// The earliest fraction `s` in `[0, 1]` of the step at which the primitives of `kind` come
/// within `gap` of each other, among the times at which they can be coplanar; `None` if they
/// stay apart for the whole step. `x` are the positions at the start, `dx` the displacements
/// over the step.
///
/// A pair that starts closer than `gap` is held to half its starting distance instead (it
/// collides only if it approaches that far), so a response that stops or separates it
/// resolves it; a pair that starts touching (distance 0) always collides.
pub(crate) fn first_contact(kind: Kind, x: [DVec3; 4], dx: [DVec3; 4], gap: f64) -> Option<f64> {
    let at = |s: f64| -> [DVec3; 4] { std::array::from_fn(|i| x[i] + s * dx[i]) };
    let split = kind.first_len();
    let mut speed = 0.0f64;
    for i in 0..split {
        for j in split..4 {
            speed = speed.max((dx[i] - dx[j]).length());
        }
    }
    let d0 = kind.distance(&x);
    if d0 <= 0.0 {
        return Some(0.0);
    }
    let gap = gap.min(0.5 * d0);
    // Cheap rejection: the distance cannot shrink by more than `speed` over the step.
    if d0 - speed > gap {
        return None;
    }
    let cubic = Cubic::coplanarity(x, dx);
    for (lo, hi) in cubic.near_zero_intervals() {
        if let Some(s) = advance(|s| kind.distance(&at(s)), lo, hi, speed, gap) {
            return Some(s);
        }
    }
    None
}

/// The first `s` in `[lo, hi]` with `distance(s) <= gap`, by conservative advancement with the
/// Lipschitz bound `speed`; after [`MAX_ADVANCE_STEPS`] the current `s` is returned (a safe
/// "collision").
fn advance(distance: impl Fn(f64) -> f64, lo: f64, hi: f64, speed: f64, gap: f64) -> Option<f64> {
    let mut s = lo;
    for _ in 0..MAX_ADVANCE_STEPS {
        let d = distance(s);
        if d <= gap {
            return Some(s);
        }
        if speed <= 0.0 {
            return None;
        }
        let next = s + (d - 0.5 * gap) / speed;
        if next > hi || next.is_nan() {
            return if s < hi && distance(hi) <= gap {
                Some(hi)
            } else {
                None
            };
        }
        s = next;
    }
    Some(s)
}

/// The coplanarity cubic `f(s) = c[0] + c[1] s + c[2] s^2 + c[3] s^3` with its error bound.
#[derive(Clone, Copy, Debug)]
struct Cubic {
    c: [f64; 4],
    tol: f64,
}

fn det(a: DVec3, b: DVec3, c: DVec3) -> f64 {
    a.dot(b.cross(c))
}

impl Cubic {
    fn coplanarity(x: [DVec3; 4], dx: [DVec3; 4]) -> Self {
        let a = [x[1] - x[0], x[2] - x[0], x[3] - x[0]];
        let b = [dx[1] - dx[0], dx[2] - dx[0], dx[3] - dx[0]];
        let c = [
            det(a[0], a[1], a[2]),
            det(b[0], a[1], a[2]) + det(a[0], b[1], a[2]) + det(a[0], a[1], b[2]),
            det(a[0], b[1], b[2]) + det(b[0], a[1], b[2]) + det(b[0], b[1], a[2]),
            det(b[0], b[1], b[2]),
        ];
        let la = a.iter().map(|v| v.length()).fold(0.0, f64::max);
        let lb = b.iter().map(|v| v.length()).fold(0.0, f64::max);
        let size = la + lb;
        Self {
            c,
            tol: TOL_FACTOR * size * size * size,
        }
    }

    fn eval(&self, s: f64) -> f64 {
        ((self.c[3] * s + self.c[2]) * s + self.c[1]) * s + self.c[0]
    }

    /// Zeros of `f'` strictly inside `(0, 1)`, sorted.
    fn critical_points(&self) -> Vec<f64> {
        let (a, b, c) = (3.0 * self.c[3], 2.0 * self.c[2], self.c[1]);
        let mut roots = Vec::with_capacity(2);
        let scale = a.abs().max(b.abs()).max(c.abs());
        if scale == 0.0 {
            return roots;
        }
        if a.abs() <= 1e-14 * scale {
            if b != 0.0 {
                roots.push(-c / b);
            }
        } else {
            let disc = b * b - 4.0 * a * c;
            if disc >= 0.0 {
                // Stable form: no cancellation between -b and the root.
                let q = -0.5 * (b + b.signum() * disc.sqrt());
                roots.push(q / a);
                if q != 0.0 {
                    roots.push(c / q);
                }
            }
        }
        roots.retain(|r| *r > 0.0 && *r < 1.0);
        roots.sort_by(f64::total_cmp);
        roots
    }

    /// The intervals of `[0, 1]` on which `|f| <= tol`, sorted and disjoint.
    fn near_zero_intervals(&self) -> Vec<(f64, f64)> {
        let mut breaks = vec![0.0];
        breaks.extend(self.critical_points());
        breaks.push(1.0);
        let mut out: Vec<(f64, f64)> = Vec::new();
        for w in breaks.windows(2) {
            if let Some(piece) = self.near_zero_on_monotone(w[0], w[1]) {
                match out.last_mut() {
                    Some(last) if last.1 >= piece.0 => last.1 = last.1.max(piece.1),
                    _ => out.push(piece),
                }
            }
        }
        out
    }

    /// On a piece `[u, w]` where `f` is monotone, the (single) interval where `|f| <= tol`,
    /// widened by the last bisection bracket at each cut end (so it is never too short).
    fn near_zero_on_monotone(&self, u: f64, w: f64) -> Option<(f64, f64)> {
        let (fu, fw) = (self.eval(u), self.eval(w));
        let tol = self.tol;
        if fu.min(fw) > tol || fu.max(fw) < -tol {
            return None;
        }
        // Increasing: Z starts where f reaches -tol and ends where it passes +tol; decreasing:
        // the other way round. Each level is crossed at most once on a monotone piece.
        let sign = if fw >= fu { 1.0 } else { -1.0 };
        let start = if sign * fu >= -tol {
            u
        } else {
            self.bracket(u, w, -sign * tol).0
        };
        let end = if sign * fw <= tol {
            w
        } else {
            self.bracket(u, w, sign * tol).1
        };
        (start <= end).then_some((start, end))
    }

    /// A bracket `(lo, hi)`, as narrow as bisection makes it, of the point where monotone `f`
    /// crosses `level` on `[u, w]`.
    fn bracket(&self, mut u: f64, mut w: f64, level: f64) -> (f64, f64) {
        let gu = self.eval(u) - level;
        for _ in 0..BISECTION_STEPS {
            let m = 0.5 * (u + w);
            if m <= u || m >= w {
                break;
            }
            if (self.eval(m) - level) * gu > 0.0 {
                u = m;
            } else {
                w = m;
            }
        }
        (u, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f64, y: f64, z: f64) -> DVec3 {
        DVec3::new(x, y, z)
    }

    #[test]
    fn vertex_through_triangle_is_found_at_the_crossing() {
        let x = [
            v(0.2, 1.0, 0.2),
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.0, 0.0, 1.0),
        ];
        let dx = [v(0.0, -2.0, 0.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO];
        let s = first_contact(Kind::VertexTriangle, x, dx, 1e-9).expect("crosses");
        assert!((s - 0.5).abs() < 1e-8, "{s}");
    }

    #[test]
    fn vertex_passing_beside_triangle_is_not_a_collision() {
        let x = [
            v(2.0, 1.0, 2.0),
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.0, 0.0, 1.0),
        ];
        let dx = [v(0.0, -2.0, 0.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO];
        assert_eq!(first_contact(Kind::VertexTriangle, x, dx, 1e-9), None);
    }

    #[test]
    fn coplanar_motion_into_the_triangle_is_found() {
        // Everything in the plane y = 0 for the whole step: f vanishes identically.
        let x = [
            v(-1.0, 0.0, 0.2),
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.0, 0.0, 1.0),
        ];
        let dx = [v(2.0, 0.0, 0.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO];
        let s = first_contact(Kind::VertexTriangle, x, dx, 1e-9).expect("enters");
        assert!((s - 0.5).abs() < 1e-6, "{s}");
    }

    #[test]
    fn parallel_edges_sliding_apart_never_touch() {
        let x = [
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.0, 0.1, 0.0),
            v(1.0, 0.1, 0.0),
        ];
        let dx = [DVec3::ZERO, DVec3::ZERO, v(0.5, 0.0, 0.0), v(0.5, 0.0, 0.0)];
        assert_eq!(first_contact(Kind::EdgeEdge, x, dx, 1e-9), None);
    }

    #[test]
    fn crossing_edges_are_found() {
        let x = [
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.5, 1.0, -0.5),
            v(0.5, 1.0, 0.5),
        ];
        let dx = [
            DVec3::ZERO,
            DVec3::ZERO,
            v(0.0, -4.0, 0.0),
            v(0.0, -4.0, 0.0),
        ];
        let s = first_contact(Kind::EdgeEdge, x, dx, 1e-9).expect("crosses");
        assert!((s - 0.25).abs() < 1e-8, "{s}");
    }

    #[test]
    fn grazing_double_root_is_found() {
        // The triangle tilts about its edge ab while the vertex slides onto that edge: f is
        // proportional to -(2 s - 1)^2, a double root at s = 0.5 with no sign change.
        let x = [
            v(0.25, 0.0, 1.0),
            v(0.0, 0.0, 0.0),
            v(1.0, 0.0, 0.0),
            v(0.0, -1.0, 1.0),
        ];
        let dx = [
            v(0.0, 0.0, -2.0),
            DVec3::ZERO,
            DVec3::ZERO,
            v(0.0, 2.0, 0.0),
        ];
        let s = first_contact(Kind::VertexTriangle, x, dx, 1e-9).expect("touches");
        assert!((s - 0.5).abs() < 1e-6, "{s}");
    }
}
