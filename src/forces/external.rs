//! Linear (external) forces and prescribed motion.
//!
//! Gravity and prescribed forces have linear potentials, so their impulses do not depend on
//! positions and any clock is stable; the clock only sets how finely the force is sampled.
//! Prescribed motion sets the velocity of scripted (kinematic) vertices at key times.

use glam::DVec3;

use crate::state::{VertexKind, VertexState};

/// One gravity tick at time `t` with clock `h`: every free vertex gains velocity `g * h`
/// (the impulse `m g h` divided by its mass; the mass cancels exactly). Returns the largest
/// squared speed of the vertices it kicked ([`VertexState::kick_all`]).
pub(crate) fn gravity_tick(state: &mut VertexState, g: DVec3, t: f64, h: f64) -> f64 {
    let dv = g * h;
    if dv == DVec3::ZERO {
        return 0.0;
    }
    state.kick_all(t, |_, _| dv)
}

/// One vertex's gravity tick at time `t` with clock `h`: the velocity change of
/// [`gravity_tick`] for that vertex, bit for bit.
pub(crate) fn vertex_gravity_tick(state: &mut VertexState, i: usize, g: DVec3, t: f64, h: f64) {
    let dv = g * h;
    if dv != DVec3::ZERO && state.inv_mass[i] != 0.0 {
        state.rebase(i, t);
        state.v[i] += dv;
    }
}

/// A constant force applied to each vertex of a set during `[start, end)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrescribedForce {
    /// Global vertex indices, sorted.
    pub vertices: Vec<u32>,
    /// Force on each vertex (dyn).
    pub force: DVec3,
    /// First time at which the force acts.
    pub start: f64,
    /// Time from which the force no longer acts (may be infinite).
    pub end: f64,
}

impl PrescribedForce {
    /// Whether a tick at time `t` applies the force.
    pub(crate) fn active_at(&self, t: f64) -> bool {
        t >= self.start && t < self.end
    }

    /// One tick at time `t` with clock `h`: impulse `force * h` on each vertex.
    pub(crate) fn tick(&self, state: &mut VertexState, t: f64, h: f64) {
        if !self.active_at(t) {
            return;
        }
        for &i in &self.vertices {
            state.apply_impulse(i as usize, t, self.force * h);
        }
    }
}

/// Prescribed piecewise-constant velocity for a set of scripted vertices.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScriptedMotion {
    /// Global vertex indices, sorted; all have `inv_mass == 0`.
    pub vertices: Vec<u32>,
    /// `(time, velocity)` keys with strictly increasing times: from each key's time on, the
    /// vertices move with its velocity.
    pub keys: Vec<(f64, DVec3)>,
}

impl ScriptedMotion {
    /// Applies key `k`: re-bases the vertices at its time and sets their velocity.
    pub(crate) fn apply_key(&self, state: &mut VertexState, k: usize) {
        let (t, velocity) = self.keys[k];
        for &i in &self.vertices {
            let i = i as usize;
            debug_assert_eq!(state.kind[i], VertexKind::Scripted);
            if state.v[i] != velocity {
                state.rebase(i, t);
                state.v[i] = velocity;
            }
        }
    }
}

/// Air drag on every free vertex of the objects that have it: force `-drag * m * v`.
///
/// Position based, like the elastic damping: a tick at `t` applies the impulse
/// `-drag * m * (x(t) - x(t_prev))`, the displacement since the previous drag tick, so the order
/// of simultaneous events never changes it. It removes momentum (it models the surrounding air).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Drag {
    /// Global vertex indices (free vertices of objects with `drag > 0`), sorted.
    pub vertices: Vec<u32>,
    /// Per vertex: `drag * m` (g/s).
    pub coefficient: Vec<f64>,
    /// Per vertex: position at the previous drag tick.
    pub previous: Vec<DVec3>,
}

impl Drag {
    /// Whether no vertex has drag.
    pub(crate) fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// Adds vertex `i` with drag rate `drag` (1/s) and mass `mass`, starting at `position`.
    pub(crate) fn push(&mut self, i: u32, drag: f64, mass: f64, position: DVec3) {
        self.vertices.push(i);
        self.coefficient.push(drag * mass);
        self.previous.push(position);
    }

    /// One drag tick at time `t`.
    pub(crate) fn tick(&mut self, state: &mut VertexState, t: f64) {
        for k in 0..self.vertices.len() {
            let i = self.vertices[k] as usize;
            let now = state.position_at(i, t);
            let impulse = -self.coefficient[k] * (now - self.previous[k]);
            self.previous[k] = now;
            state.apply_impulse(i, t, impulse);
        }
    }

    /// The drag potential-free dissipation is stable for clocks below `1 / drag`; this returns
    /// the largest rate over all vertices (1/s), or 0.
    pub(crate) fn max_rate(&self, state: &VertexState) -> f64 {
        self.vertices
            .iter()
            .zip(&self.coefficient)
            .map(|(&i, &c)| c * state.inv_mass[i as usize])
            .fold(0.0, f64::max)
    }
}
