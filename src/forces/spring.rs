//! Edge springs (stretching) and their position-based dampers.
//!
//! For an edge with end points `x0`, `x1`, edge vector `e = x1 - x0`, current length `l = |e|`,
//! unit direction `u = e / l`, rest length `L > 0` and stiffness `k` (dyn):
//!
//! ```text
//! V      = 0.5 * k * (l - L)^2 / L               (elastic potential, erg)
//! dV/dx1 = k * (l - L) / L * u = -dV/dx0
//! W      = 0.5 * c * (l - l_prev)^2 / L          (damping potential, g*cm^2/s)
//! dW/dx1 = c * (l - l_prev) / L * u = -dW/dx0
//! ```
//!
//! A force with clock `h` applies at each tick the impulse `-(h * dV/dx + dW/dx)`, where `l_prev` is
//! the edge length at the element's previous tick (position-based damping, so event order never
//! matters). A zero-length edge (`l == 0`) has no defined direction: every gradient is then zero.
//!
//! All kernels are branch-light, allocation-free and return fixed-size arrays. Units are cgs.

use glam::DVec3;

/// Current length `l = |x1 - x0|` and unit direction `u = (x1 - x0) / l`; `u = 0` when `l == 0`.
#[inline]
fn length_dir(x0: DVec3, x1: DVec3) -> (f64, DVec3) {
    let e = x1 - x0;
    let l = e.length();
    // l > 0 implies l >= ~2.2e-162, so 1/l is finite; l == 0 (or NaN) gives a zero direction.
    let inv = if l > 0.0 { l.recip() } else { 0.0 };
    (l, e * inv)
}

/// Elastic energy `V = 0.5 * k * (|x1 - x0| - rest)^2 / rest` (erg).
#[inline]
pub(crate) fn energy(x0: DVec3, x1: DVec3, rest: f64, k: f64) -> f64 {
    let d = (x1 - x0).length() - rest;
    0.5 * k * d * d / rest
}

/// Gradient of `energy` for both ends, `[dV/dx0, dV/dx1]`, with
/// `dV/dx1 = k * (l - rest) / rest * u` and `dV/dx0 = -dV/dx1` (computed once and negated, so the
/// sum is exactly zero). Zero for a zero-length edge.
#[inline]
pub fn gradient(x0: DVec3, x1: DVec3, rest: f64, k: f64) -> [DVec3; 2] {
    let (l, u) = length_dir(x0, x1);
    let g1 = u * (k * (l - rest) / rest);
    [-g1, g1]
}

#[cfg(test)]
/// Position-based damping potential `W = 0.5 * c * (|x1 - x0| - prev_len)^2 / rest`, whose negative
/// gradient is the damping impulse of one tick (`c`: damping coefficient in g*cm/s; `prev_len`: edge
/// length at the element's previous tick).
#[inline]
pub(crate) fn damping_energy(x0: DVec3, x1: DVec3, prev_len: f64, rest: f64, c: f64) -> f64 {
    let d = (x1 - x0).length() - prev_len;
    0.5 * c * d * d / rest
}

#[cfg(test)]
/// Gradient of [`damping_energy`], `[dW/dx0, dW/dx1]` with
/// `dW/dx1 = c * (l - prev_len) / rest * u = -dW/dx0`. Zero for a zero-length edge.
#[inline]
pub(crate) fn damping_gradient(
    x0: DVec3,
    x1: DVec3,
    prev_len: f64,
    rest: f64,
    c: f64,
) -> [DVec3; 2] {
    let (l, u) = length_dir(x0, x1);
    let g1 = u * (c * (l - prev_len) / rest);
    [-g1, g1]
}

/// Impulse of one tick of length `h` on `[x0, x1]`, `-(h * dV/dx + dW/dx)`, i.e.
/// `I1 = -(h * k * (l - rest) + c * (l - prev_len)) / rest * u`, `I0 = -I1`, together with the
/// current length `l` (store it as the next `prev_len`). Computes `|e|` once.
#[inline]
pub(crate) fn tick_impulse(
    x0: DVec3,
    x1: DVec3,
    rest: f64,
    k: f64,
    c: f64,
    prev_len: f64,
    h: f64,
) -> ([DVec3; 2], f64) {
    let (l, u) = length_dir(x0, x1);
    let i1 = u * (-(h * k * (l - rest) + c * (l - prev_len)) / rest);
    ([-i1, i1], l)
}

