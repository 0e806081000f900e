//! The deepest penalty layer a scene's energy lets a pair reach.
//!
//! A pair switching on layer `l` at distance `d` holds `sum_{k < l} V_k(d)` in the layers
//! already active (checked at `d` no farther than the activation distance `1.1 eta(l)`, where
//! the layer is needed: a speculative window switches layers on farther out). Energy is
//! conserved by the method up to its per-impact error (damping and drag only remove it), so
//! no pair can hold more than the energy the scene has had: its energy at the start (kinetic,
//! elastic, gravitational) plus the work gravity has done since, `E(0) + sum_i m_i g . x_i(t)`
//! over the free vertices, plus what an embedding program put in through
//! `Simulation::set_velocity`. A pair holding more than [`HEADROOM`] times that means
//! the energy has run away (README, known limitations): the run stops with
//! [`RunError::EnergyRunaway`] instead of taking ever finer layer clocks until it stalls.
//!
//! Scenes with scripted motion or prescribed forces put in work this does not track: they have
//! no limit (the speed limit and the time-resolution checks still stop a runaway there).

use glam::DVec3;

use crate::penalty::layers::LayerSchedule;
use crate::state::VertexState;
use crate::RunError;

/// How many times the energy the scene has had a pair may hold before the run stops: far
/// above the method's energy error of one impact (README, known limitations), far below a
/// runaway's growth.
pub(super) const HEADROOM: f64 = 10.0;

/// The energy budget of a scene and the layers checked against it (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct EnergyLimit {
    /// `E(0)` plus the energy put in since; `None` when the scene has scripted motion or
    /// prescribed forces (no limit).
    start: Option<f64>,
    gravity: DVec3,
    /// The deepest layer whose activation has been checked: activations at or above it are
    /// not checked again (the check runs when the run reaches a layer deeper than ever).
    checked: u32,
}

impl EnergyLimit {
    /// The limit of a scene whose total energy at the start is `start` (kinetic + elastic +
    /// gravitational `-sum m g . x`), or no limit for `None`.
    pub(super) fn new(start: Option<f64>, gravity: DVec3) -> Self {
        Self {
            start,
            gravity,
            checked: 0,
        }
    }

    /// Records `energy` put into the free vertices from outside the run (a velocity set by an
    /// embedding program).
    pub(super) fn add(&mut self, energy: f64) {
        if let Some(start) = &mut self.start {
            *start += energy;
        }
    }

    /// The energy the scene has had by time `t`: `E(0) + sum_i m_i g . x_i(t)` over the free
    /// vertices (never below 0), or `None` without a limit.
    fn available(&self, state: &VertexState, t: f64) -> Option<f64> {
        let start = self.start?;
        let mut work = 0.0;
        if self.gravity != DVec3::ZERO {
            for i in 0..state.len() {
                if state.inv_mass[i] > 0.0 {
                    work += state.mass[i] * self.gravity.dot(state.position_at(i, t));
                }
            }
        }
        Some((start + work).max(0.0))
    }

    /// Checks a pair at distance `d` switching on layer `l` at time `t`, when `l` is deeper
    /// than every layer checked before. `Err((held, available))` when the pair's active layers
    /// `1..l` hold more than [`HEADROOM`] times the energy available.
    pub(super) fn check(
        &mut self,
        schedule: &LayerSchedule,
        l: u32,
        d: f64,
        state: &VertexState,
        t: f64,
    ) -> Result<(), (f64, f64)> {
        if l <= self.checked {
            return Ok(());
        }
        let Some(available) = self.available(state, t) else {
            return Ok(());
        };
        let held: f64 = (1..l).map(|k| schedule.energy(k, d)).sum();
        if held > HEADROOM * available {
            return Err((held, available));
        }
        self.checked = l;
        Ok(())
    }
}

/// The error for a pair described as `pair` whose layers hold `held` of `available` erg.
pub(super) fn runaway(time: f64, pair: String, layer: u32, held: f64, available: f64) -> RunError {
    RunError::EnergyRunaway {
        time,
        pair,
        layer,
        held,
        available,
        headroom: HEADROOM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::penalty::layers::LayerLaw;
    use crate::state::VertexKind;

    fn one_vertex(mass: f64, x: DVec3) -> VertexState {
        VertexState {
            x: vec![x],
            t: vec![0.0],
            v: vec![DVec3::ZERO],
            mass: vec![mass],
            inv_mass: vec![1.0 / mass],
            kind: vec![VertexKind::Free],
        }
    }

    #[test]
    fn a_pair_may_hold_up_to_headroom_times_the_energy_available() {
        let s = LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap();
        let state = one_vertex(1.0, DVec3::ZERO);
        let d = s.eta(9);
        let held: f64 = (1..9).map(|k| s.energy(k, d)).sum();
        let mut limit = EnergyLimit::new(Some(held / HEADROOM), DVec3::ZERO);
        assert_eq!(limit.check(&s, 9, d, &state, 0.0), Ok(()));
        let mut limit = EnergyLimit::new(Some(0.99 * held / HEADROOM), DVec3::ZERO);
        let (got, available) = limit.check(&s, 9, d, &state, 0.0).unwrap_err();
        assert_eq!(got, held);
        assert_eq!(available, 0.99 * held / HEADROOM);
        // Energy put in raises the budget; without a budget nothing is checked.
        limit.add(held);
        assert_eq!(limit.check(&s, 9, d, &state, 0.0), Ok(()));
        let mut none = EnergyLimit::new(None, DVec3::ZERO);
        assert_eq!(none.check(&s, 1000, 0.0, &state, 0.0), Ok(()));
    }

    #[test]
    fn the_work_of_gravity_counts() {
        let s = LayerSchedule::new(0.1, 1000.0, LayerLaw::Thesis).unwrap();
        let d = s.eta(9);
        let held: f64 = (1..9).map(|k| s.energy(k, d)).sum();
        // A unit mass that has fallen 2 held / (HEADROOM g) below the origin.
        let g = DVec3::new(0.0, -1000.0, 0.0);
        let state = one_vertex(1.0, DVec3::new(0.0, -2.0 * held / HEADROOM / 1000.0, 0.0));
        let mut limit = EnergyLimit::new(Some(0.0), g);
        assert_eq!(limit.check(&s, 9, d, &state, 0.0), Ok(()));
        let state = one_vertex(1.0, DVec3::ZERO);
        let mut limit = EnergyLimit::new(Some(0.0), g);
        assert!(limit.check(&s, 9, d, &state, 0.0).is_err());
    }
}
