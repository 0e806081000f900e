//! The discrete penalty layer schedule (thesis §4.2, §6.1; DESIGN §5).
//!
//! Layer `l = 1, 2, ...` has thickness `eta(l)` and stiffness `r(l)`, and potential
//! `V_l(d) = 0.5 r(l) (eta(l) - d)^2` for `d < eta(l)`, 0 otherwise. A pair at distance `d` is in
//! layers `1..=L` with `L` the deepest layer whose thickness exceeds `d`. The layers form a
//! barrier at `d = 0` iff `sum_l r(l) eta(l)^2` diverges (Theorem 6.1.1); [`LayerSchedule::new`]
//! refuses schedules for which it converges.
//!
//! Layer indices are `u32` starting at 1; an index of 0 is read as 1 (so every function gives a
//! defined answer for every input).

use thiserror::Error;

/// The law of the layer schedule, `eta(l) = eta1 * l^(-a)`, `r(l) = r1 * l^b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LayerLaw {
    /// The thesis law (§4.2): `eta(l) = eta1 * l^(-1/4)`, `r(l) = r1 * l^3`; evaluated without
    /// `powf` (`l^(-1/4) = 1 / sqrt(sqrt(l))`, `l^3 = l * l * l`).
    Thesis,
    /// A power law `eta(l) = eta1 * l^(-eta_exponent)`, `r(l) = r1 * l^(r_exponent)`.
    Power {
        /// `a` in `eta(l) = eta1 * l^(-a)`; must be `> 0` so the layers nest down to `d = 0`.
        eta_exponent: f64,
        /// `b` in `r(l) = r1 * l^b`; must be `>= 0` (stiffness non-decreasing) and satisfy
        /// `b - 2a >= -1` so that `sum_l r(l) eta(l)^2 = r1 eta1^2 sum_l l^(b - 2a)` diverges.
        r_exponent: f64,
    },
}

impl LayerLaw {
    /// The exponents `(a, b)` of `eta(l) = eta1 l^(-a)`, `r(l) = r1 l^b`; `(1/4, 3)` for
    /// [`LayerLaw::Thesis`].
    #[inline]
    pub(crate) fn exponents(&self) -> (f64, f64) {
        match *self {
            LayerLaw::Thesis => (0.25, 3.0),
            LayerLaw::Power {
                eta_exponent,
                r_exponent,
            } => (eta_exponent, r_exponent),
        }
    }
}

/// How each layer's clock is chosen from the layer stiffnesses (`contact.clocks`).
///
/// Both rules give fixed, regular clocks, one per layer, that never change during a run; they
/// differ only in which stiffness a layer's clock must resolve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayerClocks {
    /// The thesis rule (§6.1): `h(l) = safety * sqrt(m_min / r(l))`, stable for layer `l` alone.
    #[default]
    Thesis,
    /// `h(l) = safety * sqrt(m_min / (r(1) + ... + r(l)))`: a pair inside layer `l` is also
    /// inside every shallower layer, so layer `l`'s clock resolves the combined stiffness of the
    /// whole stack down to it (about `r1 l^4 / 4` for the thesis law), not `r(l)` alone. Equal to
    /// the thesis clock for layer 1, finer by about `2 / sqrt(l)` deep down.
    Stack,
}

/// A rejected layer schedule: which parameter (as named in a scene profile) and why.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("{field}: {reason}")]
pub struct LayerError {
    /// The offending parameter, e.g. `"contact.eta1"` or `"contact.layer_law"`.
    pub field: &'static str,
    /// What is wrong with it and how to fix it.
    pub reason: String,
}

/// The layer schedule: thickness `eta(l)` and stiffness `r(l)` for layers `l = 1, 2, ...`.
/// Default thesis law `eta(l) = eta1 * l^(-1/4)`, `r(l) = r1 * l^3`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerSchedule {
    /// Thickness of the outermost layer, `eta(1)` (length, cm).
    pub eta1: f64,
    /// Stiffness of the outermost layer, `r(1)` (force / length, dyn/cm).
    pub r1: f64,
    /// How thickness and stiffness change with depth.
    pub law: LayerLaw,
}

#[cfg(test)]
/// The largest ratio `c / sqrt(m_min / r)` for which one layer's tick is stable for any pair:
/// `sqrt(2)` (see [`LayerSchedule::clock`]).
pub(crate) const CLOCK_STABILITY_LIMIT: f64 = std::f64::consts::SQRT_2;