/// Largest stable clock `h` for the spring + position-based damper between lumped masses `m0`, `m1`
/// (pass `f64::INFINITY` for a fixed vertex), integrated explicitly (symplectic Euler: kick with the
/// tick impulse, then drift `x += h v`).
///
/// Derivation (linearised along the edge, deviation `s = l - rest`, inverse reduced mass
/// `m* = 1/m0 + 1/m1`, effective stiffness `K = k/rest`, damper `D = c/rest`): one tick gives
/// `s[n+1] - 2 s[n] + s[n-1] = -a s[n] - b (s[n] - s[n-1])` with `a = (h w)^2`, `w^2 = K m*`, and
/// `b = h D m*`. The characteristic polynomial `z^2 - (2 - a - b) z + (1 - b)` has both roots in the
/// unit disc (Jury) iff `0 <= b < 2` and `a + 2 b < 4`. Writing the damper's continuous-time damping
/// ratio `zeta = D m* / (2 w)` (the impulse `-D (s[n] - s[n-1])` approximates a viscous force
/// `-D ds/dt`), `b = 2 zeta (h w)` and the condition becomes `(h w)^2 + 4 zeta (h w) < 4`, i.e.
///
/// ```text
/// h < 2/w * (sqrt(zeta^2 + 1) - zeta) = 2 / (sqrt(w^2 + g^2) + g),   g = zeta * w = D m* / 2
/// ```
///
/// (`b < 2` then holds automatically). The right-hand form is evaluated: it has no cancellation and
/// stays finite for `k == 0` (pure damper). Returns `safety * h`; `f64::INFINITY` if both masses are
/// infinite or `k == c == 0`. Transverse modes have stiffness `k (l - rest)/(rest l) < K` and do not
/// tighten the bound.
#[inline]
pub(crate) fn stable_step(m0: f64, m1: f64, rest: f64, k: f64, c: f64, safety: f64) -> f64 {
    let inv_m = m0.recip() + m1.recip();
    damped_stable_step(k / rest * inv_m, 0.5 * c / rest * inv_m, safety)
}