#[cfg(test)]
/// Recommended `safety` for [`LayerSchedule::clock`]: `0.5`, a factor `2 sqrt(2) ~ 2.8` below
/// the single-layer stability limit, leaving room for the other layers acting on the same pair
/// and for the elastic forces acting on the same vertices.
pub(crate) const DEFAULT_CLOCK_SAFETY: f64 = 0.5;

impl LayerSchedule {
    /// Validates and builds a schedule.
    ///
    /// Rejects: `eta1` or `r1` non-finite or `<= 0` (`"contact.eta1"`, `"contact.r1"`); a law
    /// with non-finite exponents, `a <= 0` (thickness must decrease to 0 so that the layers nest
    /// and every `d > 0` lies in finitely many layers), `b < 0` (stiffness must not decrease
    /// with depth), or `b - 2a < -1`: then `sum_l r(l) eta(l)^2 = r1 eta1^2 sum_l l^(b - 2a)`
    /// converges, the total energy stays bounded as `d -> 0` and the layers are not a barrier
    /// (Theorem 6.1.1) (`"contact.layer_law"`).
    pub fn new(eta1: f64, r1: f64, law: LayerLaw) -> Result<Self, LayerError> {
        if !(eta1.is_finite() && eta1 > 0.0) {
            return Err(LayerError {
                field: "contact.eta1",
                reason: format!(
                    "the outermost layer thickness must be a finite length > 0, got {eta1}"
                ),
            });
        }
        if !(r1.is_finite() && r1 > 0.0) {
            return Err(LayerError {
                field: "contact.r1",
                reason: format!(
                    "the outermost layer stiffness must be a finite stiffness > 0, got {r1}"
                ),
            });
        }
        let (a, b) = law.exponents();
        let field = "contact.layer_law";
        if !(a.is_finite() && b.is_finite()) {
            return Err(LayerError {
                field,
                reason: format!(
                    "exponents must be finite, got eta_exponent = {a}, r_exponent = {b}"
                ),
            });
        }
        if a <= 0.0 {
            return Err(LayerError {
                field,
                reason: format!(
                    "eta(l) = eta1 * l^(-{a}) does not decrease to 0, so the layers do not nest \
                     down to contact: pick eta_exponent > 0 (the thesis uses 1/4)"
                ),
            });
        }
        if b < 0.0 {
            return Err(LayerError {
                field,
                reason: format!(
                    "r(l) = r1 * l^({b}) decreases with depth; deeper layers must be at least as \
                     stiff: pick r_exponent >= 0 (the thesis uses 3)"
                ),
            });
        }
        let p = b - 2.0 * a;
        if p < -1.0 {
            return Err(LayerError {
                field,
                reason: format!(
                    "sum r(l) eta(l)^2 = sum l^({p}) converges, so the layers are not a barrier: \
                     a finite energy crosses all of them (Theorem 6.1.1); pick exponents with \
                     r_exponent - 2 * eta_exponent >= -1 (the thesis law eta1 * l^(-1/4), \
                     r1 * l^3 gives sum l^(2.5))"
                ),
            });
        }
        Ok(Self { eta1, r1, law })
    }

    /// Thickness of layer `l`: `eta(l) = eta1 * l^(-a)` (`l = 0` is read as 1).
    #[inline]
    pub fn eta(&self, l: u32) -> f64 {
        let lf = l.max(1) as f64;
        match self.law {
            LayerLaw::Thesis => self.eta1 / lf.sqrt().sqrt(),
            LayerLaw::Power { eta_exponent, .. } => self.eta1 * lf.powf(-eta_exponent),
        }
    }

    /// Stiffness of layer `l`: `r(l) = r1 * l^b` (`l = 0` is read as 1).
    #[inline]
    pub fn r(&self, l: u32) -> f64 {
        let lf = l.max(1) as f64;
        match self.law {
            LayerLaw::Thesis => self.r1 * (lf * lf * lf),
            LayerLaw::Power { r_exponent, .. } => self.r1 * lf.powf(r_exponent),
        }
    }

    /// Stable clock of layer `l` for the lightest vertex mass `m_min` it can touch:
    /// `h(l) = safety * sqrt(m_min / r(l))` (so `h(l) ~ l^(-3/2)` for the thesis law).
    ///
    /// Why this form: along the contact normal one layer is a linear spring of stiffness
    /// `r(l)` acting on the pair's effective mass `mu` with `1/mu = sum_i w_i^2 / m_i`
    /// (`w_i` the closest-point weights, `+-1`, `w`, `s`, `t`). Since `sum w_i^2 <= 1` on each
    /// side, `1/mu <= 2 / m_min`. Leapfrog/AVI ticks of a spring of frequency
    /// `omega = sqrt(r/mu)` are stable iff `h < 2/omega`, and
    /// `2/omega >= 2 sqrt(m_min / (2 r)) = sqrt(2) sqrt(m_min / r)`. So any
    /// `safety < sqrt(2)` (`CLOCK_STABILITY_LIMIT`) is stable for one layer on its own;
    /// `DEFAULT_CLOCK_SAFETY` = 0.5 leaves margin for the other forces on the same vertices.
    ///
    /// Degenerate input gives a defined answer: negative or NaN `m_min`/`safety` count as 0
    /// (clock 0, which the engine's progress check reports); `m_min = inf` (only kinematic
    /// vertices) gives an infinite clock.
    #[inline]
    pub fn clock(&self, l: u32, m_min: f64, safety: f64) -> f64 {
        self.clock_by(LayerClocks::Thesis, l, m_min, safety)
    }

    /// The stiffness the clock of layer `l` must resolve under `rule`: `r(l)` for
    /// [`LayerClocks::Thesis`], `r(1) + ... + r(l)` for [`LayerClocks::Stack`].
    pub(crate) fn clock_stiffness(&self, rule: LayerClocks, l: u32) -> f64 {
        match rule {
            LayerClocks::Thesis => self.r(l),
            LayerClocks::Stack => (1..=l.max(1)).map(|k| self.r(k)).sum(),
        }
    }

    /// The clock of layer `l` under `rule`: `safety * sqrt(m_min / k)` with `k` from
    /// `Self::clock_stiffness`; [`Self::clock`] for [`LayerClocks::Thesis`], and defined for
    /// the same degenerate input.
    pub fn clock_by(&self, rule: LayerClocks, l: u32, m_min: f64, safety: f64) -> f64 {
        let m = m_min.max(0.0);
        safety.max(0.0) * (m / self.clock_stiffness(rule, l)).sqrt()
    }

    /// Energy of layer `l` at distance `d`: `0.5 r(l) (eta(l) - d)^2` for `d < eta(l)`, else 0.
    #[inline]
    pub(crate) fn energy(&self, l: u32, d: f64) -> f64 {
        let eta = self.eta(l);
        if d < eta {
            let g = eta - d;
            0.5 * self.r(l) * g * g
        } else {
            0.0
        }
    }