/// The stability bound shared by every position-damped oscillator: for a mode with `w2 = w^2`
/// and damping `g = zeta * w`, `h = safety * 2 / (sqrt(w^2 + g^2) + g)`
/// (`= safety * 2/w * (sqrt(zeta^2 + 1) - zeta)`, written without cancellation).
#[inline]
pub(crate) fn damped_stable_step(w2: f64, g: f64, safety: f64) -> f64 {
    safety * 2.0 / ((w2 + g * g).sqrt() + g)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_rng::Rng;

    /// Central finite-difference gradient of `f` over the 6 coordinates of `[x0, x1]`.
    fn fd_gradient(x: [DVec3; 2], step: f64, f: impl Fn([DVec3; 2]) -> f64) -> [DVec3; 2] {
        let mut g = [DVec3::ZERO; 2];
        for i in 0..2 {
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

    fn rel_err(a: [DVec3; 2], b: [DVec3; 2]) -> f64 {
        let num = ((a[0] - b[0]).length_squared() + (a[1] - b[1]).length_squared()).sqrt();
        let den = (b[0].length_squared() + b[1].length_squared()).sqrt();
        num / den
    }

    /// A random edge of length in [0.1, 10) cm and a rest/previous length differing by >= 5%.
    fn random_edge(rng: &mut Rng) -> ([DVec3; 2], f64) {
        let len = rng.uniform(0.1, 10.0);
        let dir = loop {
            let d = rng.vec(1.0);
            if d.length() > 0.1 {
                break d.normalize();
            }
        };
        let x0 = rng.vec(20.0);
        let x1 = x0 + dir * len;
        let ratio = rng.uniform(0.05, 1.0)
            * if rng.uniform(0.0, 1.0) < 0.5 {
                1.0
            } else {
                -0.5
            };
        (([x0, x1]), len * (1.0 + ratio))
    }

    #[test]
    fn energy_known_value() {
        // |e| = 5, L = 4: V = 0.5 * 3 * 1 / 4.
        let v = energy(DVec3::ZERO, DVec3::new(3.0, 4.0, 0.0), 4.0, 3.0);
        assert!((v - 0.375).abs() < 1e-15, "{v}");
        let w = damping_energy(DVec3::ZERO, DVec3::new(3.0, 4.0, 0.0), 7.0, 4.0, 2.0);
        assert!((w - 1.0).abs() < 1e-15, "{w}");
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let mut rng = Rng(0x5EED_0001);
        for _ in 0..300 {
            let (x, rest) = random_edge(&mut rng);
            let k = rng.uniform(1.0, 1e4);
            let g = gradient(x[0], x[1], rest, k);
            let fd = fd_gradient(x, 1e-6 * rest, |y| energy(y[0], y[1], rest, k));
            let err = rel_err(fd, g);
            assert!(err < 1e-6, "rel err {err} at {x:?} rest {rest}");
            assert_eq!(g[0], -g[1]);
        }
    }

    #[test]
    fn damping_gradient_matches_finite_differences() {
        let mut rng = Rng(0x5EED_0002);
        for _ in 0..300 {
            let (x, prev) = random_edge(&mut rng);
            let rest = rng.uniform(0.1, 10.0);
            let c = rng.uniform(0.01, 100.0);
            let g = damping_gradient(x[0], x[1], prev, rest, c);
            let fd = fd_gradient(x, 1e-6 * prev, |y| {
                damping_energy(y[0], y[1], prev, rest, c)
            });
            let err = rel_err(fd, g);
            assert!(err < 1e-6, "rel err {err} at {x:?} prev {prev}");
            assert_eq!(g[0], -g[1]);
        }
    }

    #[test]
    fn zero_length_edge_gives_zero_gradient() {
        let p = DVec3::new(1.0, -2.0, 3.0);
        assert_eq!(gradient(p, p, 1.0, 10.0), [DVec3::ZERO; 2]);
        assert_eq!(damping_gradient(p, p, 0.5, 1.0, 10.0), [DVec3::ZERO; 2]);
        let (imp, l) = tick_impulse(p, p, 1.0, 10.0, 3.0, 0.5, 0.01);
        assert_eq!(imp, [DVec3::ZERO; 2]);
        assert_eq!(l, 0.0);
        assert!((energy(p, p, 2.0, 10.0) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn tick_impulse_is_minus_h_grad_v_plus_grad_w() {
        let mut rng = Rng(0x5EED_0003);
        for _ in 0..200 {
            let (x, rest) = random_edge(&mut rng);
            let prev = rest * rng.uniform(0.8, 1.2);
            let (k, c, h) = (
                rng.uniform(1.0, 1e4),
                rng.uniform(0.0, 10.0),
                rng.uniform(1e-6, 1e-2),
            );
            let (imp, l) = tick_impulse(x[0], x[1], rest, k, c, prev, h);
            let gv = gradient(x[0], x[1], rest, k);
            let gw = damping_gradient(x[0], x[1], prev, rest, c);
            let want = [-(gv[0] * h + gw[0]), -(gv[1] * h + gw[1])];
            let scale = want[1].length().max(1e-300);
            for i in 0..2 {
                assert!(
                    (imp[i] - want[i]).length() <= 1e-13 * scale,
                    "{imp:?} vs {want:?}"
                );
            }
            assert_eq!(imp[0], -imp[1]);
            assert_eq!(l, (x[1] - x[0]).length());
        }
    }

    /// Integrates one spring along the x axis with symplectic Euler on clock `h`, starting at rest
    /// velocity with a 1e-4 relative stretch (small, so that a 1e6 energy growth stays in the
    /// linear regime). Returns the largest ratio of total energy to initial energy (stops
    /// early once above 1e7).
    fn max_energy_ratio(m: [f64; 2], rest: f64, k: f64, c: f64, h: f64, steps: usize) -> f64 {
        let mut x = [DVec3::ZERO, DVec3::new(rest * (1.0 + 1e-4), 0.0, 0.0)];
        let mut v = [DVec3::ZERO; 2];
        let total = |x: &[DVec3; 2], v: &[DVec3; 2]| {
            let ke: f64 = (0..2)
                .filter(|&i| m[i].is_finite())
                .map(|i| 0.5 * m[i] * v[i].length_squared())
                .sum();
            energy(x[0], x[1], rest, k) + ke
        };
        let e0 = total(&x, &v);
        let mut prev = (x[1] - x[0]).length();
        let mut worst: f64 = 1.0;
        for _ in 0..steps {
            let (imp, l) = tick_impulse(x[0], x[1], rest, k, c, prev, h);
            prev = l;
            for i in 0..2 {
                v[i] += imp[i] * m[i].recip();
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
    fn undamped_step_bound_is_sharp() {
        let (rest, k) = (0.7, 2.0e4);
        for m in [[0.03, 0.05], [0.02, f64::INFINITY], [f64::INFINITY, 1.0]] {
            let h = stable_step(m[0], m[1], rest, k, 0.0, 1.0);
            let w = ((k / rest) * (1.0 / m[0] + 1.0 / m[1])).sqrt();
            assert!((h - 2.0 / w).abs() <= 1e-14 * h, "{h} vs {}", 2.0 / w);
            // Near the bound the true (not the shadow) energy of symplectic Euler oscillates by a
            // factor ~ 1 / (1 - (h w / 2)^2) ~ 50..100 without growing; instability grows ~1.9x a step.
            let stable = max_energy_ratio(m, rest, k, 0.0, 0.99 * h, 100_000);
            assert!(
                stable < 1e3,
                "0.99x bound: energy ratio {stable} for masses {m:?}"
            );
            let unstable = max_energy_ratio(m, rest, k, 0.0, 1.05 * h, 100_000);
            assert!(
                unstable > 1e6,
                "1.05x bound: energy ratio {unstable} for masses {m:?}"
            );
        }
    }

    #[test]
    fn damping_lowers_the_step_and_damped_bound_is_sharp() {
        let (m, rest, k) = ([0.03, 0.05], 0.7, 2.0e4);
        let h0 = stable_step(m[0], m[1], rest, k, 0.0, 1.0);
        let mut last = h0;
        for c in [0.01, 0.1, 1.0, 10.0] {
            let h = stable_step(m[0], m[1], rest, k, c, 1.0);
            assert!(h < last, "c = {c}: {h} !< {last}");
            last = h;
            assert_eq!(stable_step(m[0], m[1], rest, k, c, 0.5), 0.5 * h);
            let stable = max_energy_ratio(m, rest, k, c, 0.99 * h, 100_000);
            assert!(stable < 1e3, "c = {c}, 0.99x: energy ratio {stable}");
            let unstable = max_energy_ratio(m, rest, k, c, 1.05 * h, 100_000);
            assert!(unstable > 1e6, "c = {c}, 1.05x: energy ratio {unstable}");
        }
        // The damped bound is the closed form 2/w (sqrt(z^2+1) - z) with z = (c/L) m* / (2 w).
        let c = 1.0;
        let inv_m = 1.0 / m[0] + 1.0 / m[1];
        let w = (k / rest * inv_m).sqrt();
        let z = c / rest * inv_m / (2.0 * w);
        let want = 2.0 / w * ((z * z + 1.0).sqrt() - z);
        let got = stable_step(m[0], m[1], rest, k, c, 1.0);
        assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    }

    #[test]
    fn stable_step_degenerate_inputs() {
        assert_eq!(
            stable_step(f64::INFINITY, f64::INFINITY, 1.0, 5.0, 1.0, 0.9),
            f64::INFINITY
        );
        assert_eq!(stable_step(1.0, 1.0, 1.0, 0.0, 0.0, 0.9), f64::INFINITY);
        // Pure damper: a + 2b < 4 with a = 0 gives h < 2 / (D m*).
        let h = stable_step(1.0, f64::INFINITY, 2.0, 0.0, 4.0, 1.0);
        assert!((h - 1.0).abs() < 1e-15, "{h}");
    }
}