    /// The deepest layer whose thickness exceeds `d` (layers `1..=L` are "touched" at distance
    /// `d`): the largest `L` with `eta(L) > d`, i.e. `L = ceil((eta1/d)^(1/a)) - 1` checked
    /// against [`Self::eta`]; `None` if `d >= eta1` (or `d` is NaN). `d <= 0` lies in every
    /// layer and saturates to `Some(u32::MAX)`.
    #[inline]
    pub(crate) fn layers_containing(&self, d: f64) -> Option<u32> {
        let inside = d < self.eta1; // false for NaN
        if !inside {
            return None;
        }
        if d <= 0.0 {
            return Some(u32::MAX);
        }
        let ratio = self.eta1 / d; // > 1
        let x = match self.law {
            LayerLaw::Thesis => {
                let r2 = ratio * ratio;
                r2 * r2
            }
            LayerLaw::Power { eta_exponent, .. } => ratio.powf(1.0 / eta_exponent),
        };
        // Largest integer strictly below x, then corrected against eta() itself so that the
        // answer agrees bit-for-bit with the thicknesses the rest of the engine uses.
        let mut l = if x >= u32::MAX as f64 {
            u32::MAX
        } else {
            ((x.ceil() - 1.0) as u32).max(1)
        };
        for _ in 0..4 {
            if l > 1 && self.eta(l) <= d {
                l -= 1;
            } else {
                break;
            }
        }
        for _ in 0..4 {
            if l < u32::MAX && self.eta(l + 1) > d {
                l += 1;
            } else {
                break;
            }
        }
        Some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thesis() -> LayerSchedule {
        LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap()
    }

    #[test]
    fn eta_and_r_values() {
        let s = thesis();
        assert_eq!(s.eta(1), 0.1);
        assert_eq!(s.r(1), 1000.0);
        assert!((s.eta(16) - 0.05).abs() < 1e-16);
        assert!((s.eta(81) - 0.1 / 3.0).abs() < 1e-16);
        assert_eq!(s.r(2), 8000.0);
        assert_eq!(s.r(10), 1e6);
        assert_eq!(s.eta(0), s.eta(1));
        // Power law equal to the thesis law agrees.
        let p = LayerSchedule::new(
            0.1,
            1000.0,
            LayerLaw::Power {
                eta_exponent: 0.25,
                r_exponent: 3.0,
            },
        )
        .unwrap();
        for l in [1, 2, 3, 7, 100, 12345] {
            assert!((p.eta(l) - s.eta(l)).abs() <= 1e-15 * s.eta(l));
            assert!((p.r(l) - s.r(l)).abs() <= 1e-12 * s.r(l));
        }
        // eta decreasing, r increasing.
        for l in 1..200 {
            assert!(s.eta(l + 1) < s.eta(l));
            assert!(s.r(l + 1) > s.r(l));
        }
    }

    #[test]
    fn convergent_schedule_rejected_with_message() {
        // Thesis' poor choice: eta ~ l^-2, r ~ l^2: sum l^-2 converges.
        let e = LayerSchedule::new(
            0.1,
            1000.0,
            LayerLaw::Power {
                eta_exponent: 2.0,
                r_exponent: 2.0,
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "contact.layer_law");
        let msg = e.to_string();
        assert!(msg.starts_with("contact.layer_law: sum r(l) eta(l)^2 = sum l^(-2) converges, so the layers are not a barrier"), "{msg}");
        let e = LayerSchedule::new(
            0.1,
            1.0,
            LayerLaw::Power {
                eta_exponent: 0.75,
                r_exponent: 0.0,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("sum l^(-1.5) converges"), "{e}");
    }

    #[test]
    fn divergent_schedules_accepted() {
        for (a, b) in [(0.25, 3.0), (1.0, 1.0), (0.5, 0.0), (1.0, 3.0), (0.25, 4.0)] {
            LayerSchedule::new(
                0.1,
                1000.0,
                LayerLaw::Power {
                    eta_exponent: a,
                    r_exponent: b,
                },
            )
            .unwrap();
        }
    }

    #[test]
    fn bad_parameters_rejected() {
        for eta1 in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = LayerSchedule::new(eta1, 1.0, LayerLaw::Thesis).unwrap_err();
            assert_eq!(e.field, "contact.eta1");
        }
        for r1 in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = LayerSchedule::new(1.0, r1, LayerLaw::Thesis).unwrap_err();
            assert_eq!(e.field, "contact.r1");
        }
        for (a, b) in [(0.0, 3.0), (-0.25, 3.0), (0.25, -1.0), (f64::NAN, 1.0)] {
            let e = LayerSchedule::new(
                1.0,
                1.0,
                LayerLaw::Power {
                    eta_exponent: a,
                    r_exponent: b,
                },
            )
            .unwrap_err();
            assert_eq!(e.field, "contact.layer_law");
        }
    }

    #[test]
    fn energy_values() {
        let s = thesis();
        assert_eq!(s.energy(1, 0.1), 0.0);
        assert_eq!(s.energy(1, 0.2), 0.0);
        assert!((s.energy(1, 0.05) - 0.5 * 1000.0 * 0.05 * 0.05).abs() < 1e-12);
        let e16 = s.energy(16, 0.0);
        assert!((e16 - 0.5 * 1000.0 * 4096.0 * 0.05 * 0.05).abs() < 1e-9);
        assert_eq!(s.energy(16, 0.06), 0.0);
        assert_eq!(s.energy(1, f64::NAN), 0.0);
    }

    #[test]
    fn clock_scales_like_l_minus_three_halves() {
        let s = thesis();
        let h1 = s.clock(1, 0.01, DEFAULT_CLOCK_SAFETY);
        assert!((h1 - 0.5 * (0.01f64 / 1000.0).sqrt()).abs() < 1e-18);
        for l in [2u32, 4, 10, 100, 1000] {
            let ratio = s.clock(l, 0.01, DEFAULT_CLOCK_SAFETY) / h1;
            let expect = (l as f64).powf(-1.5);
            assert!((ratio / expect - 1.0).abs() < 1e-12, "l = {l}");
        }
        assert_eq!(s.clock(1, -1.0, 0.5), 0.0);
        assert_eq!(s.clock(1, f64::INFINITY, 0.5), f64::INFINITY);
    }

    #[test]
    fn stack_clocks_resolve_the_combined_stiffness() {
        let s = thesis();
        let (m, c) = (0.01, DEFAULT_CLOCK_SAFETY);
        assert_eq!(
            s.clock_by(LayerClocks::Stack, 1, m, c),
            s.clock(1, m, c),
            "layer 1 alone is its own stack"
        );
        let mut previous = f64::INFINITY;
        for l in 1..=400u32 {
            let h = s.clock_by(LayerClocks::Stack, l, m, c);
            let combined: f64 = (1..=l).map(|k| s.r(k)).sum();
            assert!(
                (h / (c * (m / combined).sqrt()) - 1.0).abs() < 1e-12,
                "l = {l}"
            );
            assert!(h < previous && h <= s.clock(l, m, c), "l = {l}");
            previous = h;
        }
        // sum_{k <= l} k^3 = (l (l + 1) / 2)^2, so the ratio to the thesis clock is
        // 2 sqrt(l) / (l + 1), about 2 / sqrt(l).
        let ratio = s.clock_by(LayerClocks::Stack, 100, m, c) / s.clock(100, m, c);
        assert!((ratio - 20.0 / 101.0).abs() < 1e-12, "{ratio}");
        assert_eq!(s.clock_by(LayerClocks::Stack, 0, m, c), s.clock(1, m, c));
    }

    #[test]
    fn clock_is_stable_for_a_vertex_on_a_wall() {
        // Leapfrog on one layer's spring for a free vertex against a fixed obstacle: bounded energy
        // with safety just under the limit (effective mass m: the limit 2 sqrt(m/r) exceeds
        // sqrt(2) sqrt(m/r)).
        let s = thesis();
        let m = 0.01;
        let h = s.clock(1, m, CLOCK_STABILITY_LIMIT * 0.999);
        let (mut x, mut v) = (0.05, -1.0);
        let spring = |x: f64| 0.5 * s.r(1) * (s.eta(1) - x) * (s.eta(1) - x);
        let e0 = 0.5 * m * v * v + spring(x);
        for _ in 0..10_000 {
            // Two-sided (linear) spring so that the vertex never leaves the layer.
            let f = s.r(1) * (s.eta(1) - x);
            v += h * f / m;
            x += h * v;
        }
        let e1 = 0.5 * m * v * v + spring(x);
        assert!(e1 < 4.0 * e0 && x.is_finite(), "{e0} -> {e1}");
    }

    #[test]
    fn layers_containing_agrees_with_eta() {
        let s = thesis();
        assert_eq!(s.layers_containing(0.1), None);
        assert_eq!(s.layers_containing(1.0), None);
        assert_eq!(s.layers_containing(f64::NAN), None);
        assert_eq!(s.layers_containing(0.0), Some(u32::MAX));
        assert_eq!(s.layers_containing(0.0999), Some(1));
        // eta(16) = 0.05 exactly: layer 16 does not contain d = 0.05.
        assert_eq!(s.layers_containing(0.05), Some(15));
        let p = LayerSchedule::new(
            1.0,
            1.0,
            LayerLaw::Power {
                eta_exponent: 1.0,
                r_exponent: 1.0,
            },
        )
        .unwrap();
        for sched in [s, p] {
            let mut d = sched.eta1 * 0.999_999;
            while d > 1e-6 * sched.eta1 {
                let l = sched.layers_containing(d).unwrap();
                assert!(sched.eta(l) > d, "d = {d}, l = {l}");
                if l < u32::MAX {
                    assert!(sched.eta(l + 1) <= d, "d = {d}, l = {l}");
                }
                d *= 0.937;
            }
        }
        assert_eq!(s.layers_containing(1e-300), Some(u32::MAX));
    }
}
